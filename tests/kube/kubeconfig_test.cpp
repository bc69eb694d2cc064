// kubeconfig loading: merge order, explicit file, relative paths, data vs file, every auth
// kind, and malformed files with errors naming the file and the field.
#include "depl/kube/kubeconfig.hpp"

#include <gtest/gtest.h>

#include "depl/kube/exec_credentials.hpp"
#include "depl/kube/token_file_credentials.hpp"
#include "temp_dir.hpp"

namespace depl::kube {
namespace {

using test::TempDir;

// base64("CA-PEM"), base64("CERT-PEM"), base64("KEY-PEM")
constexpr const char* kCaData = "Q0EtUEVN";
constexpr const char* kCertData = "Q0VSVC1QRU0=";
constexpr const char* kKeyData = "S0VZLVBFTQ==";

std::string one_cluster_config(const std::string& user_body,
                               const std::string& cluster_extra = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
         "clusters:\n- name: dev-cluster\n  cluster:\n    server: https://127.0.0.1:6443\n" +
         cluster_extra +
         "contexts:\n- name: dev\n  context:\n    cluster: dev-cluster\n    user: dev-user\n"
         "    namespace: ml\n"
         "users:\n- name: dev-user\n  user:\n" +
         user_body;
}

Expected<ConnectionConfig> resolve_text(const TempDir& dir, const std::string& text,
                                        ResolveOptions options = {}) {
  auto path = dir.write("config", text);
  auto config = load_kubeconfig({.explicit_path = path});
  if (!config) return unexpected(config.error());
  options.stdin_is_terminal = false;
  return resolve_kubeconfig(*config, options);
}

std::string authorization(const ConnectionConfig& config) {
  auto credentials = config.credentials->credentials();
  return credentials ? credentials->authorization : "error: " + credentials.error().message;
}

TEST(Kubeconfig, SingleFileTokenAndCaData) {
  TempDir dir;
  auto resolved = resolve_text(
      dir, one_cluster_config("    token: abc\n", std::string("    certificate-authority-data: ") +
                                                      kCaData +
                                                      "\n    tls-server-name: api.internal\n"
                                                      "    proxy-url: http://proxy:3128\n"));
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_EQ(resolved->server, "https://127.0.0.1:6443");
  EXPECT_EQ(resolved->certificate_authority_pem, "CA-PEM");
  EXPECT_EQ(resolved->tls_server_name, "api.internal");
  EXPECT_EQ(resolved->proxy_url, "http://proxy:3128");
  EXPECT_EQ(resolved->default_namespace, "ml");
  EXPECT_EQ(resolved->context, "dev");
  EXPECT_EQ(authorization(*resolved), "Bearer abc");
}

TEST(Kubeconfig, KubeconfigListFirstFileWinsPerEntry) {
  TempDir dir;
  auto first = dir.write("a.yaml",
                         "current-context: first\n"
                         "contexts:\n- name: first\n  context: {cluster: c1, user: red-user}\n"
                         "clusters:\n- name: c1\n  cluster: {server: 'https://one:6443'}\n"
                         "users:\n- name: red-user\n  user: {token: red-token}\n");
  auto second =
      dir.write("b.yaml",
                "current-context: second\n"
                "contexts:\n- name: second\n  context: {cluster: c2, user: red-user}\n"
                "clusters:\n- name: c1\n  cluster: {server: 'https://ignored:6443'}\n"
                "- name: c2\n  cluster: {server: 'https://two:6443'}\n"
                "users:\n- name: red-user\n  user: {username: admin, password: secret}\n");
  auto merged = load_kubeconfig(
      {.kubeconfig_env = ":" + first + "::" + second + ":" + dir.path() + "/missing"});
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_EQ(merged->current_context, "first");
  EXPECT_EQ(merged->clusters.at("c1").server, "https://one:6443");
  EXPECT_EQ(merged->clusters.at("c2").server, "https://two:6443");
  // The second file's red-user is dropped whole: no username merged into the first's entry.
  EXPECT_EQ(merged->users.at("red-user").token, "red-token");
  EXPECT_EQ(merged->users.at("red-user").username, "");
  EXPECT_EQ(merged->files, (std::vector<std::string>{first, second}));
  auto second_context = resolve_kubeconfig(*merged, {.context = "second"});
  ASSERT_TRUE(second_context) << second_context.error().message;
  EXPECT_EQ(second_context->server, "https://two:6443");
  EXPECT_EQ(authorization(*second_context), "Bearer red-token");
  EXPECT_EQ(second_context->default_namespace, "default");
}

TEST(Kubeconfig, ExplicitFileIsNotMerged) {
  TempDir dir;
  auto a = dir.write("a.yaml", "clusters:\n- name: a\n  cluster: {server: 'https://a'}\n");
  auto b = dir.write("b.yaml", "clusters:\n- name: b\n  cluster: {server: 'https://b'}\n");
  auto loaded = load_kubeconfig({.explicit_path = b, .kubeconfig_env = a});
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->clusters.count("a"), 0u);
  EXPECT_EQ(loaded->clusters.count("b"), 1u);
  auto missing = load_kubeconfig({.explicit_path = dir.path() + "/nope"});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find(dir.path() + "/nope: kubeconfig file does not exist"),
            std::string::npos);
}

