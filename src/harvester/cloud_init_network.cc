// File: harvester/cloud_init_network.cc
//
// The network data of a CAPHV VM (see cloud_init.h): the NICs and their
// addressing, with the Go provider's precedence between a machine's own
// networkConfig and its cluster's vmNetworkConfig, rendered as cloud-init
// network-config version 1.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harvester/cloud_init.h"
#include "harvester/ipv4.h"

namespace caphv::harvester {
namespace {

using kube::Status;
using kube::StatusCode;

Status Invalid(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }

}  // namespace

NetworkDataInputs DefaultNics(size_t network_count, const std::string& address,
                              const std::string& netmask, const std::string& gateway,
                              std::vector<std::string> dns_servers,
                              std::vector<std::string> dns_search) {
  NetworkDataInputs in;
  for (size_t i = 0; i < network_count; ++i) {
    NicConfig nic;
    nic.name = "eth" + std::to_string(i);
    if (i == 0) {
      nic.address = address;
      nic.netmask = address.empty() ? "" : netmask;
      nic.gateway = address.empty() ? "" : gateway;
    }
    in.nics.push_back(nic);
  }
  in.dns_servers = std::move(dns_servers);
  in.dns_search = std::move(dns_search);
  return in;
}

kube::StatusOr<NetworkDataInputs> EffectiveNetworkData(
    const api::HarvesterMachineSpec& machine, const std::optional<api::VMNetworkConfig>& cluster,
    const std::string& allocated_ip) {
  const size_t nics = machine.networks.size();
  if (nics == 0) return Invalid("spec.networks: at least one network is required");
  if (machine.network_config) {
    const api::NetworkConfig& m = *machine.network_config;
    if (m.address.empty()) return Invalid("spec.networkConfig.address: must not be empty");
    std::string mask = !m.subnet_mask.empty() ? m.subnet_mask
                       : cluster              ? cluster->subnet_mask
                                              : std::string();
    if (mask.empty() && m.address.find('/') == std::string::npos) {
      return Invalid(
          "spec.networkConfig.subnetMask: required (or an address with /prefix) when "
          "the cluster has no vmNetworkConfig.subnetMask");
    }
    bool own_dns = !m.dns_servers.empty() || !m.dns_search.empty();
    return DefaultNics(nics, m.address, mask, m.gateway,
                       own_dns || !cluster ? m.dns_servers : cluster->dns_servers,
                       own_dns || !cluster ? m.dns_search : cluster->dns_search);
  }
  if (cluster) {
    if (allocated_ip.empty()) {
      return Invalid("no address has been allocated from the cluster's IP pools yet");
    }
    if (cluster->subnet_mask.empty()) {
      return Invalid("spec.vmNetworkConfig.subnetMask of the HarvesterCluster is required");
    }
    return DefaultNics(nics, allocated_ip, cluster->subnet_mask, cluster->gateway,
                       cluster->dns_servers, cluster->dns_search);
  }
  return DefaultNics(nics, "", "", "", {}, {});
}

namespace {

void EmitStrings(YAML::Emitter& out, const std::vector<std::string>& items) {
  out << YAML::BeginSeq;
  for (const auto& s : items) out << YAML::DoubleQuoted << s;
  out << YAML::EndSeq;
}

}  // namespace

kube::StatusOr<std::string> BuildNetworkData(const NetworkDataInputs& in) {
  if (in.nics.empty()) return Invalid("network data needs at least one NIC");
  for (const auto& dns : in.dns_servers) {
    if (!ParseIpv4(dns) && dns.find(':') == std::string::npos) {
      return Invalid("DNS server " + dns + " is not an IP address");
    }
  }
  // Everything is quoted: YAML 1.1 (PyYAML) reads an unquoted MAC such as
  // 52:54:00:12:34:56 as a base-60 integer.
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap << YAML::Key << "version" << YAML::Value << 1;
  out << YAML::Key << "config" << YAML::Value << YAML::BeginSeq;
  for (size_t i = 0; i < in.nics.size(); ++i) {
    const NicConfig& nic = in.nics[i];
    const std::string where = "NIC " + std::to_string(i) + " (" + nic.name + ")";
    if (nic.name.empty()) return Invalid(where + " has no interface name");
    out << YAML::BeginMap;
    out << YAML::Key << "type" << YAML::Value << YAML::DoubleQuoted << "physical";
    out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << nic.name;
    if (!nic.mac_address.empty()) {
      out << YAML::Key << "mac_address" << YAML::Value << YAML::DoubleQuoted << nic.mac_address;
    }
    out << YAML::Key << "subnets" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    if (nic.address.empty()) {
      out << YAML::Key << "type" << YAML::Value << YAML::DoubleQuoted << "dhcp";
    } else {
      std::string address = nic.address;
      std::optional<int> prefix;
      if (size_t slash = address.find('/'); slash != std::string::npos) {
        auto cidr = ParseCidr(address);
        if (!cidr) return Invalid(where + ": address " + nic.address + " is not IPv4 CIDR");
        prefix = cidr->prefix;
        address = address.substr(0, slash);
      }
      auto ip = ParseIpv4(address);
      if (!ip) return Invalid(where + ": address " + nic.address + " is not an IPv4 address");
      if (!nic.netmask.empty()) {
        auto from_mask = PrefixFromMask(nic.netmask);
        if (!from_mask) return Invalid(where + ": netmask " + nic.netmask + " is not a mask");
        if (prefix && *prefix != *from_mask) {
          return Invalid(where + ": netmask " + nic.netmask + " contradicts " + nic.address);
        }
        prefix = from_mask;
      }
      if (!prefix) {
        return Invalid(where + ": static address " + nic.address +
                       " needs a subnet mask (none given and no /prefix)");
      }
      Ipv4Subnet subnet{*ip & MaskFromPrefix(*prefix), *prefix};
      out << YAML::Key << "type" << YAML::Value << YAML::DoubleQuoted << "static";
      out << YAML::Key << "address" << YAML::Value << YAML::DoubleQuoted << address;
      out << YAML::Key << "netmask" << YAML::Value << YAML::DoubleQuoted
          << FormatIpv4(MaskFromPrefix(*prefix));
      if (!nic.gateway.empty()) {
        auto gw = ParseIpv4(nic.gateway);
        if (!gw) return Invalid(where + ": gateway " + nic.gateway + " is not an IPv4 address");
        if (!Contains(subnet, *gw)) {
          return Invalid(where + ": gateway " + nic.gateway + " is outside " + address + "/" +
                         std::to_string(*prefix));
        }
        out << YAML::Key << "gateway" << YAML::Value << YAML::DoubleQuoted << nic.gateway;
      }
      if (!in.dns_servers.empty()) {
        out << YAML::Key << "dns_nameservers" << YAML::Value;
        EmitStrings(out, in.dns_servers);
      }
      if (!in.dns_search.empty()) {
        out << YAML::Key << "dns_search" << YAML::Value;
        EmitStrings(out, in.dns_search);
      }
    }
    out << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  }
  if (!in.dns_servers.empty() || !in.dns_search.empty()) {
    out << YAML::BeginMap;
    out << YAML::Key << "type" << YAML::Value << YAML::DoubleQuoted << "nameserver";
    out << YAML::Key << "address" << YAML::Value;
    EmitStrings(out, in.dns_servers);
    if (!in.dns_search.empty()) {
      out << YAML::Key << "search" << YAML::Value;
      EmitStrings(out, in.dns_search);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace caphv::harvester
