// Integration tests of HttpServer over real sockets: routing, body limits,
// graceful shutdown draining a slow request while the probe server keeps
// answering, bounded shutdown, TLS with certificate reload (the new
// certificate's serial is seen by a new connection) and TLS from a
// self-signed certificate made in memory. Certificates are made by `openssl`
// at test time or by kube/self_signed.h; clients are libcurl and
// `openssl s_client`.

#include "kube/http_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "kube/health.h"
#include "kube/self_signed.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Fetched {
  CURLcode curl = CURLE_OK;
  long status = 0;
  std::string body;
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Fetched Fetch(const std::string& url, const std::string& post_body = {},
              const std::string& ca_file = {}, long timeout_ms = 10000) {
  Fetched f;
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &f.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  if (!post_body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body.size()));
  }
  if (!ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file.c_str());
  f.curl = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &f.status);
  curl_easy_cleanup(curl);
  return f;
}

std::string Url(const HttpServer& s, std::string_view path) {
  return std::string(s.tls() ? "https" : "http") + "://127.0.0.1:" + std::to_string(s.port()) +
         std::string(path);
}

TEST(ParseBindAddressTest, Forms) {
  auto any = ParseBindAddress(":8080");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->first, "");
  EXPECT_EQ(any->second, 8080);
  auto v6 = ParseBindAddress("[::1]:9443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  EXPECT_FALSE(ParseBindAddress("8080").ok());
  EXPECT_FALSE(ParseBindAddress("127.0.0.1:http").ok());
  EXPECT_FALSE(ParseBindAddress(":70000").ok());
}

TEST(ParseBindAddressTest, Loopback) {
  for (const char* a : {"127.0.0.1:8080", "127.1.2.3:0", "localhost:8443", "LOCALHOST:1",
                        "[::1]:8080", "[::ffff:127.0.0.1]:8080"}) {
    EXPECT_TRUE(IsLoopbackBindAddress(a)) << a;
  }
  for (const char* a : {":8080", "0.0.0.0:8080", "[::]:8080", "10.0.0.1:8080", "128.0.0.1:80",
                        "example.org:80", "[::2]:80", "[::ffff:10.0.0.1]:80", "127.0.0.1", "0"}) {
    EXPECT_FALSE(IsLoopbackBindAddress(a)) << a;
  }
}

TEST(HttpServerTest, RoutesByExactPathThenLongestPrefixAndReportsChosenPort) {
  HttpServer server({.name = "routes", .bind_address = "127.0.0.1:0"});
  server.Handle("/a", [](const HttpRequest&) { return HttpResponse{200, "text/plain", "exact"}; });
  server.Handle("/a/", [](const HttpRequest&) { return HttpResponse{200, "text/plain", "a/"}; });
  server.Handle("/a/b/", [](const HttpRequest& r) {
    return HttpResponse{201, "text/plain", "a/b/ " + r.path + " " + r.query};
  });
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(Fetch(Url(server, "/a")).body, "exact");
  EXPECT_EQ(Fetch(Url(server, "/a/x")).body, "a/");
  auto deep = Fetch(Url(server, "/a/b/c?verbose=1"));
  EXPECT_EQ(deep.status, 201);
  EXPECT_EQ(deep.body, "a/b/ /a/b/c verbose=1");
  EXPECT_EQ(Fetch(Url(server, "/nope")).status, 404);
  EXPECT_TRUE(server.Shutdown(2s).ok());
}

TEST(HttpServerTest, BodyLimitIsConfigurable) {
  auto echo_size = [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", std::to_string(r.body.size())};
  };
  HttpServer small({.name = "small", .bind_address = "127.0.0.1:0", .body_limit = 1 << 20});
  HttpServer large({.name = "large", .bind_address = "127.0.0.1:0", .body_limit = 8 << 20});
  small.Handle("/echo", echo_size);
  large.Handle("/echo", echo_size);
  ASSERT_TRUE(small.Start().ok());
  ASSERT_TRUE(large.Start().ok());
  const std::string seven_mib(7 << 20, 'x');
  auto rejected = Fetch(Url(small, "/echo"), std::string(2 << 20, 'x'));
  EXPECT_EQ(rejected.status, 413);
  auto accepted = Fetch(Url(large, "/echo"), seven_mib);
  EXPECT_EQ(accepted.status, 200);
  EXPECT_EQ(accepted.body, std::to_string(seven_mib.size()));
}

