// End-to-end: the compliance variables of the ClusterClass `harvester-rke2`
// (docs/operations.md, "Compliance: CIS profile, FIPS, STIG flavor"). A
// topology Cluster of the class with `cisProfile: cis` and `fipsRequired:
// false`, provisioned by Cluster API's topology controller, the real RKE2
// bootstrap and control-plane providers, caphv-manager and the simulated
// Harvester: its server and its agent join; the RKE2ControlPlane and the
// worker's RKE2Config carry the profile (the server with the restricted Pod
// Security admission file); the cloud-init CAPHV writes on Harvester for
// each VM creates the etcd user and sets the protect-kernel-defaults sysctls
// before RKE2 is installed, has RKE2 run with `profile: cis`, and checks no
// FIPS mode. Deleting the Cluster leaves nothing on Harvester. With
// `fipsRequired: true` on an image that does not boot in FIPS mode, the
// server never joins, and the simulated guest says why. And the flavor
// rke2-stig, rendered by clusterctl, provisions a hardened cluster.

#include <gmock/gmock.h>

#include <thread>

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

inline const GroupVersionResource kRke2Configs{"bootstrap.cluster.x-k8s.io", "v1beta1",
                                               "rke2configs", true};

constexpr char kPssPath[] = "/etc/rancher/rke2/rancher-pss.yaml";
constexpr char kRke2ConfigPath[] = "/etc/rancher/rke2/config.yaml";
constexpr char kEtcdUser[] = R"(useradd -r -c "etcd user" -s /sbin/nologin -M etcd -U || true)";
constexpr char kSysctls[] = "sysctl -p /etc/sysctl.d/90-kubelet.conf";

using ComplianceTest = TopologyFixture;

// A VM's cloud-config as CAPHV wrote it on Harvester (Secret
// <machine>-cloud-init, key userdata).
struct CloudConfig {
  std::string text;
  Object doc;  // the parsed #cloud-config
  // runcmd, each entry as the shell gets it.
  std::vector<std::string> Commands() const {
    std::vector<std::string> out;
    for (const auto& c : doc.value("runcmd", Object::array())) {
      out.push_back(c.is_string() ? c.get<std::string>() : c.dump());
    }
    return out;
  }
  // The content of write_files entry `path` ("" when absent).
  std::string File(const std::string& path) const {
    for (const auto& f : doc.value("write_files", Object::array())) {
      if (f.value("path", "") == path) return f.value("content", "");
    }
    return "";
  }
};

