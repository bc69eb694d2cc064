// `kubectl-depl profile --in-cluster` against the embedded dev cluster, whose kubelet runs the
// reference worker's image as the built depl-reference-worker: the pods it creates (names,
// labels, the worker's flags, the checkpoint a switch's two pods share), that none is left, and
// that the YAML is the local mode's on the same seeds; and a pod that fails is an error naming
// it with the end of its log. Skipped when Fashion-MNIST is not installed.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../devcluster/server/subprocess.hpp"  // Subprocess: signal a running command
#include "depl/cli/pod_run_executor.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/devcluster/dev_cluster.hpp"
#include "subprocess.hpp"

namespace depl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;

const std::string kDataDir = "/usr/share/datasets/fashion-mnist";
const std::string kBinary = std::string(DEPL_BINARY_DIR) + "/bin/kubectl-depl";
const std::string kWorker = std::string(DEPL_BINARY_DIR) + "/bin/depl-reference-worker";
const std::string kPytorchWorker = std::string(DEPL_SOURCE_DIR) + "/examples/pytorch/train.py";
constexpr const char* kNamespace = "profiling";
constexpr const char* kPools = R"(pools:
  - {name: cpu, gpuType: T4, nodes: 1, gpusPerNode: 4, gpuGflops: 8100, pricePerGpuHour: 0.35}
)";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The YAML without its comments (they carry the command line and the seconds per epoch).
std::string without_comments(const std::string& yaml) {
  std::istringstream in(yaml);
  std::string line;
  std::string out;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == '#') continue;
    out += line + '\n';
  }
  return out;
}

std::vector<std::string> args_of(const json& pod) {
  return pod["spec"]["containers"][0]["args"].get<std::vector<std::string>>();
}

// The value after `flag` in a pod's args, "" when absent.
std::string flag_value(const json& pod, const std::string& flag) {
  const auto args = args_of(pod);
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) return args[i + 1];
  }
  return "";
}

class ProfileOnDevCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fs::path(kDataDir) / "train-images-idx3-ubyte.gz") &&
        !fs::exists(fs::path(kDataDir) / "train-images-idx3-ubyte")) {
      GTEST_SKIP() << kDataDir << " is not installed (make deps)";
    }
    devcluster::DevClusterOptions options;
    options.pools_yaml = kPools;
    options.image_map["depl.dev/reference-worker"] = kWorker;
    options.image_map["depl.dev/pytorch-fashion-mnist"] = kPytorchWorker;
    auto started = devcluster::DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);
    auto ns = cluster_->store().create(
        {"", "v1", "namespaces", "", "", ""},
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}});
    ASSERT_TRUE(ns.ok()) << ns.body.dump();
    // Every pod as the command created it (read back at once: it deletes them when done).
    cluster_->store().set_write_recorder([this](const devcluster::WriteRecord& w) {
      if (w.plural != "pods" || w.verb != "create" || !w.subresource.empty()) return;
      auto pod = cluster_->store().get({"", "v1", "pods", w.ns, w.name, ""});
      std::lock_guard lock(mutex_);
      created_.push_back(pod.ok() ? pod.body : json{{"metadata", {{"name", w.name}}}});
    });
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  testing::ProcessResult profile(std::vector<std::string> args, bool in_cluster) {
    args.insert(args.begin(), "profile");
    if (in_cluster) {
      args.insert(args.end(), {"--in-cluster", "--kubeconfig", cluster_->kubeconfig_path(), "-n",
                               kNamespace, "--parallel", "2"});
    }
    return testing::run_process(kBinary, args, std::chrono::seconds(120));
  }

  std::vector<json> created() {
    std::lock_guard lock(mutex_);
    return created_;
  }

  std::vector<std::string> profiling_pods_left() {
    devcluster::ListOptions selection;
    selection.label_selector = "app.kubernetes.io/name=depl-profile";
    auto pods = cluster_->store().list({"", "v1", "pods", kNamespace, "", ""}, selection);
    std::vector<std::string> names;
    for (const json& pod : pods.body["items"]) names.push_back(pod["metadata"]["name"]);
    return names;
  }

  fs::path out_path(const std::string& name) {
    return fs::path(cluster_->kubeconfig_path()).parent_path() / name;
  }

  std::unique_ptr<devcluster::DevCluster> cluster_;
  std::mutex mutex_;
  std::vector<json> created_;
};

