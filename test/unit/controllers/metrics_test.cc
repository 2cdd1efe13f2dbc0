// Unit tests of the caphv_* families: the text exposition served on /metrics
// lists every family of the operations guide with its type, labels and
// histogram buckets, plus the process metrics.

#include "controllers/metrics.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace caphv::controllers::metrics {
namespace {

// name -> type from "# TYPE name type" lines.
std::map<std::string, std::string> Types(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    std::string name, type;
    fields >> name >> type;
    out[name] = type;
  }
  return out;
}

// The sample lines of `series` (name plus optional label prefix).
std::vector<std::string> Samples(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

// The `le` bounds of the buckets of `name` whose labels contain `labels`.
std::vector<double> Buckets(const std::string& text, const std::string& name,
                            const std::string& labels = "") {
  std::vector<double> out;
  for (const auto& line : Samples(text, name + "_bucket{")) {
    if (!labels.empty() && line.find(labels) == std::string::npos) continue;
    auto le = line.find("le=\"");
    if (le == std::string::npos) continue;
    std::string v = line.substr(le + 4, line.find('"', le + 4) - le - 4);
    if (v == "+Inf") continue;
    out.push_back(std::strtod(v.c_str(), nullptr));
  }
  return out;
}

TEST(ControllerMetricsTest, EveryFamilyIsExposedWithItsType) {
  const std::map<std::string, std::string> expected = {
      {"caphv_machine_create_total", "counter"},
      {"caphv_machine_create_errors_total", "counter"},
      {"caphv_machine_creation_duration_seconds", "histogram"},
      {"caphv_machine_delete_total", "counter"},
      {"caphv_machine_delete_errors_total", "counter"},
      {"caphv_machine_status", "gauge"},
      {"caphv_machine_reconcile_duration_seconds", "histogram"},
      {"caphv_ippool_allocations_total", "counter"},
      {"caphv_ippool_allocation_errors_total", "counter"},
      {"caphv_ippool_releases_total", "counter"},
      {"caphv_cluster_reconcile_duration_seconds", "histogram"},
      {"caphv_cluster_ready", "gauge"},
      {"caphv_identity_token_expiry_timestamp_seconds", "gauge"},
      {"caphv_etcd_member_remove_total", "counter"},
      {"caphv_etcd_member_remove_errors_total", "counter"},
      {"caphv_node_init_total", "counter"},
      {"caphv_node_init_errors_total", "counter"},
      {"caphv_node_init_duration_seconds", "histogram"},
      {"caphv_machine_vm_lost_total", "counter"},
  };
  std::string text = SerializeAll();
  auto types = Types(text);
  for (const auto& [name, type] : expected) {
    ASSERT_TRUE(types.count(name)) << name << " missing from\n" << text;
    EXPECT_EQ(types[name], type) << name;
  }
  // FamilyNames() is the same list, and nothing else is caphv_* but the
  // process's heap gauge (kube/metrics.h).
  std::set<std::string> listed(FamilyNames().begin(), FamilyNames().end());
  EXPECT_EQ(listed.size(), expected.size());
  for (const auto& [name, type] : types) {
    if (name.rfind("caphv_", 0) == 0 && name != "caphv_heap_in_use_bytes") {
      EXPECT_TRUE(expected.count(name)) << name;
    }
  }
  for (const char* process : {"process_resident_memory_bytes", "process_cpu_seconds_total",
                              "process_start_time_seconds", "process_open_fds"}) {
    EXPECT_TRUE(types.count(process)) << process;
  }
}

// name -> help from "# HELP name text" lines.
std::map<std::string, std::string> Helps(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) != 0) continue;
    auto space = line.find(' ', 7);
    out[line.substr(7, space - 7)] = line.substr(space + 1);
  }
  return out;
}