TEST_F(ComplianceTest, ACisClusterOfTheClassRunsItsProfileWithTheNodesPrepared) {
  ExpectCleanWorkload();
  const Pool pool = CreatePool(6);
  ApplyClusterClass();
  CreateAddonConfigMap();
  Object cluster = TopologyCluster(pool);
  cluster["spec"]["topology"]["workers"]["machineDeployments"][0]["replicas"] = 1;
  auto& variables = cluster["spec"]["topology"]["variables"];
  variables.push_back({{"name", "cisProfile"}, {"value", "cis"}});
  variables.push_back({{"name", "fipsRequired"}, {"value", false}});
  CreateCluster(cluster);

  // A server and an agent join and their Nodes are initialised.
  auto machines = WaitForInitialisedNodes(2);
  ASSERT_EQ(machines.size(), 2u);
  ASSERT_EQ(ControlPlanes(machines), 1u);
  std::cout << "2 machines running, Nodes initialised after " << SecondsSinceStart() << " s\n";

  // The control plane: the profile and the admission file RKE2 reads, the
  // node preparation, no FIPS check.
  auto c = mgmt_->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto rcp = mgmt_->Get(kControlPlanes, ns(), Str(*c, "/spec/controlPlaneRef/name"));
  ASSERT_TRUE(rcp.ok()) << rcp.status().ToString();
  const Object& spec = (*rcp)["spec"];
  EXPECT_EQ(Str(*rcp, "/spec/agentConfig/cisProfile"), "cis") << spec.dump();
  EXPECT_EQ(Str(*rcp, "/spec/agentConfig/podSecurityAdmissionConfigFile"), kPssPath);
  ASSERT_EQ(spec.value("files", Object::array()).size(), 1u) << spec.dump();
  EXPECT_EQ(Str(*rcp, "/spec/files/0/path"), kPssPath);
  EXPECT_THAT(Str(*rcp, "/spec/files/0/content"), HasSubstr("enforce: restricted"));
  const auto pre = spec.value("preRKE2Commands", std::vector<std::string>{});
  ASSERT_EQ(pre.size(), 3u) << spec.dump();
  EXPECT_EQ(pre[0], kEtcdUser);
  EXPECT_EQ(
      pre[1],
      R"(printf "vm.panic_on_oom=0\nvm.overcommit_memory=1\nkernel.panic=10\nkernel.panic_on_oops=1\n" > /etc/sysctl.d/90-kubelet.conf)");
  EXPECT_EQ(pre[2], kSysctls);

  for (const auto& m : machines) {
    const std::string name = NameOf(m);
    const bool server =
        m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel);
    SCOPED_TRACE(name + (server ? " (server)" : " (agent)"));
    // Its RKE2Config (the worker's from the class's RKE2ConfigTemplate).
    auto config = mgmt_->Get(kRke2Configs, ns(), Str(m, "/spec/bootstrap/configRef/name"));
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_EQ(Str(*config, "/spec/agentConfig/cisProfile"), "cis") << (*config)["spec"].dump();
    EXPECT_THAT((*config)["spec"].value("preRKE2Commands", std::vector<std::string>{}),
                Contains(kEtcdUser));

    // The cloud-init of its VM on Harvester.
    auto hm = HarvesterMachine(Str(m, "/spec/infrastructureRef/name"));
    ASSERT_TRUE(hm);
    auto secret = harvester_->Get(kSecrets, target_ns_, NameOf(*hm) + "-cloud-init");
    ASSERT_TRUE(secret.ok()) << secret.status().ToString();
    CloudConfig cc;
    cc.text = kube::Base64Decode(Str(*secret, "/data/userdata")).value_or("");
    // The RKE2 providers' cloud-config: after the jinja header cloud-init
    // renders the node's host name with.
    ASSERT_THAT(cc.text, ::testing::StartsWith("## template: jinja\n#cloud-config\n"));
    auto docs = api::ParseYaml(cc.text);
    ASSERT_TRUE(docs.ok() && !docs->empty()) << cc.text;
    cc.doc = docs->front();
    const auto commands = cc.Commands();
    // The node is prepared before RKE2 is installed.
    const auto at = [&](std::string_view needle) {
      for (size_t i = 0; i < commands.size(); ++i) {
        if (commands[i].find(needle) != std::string::npos) return static_cast<long>(i);
      }
      return -1L;
    };
    const long user = at("useradd -r -c \"etcd user\"");
    const long sysctls = at(kSysctls);
    const long install = at("INSTALL_RKE2_VERSION");
    ASSERT_GE(user, 0) << cc.text;
    ASSERT_GE(sysctls, 0) << cc.text;
    ASSERT_GE(install, 0) << cc.text;
    EXPECT_LT(user, install) << cc.text;
    EXPECT_LT(sysctls, install) << cc.text;
    EXPECT_THAT(cc.text, Not(HasSubstr("fips_enabled")));
    // RKE2 runs with the profile; the server reads the restricted admission
    // configuration.
    auto rke2 = api::ParseYaml(cc.File(kRke2ConfigPath));
    ASSERT_TRUE(rke2.ok() && !rke2->empty()) << cc.text;
    EXPECT_EQ(rke2->front().value("profile", ""), "cis") << cc.File(kRke2ConfigPath);
    if (server) {
      EXPECT_EQ(rke2->front().value("pod-security-admission-config-file", ""), kPssPath);
      EXPECT_THAT(cc.File(kPssPath), HasSubstr("enforce: restricted"));
    } else {
      EXPECT_EQ(cc.File(kPssPath), "");
    }
  }

  DeleteClusterExpectingNothingLeft();
}

