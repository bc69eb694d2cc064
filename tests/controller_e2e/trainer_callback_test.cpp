// A progress callback written for Kubeflow Trainer v2 reports to the operator unchanged: the
// worker is testdata/trainer_callback.py, which reads KUBEFLOW_TRAINER_SERVER_URL and the token
// file KUBEFLOW_TRAINER_SERVER_TOKEN names (where Trainer mounts it,
// /var/run/secrets/kubeflow/trainer/token, a volume the dev cluster's kubelet writes) and POSTs
// one trainerStatus report; the job's status then shows that epoch and loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e_fixture.hpp"

namespace depl::e2e {
namespace {

const fs::path kCallback = kTestData / "trainer_callback.py";

TEST_F(ControllerE2e, ATrainerStyleCallbackMovesTheJobForward) {
  ClusterSetup setup;
  setup.image_map["registry.example.com/e2e-small"] = kCallback.string();
  setup.image_map["registry.example.com/e2e-full"] = kCallback.string();
  ASSERT_NO_FATAL_FAILURE(start_cluster("pools.yaml", setup));
  ASSERT_NO_FATAL_FAILURE(start_controller());
  create_job(job_from("job.yaml", "trainer", 0.05));
  const json job = wait_job(
      "trainer",
      [](const json& j) {
        return j.value("status", json::object())
                   .value("progress", json::object())
                   .value("epoch", 0) >= 1;
      },
      "epoch 1 recorded");
  const json progress = job["status"]["progress"];
  EXPECT_EQ(progress.value("epoch", 0), 1) << progress.dump();
  EXPECT_DOUBLE_EQ(progress.value("loss", 0.0), 1.5) << progress.dump();
}

}  // namespace
}  // namespace depl::e2e
