// File: generate/interactive.cc
//
// The questions of the interview (see interactive.h): their order and
// prompts, the choices each shows, the default of each (the flag given,
// else what Harvester suggests, else the flag's default), the question as
// text, and the summary of the values chosen. Taking an answer is in
// interactive_answer.cc; the choices made of Harvester's objects in
// interactive_choices.cc.

#include "generate/interactive.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "generate/interactive_internal.h"

namespace caphv::generate {
namespace {

using internal::Join;
using internal::kCnis;
using internal::ListName;
using internal::Plural;
using internal::SplitList;

struct Step {
  std::string_view key;
  std::string_view prompt;
};

const std::vector<Step> kQuestions = {
    {"harvester-kubeconfig", "Harvester kubeconfig"},
    {"name", "Cluster name"},
    {"namespace", "Namespace of the Cluster (management cluster)"},
    {"target-namespace", "Harvester namespace of the VMs"},
    {"image", "VM image"},
    {"ssh-keypair", "SSH key pair"},
    {"ssh-user", "SSH user"},
    {"network", "VM network"},
    {"ip-pool", "IP pool(s), comma-separated, tried in order"},
    {"gateway", "Gateway"},
    {"subnet-mask", "Subnet mask"},
    {"dns", "DNS servers, comma-separated"},
    {"cp-replicas", "Control-plane machines"},
    {"worker-replicas", "Worker machines"},
    {"cpu", "CPUs per machine"},
    {"memory", "Memory per machine"},
    {"disk-size", "Boot disk size"},
    {"k8s-version", "Kubernetes version"},
    {"cni", "CNI"},
};

std::string_view PromptOf(std::string_view key) {
  for (const auto& q : kQuestions) {
    if (q.key == key) return q.prompt;
  }
  return key;
}

}  // namespace

std::string RenderQuestion(const Question& q) {
  std::string out;
  if (!q.note.empty()) out += q.note + "\n";
  for (size_t i = 0; i < q.choices.size(); ++i) {
    out += "  " + std::to_string(i + 1) + ") " + q.choices[i] + "\n";
  }
  out += q.prompt;
  if (!q.default_value.empty()) {
    out += " [" + q.default_value + "]";
  } else if (q.optional) {
    out += " [none]";
  }
  out += ": ";
  return out;
}

const std::vector<std::string_view> Interview::kSteps = [] {
  std::vector<std::string_view> keys;
  keys.reserve(kQuestions.size());
  for (const auto& q : kQuestions) keys.push_back(q.key);
  return keys;
}();

std::vector<std::string> Interview::Keys() {
  return std::vector<std::string>(kSteps.begin(), kSteps.end());
}

Interview::Interview(Options prefilled, std::set<std::string> given, Loader loader)
    : options_(std::move(prefilled)), given_(std::move(given)), loader_(std::move(loader)) {}

std::vector<std::string> Interview::ChosenPools() const {
  auto refs = SplitList(options_.ip_pool_refs);
  if (refs.empty() && !options_.ip_pool.empty()) refs.push_back(options_.ip_pool);
  return refs;
}

int64_t Interview::FreeInChosenPools() const {
  if (inventory_.errors.contains("ip pools")) return -1;
  int64_t free = 0;
  for (const auto& name : ChosenPools()) {
    for (const auto& p : inventory_.pools) {
      if (p.name == name) free += p.free;
    }
  }
  return free;
}

std::string Interview::ValueOf(std::string_view key) const {
  const Options& o = options_;
  if (key == "harvester-kubeconfig") return o.harvester_kubeconfig;
  if (key == "name") return o.name;
  if (key == "namespace") return o.Namespace();
  if (key == "target-namespace") return o.target_namespace;
  if (key == "image") return o.image;
  if (key == "ssh-keypair") return o.ssh_keypair;
  if (key == "ssh-user") return o.ssh_user;
  if (key == "network") return o.network;
  if (key == "ip-pool") return Join(ChosenPools(), ",");
  if (key == "gateway") return o.gateway;
  if (key == "subnet-mask") return o.subnet_mask;
  if (key == "dns") return o.dns;
  if (key == "cp-replicas") return std::to_string(o.cp_replicas);
  if (key == "worker-replicas") return std::to_string(o.worker_replicas);
  if (key == "cpu") return std::to_string(o.cpu);
  if (key == "memory") return o.memory;
  if (key == "disk-size") return o.disk_size;
  if (key == "k8s-version") return o.k8s_version;
  if (key == "cni") return o.cni;
  return "";
}

std::string Interview::DefaultOf(std::string_view key) const {
  const std::string flag = "--" + std::string(key);
  const Inventory& inv = inventory_;
  if (key == "ip-pool") {
    if (Given("--ip-pool") || Given("--ip-pool-refs")) return ValueOf(key);
  } else if (key == "namespace") {
    if (Given(flag)) return options_.ns;
    return options_.name;  // the Cluster's name, as the flag's default
  } else if (Given(flag)) {
    return ValueOf(key);
  }
  if (key == "image") {
    for (const auto& i : inv.images) {
      if (i.active) return i.ref;
    }
    return "";
  }
  if (key == "ssh-keypair") return inv.key_pairs.empty() ? "" : inv.key_pairs.front().ref;
  if (key == "ssh-user") {
    for (const auto& i : inv.images) {
      if (i.ref == options_.image) {
        if (auto user = SshUserOfImage(i); !user.empty()) return user;
      }
    }
    return options_.ssh_user;
  }
  if (key == "network") return inv.networks.empty() ? "" : inv.networks.front().ref;
  if (key == "ip-pool") {
    const PoolChoice* best = nullptr;
    for (const auto& p : inv.pools) {
      if (p.free <= 0) continue;
      if (p.network == options_.network) return p.name;
      if (best == nullptr && p.network.empty()) best = &p;
    }
    return best != nullptr ? best->name : "";
  }
  if (key == "gateway" || key == "subnet-mask") {
    const auto pools = ChosenPools();
    for (const auto& p : inv.pools) {
      if (pools.empty() || p.name != pools.front()) continue;
      const std::string& v = key == "gateway" ? p.gateway : p.subnet_mask;
      if (!v.empty()) return v;
    }
    return ValueOf(key);
  }
  return ValueOf(key);
}

std::vector<std::string> Interview::ChoicesOf(std::string_view key) const {
  std::vector<std::string> out;
  const Inventory& inv = inventory_;
  // Aligned columns: the widest first column.
  auto pad = [](std::string s, size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s;
  };
  if (key == "image") {
    size_t w = 0, d = 0;
    for (const auto& i : inv.images) {
      w = std::max(w, i.ref.size());
      d = std::max(d, i.display_name.size());
    }
    for (const auto& i : inv.images) {
      out.push_back(pad(i.ref, w) + "  " + pad(i.display_name, d) + "  " + i.state);
    }
  } else if (key == "ssh-keypair") {
    size_t w = 0;
    for (const auto& k : inv.key_pairs) w = std::max(w, k.ref.size());
    for (const auto& k : inv.key_pairs) {
      out.push_back(k.fingerprint.empty() ? k.ref : pad(k.ref, w) + "  " + k.fingerprint);
    }
  } else if (key == "network") {
    size_t w = 0;
    for (const auto& n : inv.networks) w = std::max(w, n.ref.size());
    for (const auto& n : inv.networks) {
      out.push_back(n.detail.empty() ? n.ref : pad(n.ref, w) + "  " + n.detail);
    }
  } else if (key == "ip-pool") {
    size_t w = 0, s = 0;
    for (const auto& p : inv.pools) {
      w = std::max(w, p.name.size());
      s = std::max(s, p.subnet.size());
    }
    for (const auto& p : inv.pools) {
      std::string line = pad(p.name, w) + "  " + pad(p.subnet, s) + "  " + std::to_string(p.free) +
                         " free of " + std::to_string(p.total);
      line += p.network.empty() ? "  any network" : "  network " + p.network;
      out.push_back(line);
    }
  } else if (key == "cni") {
    out = kCnis;
  }
  return out;
}

Question Interview::Current() const {
  const std::string_view key = kSteps.at(step_);
  Question q;
  q.key = std::string(key);
  q.prompt = std::string(PromptOf(key));
  q.choices = ChoicesOf(key);
  q.default_value = DefaultOf(key);
  q.optional = key == "dns";
  if (const auto list = ListName(key); !list.empty()) {
    if (auto it = inventory_.errors.find(std::string(list)); it != inventory_.errors.end()) {
      q.note = "(cannot list the " + std::string(list) + " of Harvester: " + it->second + ")";
    } else if (q.choices.empty()) {
      q.note = "(Harvester has no " + std::string(list) + ")";
    }
  }
  if (key == "ip-pool") {
    q.note += std::string(q.note.empty() ? "" : "\n") +
              "(VM addresses come from IP pools: the ClusterClass harvester-rke2 has no DHCP "
              "for VMs)";
  }
  return q;
}

std::vector<std::pair<std::string, std::string>> Interview::Summary() const {
  const Options& o = options_;
  std::string pools = Join(ChosenPools(), ", ");
  if (const int64_t free = FreeInChosenPools(); free >= 0) {
    pools += " (" + Plural(free, "free address", "free addresses") + ")";
  }
  std::string harvester = o.harvester_kubeconfig;
  if (!inventory_.server.empty()) harvester += " (" + inventory_.server + ")";
  return {
      {"Harvester", harvester},
      {"Cluster", o.Namespace() + "/" + o.name + " of the ClusterClass " + o.cls},
      {"VMs in Harvester namespace", o.target_namespace},
      {"Image", o.image},
      {"SSH", o.ssh_user + ", key pair " + o.ssh_keypair},
      {"Network", o.network},
      {"IP pools", pools},
      {"Gateway / mask", o.gateway + " / " + o.subnet_mask},
      {"DNS", o.dns.empty() ? "none" : o.dns},
      {"Machines", std::to_string(o.cp_replicas) + " control plane, " +
                       std::to_string(o.worker_replicas) + " workers; " + std::to_string(o.cpu) +
                       " CPUs, " + o.memory + " memory, " + o.disk_size + " disk each"},
      {"Kubernetes", RkeVersion(o.k8s_version) + ", CNI " + o.cni},
  };
}

}  // namespace caphv::generate
