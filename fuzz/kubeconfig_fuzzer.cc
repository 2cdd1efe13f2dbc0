// Fuzz target: an identity Secret's kubeconfig, the one document a tenant
// hands the manager that it parses as YAML and turns into TLS material and
// credentials (kube::LoadInlineKubeconfig). Any text must give a config or an
// error: no crash, no exception, no file read (file references are refused).

#include <cstddef>
#include <cstdint>
#include <string>

#include "kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  auto config = caphv::kube::LoadInlineKubeconfig(yaml);
  if (config.ok() && config->server.empty()) __builtin_trap();
  return 0;
}