const std::vector<std::string> kSmallProfile = {"--variants",
                                                "eighth",
                                                "--runs",
                                                "2",
                                                "--epochs",
                                                "3",
                                                "--samples",
                                                "300",
                                                "--validation-samples",
                                                "300",
                                                "--seed",
                                                "5",
                                                "--switch",
                                                "eighth:quarter@2"};

TEST_F(ProfileOnDevCluster, PodsRunTheWorkerAndTheFitIsTheLocalOne) {
  std::vector<std::string> args = kSmallProfile;
  const fs::path in_cluster_yaml = out_path("in-cluster.yaml");
  args.insert(args.end(), {"-o", in_cluster_yaml.string()});
  const auto start = std::chrono::steady_clock::now();
  auto got = profile(args, true);
  ASSERT_EQ(got.exit_code, 0) << got.err;
  std::cerr << "in-cluster profile: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count()
            << " ms\n";
  EXPECT_THAT(got.err, HasSubstr("4/4"));  // the progress bar counts runs, not pods

  // One pod per variant run, two per switch run, named after the run.
  const auto pods = created();
  std::map<std::string, json> by_name;
  for (const json& pod : pods) by_name[pod["metadata"]["name"]] = pod;
  ASSERT_EQ(by_name.size(), 6u);
  for (const char* name :
       {"depl-profile-eighth-n300-s5", "depl-profile-eighth-n300-s6",
        "depl-profile-sw0-eighth-quarter-e2-s5-1", "depl-profile-sw0-eighth-quarter-e2-s5-2",
        "depl-profile-sw0-eighth-quarter-e2-s6-1", "depl-profile-sw0-eighth-quarter-e2-s6-2"}) {
    ASSERT_TRUE(by_name.contains(name)) << name;
    const json& pod = by_name[name];
    EXPECT_EQ(pod["spec"]["restartPolicy"], "Never") << name;
    EXPECT_EQ(pod["spec"]["containers"][0]["image"], "depl.dev/reference-worker:0.1") << name;
    EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/name"], "depl-profile") << name;
    EXPECT_FALSE(pod["metadata"]["labels"].value("depl.dev/profile-session", "").empty());
    EXPECT_FALSE(pod["metadata"].contains("ownerReferences")) << name;
    EXPECT_EQ(flag_value(pod, "--datasets"), "profile") << name;
    EXPECT_EQ(json::parse(flag_value(pod, "--shards")),
              json::parse(R"({"shards":[{"name":"profile","samples":300}]})"))
        << name;
    EXPECT_EQ(flag_value(pod, "--test-samples"), "300") << name;
    EXPECT_EQ(flag_value(pod, "--data-dir"), kDataDir) << name;
  }
  const json& run = by_name["depl-profile-eighth-n300-s6"];
  EXPECT_EQ(flag_value(run, "--model"), "eighth");
  EXPECT_EQ(flag_value(run, "--epochs"), "3");
  EXPECT_EQ(flag_value(run, "--seed"), "6");
  EXPECT_THAT(args_of(run), Contains("--eval-initial"));
  // A switch: the first pod trains into a checkpoint directory, the second starts from it.
  const json& train = by_name["depl-profile-sw0-eighth-quarter-e2-s5-1"];
  const json& convert = by_name["depl-profile-sw0-eighth-quarter-e2-s5-2"];
  EXPECT_EQ(flag_value(train, "--model"), "eighth");
  EXPECT_EQ(flag_value(train, "--epochs"), "2");
  const std::string checkpoint = flag_value(train, "--checkpoint-dir");
  ASSERT_FALSE(checkpoint.empty());
  EXPECT_EQ(flag_value(convert, "--init-from"), checkpoint);
  EXPECT_EQ(flag_value(convert, "--model"), "quarter");
  EXPECT_EQ(flag_value(convert, "--epochs"), "0");
  EXPECT_EQ(flag_value(convert, "--start-epoch"), "2");
  EXPECT_EQ(train["spec"]["volumes"][0]["hostPath"]["path"],
            fs::path(checkpoint).parent_path().string());
  EXPECT_FALSE(fs::exists(checkpoint)) << "the work directory is removed at the end";

  EXPECT_THAT(profiling_pods_left(), ::testing::IsEmpty());

  // The same seeds in this process: the worker is deterministic, so the same YAML.
  args = kSmallProfile;
  const fs::path local_yaml = out_path("local.yaml");
  args.insert(args.end(), {"-o", local_yaml.string()});
  auto local = profile(args, false);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const std::string cluster_text = read_text(in_cluster_yaml);
  auto doc = yaml_to_json(cluster_text);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ((*doc)["models"][0]["name"], "eighth");
  EXPECT_EQ((*doc)["switching"].size(), 1u);
  EXPECT_EQ(without_comments(cluster_text), without_comments(read_text(local_yaml)));
  EXPECT_THAT(cluster_text, HasSubstr("--in-cluster --kubeconfig"));
}

