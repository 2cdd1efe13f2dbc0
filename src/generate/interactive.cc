// File: generate/interactive.cc

#include "generate/interactive.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <sstream>

#include "harvester/ipam.h"
#include "harvester/ipv4.h"

namespace caphv::generate {
namespace {

using api::Json;

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{std::string(text)};
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += sep;
    out += i;
  }
  return out;
}

std::string StringAt(const Json& o, std::string_view a, std::string_view b) {
  if (!o.is_object() || !o.contains(a) || !o[a].is_object()) return "";
  const Json& inner = o[a];
  const auto it = inner.find(b);
  return it != inner.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string RefOf(const Json& o) {
  const std::string ns = StringAt(o, "metadata", "namespace");
  const std::string name = StringAt(o, "metadata", "name");
  return ns.empty() ? name : ns + "/" + name;
}

bool Deleting(const Json& o) {
  return o.contains("metadata") && o["metadata"].is_object() &&
         o["metadata"].contains("deletionTimestamp");
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A non-negative integer, or nullopt.
std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  const auto* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

// Options every field of which is valid: one field set on top of it is
// checked by Validate alone.
Options Baseline() {
  Options o;
  o.name = "a";
  o.image = "a/b";
  o.ssh_keypair = "a/b";
  o.network = "a/b";
  o.gateway = "10.0.0.1";
  o.subnet_mask = "255.255.255.0";
  o.ip_pool = "p";
  o.harvester_kubeconfig = "k";
  return o;
}

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

const std::vector<std::string> kCnis = {"calico", "canal", "cilium", "none"};

std::string_view PromptOf(std::string_view key) {
  for (const auto& q : kQuestions) {
    if (q.key == key) return q.prompt;
  }
  return key;
}

// The list `key` offers, and the name of that list in Inventory::errors.
std::string_view ListName(std::string_view key) {
  if (key == "image") return "images";
  if (key == "ssh-keypair") return "key pairs";
  if (key == "network") return "networks";
  if (key == "ip-pool") return "ip pools";
  return "";
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace

std::string ImageState(const Json& image) {
  const Json status = image.value("status", Json::object());
  for (const auto& c : status.value("conditions", Json::array())) {
    if (c.value("type", std::string()) != "Imported") continue;
    const std::string s = c.value("status", std::string());
    if (s == "True") return "Active";
    if (s == "False") {
      const std::string message = c.value("message", c.value("reason", std::string()));
      return message.empty() ? "Failed" : "Failed: " + message;
    }
  }
  int64_t progress = 0;
  if (status.contains("progress") && status["progress"].is_number()) {
    progress = status["progress"].get<int64_t>();
  }
  return "Importing " + std::to_string(progress) + "%";
}

std::vector<ImageChoice> ImageChoices(const std::vector<Json>& images) {
  std::vector<ImageChoice> out;
  for (const auto& i : images) {
    if (Deleting(i)) continue;
    ImageChoice c;
    c.ref = RefOf(i);
    c.display_name = StringAt(i, "spec", "displayName");
    c.state = ImageState(i);
    c.active = c.state == "Active";
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ref < b.ref; });
  return out;
}

std::vector<KeyPairChoice> KeyPairChoices(const std::vector<Json>& key_pairs) {
  std::vector<KeyPairChoice> out;
  for (const auto& k : key_pairs) {
    if (Deleting(k)) continue;
    out.push_back({RefOf(k), StringAt(k, "status", "fingerPrint")});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ref < b.ref; });
  return out;
}

std::vector<NetworkChoice> NetworkChoices(const std::vector<Json>& networks) {
  std::vector<NetworkChoice> out;
  for (const auto& n : networks) {
    if (Deleting(n)) continue;
    NetworkChoice c{RefOf(n), ""};
    const Json config = Json::parse(StringAt(n, "spec", "config"), nullptr, false);
    if (config.is_object() && config.contains("vlan") && config["vlan"].is_number_integer()) {
      c.detail = "VLAN " + std::to_string(config["vlan"].get<int64_t>());
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ref < b.ref; });
  return out;
}

std::vector<PoolChoice> PoolChoices(const std::vector<Json>& pools) {
  std::vector<PoolChoice> out;
  for (const auto& p : pools) {
    if (Deleting(p)) continue;
    auto parsed = harvester::ParseIpPool(p);
    if (!parsed.ok()) continue;
    PoolChoice c;
    c.name = parsed->name;
    c.total = harvester::TotalAddresses(*parsed);
    c.free = std::max<int64_t>(c.total - static_cast<int64_t>(parsed->allocated.size()), 0);
    c.network = parsed->network;
    const Json ranges = p.value("spec", Json::object()).value("ranges", Json::array());
    if (!ranges.empty() && ranges[0].is_object()) {
      c.subnet = ranges[0].value("subnet", std::string());
      c.gateway = ranges[0].value("gateway", std::string());
    }
    if (!parsed->ranges.empty()) {
      c.subnet_mask =
          harvester::FormatIpv4(harvester::MaskFromPrefix(parsed->ranges[0].subnet.prefix));
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::string SshUserOfImage(const ImageChoice& image) {
  const std::string text = Lower(image.ref + " " + image.display_name);
  static const std::vector<std::pair<std::string, std::string>> kUsers = {
      {"ubuntu", "ubuntu"},  {"opensuse", "opensuse"}, {"sles", "sles"},
      {"sle-", "sles"},      {"rocky", "rocky"},       {"centos", "centos"},
      {"debian", "debian"},  {"fedora", "fedora"},     {"almalinux", "almalinux"},
      {"rhel", "cloud-user"}};
  for (const auto& [word, user] : kUsers) {
    if (text.find(word) != std::string::npos) return user;
  }
  return "";
}

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

kube::Status CheckUnaskedFlags(const Options& options) {
  Options o = options;
  const Options b = Baseline();
  o.name = b.name;
  o.ns.clear();
  o.harvester_kubeconfig = b.harvester_kubeconfig;
  o.target_namespace = b.target_namespace;
  o.image = b.image;
  o.ssh_keypair = b.ssh_keypair;
  o.ssh_user = b.ssh_user;
  o.network = b.network;
  o.ip_pool = b.ip_pool;
  o.ip_pool_refs.clear();
  o.gateway = b.gateway;
  o.subnet_mask = b.subnet_mask;
  o.dns.clear();
  o.cp_replicas = b.cp_replicas;
  o.worker_replicas = b.worker_replicas;
  o.cpu = b.cpu;
  o.memory = b.memory;
  o.disk_size = b.disk_size;
  o.k8s_version = b.k8s_version;
  o.cni = b.cni;
  return Validate(o);
}

std::string Interview::Set(std::string_view key, const std::string& value) {
  Options probe = Baseline();
  Options& o = options_;
  auto apply = [&](Options& t) {
    if (key == "harvester-kubeconfig") t.harvester_kubeconfig = value;
    if (key == "name") t.name = value;
    if (key == "namespace") t.ns = value;
    if (key == "target-namespace") t.target_namespace = value;
    if (key == "image") t.image = value;
    if (key == "ssh-keypair") t.ssh_keypair = value;
    if (key == "ssh-user") t.ssh_user = value;
    if (key == "network") t.network = value;
    if (key == "ip-pool") {
      const auto pools = SplitList(value);
      t.ip_pool = pools.size() == 1 ? pools.front() : "";
      t.ip_pool_refs = pools.size() == 1 ? "" : Join(pools, ",");
      if (pools.empty()) t.ip_pool.clear();
    }
    if (key == "gateway") t.gateway = value;
    if (key == "subnet-mask") t.subnet_mask = value;
    if (key == "dns") t.dns = value;
    if (key == "memory") t.memory = value;
    if (key == "disk-size") t.disk_size = value;
    if (key == "k8s-version") t.k8s_version = value;
    if (key == "cni") t.cni = value;
  };
  const bool numeric = key == "cp-replicas" || key == "worker-replicas" || key == "cpu";
  std::optional<int> number;
  if (numeric) {
    number = ParseInt(value);
    if (!number) return Quote(value) + " is not a number";
    if (key == "cp-replicas") probe.cp_replicas = *number;
    if (key == "worker-replicas") probe.worker_replicas = *number;
    if (key == "cpu") probe.cpu = *number;
  } else {
    apply(probe);
  }
  if (auto s = Validate(probe); !s.ok()) {
    std::string message(s.message());
    const std::string flag = "--" + std::string(key) + ": ";
    const std::string refs = "--ip-pool-refs: ";
    if (message.starts_with(flag)) return message.substr(flag.size());
    if (key == "ip-pool" && message.starts_with(refs)) return message.substr(refs.size());
    if (key == "ip-pool" && message.starts_with("--ip-pool:")) return "required";
    return message;
  }
  if (numeric) {
    if (key == "cp-replicas") o.cp_replicas = *number;
    if (key == "worker-replicas") o.worker_replicas = *number;
    if (key == "cpu") o.cpu = *number;
  } else {
    apply(o);
  }
  return "";
}

std::string Interview::Answer(std::string_view raw) {
  const std::string_view key = kSteps.at(step_);
  const Question q = Current();
  std::string value = Trim(raw);
  if (value.empty()) value = q.default_value;
  if (q.optional && (value == "none" || value == "-")) value.clear();
  if (value.empty() && !q.optional) return "an answer is required";

  // A number picks a choice (a comma-separated list of them for the pools).
  const auto& inv = inventory_;
  auto pick = [&](const std::string& item) -> std::optional<std::string> {
    auto n = ParseInt(item);
    if (!n || q.choices.empty()) return item;
    if (*n < 1 || static_cast<size_t>(*n) > q.choices.size()) return std::nullopt;
    const size_t i = static_cast<size_t>(*n) - 1;
    if (key == "image") return inv.images[i].ref;
    if (key == "ssh-keypair") return inv.key_pairs[i].ref;
    if (key == "network") return inv.networks[i].ref;
    if (key == "ip-pool") return inv.pools[i].name;
    if (key == "cni") return kCnis[i];
    return item;
  };
  std::string out_of_range =
      "choose 1 to " + std::to_string(q.choices.size()) + (key == "cni" ? "" : ", or type a name");
  if (key == "ip-pool") {
    std::vector<std::string> names;
    for (const auto& item : SplitList(value)) {
      auto name = pick(item);
      if (!name) return out_of_range;
      names.push_back(*name);
    }
    value = Join(names, ",");
  } else if (!q.choices.empty()) {
    auto v = pick(value);
    if (!v) return out_of_range;
    value = *v;
  }

  // Harvester's kubeconfig: read it and list Harvester.
  if (key == "harvester-kubeconfig") {
    auto inventory = loader_(value);
    if (!inventory.ok()) return std::string(inventory.status().message());
    inventory_ = std::move(inventory).value();
    value = inventory_.kubeconfig_path.empty() ? value : inventory_.kubeconfig_path;
  }

  // Checked as the flag is.
  if (auto reason = Set(key, value); !reason.empty()) return reason;

  // Checked against Harvester (when its list could be read).
  const bool listed = !ListName(key).empty() && !inv.errors.contains(std::string(ListName(key)));
  auto find_ref = [&](const auto& items, const std::string& ref) -> decltype(&items.front()) {
    for (const auto& i : items) {
      if (i.ref == ref || i.ref == "default/" + ref) return &i;
    }
    return nullptr;
  };
  if (listed && key == "image") {
    const auto* image = find_ref(inv.images, value);
    if (image == nullptr) return "Harvester has no image " + value + " (choose one of the list)";
    if (!image->active) {
      return image->ref + " is not Active (" + image->state + "): choose an Active image";
    }
    options_.image = image->ref;
  } else if (listed && key == "ssh-keypair") {
    const auto* k = find_ref(inv.key_pairs, value);
    if (k == nullptr) return "Harvester has no key pair " + value + " (choose one of the list)";
    options_.ssh_keypair = k->ref;
  } else if (listed && key == "network") {
    const auto* n = find_ref(inv.networks, value);
    if (n == nullptr) return "Harvester has no network " + value + " (choose one of the list)";
    options_.network = n->ref;
  } else if (listed && key == "ip-pool") {
    int64_t free = 0;
    for (const auto& name : ChosenPools()) {
      const auto it = std::find_if(inv.pools.begin(), inv.pools.end(),
                                   [&](const auto& p) { return p.name == name; });
      if (it == inv.pools.end()) {
        return "Harvester has no IP pool " + name + " (choose from the list)";
      }
      if (!it->network.empty() && it->network != options_.network) {
        return name + " serves network " + it->network + ", not " + options_.network;
      }
      free += it->free;
    }
    if (free == 0) {
      return "no free address in " + Join(ChosenPools(), ", ") +
             ": choose a pool with free addresses";
    }
  } else if (key == "cp-replicas" || key == "worker-replicas") {
    const int64_t free = FreeInChosenPools();
    const int64_t cp = options_.cp_replicas;
    const int64_t machines = key == "cp-replicas" ? cp : cp + options_.worker_replicas;
    if (free >= 0 && machines > free) {
      const std::string pools = Join(ChosenPools(), ", ");
      if (key == "cp-replicas") {
        return "the pools (" + pools + ") have " + Plural(free, "free address", "free addresses") +
               ": at most " + std::to_string(free);
      }
      return "the pools (" + pools + ") have " + Plural(free, "free address", "free addresses") +
             " for " + Plural(cp, "control-plane machine", "control-plane machines") +
             ": at most " + std::to_string(std::max<int64_t>(free - cp, 0));
    }
  }
  ++step_;
  return "";
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
