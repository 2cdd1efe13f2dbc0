// File: kube/http_server_util.cc
//
// The Boost-free parts of the HTTP server: request accessors and bind
// address parsing and checks.

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <string>

#include "kube/http_server.h"

namespace caphv::kube {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

namespace http {

std::string Request::Header(std::string_view name) const {
  std::string lname = Lower(name);
  for (const auto& [k, v] : headers) {
    if (k == lname) return v;
  }
  return {};
}

bool Request::HasQueryParam(std::string_view key) const {
  std::string_view q = query;
  while (!q.empty()) {
    auto amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    std::string_view k = part.substr(0, part.find('='));
    if (PercentDecode(k) == key) return true;
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return false;
}

std::vector<std::string> Request::QueryParams(std::string_view key) const {
  std::vector<std::string> out;
  std::string_view q = query;
  while (!q.empty()) {
    auto amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    auto eq = part.find('=');
    if (PercentDecode(part.substr(0, eq)) == key) {
      out.push_back(eq == std::string_view::npos ? "" : PercentDecode(part.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

}  // namespace http

StatusOr<std::pair<std::string, int>> ParseBindAddress(std::string_view address) {
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return Status(StatusCode::kInvalidArgument,
                  "bind address " + std::string(address) + " has no port");
  }
  std::string host(address.substr(0, colon));
  std::string port_str(address.substr(colon + 1));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = -1;
  auto [end, ec] = std::from_chars(port_str.data(), port_str.data() + port_str.size(), port);
  if (ec != std::errc() || end != port_str.data() + port_str.size()) port = -1;
  if (port < 0 || port > 65535) {
    return Status(StatusCode::kInvalidArgument,
                  "bind address " + std::string(address) + " has an invalid port");
  }
  return std::make_pair(host, port);
}

bool IsLoopbackBindAddress(std::string_view address) {
  auto parsed = ParseBindAddress(address);
  if (!parsed.ok()) return false;
  const std::string host = Lower(parsed->first);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0) return true;
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(v6.s6_addr, kMapped, sizeof kMapped) == 0 && v6.s6_addr[12] == 127;
}

}  // namespace caphv::kube
