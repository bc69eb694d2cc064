// The Beast transport against a local server on 127.0.0.1 with certificates from pki.hpp:
// CA verification, wrong CA, SNI / tls-server-name, client certificates, keep-alive reuse,
// timeouts, streaming with idle timeout and cancel, HTTP CONNECT proxy.
#include "depl/kube/beast_transport.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "depl/common/pki.hpp"
#include "test_https_server.hpp"
#include "test_connect_proxy.hpp"

namespace depl::kube {
namespace {

using namespace std::chrono_literals;
using test::ServerOptions;
using test::ServerReply;
using test::ServerRequest;
using test::TestHttpsServer;

struct Pki {
  pki::CertificateAndKey ca = *pki::generate_ca("depl-test-ca");
  pki::CertificateAndKey other_ca = *pki::generate_ca("someone-else");
  pki::CertificateAndKey server = *pki::issue_certificate(ca, pki::localhost_server_spec());
  pki::CertificateAndKey alice = *pki::issue_certificate(ca, pki::client_spec("alice", {"system:masters"}));
  pki::CertificateAndKey bob = *pki::issue_certificate(ca, pki::client_spec("bob"));
};

const Pki& certs() {
  static const Pki kPki;  // generated once per process: key generation is the slow part
  return kPki;
}

ServerReply ok_json(const ServerRequest& request) {
  return {.body = R"({"kind":"Pod","path":")" + request.target + "\"}"};
}

std::shared_ptr<BeastTransport> transport_for(ConnectionConfig config, TransportOptions options = {}) {
  auto transport = BeastTransport::create(config, options);
  EXPECT_TRUE(transport) << transport.error().message;
  return transport ? *transport : nullptr;
}

HttpRequest get(std::string path) {
  HttpRequest request;
  request.method = "GET";
  request.path = std::move(path);
  request.headers = {{"Accept", "application/json"}};
  return request;
}

TEST(BeastTransport, VerifiesTheServerAgainstTheConfiguredCa) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  auto response = transport->send(get("/api/v1/pods"), 5s);
  ASSERT_TRUE(response) << response.error().to_string();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, R"({"kind":"Pod","path":"/api/v1/pods"})");
  EXPECT_EQ(response->header("content-type"), "application/json");
  ASSERT_EQ(server.sni_names().size(), 1u);
  EXPECT_EQ(server.sni_names()[0], "");  // no SNI for an IP address (RFC 6066)
}

TEST(BeastTransport, WrongCaIsAConnectFailureNamingVerification) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().other_ca.certificate_pem});
  auto response = transport->send(get("/api"), 5s);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().reason, ApiError::kConnectFailed);
  EXPECT_NE(response.error().message.find("TLS handshake"), std::string::npos) << response.error().message;
  EXPECT_NE(response.error().message.find("certificate verify failed"), std::string::npos) << response.error().message;
}

TEST(BeastTransport, InsecureSkipVerifyOnlyWhenAsked) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .insecure_skip_tls_verify = true});
  auto response = transport->send(get("/api"), 5s);
  ASSERT_TRUE(response) << response.error().to_string();
  // With neither a CA nor insecure, the system roots do not know our test CA.
  auto strict = transport_for({.server = server.url()});
  EXPECT_FALSE(strict->send(get("/api"), 5s));
}

// Routes the default logger to a string for the test's lifetime, then puts the previous one back.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink->set_pattern("%l %v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() const { return out_.str(); }
  // Lines at warning level that mention `needle`.
  int warnings_mentioning(const std::string& needle) const {
    std::istringstream lines(out_.str());
    int count = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("warning ", 0) == 0 && line.find(needle) != std::string::npos) ++count;
    }
    return count;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(BeastTransport, WarnsExactlyWhenTlsVerificationIsSkipped) {
  const std::string flag = "insecure-skip-tls-verify";
  {
    LogCapture log;
    ASSERT_TRUE(BeastTransport::create({.server = "https://api.example:6443",
                                        .insecure_skip_tls_verify = true,
                                        .context = "prod"}));
    EXPECT_EQ(log.warnings_mentioning(flag), 1) << log.text();
    // Speaks to the user: what is off, why it matters, where it was set and what to do instead.
    const std::string text = log.text();
    EXPECT_NE(text.find("TLS certificate is not verified"), std::string::npos) << text;
    EXPECT_NE(text.find("impersonate the API server"), std::string::npos) << text;
    EXPECT_NE(text.find("the kubeconfig sets insecure-skip-tls-verify: true"), std::string::npos)
        << text;
    EXPECT_NE(text.find("certificate-authority"), std::string::npos) << text;
    EXPECT_NE(text.find("server=https://api.example:6443"), std::string::npos) << text;
    EXPECT_NE(text.find("context=prod"), std::string::npos) << text;
  }
  {
    LogCapture log;
    ASSERT_TRUE(BeastTransport::create({.server = "https://api.example:6443", .context = "prod"}));
    ASSERT_TRUE(BeastTransport::create({.server = "https://api.example:6443",
                                        .certificate_authority_pem = certs().ca.certificate_pem}));
    EXPECT_EQ(log.warnings_mentioning(flag), 0) << log.text();
    EXPECT_EQ(log.text().find("not verified"), std::string::npos) << log.text();
  }
  {
    // Plain http has no certificate to skip, so the flag changes nothing and is not warned about.
    LogCapture log;
    ASSERT_TRUE(
        BeastTransport::create({.server = "http://127.0.0.1:1", .insecure_skip_tls_verify = true}));
    EXPECT_EQ(log.warnings_mentioning(flag), 0) << log.text();
  }
}

