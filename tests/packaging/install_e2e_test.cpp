// `kubectl apply -f manifests/install.yaml` is accepted object by object by the dev cluster, and
// the user guide's first job runs to Succeeded through the commands the docs show: apply the
// quickstart, `kubectl get dtj`, `kubectl describe dtj quickstart`, `kubectl get pods`,
// `kubectl wait --for=condition=Succeeded` (or Failed, in the 1 - P(target) runs). The controller
// runs in-process against the cluster (as in `make demo`), reading the GPU catalog the manifests
// installed in depl-system.
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "depl/common/yaml_json.hpp"
#include "depl/controller/run_controller.hpp"
#include "depl/devcluster/dev_cluster.hpp"
#include "subprocess.hpp"

namespace depl {
namespace {

namespace fs = std::filesystem;
using devcluster::testing::CommandResult;
using devcluster::testing::run_command;
using ::testing::HasSubstr;

const fs::path kRepo = DEPL_SOURCE_DIR;
const fs::path kWorker = fs::path(DEPL_BINARY_DIR) / "bin" / "depl-sim-worker";

// The significant digits of a decimal numeral ("0.4444": 4, "1.24": 3, "0.9500": 4); -1 when it
// is not one.
int significant_digits(const std::string& numeral) {
  int digits = 0;
  bool leading = true;
  for (char c : numeral) {
    if (c == '.') continue;
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    if (leading && c == '0') continue;
    leading = false;
    ++digits;
  }
  return numeral.empty() ? -1 : digits;
}

class InstallE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (run_command({"kubectl", "version", "--client"}, {}, "", std::chrono::seconds(30))
            .exit_code != 0)
      GTEST_SKIP() << "kubectl is not installed";
    if (access(kWorker.c_str(), X_OK) != 0)
      GTEST_SKIP() << kWorker << " is not built (cmake --build <build> --target depl-sim-worker)";
    devcluster::DevClusterOptions options;
    options.pools_file = (kRepo / "examples" / "quickstart" / "pools.yaml").string();
    options.image_map["*"] = kWorker.string();
    auto started = devcluster::DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
    cache_ = fs::path(cluster_->kubeconfig_path()).parent_path() / "kubecache";
  }
  void TearDown() override {
    stop_.request_stop();
    if (controller_.joinable()) controller_.join();
    if (cluster_) cluster_->stop();
  }

  CommandResult kubectl(std::vector<std::string> args,
                        std::chrono::seconds timeout = std::chrono::seconds(60)) {
    args.insert(args.begin(), "kubectl");
    return run_command(args,
                       {{"KUBECONFIG", cluster_->kubeconfig_path()},
                        {"KUBECACHEDIR", cache_.string()},
                        {"HOME", cache_.string()}},
                       "", timeout);
  }

  void start_controller() {
    controller::ControllerConfig cc;
    cc.kubeconfig = cluster_->kubeconfig_path();
    cc.metrics_addr = "127.0.0.1:0";
    cc.progress_addr = "127.0.0.1:0";
    cc.health_addr = "127.0.0.1:0";
    cc.rendezvous = controller::RendezvousMode::Loopback;
    cc.checkpoint_root = (fs::path(cluster_->kubeconfig_path()).parent_path() / "ckpt").string();
    cc.catalog_namespace = "depl-system";  // the depl-gpu-catalog install.yaml created
    controller_ = std::jthread([this, cc] {
      auto ran = controller::run_controller(
          cc, stop_.get_token(), [this](const controller::ControllerEndpoints&) { ready_ = true; });
      if (!ran) error_ = ran.error().message;
      failed_ = !ran;
    });
  }

  std::unique_ptr<devcluster::DevCluster> cluster_;
  fs::path cache_;
  std::stop_source stop_;
  std::jthread controller_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> failed_{false};
  std::string error_;
};