// Another worker's image: the PyTorch reference job's pods (its script, on Debian's python3)
// follow the same standalone contract, and the YAML names their image.
TEST_F(ProfileOnDevCluster, PodsOfThePytorchImageAreProfiledToo) {
  if (testing::run_process("/usr/bin/python3", {"-c", "import torch"}).exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no torch (make deps)";
  }
  auto got = profile(
      {"--image", "depl.dev/pytorch-fashion-mnist:0.1", "--variants", "eighth", "--runs", "2",
       "--epochs", "3", "--samples", "300", "--validation-samples", "300", "--seed", "5"},
      true);
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_THAT(got.out, HasSubstr("# the worker of image depl.dev/pytorch-fashion-mnist:0.1 on"));
  auto doc = yaml_to_json(got.out, "profile");
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ((*doc)["models"][0]["image"], "depl.dev/pytorch-fashion-mnist:0.1");
  EXPECT_GT((*doc)["models"][0]["computePerSampleGflop"].get<double>(), 0);
  for (const json& pod : created()) {
    EXPECT_EQ(pod["spec"]["containers"][0]["image"], "depl.dev/pytorch-fashion-mnist:0.1");
    EXPECT_EQ(flag_value(pod, "--model"), "eighth");
  }
  EXPECT_THAT(profiling_pods_left(), ::testing::IsEmpty());
}

TEST_F(ProfileOnDevCluster, AFailedPodIsAnErrorWithTheEndOfItsLog) {
  std::vector<std::string> args = {"--variants", "eighth", "--runs",     "2",
                                   "--epochs",   "3",      "--samples",  "300",
                                   "--seed",     "5",      "--data-dir", "/nonexistent/fmnist"};
  auto got = profile(args, true);
  EXPECT_EQ(got.exit_code, 1) << got.err;
  // Either run's pod may be the first seen failing (two run at once).
  EXPECT_THAT(got.err, HasSubstr(": training eighth: pod depl-profile-eighth-n300-s"));
  EXPECT_THAT(got.err, HasSubstr(" failed with exit code 1"));
  EXPECT_THAT(got.err, HasSubstr("the end of its log:"));
  EXPECT_THAT(got.err, HasSubstr("/nonexistent/fmnist"));  // the worker's own message
  EXPECT_THAT(profiling_pods_left(), ::testing::IsEmpty());
}

