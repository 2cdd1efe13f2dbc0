// File: test/integration/sim/sim_fixture.h
//
// Fixture for the simulator's integration tests: installs the simulated
// Harvester once, and gives each test a namespace of its own (labelled
// sim.caphv.io/dedicated=true) with its own `caphv-sim run --namespace`
// process, so tests are independent of each other and of a simulator the
// bed itself may run.

#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "support/process.h"
#include "support/testbed.h"

namespace caphv::sim::testing {

// A child `caphv-sim run` process, stopped with SIGTERM when destroyed.
class SimProcess {
 public:
  SimProcess(const std::string& ns, const std::vector<std::string>& extra_args);
  ~SimProcess();
  SimProcess(const SimProcess&) = delete;
  SimProcess& operator=(const SimProcess&) = delete;
  bool running() { return child_ && child_->running(); }
  const std::string& log_path() const { return log_path_; }
  // Sends SIGTERM and waits; returns the exit code.
  std::optional<int> Stop();

 private:
  std::string log_path_;
  std::optional<caphv::testing::ChildProcess> child_;
};

class SimTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  void SetUp() override;
  void TearDown() override;
  // Starts the simulator for this test's namespace (waits until it serves).
  void StartSim(const std::vector<std::string>& extra_args = {});

  // A VM in the shape CAPHV builds (runStrategy Always, image disk, Multus NIC,
  // cloud-init Secret); `static_ip` empty = DHCP.
  kube::Object MakeVm(const std::string& name, const std::string& static_ip) const;
  // The cloud-init Secret the VM references.
  kube::Object MakeCloudInit(const std::string& name, const std::string& static_ip) const;
  // Creates the Secret and the VM; returns the VM as created.
  kube::StatusOr<kube::Object> CreateVm(const std::string& name, const std::string& static_ip);

  kube::StatusOr<kube::Object> Get(const kube::GroupVersionResource& gvr,
                                   const std::string& name) const;

  std::shared_ptr<kube::Client> h_;
  std::shared_ptr<kube::Client> w_;
  std::unique_ptr<caphv::testing::ScopedNamespace> ns_;
  std::unique_ptr<SimProcess> sim_;
};

}  // namespace caphv::sim::testing
