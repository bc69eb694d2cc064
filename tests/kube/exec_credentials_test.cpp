// The exec credential plugin protocol against a real (shell script) plugin: input in
// KUBERNETES_EXEC_INFO, token and certificate output, expiry on a fake clock, refresh after a
// 401, apiVersion mismatch, failures.
#include "depl/kube/exec_credentials.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "depl/kube/client.hpp"
#include "depl/kube/testing/scripted_transport.hpp"
#include "temp_dir.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using test::TempDir;
using namespace std::chrono_literals;

constexpr const char* kV1 = "client.authentication.k8s.io/v1";
constexpr const char* kV1beta1 = "client.authentication.k8s.io/v1beta1";

// The plugin records its input and run count next to itself and prints response.json with
// COUNT replaced by the run number; it exits with $PLUGIN_EXIT (default 0).
constexpr const char* kPlugin = R"(#!/bin/sh
dir=$(dirname "$0")
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/exec_info.json"
printf '%s' "$PLUGIN_GREETING" > "$dir/greeting"
count=$(cat "$dir/count" 2>/dev/null || echo 0)
count=$((count + 1))
echo "$count" > "$dir/count"
sed "s/COUNT/$count/g" "$dir/response.json"
echo "plugin stderr line" >&2
exit "${PLUGIN_EXIT:-0}"
)";

class ExecPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = dir_.write("bin/plugin", kPlugin);
    std::filesystem::permissions(plugin_, std::filesystem::perms::owner_all);
  }
  void respond(const json& response) { dir_.write("bin/response.json", response.dump()); }
  json token_response(const std::string& api_version, const std::string& expiry = "") {
    json status = {{"token", "tok-COUNT"}};
    if (!expiry.empty()) status["expirationTimestamp"] = expiry;
    return {{"apiVersion", api_version}, {"kind", "ExecCredential"}, {"status", status}};
  }
  ExecConfig exec(const std::string& api_version) {
    ExecConfig config;
    config.command = plugin_;
    config.api_version = api_version;
    config.interactive_mode = "Never";
    return config;
  }
  std::shared_ptr<ExecCredentials> provider(ExecConfig config, KubeconfigCluster cluster = {}) {
    return std::make_shared<ExecCredentials>(std::move(config), std::move(cluster), "dev-user",
                                             clock_,
                                             /*stdin_is_terminal=*/false);
  }
  json recorded_exec_info() {
    std::ifstream in(dir_.path() + "/bin/exec_info.json");
    return json::parse(in);
  }

  TempDir dir_;
  std::string plugin_;
  // Wall time 2026-01-01T00:00:00Z.
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
};

TEST_F(ExecPlugin, TokenCachedUntilExpiry) {
  respond(token_response(kV1, "2026-01-01T00:10:00Z"));
  auto credentials = provider(exec(kV1));
  EXPECT_EQ(credentials->credentials()->authorization, "Bearer tok-1");
  clock_->advance(9min + 59s);
  EXPECT_EQ(credentials->credentials()->authorization, "Bearer tok-1");
  EXPECT_EQ(credentials->runs(), 1);
  clock_->advance(1s);
  EXPECT_EQ(credentials->credentials()->authorization, "Bearer tok-2");
  EXPECT_EQ(credentials->runs(), 2);
}

TEST_F(ExecPlugin, WithoutExpiryCachedUntilUnauthorized) {
  respond(token_response(kV1beta1));
  auto credentials = provider(exec(kV1beta1));
  EXPECT_EQ(credentials->credentials()->authorization, "Bearer tok-1");
  clock_->advance(24h);
  EXPECT_EQ(credentials->credentials()->authorization, "Bearer tok-1");
  credentials->on_unauthorized();
  EXPECT_EQ(credentials->credentials()->authorization, "Bearer tok-2");
}

TEST_F(ExecPlugin, ClientReturns401ThenUsesTheRefreshedToken) {
  respond(token_response(kV1));
  auto transport = std::make_shared<testing::ScriptedTransport>();
  transport->push_status(401, "Unauthorized", "Unauthorized");
  transport->push_json(200, json::object());
  ClientOptions options;
  options.clock = clock_;
  Client client(transport, provider(exec(kV1)), options);
  auto first = client.get(resources::nodes(), "", "n");
  ASSERT_FALSE(first);
  EXPECT_TRUE(first.error().is_unauthorized());
  ASSERT_TRUE(client.get(resources::nodes(), "", "n"));
  auto sent = transport->requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].request.header("Authorization"), "Bearer tok-1");
  EXPECT_EQ(sent[1].request.header("Authorization"), "Bearer tok-2");
}

TEST_F(ExecPlugin, ClientCertificateOutput) {
  respond({{"apiVersion", kV1},
           {"kind", "ExecCredential"},
           {"status",
            {{"clientCertificateData", "-----BEGIN CERTIFICATE-----\nX\n"},
             {"clientKeyData", "-----BEGIN PRIVATE KEY-----\nY\n"}}}});
  auto credentials = provider(exec(kV1))->credentials();
  ASSERT_TRUE(credentials) << credentials.error().message;
  EXPECT_EQ(credentials->authorization, "");
  ASSERT_TRUE(credentials->tls_identity);
  EXPECT_EQ(credentials->tls_identity->certificate_pem, "-----BEGIN CERTIFICATE-----\nX\n");
  EXPECT_EQ(credentials->tls_identity->key_pem, "-----BEGIN PRIVATE KEY-----\nY\n");
}