TEST(Kubeconfig, HomeFallbackAndPathOrder) {
  EXPECT_EQ(kubeconfig_paths({.kubeconfig_env = "", .home = "/home/u"}),
            (std::vector<std::string>{"/home/u/.kube/config"}));
  EXPECT_EQ(kubeconfig_paths({.kubeconfig_env = "/x:/y", .home = "/home/u"}),
            (std::vector<std::string>{"/x", "/y"}));
  EXPECT_EQ(kubeconfig_paths({.explicit_path = "/e", .kubeconfig_env = "/x", .home = "/h"}),
            (std::vector<std::string>{"/e"}));
  TempDir dir;
  dir.write(".kube/config", "current-context: from-home\n");
  auto loaded = load_kubeconfig({.kubeconfig_env = "", .home = dir.path()});
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->current_context, "from-home");
  auto none = load_kubeconfig({.kubeconfig_env = dir.path() + "/a:" + dir.path() + "/b"});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("none of the KUBECONFIG files exist"), std::string::npos);
}

TEST(Kubeconfig, RelativePathsResolveAgainstTheDefiningFile) {
  TempDir dir;
  dir.write("team/ca.crt", "CA-FROM-FILE");
  dir.write("team/certs/client.crt", "CLIENT-CERT");
  dir.write("team/certs/client.key", "CLIENT-KEY");
  dir.write("team/token", "file-token\n");
  auto team = dir.write(
      "team/config",
      "clusters:\n- name: c\n  cluster: {server: 'https://c', certificate-authority: ca.crt}\n"
      "users:\n- name: u\n  user:\n    client-certificate: certs/client.crt\n"
      "    client-key: certs/client.key\n    tokenFile: token\n"
      "- name: e\n  user:\n    exec: {command: ./bin/plugin, apiVersion: "
      "client.authentication.k8s.io/v1beta1}\n"
      "- name: p\n  user:\n    exec: {command: aws, apiVersion: "
      "client.authentication.k8s.io/v1beta1}\n");
  auto main = dir.write(
      "config", "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n");
  auto merged = load_kubeconfig({.kubeconfig_env = main + ":" + team});
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_EQ(merged->clusters.at("c").certificate_authority, dir.path() + "/team/ca.crt");
  EXPECT_EQ(merged->users.at("u").token_file, dir.path() + "/team/token");
  EXPECT_EQ(merged->users.at("e").exec->command, dir.path() + "/team/./bin/plugin");
  EXPECT_EQ(merged->users.at("p").exec->command, "aws");  // bare names go through PATH
  auto resolved = resolve_kubeconfig(*merged);
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_EQ(resolved->certificate_authority_pem, "CA-FROM-FILE");
  auto credentials = resolved->credentials->credentials();
  ASSERT_TRUE(credentials);
  EXPECT_EQ(credentials->authorization, "Bearer file-token");
  ASSERT_TRUE(credentials->tls_identity);
  EXPECT_EQ(credentials->tls_identity->certificate_pem, "CLIENT-CERT");
  EXPECT_EQ(credentials->tls_identity->key_pem, "CLIENT-KEY");
}

TEST(Kubeconfig, ClientCertificateData) {
  TempDir dir;
  auto resolved = resolve_text(
      dir, one_cluster_config(std::string("    client-certificate-data: ") + kCertData +
                              "\n    client-key-data: " + kKeyData + "\n"));
  ASSERT_TRUE(resolved) << resolved.error().message;
  auto credentials = resolved->credentials->credentials();
  ASSERT_TRUE(credentials && credentials->tls_identity);
  EXPECT_EQ(credentials->authorization, "");
  EXPECT_EQ(credentials->tls_identity->certificate_pem, "CERT-PEM");
  EXPECT_EQ(credentials->tls_identity->key_pem, "KEY-PEM");
}

TEST(Kubeconfig, BasicAuth) {
  TempDir dir;
  auto resolved =
      resolve_text(dir, one_cluster_config("    username: admin\n    password: 's3cr:t'\n"));
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_EQ(authorization(*resolved), "Basic YWRtaW46czNjcjp0");  // admin:s3cr:t
}

