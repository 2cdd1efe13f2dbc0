// File: controllers/writes.h
//
// The writes both reconcilers make to the management cluster: status by
// server-side apply (field manager `caphv`, which owns the whole status of
// CAPHV's kinds), merge patches of finalizers and of the contract's spec
// fields, and Event emission with a stable reason.
//
// Thread safety: stateless functions over thread-safe clients.

#pragma once

#include <string_view>

#include "kube/client.h"
#include "kube/events.h"
#include "kube/resource.h"
#include "kube/status.h"

namespace caphv::controllers {

// Server-side applies `status` as the whole status of `object` (its
// apiVersion, kind, namespace and name are taken from `object`); returns the
// object as written.
kube::StatusOr<kube::Object> ApplyStatus(kube::Client& client,
                                         const kube::GroupVersionResource& gvr,
                                         const kube::Object& object, const kube::Object& status);

// Like ApplyStatus, as a merge patch of the status subresource: the lists it
// carries (conditions) replace the stored ones whole. For a status written in
// another shape (the Go provider's), which an apply would merge into.
kube::StatusOr<kube::Object> ReplaceStatus(kube::Client& client,
                                           const kube::GroupVersionResource& gvr,
                                           const kube::Object& object, const kube::Object& status);

// Merge-patches `object` (metadata.finalizers, spec.providerID ...);
// returns the object as written.
kube::StatusOr<kube::Object> MergePatch(kube::Client& client, const kube::GroupVersionResource& gvr,
                                        const kube::Object& object, const kube::Object& patch);

// Deletes; NotFound counts as success.
kube::Status DeleteIfExists(kube::Client& client, const kube::GroupVersionResource& gvr,
                            std::string_view ns, std::string_view name);

}  // namespace caphv::controllers
