// Integration tests: the simulator playing RKE2 and its kubelet on each VM,
// fed the user data the RKE2 bootstrap provider (v0.21.1) writes, against
// the real test bed: Nodes with RKE2's labels, Lease heartbeats,
// kube-system/rke2-serving and mirror pods, refused joins, and a dead guest
// whose Node the real node lifecycle controller marks Unknown.

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "kube/base64.h"
#include "sim/env.h"
#include "sim_fixture.h"
#include "support/process.h"

namespace caphv::sim::testing {
namespace {

using caphv::testing::Eventually;
using caphv::testing::Testbed;
using caphv::testing::UniqueName;
using kube::Object;
using std::chrono::seconds;

constexpr char kVersion[] = "v1.31.4+rke2r1";
constexpr char kToken[] = "6c1e0a9d2f7b4c8e";

std::string Str(const Object& o, const std::string& pointer) {
  auto p = Object::json_pointer(pointer);
  return o.contains(p) && o[p].is_string() ? o[p].get<std::string>() : "";
}

std::string Indent(const std::string& text, int n) {
  std::string out, pad(n, ' ');
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out += pad + text.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  return out;
}

// A control plane's user data as the provider's cloud-init template renders
// it (bootstrap/internal/cloudinit/controlplane_init.go); `config` is the
// config.yaml rke2.GenerateInitControlPlaneConfig marshals.
std::string ServerCloudConfig(const std::string& config) {
  return "## template: jinja\n#cloud-config\n"
         "write_files:\n"
         "-   path: /var/lib/rancher/rke2/server/tls/server-ca.crt\n"
         "    owner: root:root\n"
         "    permissions: '0640'\n"
         "    content: |\n"
         "      -----BEGIN CERTIFICATE-----\n"
         "      MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2Vy\n"
         "      -----END CERTIFICATE-----\n"
         "-   path: /etc/rancher/rke2/config.yaml\n"
         "    owner: root:root\n"
         "    permissions: '0640'\n"
         "    content: |\n" +
         Indent(config, 6) +
         "\n\n\nruncmd:\n"
         "  - 'curl -sfL https://get.rke2.io | INSTALL_RKE2_VERSION=" +
         kVersion +
         " sh -s - server' \n"
         "  - 'systemctl enable rke2-server.service'\n"
         "  - 'systemctl start rke2-server.service'\n"
         "  - 'mkdir -p /run/cluster-api'\n"
         "  - 'echo success > /run/cluster-api/bootstrap-success.complete'\n";
}

// A worker's user data as ignition.NewJoinWorker renders it through butane.
std::string WorkerIgnition(const std::string& config) {
  const std::string script =
      std::string(
          "#!/bin/bash\nset -euo pipefail\n\n\ncurl -sfL https://get.rke2.io "
          "| INSTALL_RKE2_VERSION=") +
      kVersion +
      " INSTALL_RKE2_TYPE=\"agent\" sh -s -\nsetenforce 0\n"
      "systemctl enable --now rke2-agent.service\n";
  Object ign = {
      {"ignition", {{"version", "3.3.0"}}},
      {"storage",
       {{"files",
         Object::array(
             {{{"path", "/etc/rancher/rke2/config.yaml"},
               {"mode", 416},
               {"overwrite", true},
               {"contents", {{"source", "data:;base64," + kube::Base64Encode(config)}}}},
              {{"path", "/etc/rke2-install.sh"},
               {"mode", 448},
               {"overwrite", true},
               {"contents", {{"source", "data:;base64," + kube::Base64Encode(script)}}}}})}}},
      {"systemd",
       {{"units",
         Object::array({{{"name", "rke2-install.service"},
                         {"enabled", true},
                         {"contents", "[Service]\nExecStart=/etc/rke2-install.sh\n"}}})}}}};
  return ign.dump();
}

std::string KcmBinary() {
  if (const char* b = std::getenv("CAPHV_KUBE_CONTROLLER_MANAGER")) return b;
  std::string cache;
  if (const char* c = std::getenv("CAPHV_CACHE_DIR")) {
    cache = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME")) {
    cache = std::string(x) + "/caphv";
  } else {
    cache = std::string(std::getenv("HOME")) + "/.cache/caphv";
  }
  return cache + "/bin/current/kube-controller-manager";
}

class SimRke2Test : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    if (HasFatalFailure()) return;
    cluster_id_ = UniqueName("cid");
  }

