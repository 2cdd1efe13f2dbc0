// File: kube/json_path.h
//
// Reading one field of an Object of any shape in place: no copy, no throw.
// nlohmann's value() copies the subtree it returns and throws when a value
// on the way has another type; a reconcile that reads a few fields of each
// cached object it looks at wants neither.
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kube/object.h"

namespace caphv::kube {

// The value at `path`, read in place; nullptr when a step is absent or a
// value on the way is not a JSON object. An empty path is `o` itself.
const Object* Find(const Object& o, FieldPath path);

// The string at `path`, read in place; "" when absent or not a string. The
// view lives as long as `o`.
std::string_view StringAt(const Object& o, FieldPath path);

// Whether the value at `path` is the boolean true (absent, false or not a
// boolean: false).
bool TrueAt(const Object& o, FieldPath path);

// metadata.labels, the string values only (empty when absent or not an
// object).
std::map<std::string, std::string> LabelsOf(const Object& o);

}  // namespace caphv::kube