TEST_F(ExecPlugin, CertificateWithoutKeyIsRejected) {
  respond({{"apiVersion", kV1},
           {"kind", "ExecCredential"},
           {"status", {{"clientCertificateData", "X"}}}});
  auto credentials = provider(exec(kV1))->credentials();
  ASSERT_FALSE(credentials);
  EXPECT_NE(credentials.error().message.find("must both be set"), std::string::npos);
}

TEST_F(ExecPlugin, ApiVersionMismatch) {
  respond(token_response(kV1beta1));
  auto credentials = provider(exec(kV1))->credentials();
  ASSERT_FALSE(credentials);
  EXPECT_EQ(credentials.error().reason, ApiError::kConfigError);
  EXPECT_EQ(credentials.error().message,
            "exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin "
            "returned version client.authentication.k8s.io/v1beta1");
}

TEST_F(ExecPlugin, ExecInfoWithClusterFromKubeconfig) {
  respond(token_response(kV1));
  dir_.write("ca.crt", "CA-PEM");
  auto config_path = dir_.write(
      "config",
      "current-context: d\n"
      "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n"
      "    certificate-authority: ca.crt\n    tls-server-name: api\n"
      "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
      "      extension: {audience: depl, level: 3}\n"
      "contexts:\n- name: d\n  context: {cluster: c, user: u}\n"
      "users:\n- name: u\n  user:\n    exec:\n      command: ./bin/plugin\n"
      "      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: IfAvailable\n"
      "      provideClusterInfo: true\n      env:\n      - {name: PLUGIN_GREETING, value: "
      "hello}\n");
  auto config = load_kubeconfig({.explicit_path = config_path});
  ASSERT_TRUE(config) << config.error().message;
  auto resolved = resolve_kubeconfig(*config, {.clock = clock_, .stdin_is_terminal = false});
  ASSERT_TRUE(resolved) << resolved.error().message;
  auto credentials = resolved->credentials->credentials();
  ASSERT_TRUE(credentials) << credentials.error().message;
  EXPECT_EQ(credentials->authorization, "Bearer tok-1");
  EXPECT_EQ(recorded_exec_info(),
            json::parse(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
              "spec":{"interactive":false,"cluster":{"server":"https://10.0.0.1:6443",
                "tls-server-name":"api","certificate-authority-data":"Q0EtUEVN",
                "config":{"audience":"depl","level":3}}}})"));
  std::ifstream greeting(dir_.path() + "/bin/greeting");
  std::string text((std::istreambuf_iterator<char>(greeting)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "hello");
}

TEST_F(ExecPlugin, ExecInfoWithoutClusterInfo) {
  respond(token_response(kV1beta1));
  ASSERT_TRUE(provider(exec(kV1beta1))->credentials());
  EXPECT_EQ(
      recorded_exec_info(),
      json::parse(R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
              "spec":{"interactive":false}})"));
}

TEST_F(ExecPlugin, FailingPluginReportsExitCodeAndStderr) {
  respond(token_response(kV1));
  auto config = exec(kV1);
  config.env.emplace_back("PLUGIN_EXIT", "3");
  auto credentials = provider(config)->credentials();
  ASSERT_FALSE(credentials);
  EXPECT_NE(credentials.error().message.find("failed with exit code 3: plugin stderr line"),
            std::string::npos)
      << credentials.error().message;
}

TEST_F(ExecPlugin, MissingPluginShowsInstallHint) {
  auto config = exec(kV1);
  config.command = dir_.path() + "/does-not-exist";
  config.install_hint = "install it with: apt install the-plugin";
  auto credentials = provider(config)->credentials();
  ASSERT_FALSE(credentials);
  EXPECT_NE(credentials.error().message.find("could not be started"), std::string::npos);
  EXPECT_NE(credentials.error().message.find("apt install the-plugin"), std::string::npos);
}

TEST_F(ExecPlugin, GarbageOutputAndBadExpiry) {
  dir_.write("bin/response.json", "not json");
  auto garbage = provider(exec(kV1))->credentials();
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message.find("did not print an ExecCredential"), std::string::npos);
  respond(token_response(kV1, "tomorrow"));
  auto expiry = provider(exec(kV1))->credentials();
  ASSERT_FALSE(expiry);
  EXPECT_NE(expiry.error().message.find("expirationTimestamp \"tomorrow\" is not RFC 3339"),
            std::string::npos);
}

// A plugin whose output is not a valid ExecCredential may still have printed its token (cut
// short, or with a syntax error after it): the error says what is wrong, not what it printed.
TEST_F(ExecPlugin, ItsOutputIsNeverEchoedIntoTheError) {
  for (const std::string& out :
       {std::string(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
                    R"("status":{"token":"sekrit-7d1f"})"),
        std::string(R"(["sekrit-7d1f"])"), std::string("token=sekrit-7d1f\n")}) {
    dir_.write("bin/response.json", out);
    auto broken = provider(exec(kV1))->credentials();
    ASSERT_FALSE(broken) << out;
    EXPECT_NE(broken.error().message.find("did not print an ExecCredential"), std::string::npos);
    EXPECT_EQ(broken.error().message.find("sekrit-7d1f"), std::string::npos)
        << broken.error().message;
  }
}

TEST_F(ExecPlugin, AlwaysInteractiveNeedsATerminal) {
  respond(token_response(kV1));
  auto config = exec(kV1);
  config.interactive_mode = "Always";
  auto credentials = provider(config)->credentials();
  ASSERT_FALSE(credentials);
  EXPECT_NE(credentials.error().message.find("standard input is not a terminal"),
            std::string::npos);
}

}  // namespace
}  // namespace depl::kube
