// File: test/unit/kube/list_gate_test.cc
//
// The turns reflectors take to LIST (ListGate): one holder at a time, a
// waiter gets the turn when it is released, and a wait ends without the turn
// after max_wait or on a stop request.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <utility>

#include "kube/reflector.h"

namespace caphv::kube {
namespace {

using std::chrono::milliseconds;

TEST(ListGateTest, AWaiterGetsTheTurnWhenItIsReleased) {
  ListGate gate(std::chrono::hours(1));
  std::atomic<bool> second_held{false};
  std::thread second;
  {
    ListGate::Turn first = gate.Take({});
    ASSERT_TRUE(first.held());
    second = std::thread([&] {
      const ListGate::Turn turn = gate.Take({});
      second_held = turn.held();
    });
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_FALSE(second_held) << "two turns at once";
  }
  second.join();
  EXPECT_TRUE(second_held);
  EXPECT_TRUE(gate.Take({}).held()) << "the second turn was released too";
}

TEST(ListGateTest, AWaitEndsWithoutTheTurnAfterMaxWait) {
  ListGate gate(milliseconds(20));
  const ListGate::Turn first = gate.Take({});
  ASSERT_TRUE(first.held());
  const ListGate::Turn second = gate.Take({});
  EXPECT_FALSE(second.held());
}

TEST(ListGateTest, AStopRequestEndsTheWait) {
  ListGate gate(std::chrono::hours(1));
  const ListGate::Turn first = gate.Take({});
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(20));
    stop.request_stop();
  });
  const ListGate::Turn second = gate.Take(stop.get_token());
  stopper.join();
  EXPECT_FALSE(second.held());
}

TEST(ListGateTest, AMovedTurnIsReleasedOnce) {
  ListGate gate(milliseconds(20));
  {
    ListGate::Turn first = gate.Take({});
    ListGate::Turn moved = std::move(first);
    EXPECT_FALSE(first.held());  // NOLINT(bugprone-use-after-move): what a move leaves
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(gate.Take({}).held());
  }
  EXPECT_TRUE(gate.Take({}).held());
}

}  // namespace
}  // namespace caphv::kube