// A raw client that sends `head` (and `body_part`) and keeps the connection.
class RawClient {
 public:
  RawClient(int port, const std::string& text) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    size_t sent = 0;
    while (sent < text.size()) {
      const ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  // What the server answers within `timeout` ("" when it closed or said nothing).
  std::string Answer(std::chrono::milliseconds timeout) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }

 private:
  int fd_ = -1;
};

std::string PostHead(size_t content_length) {
  return "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(content_length) + "\r\n\r\n";
}

// Half-sent large bodies held 454 MiB of a manager limited to 512 Mi: the
// bytes buffered at once are bounded; past that a request is answered 429
// before its body is read, and served again once the others are done.
TEST(HttpServerTest, BufferedBodiesAreBoundedAndTheRestAnswered429) {
  HttpServer server({.name = "bounded",
                     .bind_address = "127.0.0.1:0",
                     .body_limit = 1 << 20,
                     .buffered_limit = 2 << 20,
                     .read_timeout = 5s});
  server.Handle("/echo", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", std::to_string(r.body.size())};
  });
  ASSERT_TRUE(server.Start().ok());
  const size_t almost = (1 << 20) - 1000;
  const std::string half(almost / 2, 'x');
  // Two slow clients reserve almost 2 MiB between them and send half.
  RawClient a(server.port(), PostHead(almost) + half);
  RawClient b(server.port(), PostHead(almost) + half);
  std::this_thread::sleep_for(300ms);
  RawClient c(server.port(), PostHead(almost) + half);
  const std::string refused = c.Answer(3s);
  EXPECT_EQ(refused.rfind("HTTP/1.1 429", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  // A small request still fits.
  auto small = Fetch(Url(server, "/echo"), "{}");
  EXPECT_EQ(small.status, 200);
  // The slow ones time out (read_timeout) and free their share: served again.
  std::this_thread::sleep_for(5500ms);
  auto after = Fetch(Url(server, "/echo"), std::string(almost, 'y'));
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, std::to_string(almost));
}

// A request whose header or body does not arrive within read_timeout is
// answered 408 and its connection closed; an idle keep-alive connection is
// only closed; a request in time is served as usual.
TEST(HttpServerTest, SlowRequestsAreAnswered408AndIdleConnectionsClosed) {
  HttpServer server({.name = "slow", .bind_address = "127.0.0.1:0", .read_timeout = 1s});
  server.Handle("/echo", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", std::to_string(r.body.size())};
  });
  ASSERT_TRUE(server.Start().ok());
  RawClient slow_body(server.port(), PostHead(100) + "{\"a\":");
  RawClient slow_header(server.port(), "POST /echo HTTP/1.1\r\nHost: x\r\n");
  RawClient idle(server.port(), "");
  const std::string body_answer = slow_body.Answer(4s);
  EXPECT_EQ(body_answer.rfind("HTTP/1.1 408", 0), 0u) << body_answer;
  EXPECT_NE(body_answer.find("Connection: close"), std::string::npos) << body_answer;
  const std::string header_answer = slow_header.Answer(4s);
  EXPECT_EQ(header_answer.rfind("HTTP/1.1 408", 0), 0u) << header_answer;
  EXPECT_EQ(idle.Answer(4s), "") << "an idle connection got an answer";
  EXPECT_EQ(Fetch(Url(server, "/echo"), "{}").body, "2");
}

TEST(HttpServerTest, ConnectionsBeyondTheLimitAreClosed) {
  HttpServer server({.name = "few", .bind_address = "127.0.0.1:0", .max_connections = 2});
  server.Handle("/echo", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", std::to_string(r.body.size())};
  });
  ASSERT_TRUE(server.Start().ok());
  RawClient a(server.port(), "");
  RawClient b(server.port(), "");
  std::this_thread::sleep_for(300ms);
  RawClient c(server.port(), PostHead(2) + "{}");
  EXPECT_EQ(c.Answer(2s), "") << "a third connection was served";
}

