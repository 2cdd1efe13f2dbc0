// File: cmd/caphv/interactive_command.cc

#include "interactive_command.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>

#include "api/yaml.h"
#include "harvester/resources.h"
#include "kube/client.h"
#include "kube/config.h"

namespace caphv::cli {
namespace {

using kube::Status;
using kube::StatusCode;

const kube::GroupVersionResource kNetworks{"k8s.cni.cncf.io", "v1",
                                           "network-attachment-definitions", true};

std::string ExpandHome(const std::string& path) {
  if (path == "~" || path.rfind("~/", 0) == 0) {
    if (const char* home = std::getenv("HOME"); home != nullptr) return home + path.substr(1);
  }
  return path;
}

// "y"/"yes" -> true, "n"/"no" -> false, "" -> `dflt`; nullopt otherwise.
std::optional<bool> YesNo(std::string answer, bool dflt) {
  const auto b = answer.find_first_not_of(" \t\r");
  answer = b == std::string::npos ? "" : answer.substr(b, answer.find_last_not_of(" \t\r") - b + 1);
  for (auto& c : answer) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (answer.empty()) return dflt;
  if (answer == "y" || answer == "yes") return true;
  if (answer == "n" || answer == "no") return false;
  return std::nullopt;
}

}  // namespace

kube::StatusOr<generate::Inventory> LoadHarvesterInventory(const std::string& path_in) {
  generate::Inventory inv;
  inv.kubeconfig_path = ExpandHome(path_in);
  auto config = kube::LoadKubeconfigFile(inv.kubeconfig_path);
  if (!config.ok()) {
    return Status(StatusCode::kInvalidArgument, "cannot read a kubeconfig from " +
                                                    inv.kubeconfig_path + ": " +
                                                    std::string(config.status().message()));
  }
  config->connect_timeout = std::chrono::seconds(5);
  config->request_timeout = std::chrono::seconds(15);
  inv.server = config->server;
  auto client_or = kube::Client::New(*config);
  if (!client_or.ok()) return client_or.status();
  kube::Client& client = **client_or;
  auto images = client.List(harvester::kVirtualMachineImages, "");
  if (!images.ok()) {
    if (images.status().IsNotFound()) {
      return Status(StatusCode::kInvalidArgument,
                    inv.server + " serves no harvesterhci.io images: not Harvester");
    }
    return Status(StatusCode::kUnavailable, "cannot list the images of " + inv.server + ": " +
                                                std::string(images.status().message()));
  }
  inv.images = generate::ImageChoices(images->items);
  if (auto l = client.List(harvester::kKeyPairs, ""); l.ok()) {
    inv.key_pairs = generate::KeyPairChoices(l->items);
  } else {
    inv.errors["key pairs"] = l.status().message();
  }
  if (auto l = client.List(kNetworks, ""); l.ok()) {
    inv.networks = generate::NetworkChoices(l->items);
  } else {
    inv.errors["networks"] = l.status().message();
  }
  if (auto l = client.List(harvester::kIPPools, ""); l.ok()) {
    inv.pools = generate::PoolChoices(l->items);
  } else {
    inv.errors["ip pools"] = l.status().message();
  }
  return inv;
}

int RunInteractive(const GenerateFlags& f, std::istream& in, std::ostream& out, std::ostream& err,
                   const generate::Interview::Loader& loader) {
  generate::Options options = f.options;
  std::set<std::string> given = f.given;
  if (options.harvester_kubeconfig.empty()) {
    if (const char* env = std::getenv("HARVESTER_KUBECONFIG"); env != nullptr && *env != '\0') {
      options.harvester_kubeconfig = env;
      given.insert("--harvester-kubeconfig");
    }
  }
  if (auto s = generate::CheckUnaskedFlags(options); !s.ok()) {
    err << "caphv generate: " << s.message() << "\n";
    return 2;
  }
  if (f.apply) {
    if (auto mgmt = kube::LoadDefaultConfig(f.kubeconfig); !mgmt.ok()) {
      err << "caphv generate: --kubeconfig: " << mgmt.status().message() << "\n";
      return 2;
    }
  }
  err << "caphv generate --interactive: " << generate::Interview::Keys().size()
      << " questions. Enter takes the default in brackets; a number picks from a list.\n";
  generate::Interview interview(options, given, loader);
  auto read_line = [&](const std::string& prompt, std::string* line) {
    if (std::getline(in, *line)) return true;
    err << "\ncaphv generate: end of input at \"" << prompt << "\": nothing generated\n";
    return false;
  };
  while (!interview.Done()) {
    generate::Question q = interview.Current();
    // A list stands apart from the question before it.
    err << (q.choices.empty() && q.note.empty() ? "" : "\n") << generate::RenderQuestion(q)
        << std::flush;
    while (true) {
      std::string line;
      if (!read_line(q.prompt, &line)) return 2;
      const std::string reason = interview.Answer(line);
      if (reason.empty()) break;
      // Asked again: the reason, then the prompt alone (the list is above).
      q.choices.clear();
      q.note.clear();
      err << "  " << reason << "\n" << generate::RenderQuestion(q) << std::flush;
    }
  }

  generate::Options chosen = interview.options();
  chosen.with_class = !f.skip_class;
  if (auto s = generate::Validate(chosen); !s.ok()) {
    err << "caphv generate: " << s.message() << "\n";
    return 2;
  }
  auto kubeconfig = api::ReadFile(chosen.harvester_kubeconfig);
  if (!kubeconfig.ok()) {
    err << "caphv generate: --harvester-kubeconfig: cannot read " << chosen.harvester_kubeconfig
        << "\n";
    return 2;
  }
  auto objects = generate::Build(chosen, *kubeconfig);
  if (!objects.ok()) {
    err << "caphv generate: " << objects.status().message() << "\n";
    return 1;
  }

  // The summary; where it would be applied.
  auto mgmt = kube::LoadDefaultConfig(f.kubeconfig);
  auto summary = interview.Summary();
  summary.emplace_back(
      "Management cluster",
      mgmt.ok() ? mgmt->server : "none found (--kubeconfig, $KUBECONFIG, ~/.kube/config)");
  summary.emplace_back("Objects", std::to_string(objects->size()) +
                                      (chosen.with_class ? " (with the ClusterClass)" : ""));
  size_t width = 0;
  for (const auto& [label, value] : summary) width = std::max(width, label.size());
  err << "\nSummary:\n";
  for (const auto& [label, value] : summary) {
    err << "  " << label << std::string(width - label.size() + 2, ' ') << value << "\n";
  }

  const std::string where = f.output.empty() || f.output == "-" ? "stdout" : f.output;
  bool apply = false;
  if (mgmt.ok()) {
    const std::string prompt = f.apply ? "Apply now? [Y/n]: " : "Apply now? [y/N]: ";
    err << "\n" << prompt << std::flush;
    while (true) {
      std::string line;
      if (!read_line("Apply now?", &line)) return 2;
      if (auto yes = YesNo(line, f.apply)) {
        apply = *yes;
        break;
      }
      err << "  answer y or n\n" << prompt << std::flush;
    }
  }
  if (!apply) {
    err << "writing the YAML to " << where << "\n";
    return WriteObjects(f.output, *objects, out, err);
  }
  auto client = kube::Client::New(*mgmt);
  if (!client.ok()) {
    err << "caphv generate: " << client.status().message() << "\n";
    return 1;
  }
  GenerateFlags applied = f;
  applied.options = chosen;
  return ApplyAndWait(**client, applied, *objects, err);
}

}  // namespace caphv::cli
