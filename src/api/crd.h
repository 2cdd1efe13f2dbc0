// File: api/crd.h
//
// The CustomResourceDefinitions of CAPHV, generated from the field tables of
// the API types (api/fields.h). config/crd/bases/*.yaml are the checked-in
// output: test/unit/api/crd_test.cc fails when they differ from BuildCrd(),
// and rewrites them when run with CAPHV_UPDATE_CRDS=1.
//
// Each CRD carries the Cluster API contract labels
// (cluster.x-k8s.io/v1beta1 and v1beta2 -> v1alpha1_v1beta1: both served
// versions, one schema, v1alpha1 stored; see kServedVersions), the name Cluster API
// computes (plural + "." + group), category cluster-api, the status
// subresource for the non-template kinds, and printer columns.
//
// The template kinds' stamped spec (spec.template.spec) is the concrete
// kind's schema relaxed for ClusterClass: no minLength / minItems, minimum at
// most 0, "" allowed by enums and patterns, OptionalInTemplates() fields not
// required; and neither spec nor spec.template is required (as in the Go
// provider's template CRDs). Values that are set keep their checks.
//
// Thread safety: stateless; safe to call concurrently.

#pragma once

#include <string>

#include "api/codec.h"
#include "api/fields.h"

namespace caphv::api {

// The full CRD object (apiextensions.k8s.io/v1).
Json BuildCrd(Kind kind);

// The openAPIV3Schema of `kind` (what BuildCrd embeds).
Json BuildSchema(Kind kind);

// File name under config/crd/bases, e.g.
// "infrastructure.cluster.x-k8s.io_harvesterclusters.yaml".
std::string CrdFileName(Kind kind);

}  // namespace caphv::api