TEST(BeastTransport, TlsServerNameIsSentAsSniAndVerified) {
  pki::CertificateSpec spec;
  spec.common_name = "api.internal";
  spec.dns_names = {"api.internal"};
  auto named = *pki::issue_certificate(certs().ca, spec);
  TestHttpsServer server({.certificate_pem = named.certificate_pem, .key_pem = named.private_key_pem}, ok_json);
  // The URL says 127.0.0.1, which the certificate does not name.
  auto by_ip = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  EXPECT_FALSE(by_ip->send(get("/api"), 5s));
  auto by_name = transport_for({.server = server.url(),
                                .certificate_authority_pem = certs().ca.certificate_pem,
                                .tls_server_name = "api.internal"});
  auto response = by_name->send(get("/api"), 5s);
  ASSERT_TRUE(response) << response.error().to_string();
  EXPECT_EQ(server.sni_names().back(), "api.internal");
  auto wrong_name = transport_for({.server = server.url(),
                                   .certificate_authority_pem = certs().ca.certificate_pem,
                                   .tls_server_name = "other.internal"});
  EXPECT_FALSE(wrong_name->send(get("/api"), 5s));
}

TEST(BeastTransport, ClientCertificateRequiredAndPresented) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem,
                          .key_pem = certs().server.private_key_pem,
                          .client_ca_pem = certs().ca.certificate_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  EXPECT_FALSE(transport->send(get("/api"), 5s));  // no certificate: the server refuses
  HttpRequest request = get("/api");
  request.tls_identity = std::make_shared<const TlsClientIdentity>(
      TlsClientIdentity{certs().alice.certificate_pem, certs().alice.private_key_pem});
  auto response = transport->send(request, 5s);
  ASSERT_TRUE(response) << response.error().to_string();
  ASSERT_FALSE(server.client_common_names().empty());
  EXPECT_EQ(server.client_common_names().back(), "alice");
}

TEST(BeastTransport, NewClientIdentityOpensANewConnection) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem,
                          .key_pem = certs().server.private_key_pem,
                          .client_ca_pem = certs().ca.certificate_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  HttpRequest request = get("/api");
  request.tls_identity = std::make_shared<const TlsClientIdentity>(
      TlsClientIdentity{certs().alice.certificate_pem, certs().alice.private_key_pem});
  ASSERT_TRUE(transport->send(request, 5s));
  ASSERT_TRUE(transport->send(request, 5s));
  EXPECT_EQ(transport->stats().connections_opened, 1u);
  request.tls_identity = std::make_shared<const TlsClientIdentity>(
      TlsClientIdentity{certs().bob.certificate_pem, certs().bob.private_key_pem});
  ASSERT_TRUE(transport->send(request, 5s));
  EXPECT_EQ(transport->stats().connections_opened, 2u);
  EXPECT_EQ(server.client_common_names(), (std::vector<std::string>{"alice", "bob"}));
}

TEST(BeastTransport, BadClientKeyIsAClearError) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  HttpRequest request = get("/api");
  request.tls_identity = std::make_shared<const TlsClientIdentity>(
      TlsClientIdentity{certs().alice.certificate_pem, certs().bob.private_key_pem});
  auto response = transport->send(request, 5s);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().reason, ApiError::kConfigError);
  EXPECT_NE(response.error().message.find("does not match"), std::string::npos);
}