// No node can take the pods (all NotReady): the profile does not wait for ever, it fails after
// --pod-start-timeout naming the pod and the scheduler's reason, and deletes its pods.
TEST_F(ProfileOnDevCluster, APodThatCannotBeScheduledTimesOut) {
  auto nodes = cluster_->store().list({"", "v1", "nodes", "", "", ""}, {});
  ASSERT_FALSE(nodes.body["items"].empty());
  for (const json& node : nodes.body["items"]) {
    auto lost = cluster_->set_node_ready(node["metadata"]["name"], false);
    ASSERT_TRUE(lost) << lost.error().message;
  }
  std::vector<std::string> args = {"--variants",
                                   "eighth",
                                   "--runs",
                                   "2",
                                   "--epochs",
                                   "3",
                                   "--samples",
                                   "300",
                                   "--seed",
                                   "5",
                                   "--pod-start-timeout",
                                   "1"};
  auto got = profile(args, true);
  EXPECT_EQ(got.exit_code, 1) << got.err;
  EXPECT_THAT(got.err, HasSubstr(": training eighth: pod depl-profile-eighth-n300-s"));
  EXPECT_THAT(got.err, HasSubstr(" is still Pending after 1 s (Unschedulable: "));
  EXPECT_THAT(got.err, HasSubstr("--pod-start-timeout"));
  EXPECT_THAT(profiling_pods_left(), ::testing::IsEmpty());
}

// Ctrl-C while pods run: they are deleted before the command exits 130.
TEST_F(ProfileOnDevCluster, InterruptDeletesThePods) {
  devcluster::testing::Subprocess command(
      {kBinary, "profile", "--variants", "full", "--runs", "2", "--epochs", "200", "--samples",
       "5000", "--in-cluster", "--kubeconfig", cluster_->kubeconfig_path(), "-n", kNamespace,
       "--parallel", "2"},
      {});
  ASSERT_TRUE(command.started());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (profiling_pods_left().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(profiling_pods_left().size(), 2u);
  command.signal(SIGINT);
  std::string output;  // until EOF: wait() would drop what it drains
  while (auto line = command.read_line(std::chrono::seconds(30))) output += *line + "\n";
  EXPECT_EQ(command.wait(std::chrono::seconds(30)), 130) << output;
  EXPECT_THAT(output, HasSubstr("interrupted"));
  EXPECT_THAT(profiling_pods_left(), ::testing::IsEmpty());
}

// A pod of that name already there (another profile, or a killed one): an error with the way
// out; the command deletes only the pods it made.
TEST_F(ProfileOnDevCluster, APodInTheWayIsAnErrorAndIsNotDeleted) {
  auto in_the_way =
      cluster_->store().create({"", "v1", "pods", kNamespace, "", ""},
                               {{"apiVersion", "v1"},
                                {"kind", "Pod"},
                                {"metadata",
                                 {{"name", "depl-profile-eighth-n300-s6"},
                                  {"labels", {{"app.kubernetes.io/name", "depl-profile"}}}}},
                                {"spec", {{"containers", {{{"name", "c"}, {"image", "pause"}}}}}}});
  ASSERT_TRUE(in_the_way.ok()) << in_the_way.body.dump();
  auto got = profile({"--variants", "eighth", "--runs", "2", "--epochs", "3", "--samples", "300",
                      "--validation-samples", "300", "--seed", "5"},
                     true);
  EXPECT_EQ(got.exit_code, 1) << got.err;
  EXPECT_THAT(got.err, HasSubstr("pod depl-profile-eighth-n300-s6 already exists in namespace "
                                 "\"profiling\""));
  EXPECT_THAT(got.err, HasSubstr("kubectl delete pods -n profiling -l "
                                 "app.kubernetes.io/name=depl-profile"));
  EXPECT_THAT(profiling_pods_left(), ::testing::ElementsAre("depl-profile-eighth-n300-s6"));
}

TEST_F(ProfileOnDevCluster, AnUnreachableClusterIsBadInput) {
  auto got = testing::run_process(
      kBinary, {"profile", "--in-cluster", "--kubeconfig", "/nonexistent/kubeconfig"});
  EXPECT_EQ(got.exit_code, 2) << got.err;
  EXPECT_THAT(got.err, HasSubstr("--kubeconfig"));
}

}  // namespace
}  // namespace depl::cli
