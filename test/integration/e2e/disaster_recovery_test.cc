// End-to-end: disaster recovery of the management cluster with `caphv
// backup` and `caphv restore` (docs/cli.md, docs/operations.md "Disaster
// recovery"), and the operations guide's script beside them.
// caphv-manager provisions a pool-mode cluster (one control-plane Machine, a
// MachineDeployment of two workers) on the bed's management cluster. Two
// backups of it are taken: the operations guide's script (`kubectl get
// <kind> -A -o yaml`, plus the Secrets labelled with a cluster name, plus
// HarvesterMachineTemplates, which that script misses), and `caphv backup
// --cluster` to a .tar.gz, which also records the clusters' IPPool entries.
// Then the management cluster is lost: its caphv-manager is killed and its
// Cluster paused, so the bed's Cluster API manager leaves it alone (deleting
// anything there would make Cluster API and CAPHV delete VMs).
//
// A fresh management cluster (`hack/testbed add-cluster --name mgmt2
// --with-capi`: its own apiserver, so a new kube-system uid, a controller
// manager with the garbage collector, and the Cluster API core manager) gets
// CAPHV's CRDs. Then:
//   - `caphv restore --dry-run` plans the namespace and every object, and
//     writes nothing;
//   - the guide's first restore command, verbatim, shows the hazard: the
//     garbage collector of the new cluster deletes the HarvesterCluster,
//     whose ownerReference names a Cluster uid that does not exist there
//     (with CAPHV running this deletes what the cluster has on Harvester);
//   - the guide's backup holds the objects caphv's does (but the identity
//     Secret), and the filtered restore of docs/operations.md is accepted by
//     the new cluster (server-side dry run: the guide's path stays checked
//     without restoring twice);
//   - `caphv restore` of the tarball, a new caphv-manager against the new
//     cluster: every owner reference points at an object of the new cluster
//     at once, the garbage collector deletes none of the restored objects,
//     the Cluster is unpaused by the restore;
//   - every machine is ready again with the same VM (uid), VMI and address,
//     the pools as the backup recorded them, the HarvesterCluster ready with
//     the same endpoint and the old management cluster id; the new manager
//     created nothing; `caphv restore` run again changes nothing;
//   - the workers are scaled 2 -> 3 -> 1 and the Cluster deleted: nothing is
//     left on Harvester and every pool entry is released.

#include "disaster_recovery_fixture.h"