TEST(Kubeconfig, TokenFileIsReReadEveryMinuteAndAfter401) {
  TempDir dir;
  auto token_path = dir.write("token", "one");
  auto clock = std::make_shared<FakeClock>();
  TokenFileCredentials provider(token_path, clock);
  EXPECT_EQ(provider.credentials()->authorization, "Bearer one");
  dir.write("token", "two");
  clock->advance(std::chrono::seconds(59));
  EXPECT_EQ(provider.credentials()->authorization, "Bearer one");
  clock->advance(std::chrono::seconds(1));
  EXPECT_EQ(provider.credentials()->authorization, "Bearer two");
  dir.write("token", "three");
  provider.on_unauthorized();
  EXPECT_EQ(provider.credentials()->authorization, "Bearer three");
  // A vanished file keeps the last good token until a 401 resets it.
  std::filesystem::remove(token_path);
  clock->advance(std::chrono::minutes(2));
  EXPECT_EQ(provider.credentials()->authorization, "Bearer three");
  provider.on_unauthorized();
  auto gone = provider.credentials();
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find(token_path), std::string::npos);
}

TEST(Kubeconfig, ContextAndNamespaceOverrides) {
  TempDir dir;
  const std::string text =
      "current-context: dev\n"
      "clusters:\n- name: dev-cluster\n  cluster: {server: 'https://127.0.0.1:6443'}\n"
      "contexts:\n- name: dev\n  context: {cluster: dev-cluster, user: dev-user, namespace: ml}\n"
      "- name: other\n  context: {cluster: dev-cluster}\n"
      "users:\n- name: dev-user\n  user: {token: t}\n";
  auto other = resolve_text(dir, text, {.context = "other", .namespace_ = "override"});
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(other->context, "other");
  EXPECT_EQ(other->default_namespace, "override");
  EXPECT_EQ(other->credentials, nullptr);  // no user: anonymous
}

// Verification is on unless the kubeconfig's cluster asks, in so many words, for it to be off.
TEST(Kubeconfig, InsecureSkipTlsVerifyOnlyWhenTheKubeconfigAsksForIt) {
  TempDir dir;
  auto asked = resolve_text(
      dir, one_cluster_config("    token: t\n", "    insecure-skip-tls-verify: true\n"));
  ASSERT_TRUE(asked) << asked.error().message;
  EXPECT_TRUE(asked->insecure_skip_tls_verify);
  auto refused = resolve_text(
      dir, one_cluster_config("    token: t\n", "    insecure-skip-tls-verify: false\n"));
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_FALSE(refused->insecure_skip_tls_verify);
  auto absent = resolve_text(dir, one_cluster_config("    token: t\n"));
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_FALSE(absent->insecure_skip_tls_verify);
  EXPECT_TRUE(absent->certificate_authority_pem.empty());  // verified against the system roots
}

struct BadCase {
  const char* name;
  std::string text;
  std::string expected;  // substring of the error (the file path is checked separately)
};

class KubeconfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(KubeconfigErrors, NameTheFileAndTheField) {
  TempDir dir;
  auto result = resolve_text(dir, GetParam().text);
  ASSERT_FALSE(result) << GetParam().name;
  EXPECT_NE(result.error().message.find(GetParam().expected), std::string::npos)
      << result.error().message;
  EXPECT_NE(result.error().message.find(dir.path() + "/config"), std::string::npos)
      << result.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, KubeconfigErrors,
    ::testing::Values(
        BadCase{"yaml", "clusters: [\n  - {name: a\n", "not valid YAML"},
        BadCase{"top", "- just\n- a list\n", "expected a mapping at the top level"},
        BadCase{"clusters_not_list", "clusters: {a: 1}\n", "clusters: expected a list"},
        BadCase{"no_name", "clusters:\n- cluster: {server: x}\n", "clusters[0].name: missing"},
        BadCase{
            "bad_base64",
            one_cluster_config("    token: t\n", "    certificate-authority-data: '%%%'\n"),
            "clusters[0] (\"dev-cluster\").cluster.certificate-authority-data: not valid base64"},
        BadCase{"bad_bool",
                one_cluster_config("    token: t\n", "    insecure-skip-tls-verify: maybe\n"),
                "insecure-skip-tls-verify: expected true or false, got \"maybe\""},
        BadCase{"token_not_string", one_cluster_config("    token: [a]\n"),
                "users[0] (\"dev-user\").user.token: expected a string"},
        BadCase{"two_methods",
                one_cluster_config("    token: t\n    username: u\n    password: p\n"),
                "more than one authentication method found (token basicAuth)"},
        BadCase{"cert_without_key",
                one_cluster_config(std::string("    client-certificate-data: ") + kCertData + "\n"),
                "client-key-data or client-key must be specified"},
        BadCase{"cert_data_and_file",
                one_cluster_config(std::string("    client-certificate-data: ") + kCertData +
                                   "\n    client-certificate: c.crt\n    client-key-data: " +
                                   kKeyData + "\n"),
                "client-certificate-data and client-certificate are both specified"},
        BadCase{"ca_data_and_file",
                one_cluster_config("    token: t\n",
                                   std::string("    certificate-authority-data: ") + kCaData +
                                       "\n    certificate-authority: ca.crt\n"),
                "certificate-authority-data and certificate-authority are both specified"},
        BadCase{"insecure_with_ca",
                one_cluster_config("    token: t\n",
                                   std::string("    certificate-authority-data: ") + kCaData +
                                       "\n    insecure-skip-tls-verify: true\n"),
                "insecure-skip-tls-verify is not allowed"},
        BadCase{"missing_ca_file",
                one_cluster_config("    token: t\n", "    certificate-authority: nope.crt\n"),
                "certificate-authority: "},
        BadCase{"no_server",
                "current-context: d\nclusters:\n- name: c\n  cluster: {}\n"
                "contexts:\n- name: d\n  context: {cluster: c}\n",
                "clusters (\"c\").cluster.server: missing"},
        BadCase{"bad_scheme",
                "current-context: d\nclusters:\n- name: c\n  cluster: {server: 'ftp://x'}\n"
                "contexts:\n- name: d\n  context: {cluster: c}\n",
                "must start with https:// or http://"},
        BadCase{"unknown_context", "current-context: nope\n", "context \"nope\" not found in"},
        BadCase{"no_context", "clusters: []\n", "current-context is not set in"},
        BadCase{"undefined_user",
                "current-context: d\nclusters:\n- name: c\n  cluster: {server: 'https://x'}\n"
                "contexts:\n- name: d\n  context: {cluster: c, user: ghost}\n",
                "user \"ghost\" is not defined"},
        BadCase{"exec_no_api_version", one_cluster_config("    exec: {command: plugin}\n"),
                "exec.apiVersion: missing"},
        BadCase{"exec_v1_needs_interactive_mode",
                one_cluster_config(
                    "    exec: {command: plugin, apiVersion: client.authentication.k8s.io/v1}\n"),
                "exec.interactiveMode: required"},
        BadCase{
            "exec_v1alpha1",
            one_cluster_config(
                "    exec: {command: plugin, apiVersion: client.authentication.k8s.io/v1alpha1}\n"),
            "v1alpha1 is no longer supported"},
        BadCase{"exec_bad_mode",
                one_cluster_config(
                    "    exec: {command: plugin, apiVersion: client.authentication.k8s.io/v1, "
                    "interactiveMode: Sometimes}\n"),
                "exec.interactiveMode: invalid \"Sometimes\""},
        BadCase{"exec_env_shape",
                one_cluster_config("    exec: {command: p, apiVersion: x, env: [a]}\n"),
                "exec.env[0]: expected {name, value}"},
        BadCase{"token_file_missing", one_cluster_config("    tokenFile: missing-token\n"),
                "tokenFile: "}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

// Found by fuzz/kubeconfig_fuzz.cpp: the exec extension was copied into JSON by following
// aliases without a bound, so a self-referring alias overflowed the stack and a "billion laughs"
// exhausted memory. Both are now an error naming the field.
TEST(Kubeconfig, ExecExtensionAliasesAreBounded) {
  const std::string head =
      "clusters:\n- name: c\n  cluster:\n    server: https://a\n    extensions:\n"
      "    - name: client.authentication.k8s.io/exec\n      extension:";
  std::string laughs = head + "\n        a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    laughs += "        a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) laughs += (j ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  for (const std::string& text : {head + " &a [*a]\n", laughs}) {
    auto parsed = parse_kubeconfig(text, "/k/config");
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().message.rfind(
                  "/k/config: clusters[0] (\"c\").cluster.extensions[0].extension: nested deeper "
                  "than 100 levels or more than 10000 values",
                  0),
              0u)
        << parsed.error().message;
  }
  auto fine =
      parse_kubeconfig(head + " &a {audience: x, again: [1, -2.5, 0x1, '3']}\n", "/k/config");
  ASSERT_TRUE(fine.has_value()) << fine.error().message;
  EXPECT_EQ(fine->clusters.at("c").exec_extension["again"],
            nlohmann::json::parse(R"([1, -2.5, "0x1", "3"])"));
}

}  // namespace
}  // namespace depl::kube
