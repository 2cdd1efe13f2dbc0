// File: cmd/caphv/management_client.h
//
// The management cluster's client for the commands that write to it
// (`caphv generate --apply`, `caphv backup`, `caphv restore`), with
// controller-runtime's precedence: --kubeconfig, $KUBECONFIG, in-cluster,
// ~/.kube/config. When it cannot be made, one line goes to `err`, prefixed
// with the command's name, and `*exit_code` is the commands' convention: 2
// for a bad --kubeconfig, 1 for any other failure.
//
//   int rc = 0;
//   auto mgmt = ConnectManagement(f.kubeconfig, "caphv backup: ", err, &rc);
//   if (!mgmt) return rc;
//
// Thread safety: one thread (the command's).

#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "kube/client.h"
#include "kube/config.h"

namespace caphv::cli {

struct ManagementConnection {
  kube::RestConfig config;
  std::shared_ptr<kube::Client> client;
};

inline std::optional<ManagementConnection> ConnectManagement(const std::string& kubeconfig,
                                                             std::string_view me, std::ostream& err,
                                                             int* exit_code) {
  auto config = kube::LoadDefaultConfig(kubeconfig);
  if (!config.ok()) {
    err << me << "--kubeconfig: " << config.status().message() << "\n";
    *exit_code = 2;
    return std::nullopt;
  }
  auto client = kube::Client::New(*config);
  if (!client.ok()) {
    err << me << client.status().message() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
  return ManagementConnection{*std::move(config), *std::move(client)};
}

}  // namespace caphv::cli