TEST(ControllerMetricsTest, HelpTextsAreTheGoProvidersOnes) {
  // What a scraper (and a Grafana panel's tooltip) of the Go provider shows.
  const std::map<std::string, std::string> expected = {
      {"caphv_machine_create_total", "Total number of HarvesterMachine VM creation attempts."},
      {"caphv_machine_create_errors_total",
       "Total number of failed HarvesterMachine VM creation attempts."},
      {"caphv_machine_creation_duration_seconds",
       "Duration of HarvesterMachine VM creation in seconds."},
      {"caphv_machine_delete_total", "Total number of HarvesterMachine VM deletion attempts."},
      {"caphv_machine_delete_errors_total",
       "Total number of failed HarvesterMachine VM deletion attempts."},
      {"caphv_machine_status", "Current status of HarvesterMachine (1=ready, 0=not ready)."},
      {"caphv_machine_reconcile_duration_seconds",
       "Duration of HarvesterMachine reconciliation in seconds."},
      {"caphv_ippool_allocations_total", "Total number of VM IP pool allocation attempts."},
      {"caphv_ippool_allocation_errors_total",
       "Total number of failed VM IP pool allocation attempts."},
      {"caphv_ippool_releases_total", "Total number of VM IP pool releases."},
      {"caphv_cluster_reconcile_duration_seconds",
       "Duration of HarvesterCluster reconciliation in seconds."},
      {"caphv_cluster_ready", "Whether HarvesterCluster is ready (1=ready, 0=not ready)."},
      {"caphv_etcd_member_remove_total", "Total number of etcd member removal attempts."},
      {"caphv_etcd_member_remove_errors_total",
       "Total number of failed etcd member removal attempts."},
      {"caphv_node_init_total", "Total number of workload node initialization attempts."},
      {"caphv_node_init_errors_total",
       "Total number of failed workload node initialization attempts."},
      {"caphv_node_init_duration_seconds", "Duration of workload node initialization in seconds."},
      {"caphv_machine_vm_lost_total",
       "Total number of HarvesterMachines whose VM was deleted outside Cluster API."},
  };
  // Both labelled gauges without series (announced) and with series.
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      SetMachineStatus("ns/c", "ns/m", true);
      SetClusterReady("ns/hc", true);
    }
    auto helps = Helps(SerializeAll());
    for (const auto& [name, help] : expected) {
      EXPECT_EQ(helps[name], help) << name << " (round " << round << ")";
    }
  }
  DeleteMachineStatus("ns/c", "ns/m");
  DeleteClusterReady("ns/hc");
}

TEST(ControllerMetricsTest, HistogramBucketsAreAsDocumented) {
  std::string text = SerializeAll();
  EXPECT_EQ(Buckets(text, "caphv_machine_creation_duration_seconds"),
            (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(Buckets(text, "caphv_node_init_duration_seconds"),
            (std::vector<double>{0.5, 1, 2, 4, 8, 16, 32, 64}));
  const std::vector<double> defaults = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  for (const char* family :
       {"caphv_machine_reconcile_duration_seconds", "caphv_cluster_reconcile_duration_seconds"}) {
    for (const char* op : {"operation=\"normal\"", "operation=\"delete\""}) {
      EXPECT_EQ(Buckets(text, family, op), defaults) << family << " " << op;
    }
  }
}

TEST(ControllerMetricsTest, AccessorsMoveTheSeries) {
  MachineCreateTotal().Increment();
  MachineCreationDuration().Observe(3);
  NodeInitDuration().Observe(0.7);
  ObserveMachineReconcile(Operation::kDelete, 0.02);
  std::string text = SerializeAll();
  EXPECT_FALSE(Samples(text, "caphv_machine_create_total 1").empty()) << text;
  EXPECT_FALSE(Samples(text, "caphv_machine_creation_duration_seconds_count 1").empty());
  EXPECT_FALSE(
      Samples(text, "caphv_machine_reconcile_duration_seconds_count{operation=\"delete\"} 1")
          .empty());
}

TEST(ControllerMetricsTest, LabelledGaugesCarryTheirLabelsAndCanBeRemoved) {
  SetMachineStatus("ns/c1", "ns/m1", true);
  SetClusterReady("ns/c1", false);
  std::string text = SerializeAll();
  EXPECT_EQ(Samples(text, "caphv_machine_status{").size(), 1u) << text;
  auto machine = Samples(text, "caphv_machine_status{");
  ASSERT_FALSE(machine.empty());
  EXPECT_NE(machine[0].find("cluster=\"ns/c1\""), std::string::npos);
  EXPECT_NE(machine[0].find("machine=\"ns/m1\""), std::string::npos);
  EXPECT_NE(machine[0].find(" 1"), std::string::npos);
  auto cluster = Samples(text, "caphv_cluster_ready{cluster=\"ns/c1\"}");
  ASSERT_EQ(cluster.size(), 1u);
  EXPECT_NE(cluster[0].find(" 0"), std::string::npos);

  DeleteMachineStatus("ns/c1", "ns/m1");
  DeleteClusterReady("ns/c1");
  DeleteClusterReady("ns/never-there");  // a no-op
  text = SerializeAll();
  EXPECT_TRUE(Samples(text, "caphv_machine_status{").empty());
  // Still announced, without samples.
  EXPECT_EQ(Types(text)["caphv_machine_status"], "gauge");
  EXPECT_EQ(Types(text)["caphv_cluster_ready"], "gauge");
}

}  // namespace
}  // namespace caphv::controllers::metrics
