// File: kube/field_mask.cc

#include "kube/field_mask.h"

#include <utility>

namespace caphv::kube {

FieldMask::FieldMask(std::initializer_list<FieldPath> paths,
                     std::initializer_list<FieldPath> more) {
  Add({"apiVersion"});
  Add({"kind"});
  for (const auto& group : {paths, more}) {
    for (FieldPath path : group) Add(path);
  }
}

FieldMask::~FieldMask() = default;

void FieldMask::Add(FieldPath path) {
  FieldMask* at = this;
  size_t i = 0;
  for (std::string_view key : path) {
    const bool last = ++i == path.size();
    auto it = at->members_.find(key);
    if (it == at->members_.end()) {
      it =
          at->members_
              .emplace(std::string(key), last ? nullptr : std::unique_ptr<FieldMask>(new FieldMask))
              .first;
    }
    // Kept whole already (a path that is a prefix of this one): nothing to add.
    if (last || it->second == nullptr) return;
    at = it->second.get();
  }
}

const FieldMask& FieldMask::WithoutManagedFields() {
  static const FieldMask* const mask = [] {
    auto* metadata = new FieldMask;
    metadata->only_ = false;
    metadata->members_.emplace("managedFields", std::unique_ptr<FieldMask>(new FieldMask));
    auto* root = new FieldMask;
    root->only_ = false;
    root->members_.emplace("metadata", std::unique_ptr<FieldMask>(metadata));
    return root;
  }();
  return *mask;
}

FieldMask::Fate FieldMask::Member(std::string_view key) const {
  auto it = members_.find(key);
  if (it == members_.end()) return {!only_, nullptr};
  const FieldMask* m = it->second.get();
  // A member named to be kept-only of nothing: left out whatever it holds.
  if (m != nullptr && m->only_ && m->members_.empty()) return {false, nullptr};
  return {true, m};
}

bool FieldMask::Filter(Object& v) const {
  if (!v.is_object()) return !only_;
  if (only_) {
    Object out = Object::object();
    for (const auto& [key, mask] : members_) {
      auto it = v.find(key);
      if (it == v.end()) continue;
      if (mask == nullptr || mask->Filter(*it)) out[key] = std::move(*it);
    }
    v = std::move(out);
    return !v.empty();
  }
  for (const auto& [key, mask] : members_) {
    auto it = v.find(key);
    if (it == v.end() || mask == nullptr) continue;
    if (!mask->Filter(*it)) v.erase(it);
  }
  return true;
}

void FieldMask::Apply(Object& o) const {
  if (o.is_object()) Filter(o);
}

}  // namespace caphv::kube