// The flavor rke2-stig as a user applies it: rendered by clusterctl
// (generate yaml, the flavor's variables from the environment) and applied
// with kubectl. Its server and worker join; their VMs boot UEFI with Secure
// Boot (SMM on) and a persistent TPM; RKE2 runs with the CIS profile, the
// audit policy and its retention, TLS 1.2 at least and the kubelets'
// hardening flags, and the nodes are prepared before the install.
TEST_F(ComplianceTest, TheRke2StigFlavorProvisionsAHardenedCluster) {
  ExpectCleanWorkload();
  DeleteAddonObjectsFromWorkload();
  const Pool pool = CreatePool(6);
  const std::string dir = log_path_.parent_path().string();
  const std::string rendered = dir + "/e2e-" + ns() + "-rke2-stig.yaml";
  const std::string kubectl =
      "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
  const std::string harvester_kubeconfig =
      kube::Base64Encode(ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kHarvester)));
  std::string out;
  ASSERT_EQ(caphv::testing::RunCommand(
                "env CLUSTERCTL_DISABLE_VERSIONCHECK=true NAMESPACE=" + ns() +
                    " CLUSTER_NAME=" + cluster_ +
                    " KUBERNETES_VERSION=v1.31.4 CONTROL_PLANE_MACHINE_COUNT=1"
                    " WORKER_MACHINE_COUNT=1 HARVESTER_KUBECONFIG_B64=" +
                    harvester_kubeconfig + " TARGET_HARVESTER_NAMESPACE=" + target_ns_ +
                    " VM_IMAGE_NAME=default/image-ubuntu VM_NETWORK=default/vlan100"
                    " SSH_KEYPAIR=default/demo-key IP_POOL_NAME=" +
                    pool.name + " clusterctl generate yaml --from " +
                    caphv::testing::SourcePath("templates/cluster-template-rke2-stig.yaml") + " >" +
                    rendered + " && " + kubectl + "apply -f " + rendered + " 2>&1",
                &out),
            0)
      << out;

  auto machines = WaitForInitialisedNodes(2);
  ASSERT_EQ(machines.size(), 2u);
  ASSERT_EQ(ControlPlanes(machines), 1u);
  std::cout << "2 machines running, Nodes initialised after " << SecondsSinceStart() << " s\n";

  for (const auto& m : machines) {
    const bool server =
        m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel);
    const std::string vm = Str(m, "/spec/infrastructureRef/name");
    SCOPED_TRACE(vm + (server ? " (server)" : " (agent)"));
    // Secure Boot and a persistent TPM.
    auto got = harvester_->Get(kVirtualMachines, target_ns_, vm);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const Object& domain = (*got)["spec"]["template"]["spec"]["domain"];
    EXPECT_EQ(domain["firmware"]["bootloader"]["efi"]["secureBoot"], true) << domain.dump();
    EXPECT_EQ(domain["features"]["smm"]["enabled"], true) << domain.dump();
    EXPECT_EQ(domain["devices"]["tpm"]["persistent"], true) << domain.dump();

    // The cloud-init: the nodes prepared, RKE2's hardened config.
    auto secret = harvester_->Get(kSecrets, target_ns_, vm + "-cloud-init");
    ASSERT_TRUE(secret.ok()) << secret.status().ToString();
    CloudConfig cc;
    cc.text = kube::Base64Decode(Str(*secret, "/data/userdata")).value_or("");
    auto docs = api::ParseYaml(cc.text);
    ASSERT_TRUE(docs.ok() && !docs->empty()) << cc.text;
    cc.doc = docs->front();
    EXPECT_THAT(cc.Commands(), Contains(kEtcdUser)) << cc.text;
    EXPECT_THAT(cc.Commands(), Contains(kSysctls)) << cc.text;
    auto rke2 = api::ParseYaml(cc.File(kRke2ConfigPath));
    ASSERT_TRUE(rke2.ok() && !rke2->empty()) << cc.text;
    const Object& config = rke2->front();
    EXPECT_EQ(config.value("profile", ""), "cis") << config.dump();
    const auto kubelet = config.value("kubelet-arg", std::vector<std::string>{});
    for (const char* arg : {"tls-min-version=VersionTLS12", "streaming-connection-idle-timeout=5m",
                            "make-iptables-util-chains=true"}) {
      EXPECT_THAT(kubelet, Contains(arg)) << config.dump();
    }
    if (!server) continue;
    EXPECT_EQ(config.value("pod-security-admission-config-file", ""), kPssPath);
    EXPECT_THAT(cc.File(kPssPath), HasSubstr("enforce: restricted"));
    const std::string audit = config.value("audit-policy-file", "");
    ASSERT_FALSE(audit.empty()) << config.dump();
    EXPECT_THAT(cc.File(audit), HasSubstr("level: Metadata"));
    const auto apiserver = config.value("kube-apiserver-arg", std::vector<std::string>{});
    for (const char* arg : {"tls-min-version=VersionTLS12", "audit-log-maxage=30",
                            "audit-log-maxbackup=10", "audit-log-maxsize=100"}) {
      EXPECT_THAT(apiserver, Contains(arg)) << config.dump();
    }
  }

  DeleteClusterExpectingNothingLeft();
  DeleteAddonObjectsFromWorkload();
}

