// File: kube/json_boost.cc
//
// Boost.JSON's compiled part (error categories, number conversion), built
// once into this layer: Debian ships Boost.JSON as headers, and the parser
// in kube/untrusted_json.cc uses its tokenizer.

#include <boost/json/src.hpp>
