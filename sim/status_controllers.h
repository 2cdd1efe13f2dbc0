// File: sim/status_controllers.h
//
// The Harvester controllers that only fill in a status:
//   - PoolController: an IPPool's totals (sim/ipam.h);
//   - ImageController: a VM image's StorageClass and status (the class its
//     disks are made with);
//   - KeyPairController: a key pair's fingerprint.
//
// Thread safety: Reconcile() from the controllers' workers.

#pragma once

#include <memory>

#include "kube/controller.h"
#include "sim/context.h"

namespace caphv::sim {

class PoolController {
 public:
  explicit PoolController(SimContext& ctx) : ctx_(ctx) {}
  std::unique_ptr<kube::Controller> Build();
  kube::Result Reconcile(const kube::Request& req);

 private:
  SimContext& ctx_;
};

class ImageController {
 public:
  explicit ImageController(SimContext& ctx) : ctx_(ctx) {}
  std::unique_ptr<kube::Controller> Build();
  kube::Result Reconcile(const kube::Request& req);

 private:
  SimContext& ctx_;
};

class KeyPairController {
 public:
  explicit KeyPairController(SimContext& ctx) : ctx_(ctx) {}
  std::unique_ptr<kube::Controller> Build();
  kube::Result Reconcile(const kube::Request& req);

 private:
  SimContext& ctx_;
};

}  // namespace caphv::sim
