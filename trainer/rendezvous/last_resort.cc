#include "trainer/rendezvous/last_resort.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <utility>

namespace dmlp {
namespace {

std::mutex last_resort_mu;
LastResort& CurrentLastResort() {
  static LastResort* last_resort = new LastResort();  // never destroyed: used up to _exit
  return *last_resort;
}

}  // namespace

void SetLastResort(LastResort last_resort) {
  std::lock_guard<std::mutex> lock(last_resort_mu);
  CurrentLastResort() = std::move(last_resort);
}

void EndRankAfterLoss(const Status& loss, int rank, std::chrono::milliseconds waited) {
  LastResort last_resort;
  {
    std::lock_guard<std::mutex> lock(last_resort_mu);
    last_resort = CurrentLastResort();
  }
  std::fprintf(stderr, "dmlp-train: rank %d still waited %llds after the loss: ending it\n", rank,
               static_cast<long long>(waited.count() / 1000));
  int code = 1;
  if (last_resort) {
    code = last_resort(loss);
  } else {
    std::fprintf(stderr, "dmlp-train: error: %s\n", loss.ToString().c_str());
  }
  std::fflush(stderr);
  _exit(code);
}

}  // namespace dmlp
