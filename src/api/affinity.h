// File: api/affinity.h
//
// The core/v1 scheduling types a HarvesterMachine carries into its VM
// (spec.nodeAffinity, spec.workloadAffinity): NodeAffinity, PodAffinity and
// what they contain, with every field of Kubernetes v1.33 so that strict
// decoding and the CRD schema accept whatever kubectl accepts for a Pod.
//
// Thread safety: plain values.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/fields.h"

namespace caphv::api {

struct NodeSelectorRequirement {
  std::string key;
  std::string operator_;
  std::vector<std::string> values;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.key, Field("key").Required().Doc("The label key the selector applies to."));
    v(self.operator_, Field("operator")
                          .Required()
                          .Enum({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
                          .Doc("Relationship of the key to the values."));
    v(self.values, Field("values").ListType("atomic").Doc("Values to compare with."));
  }
  bool operator==(const NodeSelectorRequirement&) const = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.match_expressions,
      Field("matchExpressions").ListType("atomic").Doc("Requirements on node labels."));
    v(self.match_fields,
      Field("matchFields").ListType("atomic").Doc("Requirements on node fields."));
  }
  bool operator==(const NodeSelectorTerm&) const = default;
};

struct NodeSelector {
  std::vector<NodeSelectorTerm> node_selector_terms;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.node_selector_terms,
      Field("nodeSelectorTerms").Required().ListType("atomic").Doc("Terms ORed together."));
  }
  bool operator==(const NodeSelector&) const = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.weight, Field("weight").Required().Minimum(1).Maximum(100).Doc("Weight, 1-100."));
    v(self.preference, Field("preference").Required().Doc("A node selector term."));
  }
  bool operator==(const PreferredSchedulingTerm&) const = default;
};

struct NodeAffinity {
  std::optional<NodeSelector> required;
  std::vector<PreferredSchedulingTerm> preferred;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.required,
      Field("requiredDuringSchedulingIgnoredDuringExecution").Doc("Hard node requirements."));
    v(self.preferred, Field("preferredDuringSchedulingIgnoredDuringExecution")
                          .ListType("atomic")
                          .Doc("Soft node preferences."));
  }
  bool operator==(const NodeAffinity&) const = default;
};

struct LabelSelectorRequirement {
  std::string key;
  std::string operator_;
  std::vector<std::string> values;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.key, Field("key").Required().Doc("The label key the selector applies to."));
    v(self.operator_, Field("operator")
                          .Required()
                          .Enum({"In", "NotIn", "Exists", "DoesNotExist"})
                          .Doc("Relationship of the key to the values."));
    v(self.values, Field("values").ListType("atomic").Doc("Values to compare with."));
  }
  bool operator==(const LabelSelectorRequirement&) const = default;
};

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.match_labels, Field("matchLabels").Doc("Labels that must all match."));
    v(self.match_expressions,
      Field("matchExpressions").ListType("atomic").Doc("Requirements ANDed together."));
  }
  bool operator==(const LabelSelector&) const = default;
};

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::string topology_key;
  std::optional<LabelSelector> namespace_selector;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.label_selector, Field("labelSelector").Doc("Pods (VMs) this term selects."));
    v(self.namespaces, Field("namespaces").ListType("atomic").Doc("Namespaces to look in."));
    v(self.topology_key,
      Field("topologyKey").Required().Doc("Node label whose equal values form a topology domain."));
    v(self.namespace_selector, Field("namespaceSelector").Doc("Namespaces to look in, by label."));
    v(self.match_label_keys,
      Field("matchLabelKeys")
          .ListType("atomic")
          .Doc("Label keys merged into labelSelector with this pod's values."));
    v(self.mismatch_label_keys, Field("mismatchLabelKeys")
                                    .ListType("atomic")
                                    .Doc("Label keys merged into labelSelector as NotIn."));
  }
  bool operator==(const PodAffinityTerm&) const = default;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm pod_affinity_term;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.weight, Field("weight").Required().Minimum(1).Maximum(100).Doc("Weight, 1-100."));
    v(self.pod_affinity_term, Field("podAffinityTerm").Required().Doc("The affinity term."));
  }
  bool operator==(const WeightedPodAffinityTerm&) const = default;
};

struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.required, Field("requiredDuringSchedulingIgnoredDuringExecution")
                         .ListType("atomic")
                         .Doc("Hard co-location requirements."));
    v(self.preferred, Field("preferredDuringSchedulingIgnoredDuringExecution")
                          .ListType("atomic")
                          .Doc("Soft co-location preferences."));
  }
  bool operator==(const PodAffinity&) const = default;
};

}  // namespace caphv::api