// fipsRequired on an image that does not boot in FIPS mode (the bed's
// ubuntu image; config/harvester-sim/env/default.yaml marks FIPS images
// `fips: true`): the server's cloud-init stops at the class's guard before
// installing RKE2, so its Machine never gets a Node, and the simulated guest
// says why in a Warning Event on its VMI. Deleting the Cluster still leaves
// nothing.
TEST_F(ComplianceTest, FipsRequiredOnANonFipsImageNeverJoinsAndSaysWhy) {
  ExpectCleanWorkload();
  const Pool pool = CreatePool(4);
  ApplyClusterClass();
  CreateAddonConfigMap();
  Object cluster = TopologyCluster(pool);
  cluster["spec"]["topology"]["workers"]["machineDeployments"][0]["replicas"] = 0;
  cluster["spec"]["topology"]["variables"].push_back({{"name", "fipsRequired"}, {"value", true}});
  CreateCluster(cluster);

  // The server's VM runs; its guest stops before RKE2.
  std::string vm, why;
  const bool warned = Eventually(
      [&] {
        const auto hms = HarvesterMachines();
        if (hms.size() != 1) return false;
        vm = NameOf(hms[0]);
        kube::ListOptions opts;
        opts.field_selector = "involvedObject.name=" + vm;
        auto events = harvester_->List(kube::resources::kEvents, target_ns_, opts);
        if (!events.ok()) return false;
        for (const auto& e : events->items) {
          if (e.value("type", "") == "Warning" && e.value("reason", "") == "RKE2NotInstalled") {
            why = e.value("message", "");
            return true;
          }
        }
        return false;
      },
      kWait, kPoll);
  ASSERT_TRUE(warned) << MachinesSummary();
  EXPECT_THAT(why, HasSubstr("/proc/sys/crypto/fips_enabled is 0")) << why;
  EXPECT_THAT(why, HasSubstr("FIPS mode required but not enabled on this node image")) << why;
  auto secret = harvester_->Get(kSecrets, target_ns_, vm + "-cloud-init");
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_THAT(kube::Base64Decode(Str(*secret, "/data/userdata")).value_or(""),
              HasSubstr("/proc/sys/crypto/fips_enabled"));

  // ... and never joins: no nodeRef, no Node, the control plane not
  // initialised.
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const auto machines = Machines();
  ASSERT_EQ(machines.size(), 1u) << MachinesSummary();
  EXPECT_EQ(Str(machines[0], "/status/nodeRef/name"), "") << MachinesSummary();
  EXPECT_TRUE(workload_->Get(kNodes, "", vm).status().IsNotFound());
  EXPECT_FALSE(ServingSecretExists());

  DeleteClusterExpectingNothingLeft();
}

}  // namespace
}  // namespace caphv::e2e::topology