TEST(BeastTransport, KeepAliveReusesOneConnection) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         ok_json);
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(transport->send(get("/api/v1/pods/" + std::to_string(i)), 5s));
  EXPECT_EQ(transport->stats().connections_opened, 1u);
  EXPECT_EQ(transport->stats().requests, 5u);
  EXPECT_EQ(server.connections_accepted(), 1);
}

TEST(BeastTransport, ConnectionCloseIsNotReused) {
  TestHttpsServer server({.tls = false}, [](const ServerRequest&) { return ServerReply{.body = "{}", .close = true}; });
  auto transport = transport_for({.server = server.url()});
  ASSERT_TRUE(transport->send(get("/a"), 5s));
  ASSERT_TRUE(transport->send(get("/b"), 5s));
  EXPECT_EQ(transport->stats().connections_opened, 2u);
}

TEST(BeastTransport, PooledConnectionClosedByTheServerIsReplaced) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         [](const ServerRequest&) { return ServerReply{.body = "{}", .drop_after = true}; });
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  ASSERT_TRUE(transport->send(get("/a"), 5s));
  ASSERT_TRUE(server.wait_for_closed_connections(1));
  auto second = transport->send(get("/b"), 5s);
  ASSERT_TRUE(second) << second.error().to_string();
  EXPECT_EQ(transport->stats().connections_opened, 2u);
}

TEST(BeastTransport, PlainHttpWithBasePathAndBody) {
  TestHttpsServer server({.tls = false}, [](const ServerRequest& request) {
    return ServerReply{.status = 201, .body = request.body};
  });
  auto transport = transport_for({.server = server.url() + "/prefix/"});
  HttpRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/ns/pods";
  request.query = {{"fieldManager", "depl"}};
  request.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer t"}};
  request.body = R"({"metadata":{"name":"p"}})";
  auto response = transport->send(request, 5s);
  ASSERT_TRUE(response) << response.error().to_string();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->body, request.body);
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target, "/prefix/api/v1/namespaces/ns/pods?fieldManager=depl");
  EXPECT_EQ(seen[0].headers["authorization"], "Bearer t");
  EXPECT_EQ(seen[0].headers["host"], "127.0.0.1:" + std::to_string(server.port()));
}

TEST(BeastTransport, RequestTimeout) {
  TestHttpsServer server({.tls = false}, [](const ServerRequest&) { return ServerReply{.hang = true}; });
  auto transport = transport_for({.server = server.url()});
  auto response = transport->send(get("/slow"), 200ms);
  ASSERT_FALSE(response);
  EXPECT_TRUE(response.error().is_timeout()) << response.error().to_string();
}

TEST(BeastTransport, ConnectionRefusedIsConnectFailed) {
  int port = 0;
  {
    TestHttpsServer server({.tls = false}, ok_json);
    port = server.port();
  }  // closed: nothing listens there now
  auto transport = transport_for({.server = "http://127.0.0.1:" + std::to_string(port)});
  auto response = transport->send(get("/"), 2s);
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().reason, ApiError::kConnectFailed);
}

const char* kEvents[] = {
    R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})" "\n",
    R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})" "\n",
};

TEST(BeastTransport, WatchThroughTheClientAcrossChunks) {
  const std::string all = std::string(kEvents[0]) + kEvents[1];
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         [&](const ServerRequest&) {
                           // Chunk boundaries deliberately inside events.
                           return ServerReply{.chunks = {all.substr(0, 10), all.substr(10, 70), all.substr(80)},
                                              .chunked = true};
                         });
  auto client = make_client({.server = server.url(),
                             .certificate_authority_pem = certs().ca.certificate_pem,
                             .credentials = StaticCredentials::bearer("s3cret")});
  ASSERT_TRUE(client) << client.error().message;
  auto watch = client->watch(resources::pods(), "ns", {.resource_version = "0", .timeout_seconds = 60});
  ASSERT_TRUE(watch) << watch.error().to_string();
  std::vector<std::string> versions;
  while (true) {
    auto event = watch->next();
    ASSERT_TRUE(event) << event.error().to_string();
    if (!*event) break;
    versions.push_back((*event)->resource_version());
  }
  EXPECT_EQ(versions, (std::vector<std::string>{"1", "2"}));
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].target,
            "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=60");
  EXPECT_EQ(seen[0].headers["authorization"], "Bearer s3cret");
}