  // A `cluster` LB of this guest cluster with a DHCP address; returns it.
  std::string MakeLb() {
    Object lb = {
        {"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
        {"kind", "LoadBalancer"},
        {"metadata",
         {{"name", "cp-lb"},
          {"namespace", ns_->name()},
          {"labels", {{"harvester.infrastructure.cluster.x-k8s.io/cluster-id", cluster_id_}}}}},
        {"spec",
         {{"workloadType", "cluster"},
          {"ipam", "dhcp"},
          {"listeners", Object::array({{{"name", "rke2-join"},
                                        {"port", 9345},
                                        {"protocol", "TCP"},
                                        {"backendPort", 9345}}})}}}};
    auto created = h_->Create(gvr::kLoadBalancers, ns_->name(), lb);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    std::string address;
    EXPECT_TRUE(Eventually([&] {
      auto got = Get(gvr::kLoadBalancers, "cp-lb");
      if (got.ok()) address = Str(*got, "/status/address");
      return !address.empty();
    }));
    return address;
  }

  // A VM of this guest cluster whose cloud-init Secret carries `user_data`.
  void CreateRke2Vm(const std::string& name, const std::string& user_data) {
    Object secret = MakeCloudInit(name, "");
    secret["data"]["userdata"] = kube::Base64Encode(user_data);
    auto s = h_->Create(kube::resources::kSecrets, ns_->name(), secret);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Object vm = MakeVm(name, "");
    vm["metadata"]["labels"]["harvester.infrastructure.cluster.x-k8s.io/cluster-id"] = cluster_id_;
    auto v = h_->Create(gvr::kVirtualMachines, ns_->name(), vm);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }

  // The guest cluster's cloud-config as CAPHV writes it: a kubeconfig with
  // the token of a ServiceAccount of this test's namespace bound to
  // harvesterhci.io:cloudprovider, context namespace `context_ns`, in the
  // workload Secret kube-system/cloud-config (key cloud-config).
  void WriteCloudConfig(const std::string& context_ns) {
    const std::string sa = "cloud-provider";
    if (!h_->Get(kube::resources::kServiceAccounts, ns_->name(), sa).ok()) {
      ASSERT_TRUE(h_->Create(kube::resources::kServiceAccounts, ns_->name(),
                             {{"apiVersion", "v1"},
                              {"kind", "ServiceAccount"},
                              {"metadata", {{"name", sa}, {"namespace", ns_->name()}}}})
                      .ok());
      ASSERT_TRUE(h_->Create(kube::resources::kRoleBindings, ns_->name(),
                             {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                              {"kind", "RoleBinding"},
                              {"metadata", {{"name", sa}, {"namespace", ns_->name()}}},
                              {"roleRef",
                               {{"apiGroup", "rbac.authorization.k8s.io"},
                                {"kind", "ClusterRole"},
                                {"name", "harvesterhci.io:cloudprovider"}}},
                              {"subjects", Object::array({{{"kind", "ServiceAccount"},
                                                           {"name", sa},
                                                           {"namespace", ns_->name()}}})}})
                      .ok());
      ASSERT_TRUE(h_->Create(kube::resources::kSecrets, ns_->name(),
                             {{"apiVersion", "v1"},
                              {"kind", "Secret"},
                              {"type", "kubernetes.io/service-account-token"},
                              {"metadata",
                               {{"name", sa + "-token"},
                                {"namespace", ns_->name()},
                                {"annotations", {{"kubernetes.io/service-account.name", sa}}}}}})
                      .ok());
    }
    Object token;
    ASSERT_TRUE(Eventually([&] {
      auto got = h_->Get(kube::resources::kSecrets, ns_->name(), sa + "-token");
      if (got.ok()) token = *got;
      return got.ok() && !Str(token, "/data/token").empty();
    }));
    const std::string kubeconfig =
        "apiVersion: v1\nkind: Config\nclusters:\n- name: harvester\n  cluster:\n"
        "    server: " +
        h_->config().server + "\n    certificate-authority-data: " + Str(token, "/data/ca.crt") +
        "\nusers:\n- name: cloud-provider\n  user:\n    token: " +
        *kube::Base64Decode(Str(token, "/data/token")) +
        "\ncontexts:\n- name: default\n  context:\n    cluster: harvester\n"
        "    user: cloud-provider\n    namespace: " +
        context_ns + "\ncurrent-context: default\n";
    Object secret = {{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", "cloud-config"}, {"namespace", "kube-system"}}},
                     {"data", {{"cloud-config", kube::Base64Encode(kubeconfig)}}}};
    auto applied = w_->Apply(kube::resources::kSecrets, "kube-system", secret,
                             {.field_manager = "sim-test", .force = true});
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  }

  // A Warning Event about workload Node `name` with `reason`.
  bool HasNodeEvent(const std::string& name, const std::string& reason) {
    return HasWarning(*w_, "default", name, reason);
  }

  void TearDown() override {
    w_->Delete(kube::resources::kSecrets, "kube-system", "cloud-config").IgnoreError();
    SimTest::TearDown();
  }

  std::string LeaseRenewTime(const std::string& node) {
    auto lease = w_->Get(kube::resources::kLeases, "kube-node-lease", node);
    return lease.ok() ? Str(*lease, "/spec/renewTime") : "";
  }

  // A Warning Event about VMI `name` with `reason`.
  bool HasEvent(const std::string& name, const std::string& reason) {
    return HasWarning(*h_, ns_->name(), name, reason);
  }

  // A Warning Event of namespace `ns` about `name` with `reason`.
  static bool HasWarning(kube::Client& client, const std::string& ns, const std::string& name,
                         const std::string& reason) {
    auto events = client.List(kube::resources::kEvents, ns);
    if (!events.ok()) return false;
    for (const auto& e : events->items) {
      if (Str(e, "/involvedObject/name") == name && Str(e, "/reason") == reason &&
          Str(e, "/type") == "Warning") {
        return true;
      }
    }
    return false;
  }

  std::string cluster_id_;
};

TEST_F(SimRke2Test, ServerAndWorkerJoinWrongTokenDoesNot) {
  StartSim();
  const std::string lb = MakeLb();
  ASSERT_FALSE(lb.empty());
  const std::string cp = UniqueName("cp"), worker = UniqueName("wk"), bad = UniqueName("bad");
  const std::string join = "https://" + lb + ":9345";

  CreateRke2Vm(cp, ServerCloudConfig(std::string("cloud-provider-name: harvester\n") +
                                     "tls-san:\n- " + lb + "\ntoken: " + kToken + "\n"));
  CreateRke2Vm(worker, WorkerIgnition("cloud-provider-name: harvester\nnode-label:\n- tier=db\n"
                                      "server: " +
                                      join + "\ntoken: " + kToken + "\n"));
  CreateRke2Vm(bad, WorkerIgnition("server: " + join + "\ntoken: not-the-token\n"));

  // The Harvester cloud provider looks the VM up by the Node's name in its
  // kubeconfig's namespace: with the wrong one (where its token may read
  // nothing), the Node keeps its taint and a Warning says why.
  WriteCloudConfig("default");
  ASSERT_TRUE(Eventually([&] { return HasNodeEvent(cp, "Forbidden"); }, seconds(30)));
  auto tainted = w_->Get(kube::resources::kNodes, "", cp);
  ASSERT_TRUE(tainted.ok());
  EXPECT_TRUE(Str(*tainted, "/spec/providerID").empty());
  EXPECT_NE(tainted->dump().find("node.cloudprovider.kubernetes.io/uninitialized"),
            std::string::npos);
  WriteCloudConfig(ns_->name());

  // The first server: RKE2's labels, version, address; initialised by the
  // Harvester cloud provider (cloud-provider-name: harvester).
  Object node;
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = w_->Get(kube::resources::kNodes, "", cp);
        if (got.ok()) node = *got;
        return got.ok() && !Str(node, "/spec/providerID").empty();
      },
      seconds(30)))
      << node.dump();
  for (const char* role : {"control-plane", "etcd", "master"}) {
    EXPECT_EQ(Str(node, std::string("/metadata/labels/node-role.kubernetes.io~1") + role), "true");
  }
  EXPECT_EQ(Str(node, "/status/nodeInfo/kubeletVersion"), kVersion);
  EXPECT_EQ(Str(node, "/status/addresses/0/type"), "InternalIP");
  EXPECT_FALSE(Str(node, "/status/addresses/0/address").empty());
  EXPECT_EQ(Str(node, "/metadata/annotations/rke2.io~1internal-ip"),
            Str(node, "/status/addresses/0/address"));

  // What the control-plane provider waits for.
  ASSERT_TRUE(Eventually(
      [&] { return w_->Get(kube::resources::kSecrets, "kube-system", "rke2-serving").ok(); }));
  const kube::GroupVersionResource pods{"", "v1", "pods", true};
  for (const char* c : {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"}) {
    Object pod;
    ASSERT_TRUE(Eventually([&] {
      auto got = w_->Get(pods, "kube-system", std::string(c) + "-" + cp);
      if (got.ok()) pod = *got;
      return got.ok() && Str(pod, "/status/phase") == "Running";
    })) << c;
    EXPECT_EQ(Str(pod, "/metadata/labels/component"), c);
    EXPECT_EQ(Str(pod, "/spec/nodeName"), cp);
  }

  // The worker joins through the LB address with the cluster's token.
  Object wnode;
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = w_->Get(kube::resources::kNodes, "", worker);
        if (got.ok()) wnode = *got;
        return got.ok();
      },
      seconds(30)));
  EXPECT_EQ(Str(wnode, "/metadata/labels/tier"), "db");
  EXPECT_EQ(Str(wnode, "/metadata/labels/node-role.kubernetes.io~1control-plane"), "");
  EXPECT_EQ(Str(wnode, "/status/nodeInfo/kubeletVersion"), kVersion);

  // Heartbeats: the Lease is renewed about every 10 s.
  std::string first;
  ASSERT_TRUE(Eventually([&] { return !(first = LeaseRenewTime(worker)).empty(); }));
  ASSERT_TRUE(Eventually([&] { return LeaseRenewTime(worker) != first; }, seconds(20)))
      << "Lease of " << worker << " not renewed since " << first;

  // The wrong token: no Node, and the reason on the VMI.
  ASSERT_TRUE(Eventually([&] { return HasEvent(bad, "RKE2TokenMismatch"); }, seconds(20)));
  EXPECT_TRUE(w_->Get(kube::resources::kNodes, "", bad).status().IsNotFound());
}

