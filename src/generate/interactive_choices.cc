// File: generate/interactive_choices.cc
//
// What the interview offers from Harvester's objects (see interactive.h):
// the images with their import state, the key pairs, the VM networks with
// their VLAN and the IP pools with their free addresses, as sorted choices,
// and the SSH user an image's distribution implies. The questions and the
// answers are in interactive.cc and interactive_answer.cc.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "generate/interactive.h"
#include "harvester/ipam.h"
#include "harvester/ipv4.h"

namespace caphv::generate {
namespace {

using api::Json;

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

}  // namespace caphv::generate
