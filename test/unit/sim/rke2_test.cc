// Unit tests for sim/rke2.h: reading the RKE2 bootstrap provider's user
// data (cloud-config, Ignition, gzip), the join decision and the objects
// RKE2 writes.

#include "sim/rke2.h"

#include <gtest/gtest.h>

#include "kube/base64.h"

namespace caphv::sim {
namespace {

using kube::Object;

// An init control plane as cloudinit.NewInitControlPlane renders it (v0.21.1
// template: jinja header, write_files with the certificates and config, the
// install command with a trailing blank).
constexpr char kInitServer[] = R"(## template: jinja
#cloud-config
write_files:
-   path: /var/lib/rancher/rke2/server/tls/server-ca.crt
    owner: root:root
    permissions: '0640'
    content: |
      -----BEGIN CERTIFICATE-----
      MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAjMSEwHwYDVQQDDBhrM3Mtc2Vy
      -----END CERTIFICATE-----
-   path: /etc/rancher/rke2/config.yaml
    owner: root:root
    permissions: '0640'
    content: |
      cloud-provider-name: harvester
      tls-san:
      - 172.19.0.100
      node-label:
      - topology.kubernetes.io/zone=zone-a
      node-name: '{{ ds.meta_data.local_hostname }}'
      token: K10abc123::server:s3cret


runcmd:
  - 'curl -sfL https://get.rke2.io | INSTALL_RKE2_VERSION=v1.31.4+rke2r1 sh -s - server' 
  - 'systemctl enable rke2-server.service'
  - 'systemctl start rke2-server.service'
  - 'mkdir -p /run/cluster-api'
  - 'echo success > /run/cluster-api/bootstrap-success.complete'
)";

// A worker as cloudinit.NewJoinWorker renders it, after CAPHV merged its
// own entries (qemu-guest-agent, user) into it.
constexpr char kWorker[] = R"(#cloud-config
packages:
- qemu-guest-agent
write_files:
- path: /etc/rancher/rke2/config.yaml
  owner: root:root
  permissions: '0640'
  encoding: b64
  content: c2VydmVyOiBodHRwczovLzE3Mi4xOS4wLjEwMDo5MzQ1CnRva2VuOiBzM2NyZXQKbm9kZS10YWludDoKLSBkZWRpY2F0ZWQ9Z3B1Ok5vU2NoZWR1bGUK
runcmd:
- 'curl -sfL https://get.rke2.io | INSTALL_RKE2_VERSION=v1.31.4+rke2r1 INSTALL_RKE2_TYPE="agent" sh -s -'
- [systemctl, enable, rke2-agent.service]
- 'systemctl start rke2-agent.service'
)";

// ignition.NewJoinWorker through butane: files as data: URLs, the config
// gzipped (butane compresses what it can), the install script percent-encoded.
constexpr char kIgnitionWorker[] =
    R"json({"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/ssh/sshd_config.d/010-rke2.conf","contents":{"source":"data:,%23%20Use%20most%20defaults%0A"},"mode":384,"overwrite":true},{"path":"/etc/rancher/rke2/config.yaml","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAACAyXMQQ7CIBBG4T2n6AWgUDW1k/QKbjwBZX5TIkID057fGrffS15IZWe91XJERtXZf0Dd6uuBJqgqF4ZOfkEipTuJqDMvfxUfs/yUwTF4AZ+JHuUZVvCeoBrOSz1vIlujvnfjYNxkrHHW0nS53pSUNzJ1GJYxOLavyd/VFwg+/SaRAAAA"},"mode":416,"overwrite":true,"user":{"name":"root"},"group":{"name":"root"}},{"path":"/etc/rke2-install.sh","contents":{"source":"data:,%23%21%2Fbin%2Fbash%0Aset%20-euo%20pipefail%0A%0A%0Acurl%20-sfL%20https%3A%2F%2Fget.rke2.io%20%7C%20INSTALL_RKE2_VERSION%3Dv1.31.4%2Brke2r1%20INSTALL_RKE2_TYPE%3D%22agent%22%20sh%20-s%20-%0Asetenforce%200%0Arestorecon%20%2Fetc%2Fsystemd%2Fsystem%2Frke2-agent.service%0Asystemctl%20enable%20--now%20rke2-agent.service%0Amkdir%20-p%20%2Frun%2Fcluster-api%20%2Fetc%2Fcluster-api%0Aecho%20success%20%7C%20tee%20%2Frun%2Fcluster-api%2Fbootstrap-success.complete%20%2Fetc%2Fcluster-api%2Fbootstrap-success.complete%20%3E%20%2Fdev%2Fnull%0Asetenforce%201%0A"},"mode":448,"overwrite":true}]},"systemd":{"units":[{"contents":"[Unit]\nDescription=rke2-install\n","enabled":true,"name":"rke2-install.service"}]}})json";
