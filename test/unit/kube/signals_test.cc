// Unit test of the signal handler: a SIGTERM to the process requests stop on
// the process-wide token instead of terminating it.

#include "kube/signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace caphv::kube {
namespace {

TEST(SignalsTest, FirstSigtermRequestsStop) {
  std::stop_token token = SetupSignalHandler();
  EXPECT_FALSE(token.stop_requested());
  EXPECT_FALSE(ShutdownRequested());
  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);  // would kill the test without the handler
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!token.stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(token.stop_requested());
  EXPECT_TRUE(ShutdownRequested());
  EXPECT_TRUE(SetupSignalHandler().stop_requested());  // idempotent, same source
}

}  // namespace
}  // namespace caphv::kube
