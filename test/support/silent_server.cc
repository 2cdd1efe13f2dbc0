#include "support/silent_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

namespace caphv::testing {

SilentServer::SilentServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    return;
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

SilentServer::~SilentServer() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  for (int fd : held_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void SilentServer::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    held_.push_back(fd);
    accepted_.fetch_add(1);
  }
}

std::string WithServer(const std::string& kubeconfig, const std::string& server) {
  static const std::regex kServer(R"((server:\s*)\S+)");
  return std::regex_replace(kubeconfig, kServer, "$1" + server);
}

}  // namespace caphv::testing
