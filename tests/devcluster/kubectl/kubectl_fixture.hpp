// Shared fixture for the kubectl tests: an in-process DevCluster on port 0 with two small pools
// and `busybox` mapped to /bin/sh, and a helper that runs the real kubectl against it (its own
// kubeconfig and discovery cache directory). Tests skip when kubectl is not installed.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "depl/devcluster/dev_cluster.hpp"
#include "subprocess.hpp"

namespace depl::devcluster::testing {

inline constexpr const char* kTestPools = R"(pools:
  - name: a100
    gpuType: NVIDIA-A100-SXM4-80GB
    nodes: 2
    gpusPerNode: 8
    gpuGflops: 19500
    pricePerGpuHour: 2.9
    bandwidthBytesPerSecond: 10G
  - name: t4
    gpuType: Tesla-T4
    gpus: 4
    gpusPerNode: 4
    gpuGflops: 8100
    pricePerGpuHour: 0.35
)";

// A namespaced custom resource with a status subresource, printer columns and a schema that
// exercises types, required, enum, minimum/maximum and defaults.
inline constexpr const char* kWidgetCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.tests.depl.dev
spec:
  group: tests.depl.dev
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Size
          type: integer
          jsonPath: .spec.size
        - name: Phase
          type: string
          jsonPath: .status.phase
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              description: What the widget should be.
              required: [size]
              properties:
                size:
                  type: integer
                  minimum: 1
                  maximum: 10
                  description: How big the widget is.
                color:
                  type: string
                  enum: [red, blue]
                  default: red
            status:
              type: object
              properties:
                phase:
                  type: string
                conditions:
                  type: array
                  items:
                    type: object
                    x-kubernetes-preserve-unknown-fields: true
)";

inline bool kubectl_installed() {
  return run_command({"kubectl", "version", "--client"}, {}, "", std::chrono::seconds(30))
             .exit_code == 0;
}

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kubectl_available()) GTEST_SKIP() << "kubectl is not installed; skipping kubectl tests";
    DevClusterOptions options;
    options.pools_yaml = kTestPools;
    options.image_map["busybox"] = "/bin/sh";
    options.simulated_pod_duration = std::chrono::milliseconds(300);
    auto started = DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
    cache_dir_ = std::filesystem::path(cluster_->kubeconfig_path()).parent_path() / "kubecache";
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  static bool kubectl_available() {
    return run_command({"kubectl", "version", "--client"}, {}, "", std::chrono::seconds(30))
               .exit_code == 0;
  }

  std::map<std::string, std::string> kubectl_env() const {
    return {{"KUBECONFIG", cluster_->kubeconfig_path()},
            {"KUBECACHEDIR", cache_dir_.string()},
            {"HOME", cache_dir_.string()}};
  }

  CommandResult kubectl(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), "kubectl");
    args.push_back("--request-timeout=20s");
    return run_command(args, kubectl_env(), stdin_text, std::chrono::seconds(60));
  }

  // Applies the Widget CRD and waits until it is Established.
  void install_widget_crd() {
    auto applied = kubectl({"apply", "-f", "-"}, kWidgetCrd);
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    auto waited = kubectl(
        {"wait", "--for=condition=Established", "crd/widgets.tests.depl.dev", "--timeout=30s"});
    ASSERT_EQ(waited.exit_code, 0) << waited.output;
  }

  std::unique_ptr<DevCluster> cluster_;
  std::filesystem::path cache_dir_;
};

}  // namespace depl::devcluster::testing
