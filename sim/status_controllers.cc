// File: sim/status_controllers.cc

#include "sim/status_controllers.h"

#include "sim/ipam.h"
#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;
using kube::Request;
using kube::Result;
using kube::Status;

using namespace internal;  // NOLINT(google-build-using-namespace)

std::unique_ptr<kube::Controller> PoolController::Build() {
  auto c = NewSimController("pool", 1, [this](const Request& r) { return Reconcile(r); });
  c->For(ctx_.cache.pools);
  return c;
}

std::unique_ptr<kube::Controller> ImageController::Build() {
  auto c = NewSimController("image", 1, [this](const Request& r) { return Reconcile(r); });
  c->For(ctx_.cache.images);
  return c;
}

std::unique_ptr<kube::Controller> KeyPairController::Build() {
  auto c = NewSimController("keypair", 1, [this](const Request& r) { return Reconcile(r); });
  c->For(ctx_.cache.keypairs);
  return c;
}

Result PoolController::Reconcile(const Request& req) {
  auto pool = ctx_.cache.pools->store().Get(req.name);
  if (!pool) return Result::Done();
  auto ranges = PoolRanges(*pool);
  if (!ranges.ok()) return Result::Terminal(ranges.status());
  const Object want = PoolStatusToJson(PoolStatusOf(*pool, *ranges));
  const Object& have = StatusOf(*pool);
  if (have.value("total", int64_t{-1}) == want["total"] &&
      have.value("available", int64_t{-1}) == want["available"] && have.contains("lastAllocated")) {
    return Result::Done();
  }
  if (Status s = ctx_.Fault("initialize pool status"); !s.ok()) return Result::Error(s);
  Object updated = *pool;
  updated["status"] = want;
  auto u = ctx_.h->Update(gvr::kIPPools, "", updated, {.field_manager = kLbManager});
  return u.ok() ? Result::Done() : Result::Error(u.status());
}

Result ImageController::Reconcile(const Request& req) {
  auto image = ctx_.cache.images->store().Get(req.ns, req.name);
  if (!image || !StatusOf(*image).value("storageClassName", "").empty()) return Result::Done();
  const Object spec = image->value("spec", Object::object());
  EnvImage im{req.ns, req.name, spec.value("displayName", req.name), spec.value("url", ""), 0, 0};
  if (Status s = ctx_.Fault("create image StorageClass"); !s.ok()) return Result::Error(s);
  auto sc = ctx_.h->Create(gvr::kStorageClasses, "", ImageStorageClass(im));
  if (!sc.ok() && !sc.status().IsAlreadyExists()) return Result::Error(sc.status());
  auto p = ctx_.h->Patch(gvr::kImages, req.ns, req.name, kube::PatchType::kMerge,
                         {{"status", ImageObject(im)["status"]}});
  return p.ok() ? Result::Done() : Result::Error(p.status());
}

Result KeyPairController::Reconcile(const Request& req) {
  auto kp = ctx_.cache.keypairs->store().Get(req.ns, req.name);
  if (!kp || !StatusOf(*kp).value("fingerPrint", "").empty()) return Result::Done();
  const std::string key = (*kp)["spec"].value("publicKey", "");
  if (key.empty()) return Result::Done();
  const Object status = KeyPairObject({req.ns, req.name, key})["status"];
  if (Covers(status, StatusOf(*kp))) return Result::Done();
  auto p = ctx_.h->Patch(gvr::kKeyPairs, req.ns, req.name, kube::PatchType::kMerge,
                         {{"status", status}});
  return p.ok() ? Result::Done() : Result::Error(p.status());
}

}  // namespace caphv::sim
