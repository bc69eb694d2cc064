// In-cluster configuration from a fake service-account directory and environment.
#include "depl/kube/in_cluster.hpp"

#include <gtest/gtest.h>

#include <map>

#include "temp_dir.hpp"

namespace depl::kube {
namespace {

using test::TempDir;

InClusterOptions options_for(const TempDir& dir, std::map<std::string, std::string> env,
                             std::shared_ptr<Clock> clock = nullptr) {
  InClusterOptions options;
  options.service_account_dir = dir.path();
  options.getenv = [env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  options.clock = std::move(clock);
  return options;
}

TEST(InCluster, ServerTokenCaAndNamespaceFile) {
  TempDir dir;
  dir.write("ca.crt", "CA");
  dir.write("token", "sa-token\n");
  dir.write("namespace", "depl-system\n");
  auto clock = std::make_shared<FakeClock>();
  auto config = in_cluster_config(options_for(
      dir, {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, clock));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->certificate_authority_pem, "CA");
  EXPECT_EQ(config->default_namespace, "depl-system");
  EXPECT_EQ(config->credentials->credentials()->authorization, "Bearer sa-token");
  // Bound tokens rotate: the file is re-read after a minute.
  dir.write("token", "rotated");
  clock->advance(std::chrono::minutes(1));
  EXPECT_EQ(config->credentials->credentials()->authorization, "Bearer rotated");
}

TEST(InCluster, PodNamespaceEnvWinsAndIpv6HostIsBracketed) {
  TempDir dir;
  dir.write("ca.crt", "CA");
  dir.write("token", "t");
  dir.write("namespace", "from-file");
  auto config = in_cluster_config(options_for(dir, {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                                    {"KUBERNETES_SERVICE_PORT", "6443"},
                                                    {"POD_NAMESPACE", "from-env"}}));
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->server, "https://[fd00::1]:6443");
  EXPECT_EQ(config->default_namespace, "from-env");
}

TEST(InCluster, DefaultNamespaceWithoutFile) {
  TempDir dir;
  dir.write("ca.crt", "CA");
  dir.write("token", "t");
  auto config = in_cluster_config(
      options_for(dir, {{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}}));
  ASSERT_TRUE(config);
  EXPECT_EQ(config->default_namespace, "default");
}

TEST(InCluster, Errors) {
  TempDir dir;
  auto outside = in_cluster_config(options_for(dir, {}));
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  auto no_ca = in_cluster_config(
      options_for(dir, {{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}}));
  ASSERT_FALSE(no_ca);
  EXPECT_NE(no_ca.error().message.find(dir.path() + "/ca.crt"), std::string::npos);
  dir.write("ca.crt", "CA");
  dir.write("token", "");
  auto empty_token = in_cluster_config(
      options_for(dir, {{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}}));
  ASSERT_FALSE(empty_token);
  EXPECT_NE(empty_token.error().message.find("token file is empty"), std::string::npos);
}

}  // namespace
}  // namespace depl::kube
