// defines: CpuTransport, CpuTransportName
//
// DMLP_CPU_TRANSPORT (PLATFORM=cpu): how the CPU platform's ranks move the
// bytes of the ordered reduction (collectives_shm.h). Never a bit: the
// all-to-all and all-gather only copy, and the one collective that adds
// (REDUCTION=allreduce) is Gloo's whichever transport moves the rest.
#pragma once

namespace dmlp {

enum class CpuTransport {
  kAuto,          // shared memory when every rank runs on this host, TCP otherwise
  kTcp,           // Gloo over TCP, also between ranks of one host
  kSharedMemory,  // shared memory; an error when a rank runs on another host
};

/// DMLP_CPU_TRANSPORT's words, in the order of CpuTransport.
inline const char* CpuTransportName(CpuTransport transport) {
  switch (transport) {
    case CpuTransport::kAuto: return "auto";
    case CpuTransport::kTcp: return "tcp";
    case CpuTransport::kSharedMemory: return "shm";
  }
  return "auto";
}

}  // namespace dmlp