// A chunked body as a server frames it: each payload in a chunk of its own, then the last chunk.
// `payload_before[i]` is how many payload bytes lie before byte i of `bytes`.
struct ChunkedBody {
  std::string bytes;
  std::vector<std::size_t> payload_before;
};

ChunkedBody chunked_body(const std::vector<std::string>& payloads) {
  ChunkedBody body;
  std::size_t payload = 0;
  auto add = [&](const std::string& text, bool is_payload) {
    for (char c : text) {
      body.bytes += c;
      body.payload_before.push_back(payload);
      if (is_payload) ++payload;
    }
  };
  for (const std::string& p : payloads) {
    std::ostringstream size;
    size << std::hex << p.size() << "\r\n";
    add(size.str(), false);
    add(p, true);
    add("\r\n", false);
  }
  add("0\r\n\r\n", false);
  body.payload_before.push_back(payload);  // at the end: all of it
  return body;
}

const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

ServerOptions plain_or_tls(bool tls) {
  if (!tls) return {.tls = false};
  return {.certificate_pem = certs().server.certificate_pem,
          .key_pem = certs().server.private_key_pem};
}

ConnectionConfig config_for(const TestHttpsServer& server, bool tls) {
  if (!tls) return {.server = server.url()};
  return {.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem};
}

// Lets a test hold the server between two writes; opened at the latest when it goes out of scope
// (a failed assertion must not leave the server's thread waiting).
class Gate {
 public:
  ~Gate() { open(); }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// A watch sends an event per chunk; when many are already on the connection, a read returns all
// it holds instead of one chunk per read (and per trip through the event loop).
TEST(BeastTransport, ManySmallChunksArrivingTogetherComeInFewReadsIntactAndInOrder) {
  std::vector<std::string> events;
  std::string all;
  for (int i = 0; i < 200; ++i) {
    events.push_back(R"({"type":"MODIFIED","object":{"metadata":{"name":"p","resourceVersion":")" +
                     std::to_string(i) + "\"}}}\n");
    all += events.back();
  }
  const std::string response = kChunkedHead + chunked_body(events).bytes;
  for (bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "https" : "http");
    TestHttpsServer server(plain_or_tls(tls), [&](const ServerRequest&) {
      return ServerReply{.raw_pieces = {response}};  // all in one write
    });
    auto transport = transport_for(config_for(server, tls));
    auto stream = transport->open_stream(get("/api/v1/pods?watch=1"), 10s);
    ASSERT_TRUE(stream) << stream.error().to_string();
    std::string received;
    int reads = 0;
    while (true) {
      auto bytes = (*stream)->read();
      ASSERT_TRUE(bytes) << bytes.error().to_string();
      ++reads;
      if (bytes->empty()) break;
      received += *bytes;
    }
    EXPECT_EQ(received, all);
    // One write of 16 KB: a socket read or a few (TLS records are up to 16 KB), not 200.
    EXPECT_LE(reads, 10);
  }
}

// The server stops after every byte position of the body in turn (inside a chunk's size line,
// its data, the CRLF after it, the last chunk): a read returns exactly the data that came before
// the stop, never framing, and the rest follows once the server goes on.
TEST(BeastTransport, AChunkSplitAcrossReadsIsDeliveredWhole) {
  const std::string first = "{\"a\":1}\n";
  const std::string second = "{\"b\":\"twenty-six bytes!\"}\n";
  const ChunkedBody body = chunked_body({first, second});
  const std::string all = first + second;
  ASSERT_EQ(second.size(), 26u);  // its chunk's size line is "1a": two digits to split between
  for (bool tls : {false, true}) {
    for (std::size_t split = 1; split < body.bytes.size(); ++split) {
      SCOPED_TRACE(std::string(tls ? "https" : "http") + " split at byte " + std::to_string(split));
      Gate gate;
      TestHttpsServer server(plain_or_tls(tls), [&](const ServerRequest&) {
        return ServerReply{
            .raw_pieces = {kChunkedHead + body.bytes.substr(0, split), body.bytes.substr(split)},
            .before_piece = [&](std::size_t) { gate.wait(); }};
      });
      auto transport = transport_for(config_for(server, tls));
      auto stream = transport->open_stream(get("/api/v1/pods?watch=1"), 10s);
      ASSERT_TRUE(stream) << stream.error().to_string();
      const std::size_t before = body.payload_before[split];
      std::string received;
      while (received.size() < before) {
        auto bytes = (*stream)->read();
        ASSERT_TRUE(bytes) << bytes.error().to_string();
        ASSERT_FALSE(bytes->empty()) << "ended early";
        received += *bytes;
      }
      EXPECT_EQ(received, all.substr(0, before));
      gate.open();
      while (true) {
        auto bytes = (*stream)->read();
        ASSERT_TRUE(bytes) << bytes.error().to_string();
        if (bytes->empty()) break;
        received += *bytes;
      }
      EXPECT_EQ(received, all);
    }
  }
}

