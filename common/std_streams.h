// defines: PrepareStandardStreams, OpenMissingStandardFds
//
// What each program does first, before it opens anything: descriptors 0, 1
// and 2 that the caller left closed are opened on /dev/null, so that no file
// or socket opened later takes their number (with stdout closed, a rank's
// coordinator socket became descriptor 1 and METRIC lines went into it); and
// SIGPIPE is ignored, so that a reader that went away makes a write fail with
// EPIPE, which the writer reports where the output matters, instead of
// killing the process between two files it was writing.
#pragma once

namespace dmlp {

/// Opens /dev/null on a closed descriptor 0-2 and ignores SIGPIPE. Call first in main.
void PrepareStandardStreams();
/// Only the first half: for dmlp-launch, whose SignalForwarder owns SIGPIPE's disposition.
void OpenMissingStandardFds();

}  // namespace dmlp