namespace caphv::e2e {
namespace {

TEST_F(DisasterRecoveryTest, BackupRestoredOnAFreshManagementClusterAdoptsEverything) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t0).count();
  };

  // ---- A cluster made by caphv-manager on the old management cluster.
  auto t0 = Clock::now();
  const auto pools = CreatePools({5, 3});
  const Pool& vm_pool = pools[0];
  const Pool& lb_pool = pools[1];
  Object spec = HarvesterClusterSpec();
  spec["loadBalancerConfig"] = {{"ipamType", "pool"}, {"ipPoolRef", lb_pool.name}};
  spec["vmNetworkConfig"] = VmNetworkConfig({vm_pool});
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", 2);
  ASSERT_EQ(WaitForRunningMachines(3).size(), 3u);
  const Object hc_before = WaitForClusterReady();
  ASSERT_FALSE(HasFailure());
  std::cout << "[ dr ] provisioned on the old management cluster in " << seconds_since(t0)
            << " s\n";

  std::map<std::string, std::string> vm_uids, vmi_uids;
  for (const auto& vm : OnHarvester(kVirtualMachines)) vm_uids[NameOf(vm)] = kube::UidOf(vm);
  for (const auto& vmi : OnHarvester(kVirtualMachineInstances)) {
    vmi_uids[NameOf(vmi)] = kube::UidOf(vmi);
  }
  ASSERT_EQ(vm_uids.size(), 3u);
  ASSERT_EQ(vmi_uids.size(), 3u);
  const auto pvcs_before = NamesOnHarvester(kPvcGvr);
  const auto vm_entries = Allocated(vm_pool.name);
  const auto lb_entries = Allocated(lb_pool.name);
  ASSERT_EQ(vm_entries.size(), 3u);
  ASSERT_EQ(lb_entries.size(), 1u);
  const std::string lb_name = ns() + "-" + cluster_ + "-lb";
  auto lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  const std::string lb_uid = kube::UidOf(*lb);
  const std::string id_pointer =
      "/metadata/annotations/harvester.infrastructure.cluster.x-k8s.io~1management-cluster-id";
  const std::string old_id = Str(hc_before, id_pointer);
  auto old_kube_system = mgmt_->Get(kube::resources::kNamespaces, "", "kube-system");
  ASSERT_TRUE(old_kube_system.ok());
  ASSERT_EQ(old_id, kube::UidOf(*old_kube_system));
  // Every entry ends in the hash of the old management cluster id.
  const std::string suffix =
      vm_entries.begin()->second.substr(vm_entries.begin()->second.rfind('@'));
  for (const auto& [ip, owner] : vm_entries) {
    EXPECT_EQ(owner.substr(owner.rfind('@')), suffix) << ip;
  }

  // ---- The backup, as the operations guide's script makes it.
  std::string out;
  ASSERT_EQ(RunScript("backup.sh", kBackupScript, Kubeconfig(caphv::testing::kMgmt), "", &out), 0)
      << out;
  std::filesystem::path backup;
  for (const auto& e : std::filesystem::directory_iterator(work_dir_)) {
    if (e.is_directory() && e.path().filename().string().rfind("caphv-backup-", 0) == 0) {
      backup = e.path();
    }
  }
  ASSERT_FALSE(backup.empty()) << out;
  std::cout << "[ dr ] backup in " << backup.string() << "\n";

  // ---- The backup, as caphv makes it: this Cluster's objects, to a tarball.
  t0 = Clock::now();
  const std::filesystem::path tarball = work_dir_ / "caphv-backup.tar.gz";
  out.clear();
  ASSERT_EQ(
      RunCommand(Caphv("backup --kubeconfig " + Quote(Kubeconfig(caphv::testing::kMgmt)) + " -n " +
                       ns() + " --cluster " + cluster_ + " -o " + Quote(tarball.string())),
                 &out),
      0)
      << out;
  std::cout << "[ dr ] caphv backup in " << seconds_since(t0) << " s:\n" << out;
  const BackupContents saved = ReadBackup(tarball);
  ASSERT_FALSE(HasFailure());
  // The identity Secret is in it (the HarvesterCluster names it), and the
  // record holds both pools' entries as Harvester has them.
  EXPECT_TRUE(saved.names.contains("Secret " + ns() + "/hv-identity"));
  std::map<std::string, std::string> recorded;
  for (const auto& e : saved.allocations) recorded[e.ip] = e.owner;
  std::map<std::string, std::string> pooled = vm_entries;
  pooled.insert(lb_entries.begin(), lb_entries.end());
  EXPECT_EQ(recorded, pooled);
  // The guide's backup holds the same objects of this namespace, but the
  // identity Secret, which carries no cluster label.
  std::set<std::string> in_guide_backup = ReadBackup(backup, ns()).names;
  in_guide_backup.insert("Secret " + ns() + "/hv-identity");
  EXPECT_EQ(in_guide_backup, saved.names);

  // ---- The management cluster is lost: its caphv-manager dies, its Cluster
  // API manager no longer acts for the cluster. Nothing is deleted there.
  old_mgmt_ = mgmt_;
  KillManager();
  PauseCluster(old_mgmt_, true);
  old_paused_ = true;
  ASSERT_FALSE(HasFailure());

  // ---- A fresh management cluster with Cluster API.
  t0 = Clock::now();
  ASSERT_EQ(RunCommand(Bed(std::string("add-cluster --with-capi --name ") + kNewMgmt), &out), 0)
      << out;
  mgmt2_added_ = true;
  std::cout << "[ dr ] management cluster " << kNewMgmt << " added in " << seconds_since(t0)
            << " s\n";
  const std::string kubeconfig2 = Kubeconfig(kNewMgmt);
  auto client2 = kube::Client::New(Testbed::Get().Config(kNewMgmt));
  ASSERT_TRUE(client2.ok()) << client2.status().ToString();
  const std::shared_ptr<kube::Client> mgmt2 = *client2;
  auto new_kube_system = mgmt2->Get(kube::resources::kNamespaces, "", "kube-system");
  ASSERT_TRUE(new_kube_system.ok());
  ASSERT_NE(kube::UidOf(*new_kube_system), old_id) << "not a fresh management cluster";

  // CAPHV's CRDs (the install).
  const std::string kubectl2 = "kubectl --kubeconfig " + Quote(kubeconfig2) + " ";
  ASSERT_EQ(RunCommand(kubectl2 + "apply --server-side -f " + SourcePath("config/crd/bases") +
                           " && " + kubectl2 + "wait --for condition=established " +
                           "--timeout=60s -f " + SourcePath("config/crd/bases"),
                       &out),
            0)
      << out;
  const std::string restore =
      Caphv("restore --kubeconfig " + Quote(kubeconfig2) + " -f " + Quote(tarball.string()));

  // ---- What caphv restore would do: the namespace and every object, nothing
  // written.
  out.clear();
  ASSERT_EQ(RunCommand(restore + " --dry-run 2>/dev/null", &out), 0) << out;
  EXPECT_NE(out.find("create Namespace " + ns() + "\n"), std::string::npos) << out;
  for (const auto& name : saved.names) {
    EXPECT_NE(out.find("create " + name + "\n"), std::string::npos) << name << "\n" << out;
  }
  EXPECT_TRUE(mgmt2->Get(kube::resources::kNamespaces, "", ns()).status().IsNotFound());

  // The backup's namespaces, as the guide makes them.
  ASSERT_EQ(
      RunScript("namespaces.sh", kNamespacesScript, kubeconfig2, Quote(backup.string()), &out), 0)
      << out;

  // ---- The hazard, with the guide's first restore command verbatim (no
  // CAPHV runs on the new cluster yet, so nothing acts on it): the garbage
  // collector deletes the HarvesterCluster, whose owner is a Cluster uid of
  // the lost management cluster.
  const std::string hc_file =
      Quote((backup / "harvesterclusters.infrastructure.cluster.x-k8s.io.yaml").string());
  ASSERT_EQ(RunCommand(kubectl2 + "apply -f " + hc_file, &out), 0) << out;
  t0 = Clock::now();
  Object hc2;
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = mgmt2->Get(kHarvesterClusters, ns(), cluster_);
        if (!got.ok()) return false;
        hc2 = *got;
        return IsDeleting(hc2);
      },
      kWait, kPoll))
      << "the garbage collector did not delete the HarvesterCluster restored with the owner "
      << ::testing::PrintToString(OwnersOf(hc2));
  std::cout << "[ dr ] the garbage collector deleted the HarvesterCluster restored verbatim after "
            << seconds_since(t0) << " s (owner " << ::testing::PrintToString(OwnersOf(hc2))
            << ")\n";
  ASSERT_TRUE(mgmt2
                  ->Patch(kHarvesterClusters, ns(), cluster_, kube::PatchType::kMerge,
                          {{"metadata", {{"finalizers", nullptr}}}})
                  .ok());
  ASSERT_TRUE(Eventually(
      [&] { return mgmt2->Get(kHarvesterClusters, ns(), cluster_).status().IsNotFound(); },
      std::chrono::seconds(30), kPoll));

  // ---- The guide's filtered restore is accepted by the new management
  // cluster (server-side dry run: nothing is made).
  t0 = Clock::now();
  const std::string dry_run_script = DryRun(kRestoreScript);
  out.clear();
  ASSERT_EQ(RunScript("restore-dry-run.sh", dry_run_script.c_str(), kubeconfig2,
                      Quote(backup.string()), &out),
            0)
      << out;
  EXPECT_NE(out.find("cluster.cluster.x-k8s.io/" + cluster_ + " created (server dry run)"),
            std::string::npos)
      << out;
  EXPECT_TRUE(mgmt2->Get(kClusters, ns(), cluster_).status().IsNotFound());
  std::cout << "[ dr ] the guide's restore, server-side dry run, in " << seconds_since(t0)
            << " s\n";

  // ---- The restore: a new caphv-manager for the new management cluster,
  // then caphv restore.
  mgmt_ = mgmt2;
  manager_kubeconfig_ = kubeconfig2;
  moved_ = true;
  StartManager();
  ASSERT_FALSE(HasFailure());
  // The identity Secret made again by hand (as the guide's restore has it
  // done), with a note: not the backup's. The restore stops before writing
  // anything; with --force it keeps that Secret and restores the rest.
  t0 = Clock::now();
  out.clear();
  ASSERT_EQ(
      RunCommand(
          kubectl2 + "-n " + ns() + " create secret generic hv-identity --from-file=kubeconfig=" +
              Quote(Kubeconfig(caphv::testing::kHarvester)) + " --from-literal=note=made-by-hand",
          &out),
      0)
      << out;
  out.clear();
  EXPECT_EQ(RunCommand(restore, &out), 1) << out;
  EXPECT_NE(out.find("conflict: Secret " + ns() + "/hv-identity exists with other content"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("nothing was written"), std::string::npos) << out;
  EXPECT_TRUE(mgmt2->Get(kClusters, ns(), cluster_).status().IsNotFound());
  out.clear();
  ASSERT_EQ(RunCommand(restore + " --force", &out), 0) << out;
  std::cout << "[ dr ] caphv restore in " << seconds_since(t0) << " s:\n" << out;
  auto identity = mgmt2->Get(kSecretGvr, ns(), "hv-identity");
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_TRUE((*identity)["data"].contains("note")) << "the Secret made by hand was replaced";
  EXPECT_NE(out.find("unpaused Cluster " + ns() + "/" + cluster_ + "\n"), std::string::npos) << out;
  std::string deleting;
  const auto restored = RestoredObjects(mgmt2, &deleting);
  EXPECT_EQ(restored, RestoredObjects(old_mgmt_, nullptr));
  EXPECT_EQ(deleting, "");
  // Every owner reference names an object of the new cluster already.
  EXPECT_EQ(DanglingOwners(), "");
  EXPECT_FALSE(OwnersOf(HarvesterClusterObject()).empty());

  // The garbage collector has looked at them: a witness owned by an object
  // that does not exist is deleted, the restored objects are not.
  const Object witness = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", "dr-gc-witness"},
        {"namespace", ns()},
        {"ownerReferences", Object::array({{{"apiVersion", "v1"},
                                            {"kind", "ConfigMap"},
                                            {"name", "absent"},
                                            {"uid", "00000000-0000-0000-0000-00000000dead"}}})}}}};
  ASSERT_TRUE(mgmt2->Create(kConfigMapGvr, ns(), witness).ok());
  EXPECT_TRUE(Eventually(
      [&] { return mgmt2->Get(kConfigMapGvr, ns(), "dr-gc-witness").status().IsNotFound(); }, kWait,
      kPoll))
      << "the garbage collector of " << kNewMgmt << " does not act";
  deleting.clear();
  EXPECT_EQ(RestoredObjects(mgmt2, &deleting), restored);
  EXPECT_EQ(deleting, "");
  // The check of docs/operations.md prints nothing.
  out.clear();
  EXPECT_EQ(RunCommand(kubectl2 + "get clusters,machinedeployments,machinesets,machines," +
                           "harvesterclusters,harvestermachines -A -o jsonpath='{range " +
                           ".items[?(@.metadata.deletionTimestamp)]}{.kind}/{.metadata.name}" +
                           "{\"\\n\"}{end}'",
                       &out),
            0);
  EXPECT_EQ(out, "");

  // Unpaused by the restore: Cluster API and CAPHV take the cluster over.
  auto cluster2 = mgmt2->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(cluster2.ok()) << cluster2.status().ToString();
  EXPECT_FALSE((*cluster2)["spec"].value("paused", false));
  std::string why;
  EXPECT_TRUE(Eventually(
      [&] {
        why.clear();
        const auto hms = HarvesterMachines();
        if (hms.size() != 3) why += " " + std::to_string(hms.size()) + " HarvesterMachines";
        for (const auto& hm : hms) {
          if (!ConditionTrue(hm, "Ready") || !ConditionTrue(hm, "VMProvisioningReady") ||
              !hm.value("status", Object::object()).value("ready", false)) {
            why += " " + NameOf(hm) + " not ready";
          }
        }
        const Object hc = HarvesterClusterObject();
        if (!hc.value("status", Object::object()).value("ready", false)) {
          why += " HarvesterCluster not ready";
        }
        return why.empty();
      },
      kWait, kPoll))
      << why << MachinesSummary();
  const auto machines = WaitForRunningMachines(3);
  std::cout << "[ dr ] every machine ready again " << seconds_since(t0)
            << " s after the restore began\n";
  ASSERT_FALSE(HasFailure());

  // Nothing made again, nothing replaced, nothing restarted.
  std::map<std::string, std::string> vm_uids_now, vmi_uids_now;
  for (const auto& vm : OnHarvester(kVirtualMachines)) vm_uids_now[NameOf(vm)] = kube::UidOf(vm);
  for (const auto& vmi : OnHarvester(kVirtualMachineInstances)) {
    vmi_uids_now[NameOf(vmi)] = kube::UidOf(vmi);
  }
  EXPECT_EQ(vm_uids_now, vm_uids);
  EXPECT_EQ(vmi_uids_now, vmi_uids);
  EXPECT_EQ(NamesOnHarvester(kPvcGvr), pvcs_before);
  EXPECT_EQ(Allocated(vm_pool.name), vm_entries);
  EXPECT_EQ(Allocated(lb_pool.name), lb_entries);
  lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_EQ(kube::UidOf(*lb), lb_uid);
  for (const auto& hm : HarvesterMachines()) {
    const Object st = hm.value("status", Object::object());
    const std::string ip = st.value("allocatedIPAddress", "");
    const auto entry = vm_entries.find(ip);
    ASSERT_NE(entry, vm_entries.end()) << NameOf(hm) << " has " << ip;
    EXPECT_EQ(entry->second, ns() + "/" + NameOf(hm) + suffix);
    EXPECT_EQ(st.value("allocatedPoolRef", ""), vm_pool.name);
    auto vm = harvester_->Get(kVirtualMachines, target_ns_, NameOf(hm));
    ASSERT_TRUE(vm.ok());
    EXPECT_EQ(Str(hm, "/spec/providerID"), "harvester://" + kube::UidOf(*vm));
  }
  const Object hc = HarvesterClusterObject();
  EXPECT_EQ(hc.value("spec", Object::object()).value("controlPlaneEndpoint", Object::object()),
            hc_before["spec"]["controlPlaneEndpoint"]);
  EXPECT_EQ(Str(hc, id_pointer), old_id);
  EXPECT_EQ(Metric("caphv_machine_create_total"), 0.0);
  EXPECT_EQ(Metric("caphv_ippool_allocations_total"), 0.0);
  // The pools hold what the backup recorded.
  std::map<std::string, std::string> pooled_now = Allocated(vm_pool.name);
  for (const auto& [ip, owner] : Allocated(lb_pool.name)) pooled_now[ip] = owner;
  EXPECT_EQ(pooled_now, recorded);

  // The restored objects have owners again, all of the new cluster, and the
  // garbage collector left every one of them alone.
  EXPECT_TRUE(Eventually([&] { return DanglingOwners().empty(); }, kWait, kPoll))
      << DanglingOwners();
  for (const auto& hm : HarvesterMachines()) {
    EXPECT_FALSE(OwnersOf(hm).empty()) << NameOf(hm);
  }
  EXPECT_FALSE(OwnersOf(HarvesterClusterObject()).empty());
  deleting.clear();
  EXPECT_EQ(RestoredObjects(mgmt2, &deleting), restored);
  EXPECT_EQ(deleting, "");

  // The restore again: everything is there, nothing is written.
  const auto writes = CaphvWrites(mgmt2);
  EXPECT_EQ(writes.size(), saved.names.size() - 1) << "every object but the kept Secret";
  out.clear();
  ASSERT_EQ(RunCommand(restore + " --force", &out), 0) << out;
  EXPECT_EQ(CaphvWrites(mgmt2), writes);
  EXPECT_NE(out.find("restored from " + tarball.string() + ": 0 created, " +
                     std::to_string(saved.names.size()) + " already there\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("owner references"), std::string::npos) << out;
  EXPECT_EQ(out.find("unpaused"), std::string::npos) << out;

  t0 = Clock::now();
  // ---- Scale the workers up: one new VM and one new address, with the
  // cluster's id (the old management cluster's) in the entry.
  ScaleMachineDeployment(cluster_ + "-md", 3);
  WaitForRunningMachines(4);
  EXPECT_EQ(OnHarvester(kVirtualMachines).size(), 4u);
  const auto entries4 = Allocated(vm_pool.name);
  EXPECT_EQ(entries4.size(), 4u);
  for (const auto& [ip, owner] : entries4) {
    EXPECT_EQ(owner.substr(owner.rfind('@')), suffix) << ip << " " << owner;
  }
  for (const auto& [name, uid] : vm_uids) {
    auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
    EXPECT_TRUE(vm.ok() && kube::UidOf(*vm) == uid) << name << " was replaced";
  }

  // ... and down to one: the removed machines leave no VM, disk or address.
  ScaleMachineDeployment(cluster_ + "-md", 1);
  WaitForRunningMachines(2);
  EXPECT_TRUE(Eventually(
      [&] {
        return OnHarvester(kVirtualMachines).size() == 2 && Allocated(vm_pool.name).size() == 2 &&
               OnHarvester(kPvcGvr).size() == 2;
      },
      kWait, kPoll))
      << "VMs " << ::testing::PrintToString(NamesOnHarvester(kVirtualMachines)) << " PVCs "
      << ::testing::PrintToString(NamesOnHarvester(kPvcGvr)) << " entries "
      << ::testing::PrintToString(Allocated(vm_pool.name));

  // ---- Deleted on the new management cluster: nothing left on Harvester.
  DeleteClusterAndWait();
  EXPECT_TRUE(Eventually(
      [&] {
        return OnHarvester(kVirtualMachines).empty() && OnHarvester(kPvcGvr).empty() &&
               OnHarvester(kLoadBalancers).empty() && Allocated(vm_pool.name).empty() &&
               Allocated(lb_pool.name).empty();
      },
      kWait, kPoll))
      << "VMs " << ::testing::PrintToString(NamesOnHarvester(kVirtualMachines)) << " PVCs "
      << ::testing::PrintToString(NamesOnHarvester(kPvcGvr)) << " LBs "
      << ::testing::PrintToString(NamesOnHarvester(kLoadBalancers)) << " VM pool "
      << ::testing::PrintToString(Allocated(vm_pool.name)) << " LB pool "
      << ::testing::PrintToString(Allocated(lb_pool.name));
  for (const auto& s : OnHarvester(kSecretGvr)) {
    EXPECT_EQ(NameOf(s).find("-cloud-init"), std::string::npos) << NameOf(s) << " left";
  }
  std::cout << "[ dr ] scaled 2 -> 3 -> 1 and deleted in " << seconds_since(t0) << " s\n";
}

}  // namespace
}  // namespace caphv::e2e
