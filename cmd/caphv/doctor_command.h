// File: cmd/caphv/doctor_command.h
//
// `caphv doctor`: checks, against a Harvester kubeconfig and optionally the
// management cluster's, what a Cluster of the ClusterClass harvester-rke2
// needs (docs/cli.md). One line per check, ✓, ! (passed, but look) or ✗ with
// the fix; the exit code is the number of failures; -o json prints them as
// JSON instead. An apiserver that does not answer is one failed line within
// --timeout (connect), never a hang.

#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "api/fields.h"

namespace caphv::cli {

struct DoctorFlags {
  std::string harvester_kubeconfig;
  std::string kubeconfig;      // management cluster; empty: its checks are skipped
  std::string ns = "default";  // management namespace of the ClusterClass
  std::string cls = "harvester-rke2";
  std::string image, ssh_keypair, network;  // namespace/name; empty: not checked
  std::string ip_pools;                     // comma-separated
  int replicas = 5;                         // machines the pools must hold
  std::string output = "text";              // text or json
  // Connecting to each apiserver (TCP and TLS); a request gets three times as long.
  std::chrono::milliseconds timeout{std::chrono::seconds(5)};
};

struct Check {
  std::string name;
  bool ok = false;
  std::string detail;    // what was found
  std::string fix;       // when not ok
  bool warning = false;  // ok, but worth a look (an identity expiring soon)
};

CLI::App* AddDoctorCommand(CLI::App& app, DoctorFlags& flags);

// The report: "✓ name: detail" / "✗ name: detail; fix: ..." lines, or JSON.
std::string RenderChecks(const std::vector<Check>& checks, bool json);

int RunDoctor(const DoctorFlags& flags, std::ostream& out, std::ostream& err);

// Whether a metav1.LabelSelector (matchLabels, matchExpressions: In, NotIn,
// Exists, DoesNotExist) selects `labels`; an empty or absent one selects all.
bool SelectorMatches(const api::Json& selector, const api::Json& labels);

// The admission webhooks (names) of `configs` -- Validating and
// MutatingWebhookConfigurations -- that a CREATE of `resource` in API group
// `group`, in a namespace with `namespace_labels`, of an object without
// labels, goes through: by their rules, namespaceSelector and objectSelector.
std::vector<std::string> WebhooksFor(const std::vector<api::Json>& configs, std::string_view group,
                                     std::string_view resource, const api::Json& namespace_labels);

}  // namespace caphv::cli