TEST(HttpServerTest, GracefulShutdownDrainsInFlightRequestWhileProbesAnswer) {
  health::Probes probes;
  HttpServer probe_server({.name = "probes", .bind_address = "127.0.0.1:0"});
  probes.Register(probe_server);
  ASSERT_TRUE(probe_server.Start().ok());

  std::promise<void> entered;
  std::atomic<bool> entered_once{false};
  HttpServer server({.name = "webhook", .bind_address = "127.0.0.1:0", .threads = 2});
  server.Handle("/slow", [&](const HttpRequest&) {
    if (!entered_once.exchange(true)) entered.set_value();
    std::this_thread::sleep_for(1500ms);
    return HttpResponse{200, "text/plain", "slow done"};
  });
  ASSERT_TRUE(server.Start().ok());

  auto slow = std::async(std::launch::async, [&] { return Fetch(Url(server, "/slow")); });
  ASSERT_EQ(entered.get_future().wait_for(5s), std::future_status::ready);

  // Shutdown begins: readiness off, then drain.
  probes.SetShuttingDown();
  const auto start = Clock::now();
  auto shutdown = std::async(std::launch::async, [&] { return server.Shutdown(10s); });

  // While draining: liveness still 200, readiness 500, no new connections.
  std::this_thread::sleep_for(200ms);
  ASSERT_EQ(shutdown.wait_for(0s), std::future_status::timeout) << "did not wait for /slow";
  auto healthz = Fetch(Url(probe_server, "/healthz"));
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "ok");
  EXPECT_EQ(Fetch(Url(probe_server, "/readyz")).status, 500);
  auto refused = Fetch(Url(server, "/slow"), {}, {}, 2000);
  EXPECT_NE(refused.curl, CURLE_OK) << "a new connection was accepted during shutdown";

  Status stopped = shutdown.get();
  const auto took = Clock::now() - start;
  EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  EXPECT_LT(took, 5s);
  Fetched done = slow.get();
  EXPECT_EQ(done.curl, CURLE_OK);
  EXPECT_EQ(done.status, 200);
  EXPECT_EQ(done.body, "slow done");
  EXPECT_GE(server.requests_served(), 1u);
  EXPECT_TRUE(probe_server.Shutdown(2s).ok());
}

TEST(HttpServerTest, ShutdownIsBoundedByItsTimeout) {
  HttpServer server({.name = "stuck", .bind_address = "127.0.0.1:0"});
  std::promise<void> entered;
  server.Handle("/stuck", [&](const HttpRequest&) {
    entered.set_value();
    std::this_thread::sleep_for(2500ms);
    return HttpResponse{};
  });
  ASSERT_TRUE(server.Start().ok());
  auto stuck = std::async(std::launch::async, [&] { return Fetch(Url(server, "/stuck")); });
  ASSERT_EQ(entered.get_future().wait_for(5s), std::future_status::ready);
  const auto start = Clock::now();
  Status s = server.Shutdown(300ms);
  const auto took = Clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_LT(took, 1500ms);
  EXPECT_GE(took, 300ms);
  stuck.get();
}

// --- TLS -----------------------------------------------------------------------

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / testing::UniqueName("caphv-tls");
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes a self-signed certificate for 127.0.0.1 with `serial` (hex) as
  // <name>.crt/<name>.key in the test directory.
  void MakeCert(const std::string& name, const std::string& serial) {
    std::string out;
    std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
        " -addext subjectAltName=IP:127.0.0.1 -set_serial 0x" +
        serial + " -keyout " + (dir_ / (name + ".key")).string() + " -out " +
        (dir_ / (name + ".crt")).string();
    ASSERT_EQ(testing::RunCommand(cmd, &out), 0) << out;
  }

  // The serial number the server presents to a new connection ("" on error).
  std::string ServedSerial(int port) {
    std::string out;
    std::string cmd = "openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                      " </dev/null 2>/dev/null | openssl x509 -noout -serial";
    if (testing::RunCommand(cmd, &out) != 0) return "";
    auto eq = out.find('=');
    if (eq == std::string::npos) return "";
    std::string serial = out.substr(eq + 1);
    while (!serial.empty() && (serial.back() == '\n' || serial.back() == '\r')) serial.pop_back();
    return serial;
  }

  std::filesystem::path dir_;
};

