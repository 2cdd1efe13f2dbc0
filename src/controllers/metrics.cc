// File: controllers/metrics.cc
//
// Registration of the caphv_* families in the process registry.

#include "controllers/metrics.h"

#include <prometheus/family.h>
#include <prometheus/text_serializer.h>

#include "kube/metrics.h"

namespace caphv::controllers::metrics {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Exponential buckets: start, start*2, ... (count values).
Histogram::BucketBoundaries Exponential(double start, int count) {
  Histogram::BucketBoundaries b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= 2) b.push_back(v);
  return b;
}

// HELP texts of the labelled gauges, also announced while they have no series.
constexpr const char* kMachineStatusHelp =
    "Current status of HarvesterMachine (1=ready, 0=not ready).";
constexpr const char* kClusterReadyHelp =
    "Whether HarvesterCluster is ready (1=ready, 0=not ready).";
constexpr const char* kIdentityExpiryHelp =
    "When the credentials of the HarvesterCluster's identity kubeconfig expire, in seconds since "
    "the Unix epoch (only while they have a known expiry).";

// The Prometheus client default buckets (Go's prometheus.DefBuckets).
const Histogram::BucketBoundaries kDefaultBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10};

Counter& NewCounter(const char* name, const char* help) {
  return prometheus::BuildCounter()
      .Name(name)
      .Help(help)
      .Register(kube::metrics::Registry())
      .Add({});
}

struct Families {
  Counter& machine_create = NewCounter("caphv_machine_create_total",
                                       "Total number of HarvesterMachine VM creation attempts.");
  Counter& machine_create_errors =
      NewCounter("caphv_machine_create_errors_total",
                 "Total number of failed HarvesterMachine VM creation attempts.");
  Histogram& machine_creation_duration =
      prometheus::BuildHistogram()
          .Name("caphv_machine_creation_duration_seconds")
          .Help("Duration of HarvesterMachine VM creation in seconds.")
          .Register(kube::metrics::Registry())
          .Add({}, MachineCreationBuckets());
  Counter& machine_delete = NewCounter("caphv_machine_delete_total",
                                       "Total number of HarvesterMachine VM deletion attempts.");
  Counter& machine_delete_errors =
      NewCounter("caphv_machine_delete_errors_total",
                 "Total number of failed HarvesterMachine VM deletion attempts.");
  Family<Gauge>& machine_status = prometheus::BuildGauge()
                                      .Name("caphv_machine_status")
                                      .Help(kMachineStatusHelp)
                                      .Register(kube::metrics::Registry());
  Family<Histogram>& machine_reconcile =
      prometheus::BuildHistogram()
          .Name("caphv_machine_reconcile_duration_seconds")
          .Help("Duration of HarvesterMachine reconciliation in seconds.")
          .Register(kube::metrics::Registry());
  Counter& ippool_allocations = NewCounter("caphv_ippool_allocations_total",
                                           "Total number of VM IP pool allocation attempts.");
  Counter& ippool_allocation_errors =
      NewCounter("caphv_ippool_allocation_errors_total",
                 "Total number of failed VM IP pool allocation attempts.");
  Counter& ippool_releases =
      NewCounter("caphv_ippool_releases_total", "Total number of VM IP pool releases.");
  Family<Histogram>& cluster_reconcile =
      prometheus::BuildHistogram()
          .Name("caphv_cluster_reconcile_duration_seconds")
          .Help("Duration of HarvesterCluster reconciliation in seconds.")
          .Register(kube::metrics::Registry());
  Family<Gauge>& cluster_ready = prometheus::BuildGauge()
                                     .Name("caphv_cluster_ready")
                                     .Help(kClusterReadyHelp)
                                     .Register(kube::metrics::Registry());
  Family<Gauge>& identity_expiry = prometheus::BuildGauge()
                                       .Name("caphv_identity_token_expiry_timestamp_seconds")
                                       .Help(kIdentityExpiryHelp)
                                       .Register(kube::metrics::Registry());
  Counter& etcd_member_remove =
      NewCounter("caphv_etcd_member_remove_total", "Total number of etcd member removal attempts.");
  Counter& etcd_member_remove_errors =
      NewCounter("caphv_etcd_member_remove_errors_total",
                 "Total number of failed etcd member removal attempts.");
  Counter& machine_vm_lost =
      NewCounter("caphv_machine_vm_lost_total",
                 "Total number of HarvesterMachines whose VM was deleted outside Cluster API.");
  Counter& node_init =
      NewCounter("caphv_node_init_total", "Total number of workload node initialization attempts.");
  Counter& node_init_errors =
      NewCounter("caphv_node_init_errors_total",
                 "Total number of failed workload node initialization attempts.");
  Histogram& node_init_duration = prometheus::BuildHistogram()
                                      .Name("caphv_node_init_duration_seconds")
                                      .Help("Duration of workload node initialization in seconds.")
                                      .Register(kube::metrics::Registry())
                                      .Add({}, NodeInitBuckets());

  // Both operations exist from the start, so the families are always listed.
  Histogram& machine_reconcile_normal =
      machine_reconcile.Add({{"operation", "normal"}}, kDefaultBuckets);
  Histogram& machine_reconcile_delete =
      machine_reconcile.Add({{"operation", "delete"}}, kDefaultBuckets);
  Histogram& cluster_reconcile_normal =
      cluster_reconcile.Add({{"operation", "normal"}}, kDefaultBuckets);
  Histogram& cluster_reconcile_delete =
      cluster_reconcile.Add({{"operation", "delete"}}, kDefaultBuckets);
};