// The same with gzipUserData: butane.EncapsulateGzippedConfig.
constexpr char kIgnitionWrapped[] =
    R"json({"ignition":{"config":{"replace":{"compression":"gzip","source":"data:text/plain;base64,H4sIAAAAAAACA41UWVPiQBD+L6nKk5Abdd3aB04JIqwcgqhlDckkjIRJnCOIlv99e4gXstZuKume9PQ1X3fPs0ZiSgRJqXbyrOWY8e1Scw3XsLSXksZFylCM1W5EEsy1k+tnLUNiAUomFoHJ+UJ94V2Q0ojERmhatlVmS+wYSqKVNGACU8GVD55KFoA3LUQCnZR0x9Uda8wx0FXKBbAQR0gmgutWVcVfpSGou8deSUshvTUjAv4Fk/iltJsIQzRYYGaq0OZrMhu0Sr5kEKSrjGH+es74iWSgsJvWzzni+NArtT3uV4unXt1Mzy8ujup+rXbqjRx6WJ3E48bEXpoXZ/P7dW02rYz8pd+wKkfRKYuioV3xZxP8w552mgMxnUVWIzyUstZ5iB9a3qwfLZskG8nOQ+M8jx7HETc34/Wo5VVnB522HM8u8zpOa6w/fLJzP5H3OY3ur3qPS9ZuTyw6rLjZcNx76tinnavHfhflm9C8bK3jA3OIBirhD+w8+3APu5ImOWYKDopW6twsTYUyiVkqsz35HtQAcZlQLlCSGHzxHzW2dac1J1RRxBdQW45VsctYpsAykkHVSQLy4g0kS9Q2j7rAFkJkXHerYA1vjIWxbS+iTPWjOlC/NxxVu927wVnTubtsDoZ+v6e7jdw2XNvwdKemDJj9VXN09bsJarrjQItTSMgBDUhPRVakyBPTKIUDgcACAfQOjASGA6voTgvwAMo3XOBV+L6CxRakrV8DsM4JeAB3291AqNNhiuaJclsu03QN/K8Wq2VImFLKinhMKhSDRIIjVkYZ+ZzGZ7FVxcFCQcRlEEDDv4MlMP7WVWsOBeeCoaz8amaogUkAhe/i/MvGbRaWIc6BUpkkX2G1d2bd8473Z/1WXUUFxqrFJNxZxVX00Xja9Riktze0gXnASKYutV+fO/WGQqMWoIdvY/DW5jsNXWCvQdCXPxxXgLYgBQAA"}},"version":"3.3.0"}})json";
// A cloud-config with gzipUserData: the Secret's value is the gzip itself.
constexpr char kGzippedCloudConfigB64[] =
    "H4sIAAAAAAACAyWOMWvDMBCFd/"
    "2KAw8eiiXHLR0EHTpkCDUpJKWrUZVzrESWzOmcUMiPr+wuD+"
    "697x6vKIBxnLxh1HBx4WJEYX2cT5WNoXdncSfH2PXOY9KiAoDJ8KBBIVtFJtgBSdEVG/"
    "XPy18zepExiPeApIFiZL3Iak5Io0vJxZA0lPXrS12ufn5mDKzhsZ4AHK8YNJgfK2gOdjzpHFRQ2pk8VKlvYWCeklbqjCyX"
    "AdJFeMBuf/x6b9vu8LFtuu/t4bj73L/dNvK5ls3TgtEG0pAbcllCuiGVIP4A16+12AUBAAA=";

