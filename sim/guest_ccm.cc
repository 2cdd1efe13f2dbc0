// File: sim/guest_ccm.cc
//
// The guest cluster's Harvester cloud provider looking up a Node's VM (see
// guests.h).

#include "kube/base64.h"
#include "kube/config.h"
#include "sim/guests.h"
#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;

using namespace internal;  // NOLINT(google-build-using-namespace)

namespace {

// "host:port" of an https:// URL ("" when it is not one).
std::string HostPortOf(const std::string& url) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) return "";
  std::string rest = url.substr(kScheme.size());
  return rest.substr(0, rest.find('/'));
}

}  // namespace

Guests::CcmLookup Guests::CloudProviderLookup(const std::string& node_name) {
  constexpr char kSecret[] = "kube-system/cloud-config";
  auto secret = ctx_.w->Get(kube::resources::kSecrets, "kube-system", "cloud-config");
  if (!secret.ok()) {
    return {"", "CloudConfigMissing",
            std::string("the Harvester cloud provider cannot read ") + kSecret + ": " +
                secret.status().message()};
  }
  const std::string encoded = StrAt(*secret, {"data", "cloud-config"});
  auto text = kube::Base64Decode(encoded);
  if (encoded.empty() || !text) {
    return {"", "CloudConfigMissing",
            std::string("the Secret ") + kSecret + " has no key cloud-config"};
  }
  auto config = kube::LoadInlineKubeconfig(*text);
  if (!config.ok()) {
    return {"", "CloudConfigInvalid",
            std::string("the kubeconfig in ") + kSecret +
                " does not load: " + config.status().message()};
  }
  // Its server must be this Harvester: its own address, or its VIP.
  const std::string ours = HostPortOf(ctx_.h->config().server);
  const std::string theirs = HostPortOf(config->server);
  const bool vip =
      !ctx_.opt.env.vip.empty() && theirs.substr(0, theirs.rfind(':')) == ctx_.opt.env.vip;
  if (theirs != ours && !vip) {
    return {"", "HarvesterUnreachable",
            "the kubeconfig in " + std::string(kSecret) + " names server " + config->server +
                ", which is not this Harvester (" + ctx_.h->config().server +
                (ctx_.opt.env.vip.empty() ? "" : ", VIP " + ctx_.opt.env.vip) + ")"};
  }
  kube::RestConfig as_ccm;
  as_ccm.server = ctx_.h->config().server;
  as_ccm.ca_pem = config->ca_pem;
  as_ccm.token = config->token;
  as_ccm.client_cert_pem = config->client_cert_pem;
  as_ccm.client_key_pem = config->client_key_pem;
  as_ccm.insecure_skip_tls_verify = config->insecure_skip_tls_verify;
  as_ccm.user_agent = "harvester-cloud-provider";
  as_ccm.request_timeout = std::chrono::seconds(10);
  auto client = kube::Client::New(std::move(as_ccm));
  if (!client.ok()) {
    return {"", "CloudConfigInvalid",
            "the kubeconfig in " + std::string(kSecret) + ": " + client.status().message()};
  }
  const std::string ns = config->default_namespace;
  auto vm = (*client)->Get(gvr::kVirtualMachines, ns, node_name);
  if (vm.ok()) return {ProviderIdFor(*vm), "", ""};
  const kube::Status& s = vm.status();
  std::string reason = "InstanceLookupFailed";
  std::string why = s.message();
  if (s.IsNotFound()) {
    reason = "InstanceNotFound";
    why = "no VirtualMachine " + ns + "/" + node_name +
          " (the cloud provider looks the VM up by the Node's name, in the namespace of its "
          "kubeconfig's context)";
  } else if (s.code() == kube::StatusCode::kUnauthorized) {
    reason = "Unauthorized";
    why = "Harvester does not accept the token of the kubeconfig: " + s.message();
  } else if (s.code() == kube::StatusCode::kForbidden) {
    reason = "Forbidden";
    why = "the token of the kubeconfig may not read VirtualMachines in " + ns + ": " + s.message();
  }
  return {
      "", reason,
      "the Harvester cloud provider cannot find the instance of Node " + node_name + ": " + why};
}

}  // namespace caphv::sim