TEST(BeastTransport, SilentStreamHitsTheIdleTimeout) {
  TestHttpsServer server({.tls = false}, [](const ServerRequest&) {
    return ServerReply{.chunks = {kEvents[0]}, .chunked = true, .hang = true};
  });
  auto transport = transport_for({.server = server.url()});
  auto stream = transport->open_stream(get("/api/v1/pods?watch=1"), 300ms);
  ASSERT_TRUE(stream) << stream.error().to_string();
  EXPECT_EQ((*stream)->status(), 200);
  std::string received;
  while (received.find('\n') == std::string::npos) {
    auto bytes = (*stream)->read();
    ASSERT_TRUE(bytes) << bytes.error().to_string();
    received += *bytes;
  }
  EXPECT_EQ(received, kEvents[0]);
  const auto start = std::chrono::steady_clock::now();
  auto silent = (*stream)->read();
  ASSERT_FALSE(silent);
  EXPECT_TRUE(silent.error().is_timeout()) << silent.error().to_string();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
}

TEST(BeastTransport, CancelUnblocksAStreamRead) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         [](const ServerRequest&) {
                           return ServerReply{.chunks = {kEvents[0]}, .chunked = true, .hang = true};
                         });
  auto transport = transport_for({.server = server.url(), .certificate_authority_pem = certs().ca.certificate_pem});
  auto stream = transport->open_stream(get("/api/v1/pods?watch=1"), 60s);
  ASSERT_TRUE(stream) << stream.error().to_string();
  std::string received;
  while (received.find('\n') == std::string::npos) {
    auto bytes = (*stream)->read();
    ASSERT_TRUE(bytes);
    received += *bytes;
  }
  auto blocked = std::async(std::launch::async, [&] { return (*stream)->read(); });
  EXPECT_EQ(blocked.wait_for(50ms), std::future_status::timeout);
  (*stream)->cancel();
  ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready);
  auto result = blocked.get();
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().is_cancelled()) << result.error().to_string();
}

TEST(BeastTransport, ErrorStatusOnWatchIsReadAsBody) {
  TestHttpsServer server({.tls = false}, [](const ServerRequest&) {
    return ServerReply{.status = 410,
                       .body = R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})"};
  });
  auto client = make_client({.server = server.url()});
  ASSERT_TRUE(client);
  auto watch = client->watch(resources::pods(), "ns", {.resource_version = "5"});
  ASSERT_FALSE(watch);
  EXPECT_TRUE(watch.error().is_gone());
  EXPECT_EQ(watch.error().message, "too old");
}

TEST(BeastTransport, TunnelsThroughAnHttpConnectProxy) {
  TestHttpsServer server({.certificate_pem = certs().server.certificate_pem, .key_pem = certs().server.private_key_pem},
                         ok_json);
  test::ConnectProxy proxy;
  auto transport = transport_for({.server = server.url(),
                                  .certificate_authority_pem = certs().ca.certificate_pem,
                                  .proxy_url = proxy.url()});
  auto response = transport->send(get("/via/proxy"), 5s);
  ASSERT_TRUE(response) << response.error().to_string();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(proxy.connect_targets(), (std::vector<std::string>{"127.0.0.1:" + std::to_string(server.port())}));
}

TEST(BeastTransport, CreateValidatesTheConfiguration) {
  EXPECT_FALSE(BeastTransport::create({.server = "ftp://x"}));
  EXPECT_FALSE(BeastTransport::create({.server = "https://host:99999"}));
  EXPECT_FALSE(BeastTransport::create({.server = "https://"}));
  auto bad_ca = BeastTransport::create({.server = "https://127.0.0.1:1", .certificate_authority_pem = "garbage"});
  ASSERT_FALSE(bad_ca);
  EXPECT_NE(bad_ca.error().message.find("certificate authority"), std::string::npos);
  EXPECT_FALSE(BeastTransport::create({.server = "https://h", .proxy_url = "https://proxy"}));
  EXPECT_TRUE(BeastTransport::create({.server = "https://[::1]:6443/base"}));
}

}  // namespace
}  // namespace depl::kube
