// End-to-end: two caphv-manager replicas with --leader-elect. The leader is
// killed with SIGKILL in the middle of provisioning (as soon as the first VM
// exists); the standby takes over once the lease expires, on caches it
// synced before it ever led (no second sync), and finishes the job. Nothing
// is done twice: one VM, one cloud-init Secret, one disk and one pool entry
// per HarvesterMachine, and every machine becomes ready.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

// The first record of a JSON log (--log-format=json) whose "msg" is `msg`.
std::optional<Object> FirstRecord(const std::string& log, const std::string& msg) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    Object record = Object::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("msg", "") == msg) return record;
  }
  return std::nullopt;
}

size_t CountRecords(const std::string& log, const std::string& msg) {
  size_t n = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    Object record = Object::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("msg", "") == msg) ++n;
  }
  return n;
}

// "ts" of a record: epoch milliseconds.
double Ts(const std::optional<Object>& record) { return record ? record->value("ts", 0.0) : 0.0; }

class FailoverTest : public E2ETest {
 protected:
  FailoverTest() { start_manager_ = false; }  // the test runs its own two
};

TEST_F(FailoverTest, StandbyTakesOverMidProvisioningWithWarmCachesAndNothingTwice) {
  const std::string lease = UniqueName("caphv-failover");
  std::vector<std::string> flags = LeaderElectionFlags(lease);
  flags.push_back("--log-format=json");
  const std::filesystem::path log_a = log_path_.string() + ".a";
  const std::filesystem::path log_b = log_path_.string() + ".b";
  std::filesystem::remove(log_a);
  std::filesystem::remove(log_b);

  // A starts first and takes the lease; B becomes ready (caches synced)
  // while A leads.
  Launched a, b;
  LaunchManager(flags, log_a, &a);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(Eventually(
      [&] { return FirstRecord(ReadWholeFile(log_a), "Successfully acquired lease").has_value(); },
      std::chrono::seconds(30), kPoll))
      << LastLines(ReadWholeFile(log_a), 40);
  LaunchManager(flags, log_b, &b);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_FALSE(FirstRecord(ReadWholeFile(log_b), "Successfully acquired lease").has_value())
      << "both replicas lead";
  auto holder = [&] {
    auto got = mgmt_->Get(kube::resources::kLeases, ns(), lease);
    return got.ok() ? Str(*got, "/spec/holderIdentity") : std::string();
  };
  const std::string leader_a = holder();
  ASSERT_FALSE(leader_a.empty());

  const Pool pool = CreatePool(8);
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", 2);

  // Mid-provisioning: the first VM exists.
  ASSERT_TRUE(Eventually([&] { return !OnHarvester(kVirtualMachines).empty(); }, kWait,
                         std::chrono::milliseconds(50)))
      << "no VM was created" << MachinesSummary() << LastLines(ReadWholeFile(log_a), 40);
  ASSERT_TRUE(a.process->running()) << "the leader had already exited";
  a.process->Stop(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const size_t vms_at_kill = OnHarvester(kVirtualMachines).size();
  size_t running_at_kill = 0;
  for (const auto& m : Machines()) running_at_kill += Str(m, "/status/phase") == "Running";
  std::cout << "killed the leader with " << vms_at_kill << " VM(s) on Harvester and "
            << running_at_kill << " of 3 Machines Running\n";

  // B takes over once the lease expires by its own clock: the lease duration
  // (6 s) from when it last saw A renew (its polls are a jittered retry
  // period, <= 2.2 s, apart), plus one more poll to notice the expiry. How
  // long that took is printed, not asserted: it is the machine's load as
  // much as the manager's.
  ASSERT_TRUE(Eventually(
      [&] { return FirstRecord(ReadWholeFile(log_b), "Successfully acquired lease").has_value(); },
      std::chrono::seconds(30), std::chrono::milliseconds(100)))
      << LastLines(ReadWholeFile(log_b), 40);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed);
  std::cout << "the standby took over " << took.count() << " ms after the kill\n";
  EXPECT_NE(holder(), leader_a);

  // From here B is the manager TearDown deletes the cluster with.
  manager_ = std::move(b.process);
  probe_port_ = b.probe_port;
  metrics_port_ = b.metrics_port;
  log_path_ = log_b;

  const auto machines = WaitForRunningMachines(3);
  ASSERT_EQ(machines.size(), 3u);

  // Warm caches: B synced once, before it tried for the lease, and did not
  // sync again once it had it.
  const std::string log = ReadWholeFile(log_b);
  const auto synced = FirstRecord(log, "Caches synced");
  const auto attempting = FirstRecord(log, "Attempting to acquire leader lease");
  const auto acquired = FirstRecord(log, "Successfully acquired lease");
  const auto workers = FirstRecord(log, "Starting workers");
  ASSERT_TRUE(synced && attempting && acquired && workers) << LastLines(log, 60);
  EXPECT_EQ(CountRecords(log, "Caches synced"), 1u);
  EXPECT_LT(Ts(synced), Ts(attempting));
  EXPECT_LT(Ts(attempting), Ts(acquired));
  EXPECT_LE(Ts(acquired), Ts(workers));
  std::cout << "standby: caches synced " << (Ts(acquired) - Ts(synced))
            << " ms before it acquired the lease; workers started " << (Ts(workers) - Ts(acquired))
            << " ms after\n";

  // Nothing done twice, right away and still a moment later.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "right away" : "5 s later");
    if (round == 1) std::this_thread::sleep_for(std::chrono::seconds(5));
    std::set<std::string> machine_names;
    for (const auto& hm : HarvesterMachines()) {
      const std::string name = NameOf(hm);
      machine_names.insert(name);
      EXPECT_TRUE(hm["status"].value("ready", false)) << name;
      const auto entries = EntriesOf(pool.name, name);
      EXPECT_EQ(entries.size(), 1u) << name;
      EXPECT_EQ(hm["status"].value("allocatedIPAddress", ""),
                entries.empty() ? "" : entries.front());
      int disks = 0;
      for (const auto& pvc : NamesOnHarvester(kube::resources::kPersistentVolumeClaims)) {
        if (pvc.rfind(name + "-disk-", 0) == 0) ++disks;
      }
      EXPECT_EQ(disks, 1) << name;
    }
    EXPECT_EQ(machine_names.size(), 3u);
    const auto vms = NamesOnHarvester(kVirtualMachines);
    EXPECT_EQ(vms.size(), 3u);
    EXPECT_EQ(std::set<std::string>(vms.begin(), vms.end()), machine_names);
    std::set<std::string> cloud_init;
    for (const auto& s : NamesOnHarvester(kube::resources::kSecrets)) {
      if (s.size() > 11 && s.compare(s.size() - 11, 11, "-cloud-init") == 0) cloud_init.insert(s);
    }
    std::set<std::string> expected;
    for (const auto& n : machine_names) expected.insert(n + "-cloud-init");
    EXPECT_EQ(cloud_init, expected);
    EXPECT_EQ(Allocated(pool.name).size(), 3u) << ::testing::PrintToString(Allocated(pool.name));
  }
}

}  // namespace
}  // namespace caphv::e2e
