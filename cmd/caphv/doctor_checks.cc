// File: cmd/caphv/doctor_checks.cc
//
// The helpers the checks of `caphv doctor` share (doctor_checks.h).

#include "doctor_checks.h"

#include <string>

#include "kube/object.h"

namespace caphv::cli::doctor {

// Short timeouts: a Harvester (or management cluster) that does not answer is
// a failed check within seconds.
void ShortTimeouts(kube::RestConfig& config, std::chrono::milliseconds connect) {
  config.connect_timeout = connect;
  config.request_timeout = connect * 3;
}

// An error that is not the apiserver's answer (nothing listening, a timeout,
// TLS): the apiserver cannot be reached.
bool Unreachable(const kube::Status& s) { return s.http_status() == 0; }

// The first line of a client error, without the request it was about
// ("GET /apis/...: ").
std::string FirstLine(std::string_view s) {
  s = s.substr(0, s.find('\n'));
  for (std::string_view verb : {"GET /", "POST /"}) {
    if (s.starts_with(verb)) {
      if (const auto colon = s.find(": "); colon != std::string_view::npos)
        s.remove_prefix(colon + 2);
    }
  }
  return std::string(s);
}

std::string WhyUnreachable(const kube::Status& s, std::chrono::milliseconds timeout) {
  std::string why = FirstLine(s.message());
  if (s.code() != kube::StatusCode::kTimeout) return why;
  const auto ms = timeout.count();
  return why + " (timed out; --timeout " +
         (ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms") + ")";
}

std::pair<std::string, std::string> Split(const std::string& ref) {
  const auto slash = ref.find('/');
  if (slash == std::string::npos) return {"default", ref};
  return {ref.substr(0, slash), ref.substr(slash + 1)};
}

bool ConditionTrue(const Json& o, std::string_view type) {
  if (!o.contains("status") || !o["status"].contains("conditions")) return false;
  for (const auto& c : o["status"]["conditions"]) {
    if (c.value("type", std::string()) == type) return c.value("status", std::string()) == "True";
  }
  return false;
}

Check Exists(kube::Client& client, const GroupVersionResource& gvr, const std::string& what,
             const std::string& ref, const std::string& fix) {
  const auto [ns, name] = Split(ref);
  auto got = client.Get(gvr, gvr.namespaced ? ns : "", name);
  if (got.ok()) return {what, true, ref + " exists", ""};
  if (got.status().IsNotFound()) return {what, false, ref + " not found", fix};
  return {what, false, ref + ": " + got.status().message(), fix};
}

}  // namespace caphv::cli::doctor
