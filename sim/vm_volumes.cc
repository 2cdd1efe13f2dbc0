// File: sim/vm_volumes.cc
//
// A VM's disks: its PVCs from the claim templates and their binding (see
// vm_controller.h).

#include <set>

#include "sim/object_util.h"
#include "sim/vm_controller.h"

namespace caphv::sim {

using kube::Object;
using kube::ObjectPtr;

using namespace internal;  // NOLINT(google-build-using-namespace)

kube::StatusOr<std::optional<VolumeWait>> VmController::EnsureClaims(const Object& vm) {
  CAPHV_ASSIGN_OR_RETURN(auto claims, ClaimsFromVm(vm));
  std::set<std::string> classes;
  std::string default_class;
  for (const auto& sc : ctx_.cache.storage_classes->store().List()) {
    classes.insert(Name(*sc));
    if (StrAt(*sc, {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) ==
        "true") {
      default_class = Name(*sc);
    }
  }
  std::optional<VolumeWait> wait;
  auto hold = [&](VolumeWait w) {
    if (!wait) wait = std::move(w);
  };
  for (const auto& claim : claims) {
    const Object ann = claim["metadata"].value("annotations", Object::object());
    const std::string image = ann.value(kImageIdAnnotation, "");
    ObjectPtr image_obj;
    if (!image.empty()) {
      image_obj = ctx_.cache.images->store().Get(image);
      if (!image_obj) image_obj = ctx_.cache.images->store().Get(Ns(vm) + "/" + image);
      if (!image_obj) {
        // Harvester skips a template whose image is missing; KubeVirt then
        // finds no PVC for the volume.
        hold({"ErrorPvcNotFound", "FailedPvcNotFound",
              "PVC " + Ns(vm) + "/" + Name(claim) + " does not exist (its image " + image +
                  " was not found)"});
        continue;
      }
    }
    Object pvc;
    if (auto cached = ctx_.cache.pvcs->store().Get(Ns(claim), Name(claim))) {
      pvc = *cached;
    } else {
      CAPHV_RETURN_IF_ERROR(ctx_.Fault("create PVC"));
      auto created = ctx_.h->Create(kube::resources::kPersistentVolumeClaims, Ns(claim), claim,
                                    {.field_manager = kVirtManager});
      if (created.status().IsAlreadyExists()) {  // the cache will bring it
        hold({"WaitingForVolumeBinding", "PvcNotBound",
              "PVC " + kube::KeyOf(claim) + " is not bound"});
        continue;
      }
      if (!created.ok()) return created.status();
      pvc = *created;
      ctx_.log.Info("Created PVC", {{"pvc", kube::KeyOf(pvc)}});
    }
    if (StatusOf(pvc).value("phase", "") == "Bound") continue;
    const std::string why = WhyClaimCannotBind(
        pvc["spec"].value("storageClassName", ""), default_class, classes,
        image_obj ? StrAt(*image_obj, {"status", "storageClassName"}) : std::string());
    if (!why.empty()) {
      // The PersistentVolume controller leaves it Pending and says so.
      if (StatusOf(pvc).value("phase", "") != "Pending") {
        ctx_.recorder.Event(pvc, kube::EventType::kWarning, "ProvisioningFailed", why);
        ctx_.h
            ->Patch(kube::resources::kPersistentVolumeClaims, Ns(pvc), Name(pvc),
                    kube::PatchType::kMerge, {{"status", {{"phase", "Pending"}}}},
                    {.subresource = "status"})
            .status()
            .IgnoreError();
      }
      hold({"WaitingForVolumeBinding", "PvcNotBound",
            "PVC " + kube::KeyOf(pvc) + " is not bound: " + why});
      continue;
    }
    if (pvc["spec"].value("volumeName", "").empty()) {
      CAPHV_RETURN_IF_ERROR(ctx_.Fault("bind PVC"));
      auto p = ctx_.h->Patch(kube::resources::kPersistentVolumeClaims, Ns(pvc), Name(pvc),
                             kube::PatchType::kMerge,
                             {{"spec", {{"volumeName", "pvc-" + kube::UidOf(pvc)}}}});
      if (!p.ok()) return p.status();
    }
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("bind PVC status"));
    auto p = ctx_.h->Patch(kube::resources::kPersistentVolumeClaims, Ns(pvc), Name(pvc),
                           kube::PatchType::kMerge, {{"status", BoundClaimStatus(pvc)}},
                           {.subresource = "status"});
    if (!p.ok()) return p.status();
  }
  return wait;
}

}  // namespace caphv::sim
