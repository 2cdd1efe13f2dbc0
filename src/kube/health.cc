// File: kube/health.cc
//
// Health probe and metrics handlers; see health.h.

#include "kube/health.h"

#include <set>
#include <vector>

#include "kube/log.h"
#include "kube/metrics.h"

namespace caphv::kube::health {
namespace {

HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return r;
}

}  // namespace

Checker Ping() {
  return [] { return Status::Ok(); };
}

void CheckSet::Add(std::string name, Checker check) {
  std::lock_guard lock(mu_);
  checks_[std::move(name)] = std::move(check);
}

HttpResponse CheckSet::Serve(const HttpRequest& req) const {
  std::map<std::string, Checker> checks;
  {
    std::lock_guard lock(mu_);
    checks = checks_;
  }
  if (checks.empty()) checks.emplace("ping", Ping());

  const std::string base = "/" + name_;
  std::string_view sub;
  if (req.path.size() > base.size() + 1 && req.path.starts_with(base + "/")) {
    sub = std::string_view(req.path).substr(base.size() + 1);
  }
  if (!sub.empty()) {
    auto it = checks.find(std::string(sub));
    if (it == checks.end()) return Text(404, "404 page not found\n");
    Status s = it->second();
    if (!s.ok()) {
      log::Root().WithName(name_).Info("Health check failed",
                                       {{"checker", it->first}, {"err", s.ToString()}});
      return Text(500, "internal server error: " + std::string(sub) + " check failed\n");
    }
    return Text(200, "ok");
  }

  std::set<std::string> excluded;
  for (const auto& v : req.QueryParams("exclude")) {
    // Accept both repeated parameters and comma-separated lists.
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      std::string part =
          v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      auto b = part.find_first_not_of(' ');
      auto e = part.find_last_not_of(' ');
      if (b != std::string::npos) excluded.insert(part.substr(b, e - b + 1));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  const bool verbose = req.HasQueryParam("verbose");

  bool failed = false;
  std::string body;
  std::vector<std::string> failed_names;
  for (const auto& [name, check] : checks) {
    if (excluded.erase(name) > 0) {
      body += "[+]" + name + " excluded: ok\n";
      continue;
    }
    Status s = check();
    if (s.ok()) {
      body += "[+]" + name + " ok\n";
    } else {
      failed = true;
      failed_names.push_back(name);
      body += "[-]" + name + " failed: reason withheld\n";
      log::Root().WithName(name_).V(1).Info("Health check failed",
                                            {{"checker", name}, {"err", s.ToString()}});
    }
  }
  if (!failed && !verbose) return Text(200, "ok");
  if (!excluded.empty()) {
    body += "warn: some health checks cannot be excluded: no matches for";
    for (const auto& e : excluded) body += " \"" + e + "\"";
    body += "\n";
  }
  if (failed) {
    body += name_ + " check failed\n";
    return Text(500, std::move(body));
  }
  body += name_ + " check passed\n";
  return Text(200, std::move(body));
}

Probes::Probes() {
  readyz_.Add("shutdown", [this] {
    return shutting_down_.load() ? Status(StatusCode::kUnavailable, "shutting down") : Status::Ok();
  });
}

void Probes::Register(HttpServer& server, bool with_metrics) {
  auto healthz = [this](const HttpRequest& r) { return healthz_.Serve(r); };
  auto readyz = [this](const HttpRequest& r) { return readyz_.Serve(r); };
  server.Handle("/healthz", healthz);
  server.Handle("/healthz/", healthz);
  server.Handle("/readyz", readyz);
  server.Handle("/readyz/", readyz);
  if (with_metrics) server.Handle("/metrics", ServeMetrics);
}

HttpResponse ServeMetrics(const HttpRequest& /*req*/) {
  HttpResponse r;
  r.content_type = metrics::kContentType;
  r.body = metrics::Serialize();
  return r;
}

}  // namespace caphv::kube::health
