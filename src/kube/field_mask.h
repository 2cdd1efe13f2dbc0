// File: kube/field_mask.h
//
// FieldMask: the fields of a Kubernetes object a cache keeps. An informer's
// readers read a fraction of each object (a VM's volumes and readiness, a
// Node's providerID and taints); the mask names that fraction, and the JSON
// parser (kube/untrusted_json.h) builds only it from a watch event or a
// list page, so the rest is lexed and never allocated. Apply() makes the
// same projection of an object already built (one the informer is given
// after a write).
//
// Semantics, the same in the parser and in Apply():
//   - A mask made of paths keeps only those paths, plus apiVersion and kind.
//     A path that does not exist through objects keeps nothing; an object
//     on a path that ends up with none of its kept members is left out too
//     (the root object always stays, empty or not).
//   - WithoutManagedFields() keeps everything but metadata.managedFields.
//   - Arrays are never looked into: a path ends at an array or keeps
//     nothing of it.
//   - A value that is not an object at the root is left as it is.
//
// Thread safety: a FieldMask is immutable once built; share it freely.

#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kube/object.h"

namespace caphv::kube {

class FieldMask {
 public:
  // Keeps only the fields at `paths` and `more` (and apiVersion, kind). No
  // path may be a prefix of another.
  FieldMask(std::initializer_list<FieldPath> paths, std::initializer_list<FieldPath> more = {});
  ~FieldMask();
  FieldMask(const FieldMask&) = delete;
  FieldMask& operator=(const FieldMask&) = delete;

  // Everything but metadata.managedFields: what no cache keeps.
  static const FieldMask& WithoutManagedFields();

  // What becomes of the member `key` of an object this mask applies to.
  struct Fate {
    bool kept = true;
    // The mask its value is filtered by; null: kept whole.
    const FieldMask* mask = nullptr;
  };
  Fate Member(std::string_view key) const;

  // Whether this mask keeps nothing but its members: a value here that is
  // not an object is left out, and so is an object left without members.
  // False for WithoutManagedFields() and its metadata: what it does not
  // name is kept whole.
  bool keeps_only() const { return only_; }

  // Makes the projection of `o`, in place.
  void Apply(Object& o) const;

 private:
  FieldMask() = default;
  // Filters `v`, the value at this mask; false when it is to be left out.
  bool Filter(Object& v) const;
  void Add(FieldPath path);

  bool only_ = true;
  // null: the member is kept whole.
  std::map<std::string, std::unique_ptr<FieldMask>, std::less<>> members_;
};

}  // namespace caphv::kube
