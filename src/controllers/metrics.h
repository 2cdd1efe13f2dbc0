// File: controllers/metrics.h
//
// The caphv_* metric families of the operations guide, registered in the
// process registry (kube/metrics.h) on first use, with the accessors the
// reconcilers call. Names, types, labels and buckets match the Go provider:
//
//   caphv_machine_create_total, caphv_machine_create_errors_total      counter
//   caphv_machine_creation_duration_seconds    histogram 1, 2, 4 ... 512 s
//   caphv_machine_delete_total, caphv_machine_delete_errors_total      counter
//   caphv_machine_status{cluster,machine}      gauge 1 ready / 0 not ready
//   caphv_machine_reconcile_duration_seconds{operation}   histogram, default buckets
//   caphv_ippool_allocations_total, _allocation_errors_total, _releases_total
//   caphv_cluster_reconcile_duration_seconds{operation}   histogram, default buckets
//   caphv_cluster_ready{cluster}               gauge
//   caphv_identity_token_expiry_timestamp_seconds{cluster}   gauge (CAPHV's own)
//   caphv_etcd_member_remove_total, caphv_etcd_member_remove_errors_total
//   caphv_node_init_total, caphv_node_init_errors_total               counter
//   caphv_node_init_duration_seconds           histogram 0.5, 1, 2 ... 64 s
//   caphv_machine_vm_lost_total                counter (CAPHV's own): machines
//                                              whose VM was deleted outside Cluster API
//
// `operation` is "normal" or "delete". Label values as the Go provider's:
// caphv_machine_status{cluster="<ns>/<Cluster>", machine="<ns>/<HarvesterMachine>"},
// caphv_cluster_ready{cluster="<ns>/<HarvesterCluster>"}. HELP texts are the
// Go provider's too. What counts (set by the reconcilers): create_total every
// VM create request and create_errors_total the failed ones; delete_total every
// VM delete request, delete_errors_total the failed ones; allocations_total
// every address reservation and every allocation that found all pools
// exhausted, allocation_errors_total the failed ones (exhaustion included, a
// write conflict that is retried excluded); releases_total each address
// released; creation_duration from the VM's creation to the machine's first
// ready, once per machine; node_init_total each workload Node write of node
// initialisation answered and node_init_errors_total the failed ones (a 409
// is neither); node_init_duration from the VMI running to that write, once
// per Node CAPHV initialises.
//
// A labelled family has no samples until its first child exists, and
// prometheus-cpp then leaves it out of the exposition. DeclaredButEmpty()
// returns such families without samples so /metrics can still announce them
// (HELP and TYPE lines only).
//
// Thread safety: every function may be called from any thread; registration
// happens once, under a static initialiser.

#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace caphv::controllers::metrics {

enum class Operation { kNormal, kDelete };

// Registers every family (idempotent). Called at manager start-up so the
// families are listed before any reconcile runs.
void Register();

// --- machines ------------------------------------------------------------------
prometheus::Counter& MachineCreateTotal();
prometheus::Counter& MachineCreateErrorsTotal();
prometheus::Histogram& MachineCreationDuration();
prometheus::Counter& MachineDeleteTotal();
prometheus::Counter& MachineDeleteErrorsTotal();
// Sets caphv_machine_status{cluster,machine} to 1 or 0.
void SetMachineStatus(std::string_view cluster, std::string_view machine, bool ready);
// Removes the series of a deleted machine.
void DeleteMachineStatus(std::string_view cluster, std::string_view machine);
void ObserveMachineReconcile(Operation op, double seconds);

// --- IP pools --------------------------------------------------------------------
prometheus::Counter& IPPoolAllocationsTotal();
prometheus::Counter& IPPoolAllocationErrorsTotal();
prometheus::Counter& IPPoolReleasesTotal();

// --- clusters --------------------------------------------------------------------
void ObserveClusterReconcile(Operation op, double seconds);
void SetClusterReady(std::string_view cluster, bool ready);
void DeleteClusterReady(std::string_view cluster);
// Sets caphv_identity_token_expiry_timestamp_seconds{cluster}; nullopt
// removes the series (no known expiry, or the cluster is gone).
void SetIdentityTokenExpiry(std::string_view cluster,
                            std::optional<std::chrono::system_clock::time_point> expires_at);

// --- workload cluster --------------------------------------------------------------
prometheus::Counter& EtcdMemberRemoveTotal();
prometheus::Counter& EtcdMemberRemoveErrorsTotal();
prometheus::Counter& MachineVmLostTotal();
prometheus::Counter& NodeInitTotal();
prometheus::Counter& NodeInitErrorsTotal();
prometheus::Histogram& NodeInitDuration();

// --- exposition --------------------------------------------------------------------

// The bucket bounds of the fixed-bucket histograms.
const prometheus::Histogram::BucketBoundaries& MachineCreationBuckets();  // 1 .. 512
const prometheus::Histogram::BucketBoundaries& NodeInitBuckets();         // 0.5 .. 64

// Names of every caphv_* family, in the order above.
const std::vector<std::string>& FamilyNames();

// caphv_* families that currently have no series, as sample-less families.
std::vector<prometheus::MetricFamily> DeclaredButEmpty();

// kube::metrics::Serialize() followed by DeclaredButEmpty(): the /metrics body.
std::string SerializeAll();

}  // namespace caphv::controllers::metrics
