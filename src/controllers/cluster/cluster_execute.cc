// File: controllers/cluster/cluster_execute.cc
//
// HarvesterClusterReconciler::Execute: one API call per planned action, its
// result folded into the observation so the next plan sees what this
// reconcile wrote; the action's Normal event is emitted once it succeeded.

#include "api/codec.h"
#include "controllers/capi.h"
#include "controllers/cluster/cluster_reconciler.h"
#include "controllers/metrics.h"
#include "controllers/writes.h"
#include "harvester/cloud_provider.h"
#include "harvester/naming.h"
#include "harvester/resources.h"

namespace caphv::controllers {

namespace {

using kube::Status;

const kube::GroupVersionResource& HcGvr() {
  static const auto gvr = api::ResourceOf(api::Kind::kHarvesterCluster);
  return gvr;
}

const kube::GroupVersionResource& GvrOf(CloudProviderObject o) {
  switch (o) {
    case CloudProviderObject::kServiceAccount:
      return kube::resources::kServiceAccounts;
    case CloudProviderObject::kRoleBinding:
      return kube::resources::kRoleBindings;
    case CloudProviderObject::kClusterRoleBinding:
      return kube::resources::kClusterRoleBindings;
    case CloudProviderObject::kTokenSecret:
      return kube::resources::kSecrets;
  }
  return kube::resources::kSecrets;
}

bool HasClusterId(const kube::Object& o) {
  return LabelsOf(o).contains(std::string(harvester::kLabelClusterId));
}

// What the Go provider v0.2.x left for the cluster besides CAPHV's names
// (LegacyView): each object proven by its shape, never by its name alone.
kube::StatusOr<LegacyView> ReadLegacy(kube::Client& client, const std::string& ns,
                                      const std::string& lb_name, const std::string& cluster) {
  LegacyView v;
  auto svc = client.Get(kube::resources::kServices, ns, lb_name);
  if (svc.ok()) {
    v.placeholder_service = !HasClusterId(*svc) &&
                            LabelsOf(*svc).contains("loadbalancer.harvesterhci.io/servicelb") &&
                            !IsDeleting(*svc);
  } else if (!svc.status().IsNotFound()) {
    return svc.status();
  }
  auto crb = client.Get(kube::resources::kClusterRoleBindings, "", cluster);
  if (crb.ok()) {
    const kube::Object subjects = crb->value("subjects", kube::Object::array());
    v.cluster_role_binding =
        !HasClusterId(*crb) &&
        Str(*crb, {"roleRef", "name"}) == harvester::kCloudProviderClusterRole &&
        subjects.size() == 1 && subjects[0].value("kind", "") == "ServiceAccount" &&
        subjects[0].value("name", "") == cluster && subjects[0].value("namespace", "") == ns;
  } else if (!crb.status().IsNotFound()) {
    return crb.status();
  }
  if (v.cluster_role_binding) {
    auto sa = client.Get(kube::resources::kServiceAccounts, ns, cluster);
    if (sa.ok()) {
      v.service_account = !HasClusterId(*sa) && !IsDeleting(*sa);
    } else if (!sa.status().IsNotFound()) {
      return sa.status();
    }
  }
  return v;
}

}  // namespace

Status HarvesterClusterReconciler::Execute(ClusterScope& r, const ClusterAction& a,
                                           ClusterObservation& o) {
  switch (a.kind) {
    case ClusterActionKind::kAddFinalizer:
    case ClusterActionKind::kRemoveFinalizer:
    case ClusterActionKind::kRecordConnection:
    case ClusterActionKind::kSetControlPlaneEndpoint:
    case ClusterActionKind::kReadManifestsConfigMap:
    case ClusterActionKind::kUpdateManifestsConfigMap:
      CAPHV_RETURN_IF_ERROR(ExecuteManagement(r, a, o));
      break;
    default:
      if (!r.conn) return Status(kube::StatusCode::kInternal, "no Harvester connection");
      CAPHV_RETURN_IF_ERROR(ExecuteHarvester(r, a, o));
  }
  if (a.event) Emit(r, *a.event);
  return Status::Ok();
}

Status HarvesterClusterReconciler::PatchCluster(ClusterScope& r, const kube::Object& patch) {
  auto written = ctx_.mgmt->Patch(HcGvr(), r.req.ns, r.req.name, kube::PatchType::kMerge, patch);
  if (!written.ok()) return written.status();
  ctx_.harvester_clusters->RecordWrite(*written);  // read-your-writes
  r.object = std::make_shared<const kube::Object>(std::move(written).value());
  return Status::Ok();
}

Status HarvesterClusterReconciler::ExecuteManagement(ClusterScope& r, const ClusterAction& a,
                                                     ClusterObservation& o) {
  switch (a.kind) {
    case ClusterActionKind::kAddFinalizer: {
      kube::Object patch = a.body.is_object() ? a.body : kube::Object::object();
      if (auto p = AddFinalizerPatch(*r.object, kClusterFinalizer, kLegacyClusterFinalizer)) {
        patch.merge_patch(*p);
      }
      if (!patch.empty()) CAPHV_RETURN_IF_ERROR(PatchCluster(r, patch));
      o.has_finalizer = true;
      o.identity_recorded = true;
      return Status::Ok();
    }
    case ClusterActionKind::kRemoveFinalizer: {
      if (auto p = RemoveFinalizerPatch(*r.object, kClusterFinalizer, kLegacyClusterFinalizer)) {
        Status st = PatchCluster(r, *p);
        if (!st.ok() && !st.IsNotFound()) return st;
      }
      if (!r.metrics_label.empty()) {
        metrics::DeleteClusterReady(r.metrics_label);
        metrics::SetIdentityTokenExpiry(r.metrics_label, std::nullopt);
      }
      o.has_finalizer = false;
      r.finalizer_removed = true;
      r.log.Info(r.conn ? "Deleted the cluster's infrastructure on Harvester"
                        : "Removed the finalizer; nothing to delete on Harvester");
      return Status::Ok();
    }
    case ClusterActionKind::kRecordConnection: {
      auto written =
          (o.status_foreign ? ReplaceStatus : ApplyStatus)(*ctx_.mgmt, HcGvr(), *r.object, a.body);
      if (!written.ok()) return written.status();
      o.status_foreign = false;
      ctx_.harvester_clusters->RecordWrite(*written);
      if (auto hc = api::Decode<api::HarvesterCluster>(*written); hc.ok()) {
        o.hc.status = std::move(hc->status);
      }
      r.object = std::make_shared<const kube::Object>(std::move(written).value());
      o.ever_connected = true;
      return Status::Ok();
    }
    case ClusterActionKind::kSetControlPlaneEndpoint: {
      CAPHV_RETURN_IF_ERROR(PatchCluster(r, a.body));
      const kube::Object& ep = a.body["spec"]["controlPlaneEndpoint"];
      o.hc.spec.control_plane_endpoint =
          api::APIEndpoint{ep.value("host", ""), ep.value("port", int32_t{0})};
      return Status::Ok();
    }
    case ClusterActionKind::kReadManifestsConfigMap: {
      // Every failure (NotFound, Forbidden, ...) is reported by the planner
      // and looked at again later; it is not a failed reconcile.
      const auto& ucp = *o.hc.spec.update_cloud_provider_config;
      auto cm = ctx_.mgmt->Get(kube::resources::kConfigMaps, ucp.manifests_config_map_namespace,
                               ucp.manifests_config_map_name);
      o.cloud_provider.manifests = cm.ok() ? ManifestsRead{"", std::move(cm).value()}
                                           : ManifestsRead{cm.status().message(), {}};
      return Status::Ok();
    }
    case ClusterActionKind::kUpdateManifestsConfigMap: {
      auto written =
          ctx_.mgmt->Update(kube::resources::kConfigMaps, kube::NamespaceOf(a.body), a.body);
      if (!written.ok()) return written.status();
      o.cloud_provider.manifests = ManifestsRead{"", std::move(written).value()};
      return Status::Ok();
    }
    default:
      return Status(kube::StatusCode::kInternal, "not a management-cluster action");
  }
}

Status HarvesterClusterReconciler::ExecuteHarvester(ClusterScope& r, const ClusterAction& a,
                                                    ClusterObservation& o) {
  kube::Client& client = r.conn->client();
  const std::string& ns = o.hc.spec.target_namespace;
  // A write into a namespace the connection believed existed.
  auto forget_namespace = [&](const Status& st) {
    if (st.IsNotFound()) r.conn->ForgetNamespace(ns);
    return st;
  };
  switch (a.kind) {
    case ClusterActionKind::kEnsureNamespace:
      CAPHV_RETURN_IF_ERROR(r.conn->EnsureNamespace(ns));
      o.namespace_ready = true;
      return Status::Ok();
    case ClusterActionKind::kApplyPool:
    case ClusterActionKind::kApplyLoadBalancerPool: {
      auto applied = client.Apply(harvester::kIPPools, "", a.body);
      if (!applied.ok()) return applied.status();
      o.pools[a.name] = ViewOfPool(*applied, o);
      return Status::Ok();
    }
    case ClusterActionKind::kApplyLoadBalancer: {
      auto applied = client.Apply(harvester::kLoadBalancers, ns, a.body);
      if (!applied.ok()) return forget_namespace(applied.status());
      o.lb = ViewOfLoadBalancer(*applied, o);
      return Status::Ok();
    }
    case ClusterActionKind::kApplyCloudProviderObject: {
      auto applied = client.Apply(GvrOf(a.object), kube::NamespaceOf(a.body), a.body);
      if (!applied.ok()) return forget_namespace(applied.status());
      o.cloud_provider.applied.insert(a.object);
      if (a.object == CloudProviderObject::kServiceAccount) {
        o.cloud_provider.service_account_uid = kube::UidOf(*applied);
      } else if (a.object == CloudProviderObject::kTokenSecret) {
        o.cloud_provider.token_secret = ViewOfTokenSecret(*applied, o);
      }
      return Status::Ok();
    }
    case ClusterActionKind::kDeleteLoadBalancer: {
      Status st = client.Delete(harvester::kLoadBalancers, ns, a.name);
      if (st.IsNotFound()) {
        o.lb.reset();
        o.lb_absence_confirmed = true;
        return Status::Ok();
      }
      CAPHV_RETURN_IF_ERROR(st);
      o.lb->deleting = true;
      return Status::Ok();
    }
    case ClusterActionKind::kConfirmLoadBalancerGone: {
      auto lb = client.Get(harvester::kLoadBalancers, ns, a.name);
      if (lb.ok()) {
        o.lb = ViewOfLoadBalancer(*lb, o);
      } else if (lb.status().IsNotFound()) {
        o.lb_absence_confirmed = true;
      } else {
        return lb.status();
      }
      return Status::Ok();
    }
    case ClusterActionKind::kDeletePool:
      CAPHV_RETURN_IF_ERROR(DeleteIfExists(client, harvester::kIPPools, "", a.name));
      o.pools[a.name].deleting = true;
      return Status::Ok();
    case ClusterActionKind::kReadLegacyObjects: {
      auto legacy = ReadLegacy(client, ns, a.name, o.cluster_name);
      if (!legacy.ok()) return legacy.status();
      o.legacy = *legacy;
      return Status::Ok();
    }
    case ClusterActionKind::kDeleteLegacyObject: {
      const std::string kind = a.body.value("kind", "");
      if (kind == "Service") {
        CAPHV_RETURN_IF_ERROR(DeleteIfExists(client, kube::resources::kServices, ns, a.name));
        o.legacy->placeholder_service = false;
      } else if (kind == "ServiceAccount") {
        CAPHV_RETURN_IF_ERROR(
            DeleteIfExists(client, kube::resources::kServiceAccounts, ns, a.name));
        o.legacy->service_account = false;
      } else {
        CAPHV_RETURN_IF_ERROR(
            DeleteIfExists(client, kube::resources::kClusterRoleBindings, "", a.name));
        o.legacy->cluster_role_binding = false;
      }
      return Status::Ok();
    }
    case ClusterActionKind::kDeleteCloudProviderObject: {
      const std::string rns = a.object == CloudProviderObject::kClusterRoleBinding ? "" : ns;
      CAPHV_RETURN_IF_ERROR(DeleteIfExists(client, GvrOf(a.object), rns, a.name));
      o.cloud_provider.deleted.insert(a.object);
      return Status::Ok();
    }
    default:
      return Status(kube::StatusCode::kInternal, "not a Harvester action");
  }
}

}  // namespace caphv::controllers