Families& F() {
  static auto* families = new Families();  // never destroyed, like the registry
  return *families;
}

std::map<std::string, std::string> MachineLabels(std::string_view cluster,
                                                 std::string_view machine) {
  return {{"cluster", std::string(cluster)}, {"machine", std::string(machine)}};
}

}  // namespace

void Register() { F(); }

Counter& MachineCreateTotal() { return F().machine_create; }
Counter& MachineCreateErrorsTotal() { return F().machine_create_errors; }
Histogram& MachineCreationDuration() { return F().machine_creation_duration; }
Counter& MachineDeleteTotal() { return F().machine_delete; }
Counter& MachineDeleteErrorsTotal() { return F().machine_delete_errors; }

void SetMachineStatus(std::string_view cluster, std::string_view machine, bool ready) {
  F().machine_status.Add(MachineLabels(cluster, machine)).Set(ready ? 1 : 0);
}

void DeleteMachineStatus(std::string_view cluster, std::string_view machine) {
  auto& family = F().machine_status;
  auto labels = MachineLabels(cluster, machine);
  if (family.Has(labels)) family.Remove(&family.Add(labels));
}

void ObserveMachineReconcile(Operation op, double seconds) {
  (op == Operation::kDelete ? F().machine_reconcile_delete : F().machine_reconcile_normal)
      .Observe(seconds);
}

Counter& IPPoolAllocationsTotal() { return F().ippool_allocations; }
Counter& IPPoolAllocationErrorsTotal() { return F().ippool_allocation_errors; }
Counter& IPPoolReleasesTotal() { return F().ippool_releases; }

void ObserveClusterReconcile(Operation op, double seconds) {
  (op == Operation::kDelete ? F().cluster_reconcile_delete : F().cluster_reconcile_normal)
      .Observe(seconds);
}

void SetClusterReady(std::string_view cluster, bool ready) {
  F().cluster_ready.Add({{"cluster", std::string(cluster)}}).Set(ready ? 1 : 0);
}

void DeleteClusterReady(std::string_view cluster) {
  auto& family = F().cluster_ready;
  std::map<std::string, std::string> labels = {{"cluster", std::string(cluster)}};
  if (family.Has(labels)) family.Remove(&family.Add(labels));
}

void SetIdentityTokenExpiry(std::string_view cluster,
                            std::optional<std::chrono::system_clock::time_point> expires_at) {
  auto& family = F().identity_expiry;
  std::map<std::string, std::string> labels = {{"cluster", std::string(cluster)}};
  if (!expires_at) {
    if (family.Has(labels)) family.Remove(&family.Add(labels));
    return;
  }
  family.Add(labels).Set(static_cast<double>(
      std::chrono::duration_cast<std::chrono::seconds>(expires_at->time_since_epoch()).count()));
}

Counter& EtcdMemberRemoveTotal() { return F().etcd_member_remove; }
Counter& EtcdMemberRemoveErrorsTotal() { return F().etcd_member_remove_errors; }
Counter& MachineVmLostTotal() { return F().machine_vm_lost; }
Counter& NodeInitTotal() { return F().node_init; }
Counter& NodeInitErrorsTotal() { return F().node_init_errors; }
Histogram& NodeInitDuration() { return F().node_init_duration; }

const Histogram::BucketBoundaries& MachineCreationBuckets() {
  static const auto* b = new Histogram::BucketBoundaries(Exponential(1, 10));
  return *b;
}

const Histogram::BucketBoundaries& NodeInitBuckets() {
  static const auto* b = new Histogram::BucketBoundaries(Exponential(0.5, 8));
  return *b;
}

const std::vector<std::string>& FamilyNames() {
  static const auto* names = new std::vector<std::string>{
      "caphv_machine_create_total",
      "caphv_machine_create_errors_total",
      "caphv_machine_creation_duration_seconds",
      "caphv_machine_delete_total",
      "caphv_machine_delete_errors_total",
      "caphv_machine_status",
      "caphv_machine_reconcile_duration_seconds",
      "caphv_ippool_allocations_total",
      "caphv_ippool_allocation_errors_total",
      "caphv_ippool_releases_total",
      "caphv_cluster_reconcile_duration_seconds",
      "caphv_cluster_ready",
      "caphv_identity_token_expiry_timestamp_seconds",
      "caphv_etcd_member_remove_total",
      "caphv_etcd_member_remove_errors_total",
      "caphv_node_init_total",
      "caphv_node_init_errors_total",
      "caphv_node_init_duration_seconds",
      "caphv_machine_vm_lost_total",
  };
  return *names;
}

std::vector<prometheus::MetricFamily> DeclaredButEmpty() {
  std::vector<prometheus::MetricFamily> out;
  const std::pair<const Family<Gauge>*, const char*> gauges[] = {
      {&F().machine_status, kMachineStatusHelp},
      {&F().cluster_ready, kClusterReadyHelp},
      {&F().identity_expiry, kIdentityExpiryHelp}};
  for (const auto& [family, help] : gauges) {
    if (!family->Collect().empty()) continue;
    prometheus::MetricFamily f;
    f.name = family->GetName();
    f.help = help;
    f.type = prometheus::MetricType::Gauge;
    out.push_back(std::move(f));
  }
  return out;
}

std::string SerializeAll() {
  Register();
  std::string text = kube::metrics::Serialize();
  auto empty = DeclaredButEmpty();
  if (!empty.empty()) text += prometheus::TextSerializer().Serialize(empty);
  return text;
}

}  // namespace caphv::controllers::metrics
