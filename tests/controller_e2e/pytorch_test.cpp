// The PyTorch reference job under the operator: the dev cluster runs its image as
// examples/pytorch/train.py on Debian's python3 (the depl SDK), the controller in-process plans
// two data-parallel workers, and the two pods train together through torch.distributed, report
// to the progress endpoint and end the job Succeeded. Skipped without torch or Fashion-MNIST.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "depl/common/yaml_json.hpp"
#include "depl/kube/resource.hpp"
#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

using ::testing::HasSubstr;

const fs::path kPytorchWorker = kRepo / "examples" / "pytorch" / "train.py";
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

// Every log of pod `name`'s containers under the dev cluster's pods/ directory.
std::string container_log(const fs::path& cluster_dir, const std::string& name) {
  std::string out;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(cluster_dir / "pods", ec)) {
    if (dir.path().filename().string().rfind("default_" + name + "_", 0) != 0) continue;
    for (const auto& file : fs::directory_iterator(dir.path(), ec)) {
      std::ifstream in(file.path());
      std::stringstream text;
      text << in.rdbuf();
      out += text.str();
    }
  }
  return out;
}

TEST_F(ControllerE2e, PytorchJobWithTwoDataParallelPodsSucceeds) {
  if (devcluster::testing::run_command({kPython, "-c", "import torch, numpy"}).exit_code != 0) {
    GTEST_SKIP() << kPython << " has no torch (make deps installs python3-torch)";
  }
  if (!fs::exists(fs::path(kFashionMnist) / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << kFashionMnist << " is not installed (make deps)";
  }
  ClusterSetup setup;
  setup.image_map["depl.dev/pytorch-fashion-mnist"] = kPytorchWorker.string();
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml", setup));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  // The file as it is (job_from would replace the models' env, which holds the shard layout).
  const fs::path file = kTestData / "pytorch-job.yaml";
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  auto spec = yaml_to_json(text.str(), file.string());
  ASSERT_TRUE(spec) << spec.error().message;
  (*spec)["metadata"]["name"] = "torch";
  (*spec)["metadata"]["namespace"] = "default";
  create_job(*spec);
  const json job = wait_job(
      "torch",
      [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish", std::chrono::seconds(300));
  ASSERT_EQ(job_phase(job), "Succeeded") << job["status"].dump(1);
  EXPECT_EQ(condition_reason(job, "Succeeded"), "TargetReached");
  const json& progress = job["status"]["progress"];
  EXPECT_LE(progress["loss"].get<double>(), 1.3);
  EXPECT_GE(progress["history"].size(), 1u);

  // Two workers per phase, each a rank of the same torch.distributed group. The controller
  // deletes the pods still running once the target is reached, so their logs are read from the
  // dev cluster's directory, where each container's log stays until the scenario ends.
  const std::vector<json> pods = pods_->created_for("torch");
  ASSERT_GE(pods.size(), 2u);
  std::set<std::string> ranks_seen;
  for (const json& pod : pods) {
    const std::string name = pod["metadata"].value("name", "");
    EXPECT_EQ(pod["spec"]["containers"][0].value("image", ""),
              "depl.dev/pytorch-fashion-mnist:0.1");
    EXPECT_EQ(pod_env(pod, "WORLD_SIZE"), json("2")) << name;
    const std::string rank = pod_env(pod, "RANK").value_or(json("?")).get<std::string>();
    ranks_seen.insert(rank);
    const std::string log = container_log(work_dir_, name);
    EXPECT_THAT(log, HasSubstr("event=process_group backend=gloo rank=" + rank + " world_size=2"))
        << name;
    EXPECT_THAT(log, HasSubstr("mode=operator")) << name;
    EXPECT_THAT(log, ::testing::Not(HasSubstr("Traceback"))) << name;
    if (rank == "0") {
      EXPECT_THAT(log, HasSubstr("{\"epoch\":1,\"loss\":")) << name;
    }
  }
  EXPECT_EQ(ranks_seen, (std::set<std::string>{"0", "1"}));
  for (const json& pod : pods_->deleted_for("torch")) {
    EXPECT_NE(pod["status"].value("phase", ""), "Failed") << pod["status"].dump();
  }
  EXPECT_THAT(pods_->violations(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace depl::e2e