TEST(Rke2UserData, InitServerCloudConfig) {
  auto got = Rke2FromUserData(kInitServer, "cp-0");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  const Rke2Config& c = **got;
  EXPECT_EQ(c.role, "server");
  EXPECT_EQ(c.version, "v1.31.4+rke2r1");
  EXPECT_EQ(c.token, "K10abc123::server:s3cret");
  EXPECT_EQ(c.server, "");
  EXPECT_EQ(c.node_name, "cp-0");  // the jinja variable, as cloud-init renders it
  EXPECT_EQ(c.cloud_provider_name, "harvester");
  EXPECT_EQ(c.tls_san, std::vector<std::string>{"172.19.0.100"});
  EXPECT_EQ(c.node_labels, std::vector<std::string>{"topology.kubernetes.io/zone=zone-a"});
  EXPECT_TRUE(c.etcd);
  EXPECT_TRUE(c.control_plane);
}

TEST(Rke2UserData, WorkerCloudConfigWithBase64File) {
  auto got = Rke2FromUserData(kWorker, "w-0");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  const Rke2Config& c = **got;
  EXPECT_EQ(c.role, "agent");
  EXPECT_EQ(c.server, "https://172.19.0.100:9345");
  EXPECT_EQ(c.token, "s3cret");
  EXPECT_EQ(c.node_taints, std::vector<std::string>{"dedicated=gpu:NoSchedule"});
  EXPECT_FALSE(c.etcd);
  EXPECT_FALSE(c.control_plane);
}

// The FIPS guard of the ClusterClass's fipsRequired (a preRKE2Command, so
// before the install in runcmd): found with what it prints; the same
// command after the install guards nothing.
TEST(Rke2UserData, FipsGuardBeforeTheInstall) {
  const std::string guard =
      R"g(test "$(cat /proc/sys/crypto/fips_enabled 2>/dev/null)" = "1" || { echo "FIPS mode )g"
      R"g(required but not enabled on this node image" >&2; exit 1; })g";
  // As the RKE2 bootstrap provider quotes runcmd entries (%q).
  std::string quoted = "\"";
  for (char ch : guard) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    quoted += ch;
  }
  quoted += "\"";
  const std::string install =
      R"(  - "curl -sfL https://get.rke2.io | INSTALL_RKE2_VERSION=v1.31.4+rke2r1 )"
      R"(INSTALL_RKE2_TYPE=\"agent\" sh -s -")";
  const std::string head =
      "#cloud-config\nwrite_files:\n- path: /etc/rancher/rke2/config.yaml\n  content: |\n"
      "    server: https://172.19.0.100:9345\n    token: s3cret\n    profile: cis\nruncmd:\n";
  auto gated = Rke2FromUserData(head + "  - " + quoted + "\n" + install + "\n", "w-0");
  ASSERT_TRUE(gated.ok()) << gated.status().ToString();
  ASSERT_TRUE(gated->has_value());
  EXPECT_EQ((*gated)->fips_gate, guard);
  EXPECT_EQ((*gated)->fips_gate_message, "FIPS mode required but not enabled on this node image");
  EXPECT_EQ((*gated)->config.value("profile", ""), "cis");

  auto after = Rke2FromUserData(head + install + "\n  - " + quoted + "\n", "w-0");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_TRUE(after->has_value());
  EXPECT_EQ((*after)->fips_gate, "");
  auto none = Rke2FromUserData(kWorker, "w-0");
  ASSERT_TRUE(none.ok() && none->has_value());
  EXPECT_EQ((*none)->fips_gate, "");
}

TEST(Rke2UserData, IgnitionWithDataUrlsAndGzip) {
  for (const char* data : {kIgnitionWorker, kIgnitionWrapped}) {
    auto got = Rke2FromUserData(data, "w-1");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(got->has_value());
    const Rke2Config& c = **got;
    EXPECT_EQ(c.role, "agent");
    EXPECT_EQ(c.version, "v1.31.4+rke2r1");
    EXPECT_EQ(c.server, "https://172.19.0.100:9345");
    EXPECT_EQ(c.token, "e2b7c1d0f9a8");
    EXPECT_EQ(c.node_labels, std::vector<std::string>{"tier=db"});
  }
  auto boot = ParseUserData(kIgnitionWorker);
  ASSERT_TRUE(boot.ok());
  EXPECT_EQ(boot->format, "ignition");
  EXPECT_EQ(boot->files.at("/etc/ssh/sshd_config.d/010-rke2.conf"), "# Use most defaults\n");
}

