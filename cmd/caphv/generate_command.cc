// File: cmd/caphv/generate_command.cc

#include "generate_command.h"

#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "api/yaml.h"
#include "interactive_command.h"
#include "kube/config.h"
#include "management_client.h"

namespace caphv::cli {
namespace {

using api::Json;

// "90s", "30m", "1h" -> seconds; throws CLI::ValidationError.
std::chrono::seconds ParseTimeout(const std::string& s) {
  static const std::regex re("([0-9]+)(s|m|h)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) {
    throw CLI::ValidationError("--timeout", "\"" + s + "\" is not a duration (e.g. 30m)");
  }
  const long n = std::stol(m[1]);
  const std::string unit = m[2];
  return std::chrono::seconds(unit == "s" ? n : unit == "m" ? n * 60 : n * 3600);
}

// The kinds of the ClusterClass and its templates.
bool IsClassObject(const Json& o) {
  static const std::set<std::string> kKinds = {"ClusterClass", "HarvesterClusterTemplate",
                                               "HarvesterMachineTemplate",
                                               "RKE2ControlPlaneTemplate", "RKE2ConfigTemplate"};
  return kKinds.contains(o.value("kind", std::string()));
}

bool ConditionTrue(const Json& o, std::string_view type) {
  if (!o.contains("status") || !o["status"].contains("conditions")) return false;
  for (const auto& c : o["status"]["conditions"]) {
    if (c.value("type", std::string()) == type) return c.value("status", std::string()) == "True";
  }
  return false;
}

std::string Describe(const Json& o) {
  const auto& md = o["metadata"];
  const std::string ns = md.value("namespace", std::string());
  return o.value("kind", std::string()) + " " + (ns.empty() ? "" : ns + "/") +
         md.value("name", std::string());
}

const kube::GroupVersionResource kClusterClasses{"cluster.x-k8s.io", "v1beta1", "clusterclasses",
                                                 true};
const kube::GroupVersionResource kClusters{"cluster.x-k8s.io", "v1beta1", "clusters", true};
const kube::GroupVersionResource kMachines{"cluster.x-k8s.io", "v1beta1", "machines", true};

}  // namespace

CLI::App* AddGenerateCommand(CLI::App& app, GenerateFlags& f) {
  auto* cmd = app.add_subcommand(
      "generate",
      "Every object of a Cluster of the ClusterClass harvester-rke2, as YAML or applied");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto& o = f.options;
  cmd->add_option("--name", o.name, "Cluster name (required unless --interactive)");
  cmd->add_option("--namespace", o.ns, "Namespace (default: the name)");
  cmd->add_option("--class", o.cls, "ClusterClass")->capture_default_str();
  cmd->add_option("--image", o.image, "VM image (namespace/name)");
  cmd->add_option("--ssh-keypair", o.ssh_keypair, "Harvester KeyPair (namespace/name)");
  cmd->add_option("--ssh-user", o.ssh_user, "SSH user")->capture_default_str();
  cmd->add_option("--network", o.network, "VM network (namespace/name)");
  cmd->add_option("--gateway", o.gateway, "Network gateway");
  cmd->add_option("--subnet-mask", o.subnet_mask, "Subnet mask");
  cmd->add_option("--dns", o.dns, "DNS servers, comma-separated");
  cmd->add_option("--ip-pool", o.ip_pool, "IPPool");
  cmd->add_option("--ip-pool-refs", o.ip_pool_refs,
                  "IPPools tried in order, comma-separated (instead of --ip-pool)");
  cmd->add_option("--extra-disk", o.extra_disk, "Extra data disk SIZE[:STORAGECLASS]");
  cmd->add_option("--harvester-kubeconfig", o.harvester_kubeconfig, "Harvester kubeconfig file");
  cmd->add_option("--target-namespace", o.target_namespace, "Harvester namespace of the VMs")
      ->capture_default_str();
  cmd->add_option("--cp-replicas", o.cp_replicas, "Control-plane replicas")->capture_default_str();
  cmd->add_option("--worker-replicas", o.worker_replicas, "Worker replicas")->capture_default_str();
  cmd->add_option("--cpu", o.cpu, "CPUs per VM")->capture_default_str();
  cmd->add_option("--memory", o.memory, "Memory per VM")->capture_default_str();
  cmd->add_option("--disk-size", o.disk_size, "Boot disk size")->capture_default_str();
  cmd->add_option("--k8s-version", o.k8s_version, "Kubernetes version")->capture_default_str();
  cmd->add_option("--cni", o.cni, "CNI: calico, canal, cilium, none")->capture_default_str();
  cmd->add_option("--cni-mtu", o.cni_mtu, "CNI MTU")->capture_default_str();
  cmd->add_option("--cni-encapsulation", o.cni_encapsulation,
                  "VXLAN, VXLANCrossSubnet, IPIP, IPIPCrossSubnet, None")
      ->capture_default_str();
  cmd->add_option("--cni-bgp", o.cni_bgp, "Enabled or Disabled")->capture_default_str();
  cmd->add_option("--pod-cidr", o.pod_cidr, "Pod CIDR")->capture_default_str();
  cmd->add_option("--fleet-addon-repo", o.fleet_addon_repo,
                  "Fleet addons git repository (CSI and CNI through Fleet)");
  cmd->add_option("--fleet-addon-branch", o.fleet_addon_branch, "Its branch")
      ->capture_default_str();
  cmd->add_option("--cis-profile", o.cis_profile,
                  "RKE2 CIS profile on every node: cis, cis-1.23, cis-1.5, cis-1.6 (default none)");
  cmd->add_flag("--fips-required", o.fips_required,
                "Nodes whose image does not run in FIPS mode stop before installing RKE2");
  cmd->add_flag("--dry-run", f.dry_run, "Print the YAML (the default)");
  cmd->add_flag("--apply", f.apply, "Apply to the management cluster and wait");
  cmd->add_flag("--interactive", f.interactive,
                "Ask for the values, offering what Harvester has (the flags are the defaults)");
  cmd->add_flag("--skip-class", f.skip_class, "Leave out the ClusterClass and its templates");
  cmd->add_option("--rke2-api-version", o.rke2_api_version,
                  "API of the RKE2 providers the ClusterClass refers to: v1beta1 (up to v0.21, "
                  "Cluster API up to v1.10) or v1beta2 (v0.22 and later)")
      ->capture_default_str();
  cmd->add_option("-o,--output", f.output,
                  "Write the YAML to FILE instead of stdout (- for stdout)");
  cmd->add_option("--kubeconfig", f.kubeconfig,
                  "Management cluster kubeconfig (--apply; default $KUBECONFIG)");
  cmd->add_option_function<std::string>(
      "--timeout", [&f](const std::string& s) { f.timeout = ParseTimeout(s); },
      "How long --apply waits (default 30m)");
  // Which flags were given: in --interactive they are the defaults as they are.
  cmd->parse_complete_callback([cmd, &f] {
    f.given.clear();
    for (const CLI::Option* opt : cmd->get_options()) {
      if (opt->count() == 0) continue;
      for (const auto& name : opt->get_lnames()) f.given.insert("--" + name);
    }
  });
  return cmd;
}

int RunGenerate(const GenerateFlags& f, std::ostream& out, std::ostream& err) {
  return RunGenerate(f, std::cin, out, err);
}

int RunGenerate(const GenerateFlags& f, std::istream& in, std::ostream& out, std::ostream& err) {
  if (f.apply && f.dry_run) {
    err << "caphv generate: --apply and --dry-run exclude each other\n";
    return 2;
  }
  if (f.interactive) return RunInteractive(f, in, out, err, LoadHarvesterInventory);
  generate::Options options = f.options;
  options.with_class = !f.skip_class;
  if (auto s = generate::Validate(options); !s.ok()) {
    err << "caphv generate: " << s.message() << "\n";
    return 2;
  }
  auto kubeconfig = api::ReadFile(options.harvester_kubeconfig);
  if (!kubeconfig.ok()) {
    err << "caphv generate: --harvester-kubeconfig: cannot read " << options.harvester_kubeconfig
        << "\n";
    return 2;
  }
  auto objects = generate::Build(options, *kubeconfig);
  if (!objects.ok()) {
    err << "caphv generate: " << objects.status().message() << "\n";
    return 1;
  }
  if (f.apply) {
    int rc = 0;
    auto mgmt = ConnectManagement(f.kubeconfig, "caphv generate: ", err, &rc);
    if (!mgmt) return rc;
    return ApplyAndWait(*mgmt->client, f, *objects, err);
  }
  return WriteObjects(f.output, *objects, out, err);
}

int WriteObjects(const std::string& output, const std::vector<Json>& objects, std::ostream& out,
                 std::ostream& err) {
  const std::string yaml = generate::ToYamlStream(objects);
  if (output.empty() || output == "-") {
    out << yaml << std::flush;
    return 0;
  }
  std::ofstream file(output);
  file << yaml;
  file.close();
  if (!file) {
    err << "caphv generate: -o: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}

// The class's RKE2 refs at the API the management cluster's RKE2 providers
// serve (v1beta2 from v0.22, which Cluster API v1.11+ matches patch selectors
// against), unless --rke2-api-version chose one. `served` gets the version
// the class must name ("" when the RKE2 providers are not installed: Cluster
// API's webhook says so). nullopt, after one line on `err`, when the
// management cluster's discovery cannot be read.
namespace {
std::optional<std::vector<Json>> AtServedRke2Api(kube::Client& client, const GenerateFlags& f,
                                                 const std::vector<Json>& objects,
                                                 std::string* served, std::ostream& err) {
  std::vector<Json> out = objects;
  if (f.given.contains("--rke2-api-version")) {
    *served = f.options.rke2_api_version;
    return out;
  }
  auto group = client.GetPath("/apis/controlplane.cluster.x-k8s.io");
  if (!group.ok()) {
    if (group.status().IsNotFound()) return out;
    err << "caphv generate: reading which API the RKE2 providers serve "
           "(/apis/controlplane.cluster.x-k8s.io): "
        << group.status().message() << " (or choose it with --rke2-api-version)\n";
    return std::nullopt;
  }
  *served = kube::ServesVersion(*group, "v1beta2") ? "v1beta2" : "v1beta1";
  if (*served == f.options.rke2_api_version) return out;
  // Only RKE2 apiVersions move: the class's templates and refs (and a
  // Cluster's controlPlaneRef, if one names RKE2), nothing else.
  generate::UseRke2ApiVersion(out, *served);
  err << "the RKE2 providers serve " << *served << ": the ClusterClass refers to that API\n";
  return out;
}
}  // namespace

int ApplyAndWait(kube::Client& client, const GenerateFlags& f, const std::vector<Json>& given,
                 std::ostream& err) {
  const auto& o = f.options;
  const std::string ns = o.Namespace();
  std::string served;
  const auto at_served = AtServedRke2Api(client, f, given, &served, err);
  if (!at_served) return 1;
  const std::vector<Json>& objects = *at_served;
  // The class only when the namespace lacks it.
  bool have_class = false;
  if (auto got = client.Get(kClusterClasses, ns, o.cls); got.ok()) {
    have_class = true;
    // A class made before the RKE2 providers moved to v1beta2: Cluster API
    // v1.11+ cannot reconcile a topology of it (docs/troubleshooting.md).
    const auto versions = generate::Rke2ApiVersionsIn(*got);
    if (!served.empty() && !versions.empty() &&
        (versions.size() > 1 || *versions.begin() != served)) {
      err << "caphv generate: ClusterClass " << ns << "/" << o.cls
          << " refers to the RKE2 providers' API at " << *versions.begin() << " but they serve "
          << served << ": apply it with its RKE2 apiVersions moved to " << served
          << " first (docs/operations.md, Upgrading Cluster API underneath CAPHV)\n";
      return 1;
    }
  } else if (!got.status().IsNotFound()) {
    err << "caphv generate: reading ClusterClass " << ns << "/" << o.cls << ": "
        << got.status().message() << "\n";
    return 1;
  }
  bool applied_class = false;
  kube::ApplyOptions apply;
  apply.field_manager = generate::kFieldManager;
  apply.force = true;
  const auto deadline = std::chrono::steady_clock::now() + f.timeout;
  for (const auto& object : objects) {
    if (IsClassObject(object) && have_class) continue;
    if (object.value("kind", std::string()) == "Cluster" && applied_class) {
      // Cluster API's webhook checks the Cluster's variables against the
      // class's status: wait until it reconciled them.
      err << "waiting for ClusterClass " << ns << "/" << o.cls << " to be reconciled\n";
      while (true) {
        auto cc = client.Get(kClusterClasses, ns, o.cls);
        if (cc.ok() &&
            (*cc)["status"].value("observedGeneration", int64_t{0}) ==
                (*cc)["metadata"].value("generation", int64_t{-1}) &&
            ConditionTrue(*cc, "VariablesReconciled")) {
          break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          err << "caphv generate: timed out waiting for ClusterClass " << o.cls << "\n";
          return 1;
        }
        std::this_thread::sleep_for(f.poll);
      }
    }
    auto gvr = generate::ResourceOf(object);
    if (!gvr.ok()) {
      err << "caphv generate: " << gvr.status().message() << "\n";
      return 1;
    }
    auto r =
        client.Apply(*gvr, object["metadata"].value("namespace", std::string()), object, apply);
    if (!r.ok()) {
      err << "caphv generate: applying " << Describe(object) << ": " << r.status().message()
          << "\n";
      return 1;
    }
    if (object.value("kind", std::string()) == "ClusterClass") applied_class = true;
    err << "applied " << Describe(object) << "\n";
  }

  const int want = o.cp_replicas + o.worker_replicas;
  std::string last;
  while (true) {
    auto cluster = client.Get(kClusters, ns, o.name);
    bool initialized = false;
    if (cluster.ok()) initialized = ConditionTrue(*cluster, "ControlPlaneInitialized");
    int running = 0;
    int total = 0;
    kube::ListOptions list;
    list.label_selector = "cluster.x-k8s.io/cluster-name=" + o.name;
    if (auto machines = client.List(kMachines, ns, list); machines.ok()) {
      for (const auto& m : machines->items) {
        ++total;
        if (m.contains("status") && m["status"].value("phase", std::string()) == "Running") {
          ++running;
        }
      }
    }
    std::ostringstream line;
    line << "cluster " << ns << "/" << o.name << ": control plane "
         << (initialized ? "initialized" : "not initialized") << ", machines running " << running
         << "/" << want;
    if (line.str() != last) {
      err << line.str() << "\n";
      last = line.str();
    }
    if (initialized && running >= want && total == running) {
      err << "cluster " << ns << "/" << o.name << " is provisioned\n";
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      err << "caphv generate: timed out: " << last << "\n";
      return 1;
    }
    std::this_thread::sleep_for(f.poll);
  }
}

}  // namespace caphv::cli
