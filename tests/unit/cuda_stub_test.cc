// A build without CUDA: PLATFORM=cuda is the clear error users see, exactly.
#include <gtest/gtest.h>

#include "rendezvous_test_util.h"
#include "trainer/backend.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {
namespace {

TEST(CudaStub, PlatformUnavailableText) {
  auto rendezvous = Rendezvous::Join(testing::RendezvousTestOptions(testing::FreePort(), 0, 1));
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.status().ToString();
  Plan plan;
  plan.platform = Platform::kCuda;
  plan.model = {4, 8, 1, 3};
  auto layout = StateLayout::Create(plan.model);
  ASSERT_TRUE(layout.ok());
  const auto backend = CreateCudaBackend(plan, *layout, **rendezvous);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().ToString(), "PLATFORM_UNAVAILABLE: dmlp was built without CUDA");
  EXPECT_TRUE((*rendezvous)->Close().ok());
}

}  // namespace
}  // namespace dmlp
