// defines: FlockHolderPid
//
// Who holds a flock on a file, read from the kernel's /proc/locks rather than
// from the file, so that neither the taker (trainer/output/output_lock.h, which
// names the holder in OUTPUT_LOCKED) nor a reader (dmlp-verify, which tells a
// job that is starting from a dead one) ever changes a byte or takes a lock.
#pragma once

#include <sys/types.h>

#include <string>

namespace dmlp {

/// The pid holding a flock on the file with inode `inode`, or "" when none is
/// visible here (a holder on another host of a shared file system is not).
/// Matched by inode alone, as /proc/locks shows the device of the underlying
/// file system, which differs from fstat's on overlay mounts.
std::string FlockHolderPid(ino_t inode);

}  // namespace dmlp