// The FIPS guard of the ClusterClass's fipsRequired, a preRKE2Command (so
// before the install in runcmd). cloud-init runs runcmd as one shell script:
// on an image that does not boot in FIPS mode (/proc/sys/crypto/fips_enabled
// 0; the built-in environment's ubuntu image) the guard's exit ends it, RKE2
// is never installed and the VMI gets a Warning saying why; an environment
// whose image boots in FIPS mode (`fips: true`) lets the same server join.
std::string WithFipsGuard(std::string user_data) {
  const std::string guard =
      R"g(test "$(cat /proc/sys/crypto/fips_enabled 2>/dev/null)" = "1" || { echo "FIPS mode )g"
      R"g(required but not enabled on this node image" >&2; exit 1; })g";
  const std::string runcmd = "\nruncmd:\n";
  user_data.insert(user_data.find(runcmd) + runcmd.size(), "  - '" + guard + "'\n");
  return user_data;
}

TEST_F(SimRke2Test, TheFipsGuardStopsRke2OnAnImageWithoutFipsMode) {
  StartSim();
  const std::string cp = UniqueName("cp");
  CreateRke2Vm(cp, WithFipsGuard(ServerCloudConfig(std::string("token: ") + kToken + "\n")));
  ASSERT_TRUE(Eventually([&] { return HasEvent(cp, "RKE2NotInstalled"); }, seconds(30)));
  std::string message;
  auto events = h_->List(kube::resources::kEvents, ns_->name());
  ASSERT_TRUE(events.ok());
  for (const auto& e : events->items) {
    if (Str(e, "/reason") == "RKE2NotInstalled") message = Str(e, "/message");
  }
  EXPECT_NE(message.find("the image does not boot in FIPS mode"), std::string::npos) << message;
  EXPECT_NE(message.find(": FIPS mode required but not enabled on this node image"),
            std::string::npos)
      << message;
  std::this_thread::sleep_for(seconds(5));
  EXPECT_TRUE(w_->Get(kube::resources::kNodes, "", cp).status().IsNotFound());
}

