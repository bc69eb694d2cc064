// `kubectl depl status` against the embedded dev cluster: the CRD and a job whose status was
// written through the status subresource (the status the controller wrote in
// tests/cli/data/job_status_running.json), read back by the library and by the built binary;
// and the errors a user meets: job not in the namespace, no kubeconfig, API server down.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../devcluster/server/subprocess.hpp"  // run_command with an environment
#include "depl/cli/cluster_access.hpp"
#include "depl/cli/job_status_view.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/controller/job_resource.hpp"
#include "depl/devcluster/dev_cluster.hpp"
#include "depl/kube/beast_transport.hpp"
#include "subprocess.hpp"
#include "svg_check.hpp"

namespace depl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

const fs::path kRepo = DEPL_SOURCE_DIR;
const std::string kBinary = std::string(DEPL_BINARY_DIR) + "/bin/kubectl-depl";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class StatusOnDevCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    devcluster::DevClusterOptions options;
    options.run_scheduler = false;
    options.run_kubelet = false;
    options.insecure_http = true;  // the client below is given the URL alone
    auto started = devcluster::DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
    kube::ConnectionConfig connection;
    connection.server = cluster_->url();
    auto client = kube::make_client(connection);
    ASSERT_TRUE(client) << client.error().message;
    client_.emplace(std::move(*client));

    const std::string crd_path = (kRepo / "crds" / "depl.dev_dependabletrainingjobs.yaml").string();
    auto crd = yaml_to_json(read_text(crd_path), crd_path);
    ASSERT_TRUE(crd) << crd.error().message;
    auto created = client_->create(kube::resources::custom_resource_definitions(), "", *crd);
    ASSERT_TRUE(created) << created.error().to_string();

    // The job as a user applies it, then the status as the controller wrote it.
    fixture_ = json::parse(read_text(kRepo / "tests" / "cli" / "data" / "job_status_running.json"));
    json job = {{"apiVersion", fixture_["apiVersion"]},
                {"kind", fixture_["kind"]},
                {"metadata", {{"name", "quickstart"}, {"namespace", "ml"}}},
                {"spec", fixture_["spec"]}};
    auto ns = client_->create(
        kube::resources::namespaces(), "",
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ml"}}}});
    ASSERT_TRUE(ns) << ns.error().to_string();
    // The CRD's API may take a moment to be served after the create: retry on 404.
    Expected<json, kube::ApiError> applied = unexpected(kube::ApiError{});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    do {
      applied = client_->create(controller::job_resource(), "ml", job);
      if (applied || !applied.error().is_not_found()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < until);
    ASSERT_TRUE(applied) << applied.error().to_string();
    json with_status = *applied;
    with_status["status"] = fixture_["status"];
    auto written =
        client_->replace_status(controller::job_resource(), with_status);
    ASSERT_TRUE(written) << written.error().to_string();
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  testing::ProcessResult status(std::vector<std::string> args) {
    args.insert(args.begin(), "status");
    return testing::run_process(kBinary, args, std::chrono::seconds(60));
  }

  std::unique_ptr<devcluster::DevCluster> cluster_;
  std::optional<kube::Client> client_;
  json fixture_;
};

TEST_F(StatusOnDevCluster, LibraryReadsTheJobAndBuildsTheView) {
  auto access = connect_to_cluster({cluster_->kubeconfig_path(), "", "ml"});
  ASSERT_TRUE(access) << access.error().message;
  EXPECT_EQ(access->namespace_, "ml");
  auto job = fetch_training_job(*access, "quickstart");
  ASSERT_TRUE(job) << job.error().message;
  auto view = build_status_view(*job);
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ(view->namespace_, "ml");
  EXPECT_EQ(view->phase, "Running");
  ASSERT_TRUE(view->plan);
  EXPECT_EQ(view->plan->phases.size(), 2u);
  EXPECT_EQ(view->epochs.size(), 28u);
  EXPECT_DOUBLE_EQ(*view->epochs[0].observed,
                   fixture_["status"]["progress"]["history"][0]["loss"].get<double>());
}

TEST_F(StatusOnDevCluster, BinaryPrintsTableJsonAndPlot) {
  auto table = status({"quickstart", "-n", "ml", "--kubeconfig", cluster_->kubeconfig_path()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Job:      ml/quickstart"));
  EXPECT_THAT(table.out, HasSubstr("Plan (revision 1, depl; * = the phase running now)"));
  EXPECT_THAT(table.out, HasSubstr("PREDICTED"));

  const fs::path plot = fs::path(cluster_->kubeconfig_path()).parent_path() / "status.svg";
  auto doc = status({"quickstart", "--namespace", "ml", "--kubeconfig", cluster_->kubeconfig_path(),
                     "-o", "json", "--plot", plot.string()});
  ASSERT_EQ(doc.exit_code, 0) << doc.err;
  const json parsed = json::parse(doc.out);
  EXPECT_EQ(parsed["phase"], "Running");
  EXPECT_EQ(parsed["epochs"].size(), 28u);
  EXPECT_EQ(parsed["progress"]["epoch"], 19);
  const auto xml = testing::check_xml(read_text(plot));
  ASSERT_TRUE(xml.ok) << xml.error;
  EXPECT_THAT(read_text(plot), HasSubstr("observed-loss"));
}

// With -o json, stdout is the document alone, even when the command has something to log (the
// API server's first answer is a 500, which the client retries with a warning): logs go to
// stderr.
TEST_F(StatusOnDevCluster, JsonOutputCarriesNoLogLines) {
  cluster_->fail_next_requests(1, 500);
  auto doc =
      status({"quickstart", "-n", "ml", "--kubeconfig", cluster_->kubeconfig_path(), "-o", "json"});
  ASSERT_EQ(doc.exit_code, 0) << doc.err;
  const json parsed = json::parse(doc.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << doc.out;
  EXPECT_EQ(parsed["phase"], "Running");
  EXPECT_THAT(doc.err, HasSubstr("retry"));
}

// kubectl finds kubectl-depl on the PATH and runs it as `kubectl depl ...`, flags passed through.
TEST_F(StatusOnDevCluster, WorksAsAKubectlPlugin) {
  auto version = devcluster::testing::run_command({"kubectl", "version", "--client"});
  if (version.exit_code != 0) GTEST_SKIP() << "kubectl is not installed";
  const fs::path home = fs::path(cluster_->kubeconfig_path()).parent_path() / "home";
  fs::create_directories(home);
  const char* path = std::getenv("PATH");
  auto got = devcluster::testing::run_command(
      {"kubectl", "depl", "status", "quickstart", "-n", "ml", "--kubeconfig",
       cluster_->kubeconfig_path(), "-o", "json"},
      {{"PATH", std::string(DEPL_BINARY_DIR) + "/bin:" + (path ? path : "/usr/bin:/bin")},
       {"HOME", home.string()},
       {"KUBECACHEDIR", (home / "cache").string()}});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_THAT(got.output, HasSubstr("\"namespace\": \"ml\""));
  EXPECT_THAT(got.output, HasSubstr("\"predictedMean\""));
}

TEST_F(StatusOnDevCluster, TheNamespaceComesFromTheContextWhenNotGiven) {
  // A kubeconfig whose context names namespace ml: no -n needed.
  auto config = yaml_to_json(read_text(cluster_->kubeconfig_path()));
  ASSERT_TRUE(config) << config.error().message;
  for (json& c : (*config)["contexts"]) c["context"]["namespace"] = "ml";
  const fs::path path = fs::path(cluster_->kubeconfig_path()).parent_path() / "kubeconfig-ml";
  std::ofstream(path) << json_to_yaml(*config);
  auto got = status({"quickstart", "--kubeconfig", path.string(), "-o", "yaml"});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_THAT(got.out, HasSubstr("namespace: ml"));
}

TEST_F(StatusOnDevCluster, AJobMissingFromTheNamespaceIsNamed) {
  auto got = status({"quickstart", "--kubeconfig", cluster_->kubeconfig_path()});
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_THAT(got.err,
              HasSubstr("dependabletrainingjob \"quickstart\" not found in namespace \"default\""));
  auto other = status({"nope", "-n", "ml", "--kubeconfig", cluster_->kubeconfig_path()});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.err, HasSubstr("\"nope\" not found in namespace \"ml\""));
}

TEST_F(StatusOnDevCluster, AnUnreachableApiServerIsSaid) {
  const std::string kubeconfig = cluster_->kubeconfig_path();
  const std::string url = cluster_->url();
  // Keep the kubeconfig: stop() removes the cluster's temporary directory.
  const fs::path copy =
      fs::temp_directory_path() / ("depl-status-test-" + std::to_string(getpid()) + ".kubeconfig");
  fs::copy_file(kubeconfig, copy, fs::copy_options::overwrite_existing);
  cluster_->stop();
  auto got = status({"quickstart", "-n", "ml", "--kubeconfig", copy.string()});
  fs::remove(copy);
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_THAT(got.err, HasSubstr("cannot reach the API server at " + url));
}

TEST(StatusCommand, AClusterWithoutTheCrdIsToldToInstallIt) {
  devcluster::DevClusterOptions options;
  options.run_scheduler = false;
  options.run_kubelet = false;
  auto cluster = devcluster::DevCluster::start(options);
  ASSERT_TRUE(cluster) << cluster.error().message;
  auto got = testing::run_process(
      kBinary, {"status", "quickstart", "--kubeconfig", (*cluster)->kubeconfig_path()});
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_THAT(got.err, HasSubstr("is the DependableTrainingJob CRD installed?"));
}

TEST(StatusCommand, NoKubeconfigIsBadInput) {
  auto got = testing::run_process(
      kBinary, {"status", "quickstart", "--kubeconfig", "/nonexistent/depl/kubeconfig"});
  EXPECT_EQ(got.exit_code, 2);
  EXPECT_THAT(got.err, HasSubstr("/nonexistent/depl/kubeconfig: kubeconfig file does not exist"));
  EXPECT_THAT(got.err, HasSubstr("--kubeconfig"));
}

TEST(StatusCommand, WithoutAnyKubeconfigItSaysWhereItLooked) {
  const fs::path home =
      fs::temp_directory_path() / ("depl-status-home-" + std::to_string(getpid()));
  fs::create_directories(home);
  auto got = devcluster::testing::run_command({kBinary, "status", "quickstart"},
                                              {{"KUBECONFIG", ""}, {"HOME", home.string()}});
  fs::remove_all(home);
  EXPECT_EQ(got.exit_code, 2);
  EXPECT_THAT(got.output,
              HasSubstr((home / ".kube" / "config").string() + ": kubeconfig file does not exist"));
  EXPECT_THAT(got.output, HasSubstr("pass --kubeconfig FILE or set KUBECONFIG"));
}

TEST(StatusCommand, BadOutputFormatAndMissingNameAreBadInput) {
  EXPECT_EQ(testing::run_process(kBinary, {"status", "x", "-o", "wide"}).exit_code, 2);
  EXPECT_EQ(testing::run_process(kBinary, {"status"}).exit_code, 2);
}

}  // namespace
}  // namespace depl::cli
