// File: webhooks/validation.h
//
// Validation rules of the CAPHV kinds: pure functions from typed objects to a
// list of field errors, shared by the admission webhook, the controllers and
// the CLI. They implement the webhook tables of the Go provider v0.2.x plus
// what it accepts but cannot provision (volumeSize required and a valid
// quantity, one boot disk that is an image, valid IPs and contiguous masks,
// valid object names) and no update that would orphan Harvester resources;
// docs/differences.md lists each.
//
// Templates (HarvesterClusterTemplate, HarvesterMachineTemplate) get the same
// rules on the values they set, and none on values they leave unset (empty
// strings and lists, zero numbers, missing blocks): ClusterClass patches fill
// those, as the Go provider's own ClusterClass does (`networks: []`,
// `volumes: []`, `sshKeyPair: ''`). Template specs may change (the Go
// provider does not freeze them either).
//
// A FieldError renders as one sentence that starts with its field path, the
// way the Go provider's webhooks (v0.2.9 and v0.10.1) word theirs, so that
// scripts and runbooks matching its messages keep working:
//   spec.cpu must be greater than 0
//   spec.memory "4 GB" is not a valid resource quantity: ...
//   spec.volumes[0].imageName is required when volumeType is 'image'
//   spec.loadBalancerConfig.ipamType must be "dhcp" or "pool" (got "ippool")
// Where the Go provider has a rule, the sentence is its own word for word
// (test/unit/webhooks/go_messages_test.cc reads them from its sources); CAPHV
// may add detail after it. A denial joins them as the Go provider does:
//   validation failed for HarvesterMachine <ns>/<name>: <sentence>; <sentence>
//
// Thread safety: stateless; safe to call concurrently.

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "api/harvester_cluster.h"
#include "api/harvester_machine.h"
#include "kube/status.h"

namespace caphv::webhooks {

enum class ErrorType { kRequired, kInvalid, kForbidden, kDuplicate, kNotSupported };

struct FieldError {
  ErrorType type;
  std::string field;    // "spec.volumes[1].volumeSize"
  api::Json bad_value;  // null when not applicable
  // What follows the path (and, for Invalid strings and Duplicate, the
  // value): "must be greater than 0", "is required when ...". Required
  // defaults to "is required", Duplicate to "is a duplicate".
  std::string detail;

  // "spec.cpu must be greater than 0"
  std::string ToString() const;
  // metav1.StatusCause type, e.g. "FieldValueRequired".
  std::string_view CauseType() const;
  bool operator==(const FieldError&) const = default;
};
using FieldErrors = std::vector<FieldError>;

// Constructors named after k8s.io/apimachinery/pkg/util/validation/field.
FieldError Required(std::string field, std::string detail = {});
// A string value is quoted after the path: `<path> "<value>" <detail>`;
// other values are not shown: `<path> <detail>`.
FieldError Invalid(std::string field, api::Json value, std::string detail);
FieldError Forbidden(std::string field, std::string detail);
FieldError Duplicate(std::string field, api::Json value, std::string detail = {});
// `<path> must be "a", "b" or "c"` (quote '\'' gives 'a'), then the value
// given, if any: ` (got "x")`.
FieldError NotSupported(std::string field, api::Json value,
                        const std::vector<std::string_view>& supported, char quote = '"');

// The sentences joined by "; ", as the Go provider joins them.
std::string ToAggregateString(const FieldErrors& errors);

// The denial of an admission request, as the Go provider's webhooks answer
// (controller-runtime's admission.Denied): code 403, reason Forbidden,
// message "validation failed for <Kind> <ns>/<name>: <errors>"; CAPHV adds
// one details.causes entry per error (its field path and sentence).
kube::Status ToDenialStatus(const FieldErrors& errors, std::string_view kind, std::string_view ns,
                            std::string_view name);

// --- objects -----------------------------------------------------------------

FieldErrors ValidateHarvesterCluster(const api::HarvesterCluster& obj);
FieldErrors ValidateHarvesterClusterUpdate(const api::HarvesterCluster& old_obj,
                                           const api::HarvesterCluster& new_obj);
FieldErrors ValidateHarvesterMachine(const api::HarvesterMachine& obj);
FieldErrors ValidateHarvesterMachineUpdate(const api::HarvesterMachine& old_obj,
                                           const api::HarvesterMachine& new_obj);

// --- templates ---------------------------------------------------------------

FieldErrors ValidateHarvesterClusterTemplate(const api::HarvesterClusterTemplate& obj);
FieldErrors ValidateHarvesterClusterTemplateUpdate(const api::HarvesterClusterTemplate& old_obj,
                                                   const api::HarvesterClusterTemplate& new_obj);
FieldErrors ValidateHarvesterMachineTemplate(const api::HarvesterMachineTemplate& obj);
FieldErrors ValidateHarvesterMachineTemplateUpdate(const api::HarvesterMachineTemplate& old_obj,
                                                   const api::HarvesterMachineTemplate& new_obj);

// True for an error about a value that is not set yet (Required, or a bad
// value that is "" or 0), which templates leave to ClusterClass patches.
bool IsUnsetValueError(const FieldError& e);
// `errors` without those.
FieldErrors WithoutUnsetValues(FieldErrors errors);

// --- building blocks (also used by the CLI and controllers) -------------------

// Validates a spec; `path` is the spec's field path ("spec", "spec.template.spec").
FieldErrors ValidateHarvesterClusterSpec(const api::HarvesterClusterSpec& spec,
                                         const std::string& path);
FieldErrors ValidateHarvesterMachineSpec(const api::HarvesterMachineSpec& spec,
                                         const std::string& path);
// A vmNetworkConfig at `path`: the cluster's, or a machine's (which names
// pools by reference only: no inline ipPool).
void ValidateVMNetworkConfig(const api::VMNetworkConfig& vm, const std::string& path,
                             bool machine_level, FieldErrors& errs);

// Semantic equality: equal after encoding, with quantities compared by value
// and defaults (listener protocol TCP) applied.
bool SemanticallyEqual(const api::HarvesterClusterSpec& a, const api::HarvesterClusterSpec& b);
bool SemanticallyEqual(const api::HarvesterMachineSpec& a, const api::HarvesterMachineSpec& b);

// True once the machine's VM exists: spec.providerID set, or status ready /
// provisioned.
bool MachineHasVM(const api::HarvesterMachine& m);

// --- admission dispatch ---------------------------------------------------------

// Decodes `object` (and `old_object` for an UPDATE, else nullptr) as `kind`
// and runs the matching rules. Decode problems come back as Invalid errors at
// the offending path. Unknown kinds yield a Forbidden error at "kind".
FieldErrors ValidateAdmission(std::string_view kind, const api::Json& object,
                              const api::Json* old_object);

}  // namespace caphv::webhooks