TEST(Rke2UserData, GzippedCloudConfig) {
  auto raw = kube::Base64Decode(kGzippedCloudConfigB64);
  ASSERT_TRUE(raw.has_value());
  auto got = Rke2FromUserData(*raw, "cp-1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->role, "server");
  EXPECT_EQ((*got)->version, "v1.30.2+rke2r1");
  EXPECT_EQ((*got)->token, "abc");
}

TEST(Rke2UserData, NoRke2IsNotAnError) {
  for (const char* data :
       {"#cloud-config\npackages: [qemu-guest-agent]\n",
        "#cloud-config\nruncmd:\n- echo e2e worker\n", "#!/bin/sh\necho hi\n", ""}) {
    auto got = Rke2FromUserData(data, "vm");
    ASSERT_TRUE(got.ok()) << data;
    EXPECT_FALSE(got->has_value()) << data;
  }
}

TEST(Rke2UserData, BrokenDataIsReported) {
  // Config written but nothing installs RKE2.
  auto no_install = Rke2FromUserData(
      "#cloud-config\nwrite_files:\n- path: /etc/rancher/rke2/config.yaml\n  content: 'token: "
      "x'\n",
      "vm");
  EXPECT_FALSE(no_install.ok());
  // Bad base64 in a file.
  auto bad_b64 = Rke2FromUserData(
      "#cloud-config\nwrite_files:\n- path: /etc/rancher/rke2/config.yaml\n  encoding: b64\n  "
      "content: '!!!'\n",
      "vm");
  EXPECT_FALSE(bad_b64.ok());
  // Ignition whose file is no data: URL.
  auto bad_url = Rke2FromUserData(
      R"({"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/rancher/rke2/config.yaml","contents":{"source":"https://example.invalid/c"}}]}})",
      "vm");
  EXPECT_FALSE(bad_url.ok());
  EXPECT_FALSE(Gunzip("not gzip").has_value());
}

TEST(Rke2UserData, DataUrls) {
  EXPECT_EQ(DecodeDataUrl("data:,a%20b"), "a b");
  EXPECT_EQ(DecodeDataUrl("data:text/plain;base64,aGk="), "hi");
  EXPECT_FALSE(DecodeDataUrl("data:,%zz").has_value());
  EXPECT_FALSE(DecodeDataUrl("http://x").has_value());
}

TEST(Rke2UserData, KubeletVersion) {
  EXPECT_EQ(KubeletVersionFor("v1.31.4+rke2r1"), "v1.31.4+rke2r1");
  EXPECT_EQ(KubeletVersionFor("v1.31.4"), "v1.31.4+rke2r1");
  EXPECT_EQ(KubeletVersionFor(""), "v1.33.13+rke2r1");
}

Rke2Config Agent(const std::string& server, const std::string& token) {
  Rke2Config c;
  c.role = "agent";
  c.server = server;
  c.token = token;
  return c;
}

TEST(Rke2Join, FirstServerDefinesTheCluster) {
  Rke2Config first;
  first.role = "server";
  first.token = "s3cret";
  EXPECT_TRUE(DecideJoin(first, {}, true).join);
  // A second server without `server:` is a cluster of its own.
  auto d = DecideJoin(first, {.token = "s3cret", .first_server = "cp-0"}, false);
  EXPECT_FALSE(d.join);
  EXPECT_EQ(d.reason, "SeparateCluster");
  // An agent must name a server.
  EXPECT_EQ(DecideJoin(Agent("", "s3cret"), {}, false).reason, "NoServerAddress");
}

TEST(Rke2Join, TokenAndServerAreChecked) {
  const Rke2Cluster cluster{.token = "K10abc::server:s3cret",
                            .first_server = "cp-0",
                            .hosts = {"172.19.0.100", "10.0.0.5"}};
  EXPECT_TRUE(DecideJoin(Agent("https://172.19.0.100:9345", "s3cret"), cluster, false).join);
  EXPECT_TRUE(
      DecideJoin(Agent("https://10.0.0.5:9345/", "K10abc::server:s3cret"), cluster, false).join);
  struct Case {
    std::string server, token, reason;
  };
  for (const Case& c : std::vector<Case>{
           {"https://172.19.0.100:9345", "wrong", "TokenMismatch"},
           {"https://172.19.0.100:9345", "", "TokenMismatch"},
           {"https://172.19.0.100:6443", "s3cret", "WrongServerPort"},
           {"https://172.19.0.200:9345", "s3cret", "UnknownServer"},
           {"172.19.0.100:9345", "s3cret", "InvalidServerAddress"},
       }) {
    auto d = DecideJoin(Agent(c.server, c.token), cluster, false);
    EXPECT_FALSE(d.join) << c.server << " " << c.token;
    EXPECT_EQ(d.reason, c.reason) << c.server << " " << c.token;
    EXPECT_FALSE(d.message.empty());
  }
  // Before the first server is up, a joining node waits.
  EXPECT_EQ(DecideJoin(Agent("https://172.19.0.100:9345", "s3cret"), {}, false).reason,
            "WaitingForServer");
}

std::string Str(const Object& o, const std::string& pointer) {
  auto p = Object::json_pointer(pointer);
  return o.contains(p) && o[p].is_string() ? o[p].get<std::string>() : "<none>";
}

TEST(Rke2Node, ServerLabelsTaintsAnnotations) {
  auto c = Rke2FromUserData(kInitServer, "cp-0");
  ASSERT_TRUE(c.ok() && c->has_value());
  Object node = BuildRke2Node("cp-0", **c, "10.0.0.5");
  EXPECT_EQ(Str(node, "/metadata/name"), "cp-0");
  for (const char* role : {"control-plane", "etcd", "master"}) {
    EXPECT_EQ(Str(node, std::string("/metadata/labels/node-role.kubernetes.io~1") + role), "true");
  }
  EXPECT_EQ(Str(node, "/metadata/labels/topology.kubernetes.io~1zone"), "zone-a");
  EXPECT_EQ(Str(node, "/metadata/annotations/rke2.io~1internal-ip"), "10.0.0.5");
  EXPECT_EQ(Str(node, "/metadata/annotations/etcd.rke2.cattle.io~1node-address"), "10.0.0.5");
  EXPECT_EQ(Str(node, "/metadata/annotations/rke2.io~1node-args").find("s3cret"),
            std::string::npos);
  // cloud-provider-name: harvester: the kubelet waits for that cloud provider.
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(Str(node, "/spec/taints/0/key"), "node.cloudprovider.kubernetes.io/uninitialized");
  EXPECT_FALSE(node["spec"].contains("providerID"));
  EXPECT_TRUE(ExternalCloudProvider(**c));
}

TEST(Rke2Node, AgentTaintsAndOwnCloudController) {
  auto c = Rke2FromUserData(kWorker, "w-0");
  ASSERT_TRUE(c.ok() && c->has_value());
  Object node = BuildRke2Node("w-0", **c, "10.0.0.6");
  EXPECT_FALSE(node["metadata"]["labels"].contains("node-role.kubernetes.io/control-plane"));
  EXPECT_FALSE(node["metadata"]["labels"].contains("node-role.kubernetes.io/etcd"));
  // No cloud-provider-name: RKE2's own cloud controller initialises the Node
  // at once, so no uninitialized taint stays.
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(Str(node, "/spec/taints/0/key"), "dedicated");
  EXPECT_EQ(Str(node, "/spec/taints/0/value"), "gpu");
  EXPECT_EQ(Str(node, "/spec/taints/0/effect"), "NoSchedule");
  EXPECT_EQ(Str(node, "/spec/providerID"), "rke2://w-0");
  EXPECT_FALSE(node["metadata"]["annotations"].contains("etcd.rke2.cattle.io/node-name"));
}

TEST(Rke2Node, LeaseMirrorPodsServingSecret) {
  Object lease = BuildNodeLease("cp-0", "uid-1", "2026-01-02T03:04:05.000000Z");
  EXPECT_EQ(Str(lease, "/metadata/namespace"), "kube-node-lease");
  EXPECT_EQ(Str(lease, "/spec/holderIdentity"), "cp-0");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(Str(lease, "/metadata/ownerReferences/0/uid"), "uid-1");

  auto c = Rke2FromUserData(kInitServer, "cp-0");
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ(StaticPodComponents(**c),
            (std::vector<std::string>{"etcd", "kube-apiserver", "kube-controller-manager",
                                      "kube-scheduler"}));
  Object pod = BuildMirrorPod("kube-apiserver", "cp-0", "uid-1", "10.0.0.5", **c);
  EXPECT_EQ(Str(pod, "/metadata/name"), "kube-apiserver-cp-0");
  EXPECT_EQ(Str(pod, "/metadata/namespace"), "kube-system");
  EXPECT_EQ(Str(pod, "/metadata/labels/component"), "kube-apiserver");
  EXPECT_EQ(Str(pod, "/metadata/labels/tier"), "control-plane");
  EXPECT_NE(Str(pod, "/metadata/annotations/kubernetes.io~1config.mirror"), "<none>");
  EXPECT_EQ(Str(pod, "/spec/nodeName"), "cp-0");
  EXPECT_EQ(Str(pod, "/status/phase"), "Running");
  EXPECT_TRUE(StaticPodComponents(Rke2Config{.role = "agent"}).empty());

  auto names = ServingNames("cp-0", "10.0.0.5", **c);
  EXPECT_NE(std::find(names.begin(), names.end(), "172.19.0.100"), names.end());
  Object secret = BuildServingSecret(names, "CERT", "KEY", "cp-0", "uid-1");
  EXPECT_EQ(Str(secret, "/metadata/name"), "rke2-serving");
  // Owned by the server that wrote it; further servers become owners too.
  ASSERT_EQ(secret["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(Str(secret, "/metadata/ownerReferences/0/kind"), "Node");
  EXPECT_EQ(Str(secret, "/metadata/ownerReferences/0/name"), "cp-0");
  EXPECT_EQ(Str(secret, "/metadata/ownerReferences/0/uid"), "uid-1");
  EXPECT_FALSE(ServingSecretOwnersWith(secret, "cp-0", "uid-1").has_value());
  auto owners = ServingSecretOwnersWith(secret, "cp-1", "uid-2");
  ASSERT_TRUE(owners.has_value());
  ASSERT_EQ(owners->size(), 2u);
  EXPECT_EQ((*owners)[0].value("uid", ""), "uid-1");
  EXPECT_EQ((*owners)[1].value("uid", ""), "uid-2");
  EXPECT_FALSE(
      BuildServingSecret(names, "CERT", "KEY", "cp-0", "")["metadata"].contains("ownerReferences"));
  EXPECT_EQ(Str(secret, "/type"), "kubernetes.io/tls");
  EXPECT_EQ(Str(secret, "/metadata/annotations/listener.cattle.io~1cn-172.19.0.100"),
            "172.19.0.100");
  EXPECT_EQ(Str(secret, "/data/tls.crt"), kube::Base64Encode("CERT"));
}

}  // namespace
namespace {

TEST(UserDataRunsGuestAgent, WhenItsUserDataInstallsIt) {
  for (const char* yes : {
           "#cloud-config\npackages: [qemu-guest-agent]\n",
           "#cloud-config\npackages:\n- curl\n- [qemu-guest-agent, 1:8.2]\n",
           "## template: jinja\n#cloud-config\nhostname: {{ v1.local_hostname }}\npackages: "
           "[qemu-guest-agent]\n",
           "#cloud-config\nruncmd:\n- apt-get -y install qemu-guest-agent\n",
           "#cloud-config\nruncmd:\n- [zypper, --non-interactive, in, qemu-guest-agent]\n",
           "#!/bin/bash\nyum install -y qemu-guest-agent && systemctl start qemu-guest-agent\n",
       }) {
    EXPECT_TRUE(UserDataRunsGuestAgent(yes, "vm1")) << yes;
  }
  for (const char* no : {
           "#cloud-config\npackages: [curl]\n",
           // Enabling alone needs an image that ships the agent.
           "#cloud-config\nruncmd:\n- systemctl enable --now qemu-guest-agent.service\n",
           "#!/bin/bash\necho qemu-guest-agent\n",
           "",
           "{\"ignition\": {\"version\": \"3.3.0\"}}",
       }) {
    EXPECT_FALSE(UserDataRunsGuestAgent(no, "vm1")) << no;
  }
}

}  // namespace
}  // namespace caphv::sim