TEST_F(SimRke2Test, TheFipsGuardLetsAnImageInFipsModeJoin) {
  // The built-in environment with its image booting in FIPS mode.
  std::ifstream in(caphv::testing::SourcePath("config/harvester-sim/env/default.yaml"));
  std::stringstream text;
  text << in.rdbuf();
  std::string env = text.str();
  const std::string image = "  name: image-ubuntu\n";
  ASSERT_NE(env.find(image), std::string::npos);
  env.insert(env.find(image) + image.size(), "  fips: true\n");
  const std::string file = "/tmp/caphv-sim-env-" + ns_->name() + ".yaml";
  { std::ofstream(file) << env; }
  StartSim({"--env", file});
  const std::string cp = UniqueName("cp");
  CreateRke2Vm(cp, WithFipsGuard(ServerCloudConfig(std::string("token: ") + kToken + "\n")));
  EXPECT_TRUE(
      Eventually([&] { return w_->Get(kube::resources::kNodes, "", cp).ok(); }, seconds(30)));
  EXPECT_FALSE(HasEvent(cp, "RKE2NotInstalled"));
  std::remove(file.c_str());
}

TEST_F(SimRke2Test, DeadGuestStopsHeartbeatsAndGoesUnknown) {
  StartSim();
  // The bed runs no node lifecycle controller; this test runs the real one.
  auto& bed = Testbed::Get();
  caphv::testing::ChildProcess kcm(
      {KcmBinary(), "--kubeconfig=" + bed.KubeconfigPath(caphv::testing::kWorkload),
       "--controllers=node-lifecycle-controller", "--leader-elect=false",
       "--bind-address=127.0.0.1", "--secure-port=0", "--node-monitor-period=1s",
       "--node-monitor-grace-period=20s"},
      bed.dir() + "/logs/kcm-node-lifecycle-" + ns_->name() + ".log");
  const std::string lb = MakeLb();
  ASSERT_FALSE(lb.empty());
  const std::string cp = UniqueName("cp");
  CreateRke2Vm(cp, ServerCloudConfig(std::string("token: ") + kToken + "\n"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = w_->Get(kube::resources::kNodes, "", cp);
        return got.ok() && !LeaseRenewTime(cp).empty();
      },
      seconds(30)));

  auto p = h_->Patch(gvr::kVirtualMachines, ns_->name(), cp, kube::PatchType::kMerge,
                     {{"metadata", {{"annotations", {{"sim.caphv.io/dead", "true"}}}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(Eventually([&] {
    auto vmi = Get(gvr::kVirtualMachineInstances, cp);
    return vmi.ok() && Str(*vmi, "/status/phase") != "Running";
  }));
  const std::string last = LeaseRenewTime(cp);
  // Past the grace period the node lifecycle controller marks it Unknown.
  Object node;
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = w_->Get(kube::resources::kNodes, "", cp);
        if (!got.ok()) return false;
        node = *got;
        for (const auto& c : node["status"].value("conditions", Object::array())) {
          if (c.value("type", "") == "Ready") return c.value("status", "") == "Unknown";
        }
        return false;
      },
      seconds(60), std::chrono::milliseconds(500)))
      << node.dump();
  EXPECT_EQ(LeaseRenewTime(cp), last) << "a dead guest renewed its Lease";
}

}  // namespace
}  // namespace caphv::sim::testing