TEST_F(TlsTest, ServesTlsAndReloadsReplacedCertificate) {
  MakeCert("tls", "1001");
  HttpServer server({.name = "webhook",
                     .bind_address = "127.0.0.1:0",
                     .cert_dir = dir_.string(),
                     .cert_poll_interval = 200ms});
  server.Handle("/hello", [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "hello over tls"};
  });
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(server.tls());

  auto first = Fetch(Url(server, "/hello"), {}, (dir_ / "tls.crt").string());
  EXPECT_EQ(first.curl, CURLE_OK) << curl_easy_strerror(first.curl);
  EXPECT_EQ(first.body, "hello over tls");
  EXPECT_EQ(ServedSerial(server.port()), "1001");
  // Plain HTTP on the TLS port does not get a response.
  EXPECT_NE(
      Fetch("http://127.0.0.1:" + std::to_string(server.port()) + "/hello", {}, {}, 2000).status,
      200);

  // Replace both files the way a cert manager would (write aside, rename).
  MakeCert("next", "2002");
  std::filesystem::rename(dir_ / "next.key", dir_ / "tls.key");
  std::filesystem::rename(dir_ / "next.crt", dir_ / "tls.crt");
  EXPECT_TRUE(
      testing::Eventually([&] { return ServedSerial(server.port()) == "2002"; }, 10s, 200ms));
  auto second = Fetch(Url(server, "/hello"), {}, (dir_ / "tls.crt").string());
  EXPECT_EQ(second.curl, CURLE_OK) << curl_easy_strerror(second.curl);
  EXPECT_EQ(second.body, "hello over tls");
  EXPECT_TRUE(server.Shutdown(2s).ok());
}

TEST_F(TlsTest, ServesTlsFromACertificateInMemory) {
  auto pem = GenerateSelfSignedCertificate({"localhost", "127.0.0.1"});
  ASSERT_TRUE(pem.ok()) << pem.status().ToString();
  HttpServer server({.name = "metrics",
                     .bind_address = "127.0.0.1:0",
                     .cert_pem = pem->cert_pem,
                     .key_pem = pem->key_pem});
  server.Handle("/metrics", [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "up 1\n"};
  });
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(server.tls());
  // A client that pins the certificate verifies it (name 127.0.0.1).
  {
    std::FILE* f = std::fopen((dir_ / "pinned.crt").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(pem->cert_pem.c_str(), f);
    std::fclose(f);
  }
  auto pinned = Fetch(Url(server, "/metrics"), {}, (dir_ / "pinned.crt").string());
  EXPECT_EQ(pinned.curl, CURLE_OK) << curl_easy_strerror(pinned.curl);
  EXPECT_EQ(pinned.body, "up 1\n");
  // One that trusts another certificate refuses it.
  MakeCert("other", "3003");
  auto untrusted = Fetch(Url(server, "/metrics"), {}, (dir_ / "other.crt").string());
  EXPECT_NE(untrusted.curl, CURLE_OK);
  EXPECT_TRUE(server.Shutdown(2s).ok());

  HttpServer mismatched({.name = "metrics",
                         .bind_address = "127.0.0.1:0",
                         .cert_pem = pem->cert_pem,
                         .key_pem = GenerateSelfSignedCertificate({"localhost"})->key_pem});
  EXPECT_FALSE(mismatched.Start().ok());
}

TEST_F(TlsTest, BadInitialCertificateFailsStart) {
  HttpServer server({.name = "webhook", .bind_address = "127.0.0.1:0", .cert_dir = dir_.string()});
  Status s = server.Start();
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace caphv::kube
