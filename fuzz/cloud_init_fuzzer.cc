// Fuzz target: bootstrap data merged into the VM's user data
// (harvester::MergeUserData): cloud-config, RKE2's jinja-templated
// cloud-config, scripts, MIME, anything a bootstrap provider (or a user who
// writes the bootstrap Secret) may leave. The first byte picks the options
// (SSH user and key, guest agent, declared format). The merge must give user
// data or an error; merged user data must still be cloud-config.

#include <cstddef>
#include <cstdint>
#include <string>

#include "harvester/cloud_init.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  caphv::harvester::UserDataInputs in;
  const uint8_t options = data[0];
  in.bootstrap.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((options & 1) != 0) in.ssh_user = "ubuntu";
  if ((options & 2) != 0)
    in.ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFuzz fuzz@caphv";
  in.install_guest_agent = (options & 4) != 0;
  if ((options & 8) != 0) in.bootstrap_format = "cloud-config";
  auto merged = caphv::harvester::MergeUserData(in);
  if (merged.ok() && merged->merged && merged->text.find("#cloud-config") == std::string::npos &&
      merged->text.find("## template: jinja") == std::string::npos) {
    __builtin_trap();
  }
  return 0;
}