TEST_F(InstallE2e, ManifestsInstallAndTheQuickstartRunsToTheEnd) {
  const std::string install = (kRepo / "manifests" / "install.yaml").string();
  auto applied = kubectl({"apply", "-f", install});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  // Every object of install.yaml exists as written.
  std::ifstream in(install);
  std::stringstream text;
  text << in.rdbuf();
  auto objects = yaml_documents_to_json(text.str(), install);
  ASSERT_TRUE(objects) << objects.error().message;
  int checked = 0;
  for (const auto& o : *objects) {
    if (o.is_null()) continue;
    std::string kind = o["kind"].get<std::string>();
    for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::vector<std::string> args = {"get", kind, o["metadata"]["name"].get<std::string>(), "-o",
                                     "name"};
    if (o["metadata"].contains("namespace")) {
      args.push_back("-n");
      args.push_back(o["metadata"]["namespace"].get<std::string>());
    }
    auto got = kubectl(args);
    EXPECT_EQ(got.exit_code, 0) << kind << " " << o["metadata"]["name"] << ": " << got.output;
    ++checked;
  }
  EXPECT_GE(checked, 10);
  auto established = kubectl({"wait", "--for=condition=Established",
                              "crd/dependabletrainingjobs.depl.dev", "--timeout=30s"});
  ASSERT_EQ(established.exit_code, 0) << established.output;

  start_controller();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!ready_ && !failed_ && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(ready_) << "controller did not become ready: " << error_;

  // The user guide's first job, with the commands the docs show.
  auto job = kubectl({"apply", "-f", (kRepo / "examples" / "quickstart" / "job.yaml").string()});
  ASSERT_EQ(job.exit_code, 0) << job.output;
  // The simulated workers draw their losses at random, so the job reaches its target with the
  // planned probability (about 0.9): wait for either end, then for the matching condition the
  // way the docs do.
  std::string phase;
  const auto finish_by = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (phase != "Succeeded" && phase != "Failed" &&
         std::chrono::steady_clock::now() < finish_by) {
    auto got = kubectl({"get", "dtj", "quickstart", "-o", "jsonpath={.status.phase}"});
    ASSERT_EQ(got.exit_code, 0) << got.output;
    phase = got.output;
    if (phase != "Succeeded" && phase != "Failed")
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  auto table = kubectl({"get", "dtj"});
  auto described = kubectl({"describe", "dtj", "quickstart"});
  ASSERT_TRUE(phase == "Succeeded" || phase == "Failed")
      << "the job did not finish: " << table.output << "\n"
      << described.output;
  auto waited = kubectl({"wait", "--for=condition=" + phase, "dtj/quickstart", "--timeout=30s"});
  EXPECT_EQ(waited.exit_code, 0) << waited.output;
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_THAT(table.output, HasSubstr("P(TARGET)"));
  EXPECT_THAT(table.output, HasSubstr(phase));
  // The columns show status.display: loss and P(target) to 4 significant digits, cost to 3.
  auto display = kubectl({"get", "dtj", "quickstart", "-o",
                          "jsonpath={.status.display.loss} {.status.display.probability} "
                          "{.status.display.cost}"});
  ASSERT_EQ(display.exit_code, 0) << display.output;
  std::istringstream shown(display.output);
  std::string loss, probability, cost;
  shown >> loss >> probability >> cost;
  EXPECT_EQ(significant_digits(loss), 4) << display.output;
  EXPECT_EQ(significant_digits(probability), 4) << display.output;
  EXPECT_EQ(significant_digits(cost), 3) << display.output;
  for (const std::string& figure : {loss, probability, cost})
    EXPECT_THAT(table.output, HasSubstr(" " + figure + " ")) << table.output;
  EXPECT_EQ(described.exit_code, 0);
  // Succeeded means TargetReached; the only planned way to fail is missing the target.
  const char* outcome = phase == "Succeeded" ? "TargetReached" : "TargetMissed";
  for (const char* reason : {"Planned", "PhaseStarted", outcome})
    EXPECT_THAT(described.output, HasSubstr(reason)) << described.output;
  auto pods = kubectl({"get", "pods"});
  EXPECT_EQ(pods.exit_code, 0) << pods.output;
  EXPECT_THAT(pods.output, HasSubstr("quickstart-p0-w0"));
}

}  // namespace
}  // namespace depl
