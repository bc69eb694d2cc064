#include "depl/controller/worker_pods.hpp"

#include <gtest/gtest.h>

#include <set>
#include "pod_security_standard.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

struct Fixture {
  json job = {
      {"apiVersion", "depl.dev/v1alpha1"},
      {"kind", "DependableTrainingJob"},
      {"metadata", {{"name", "mnist"}, {"namespace", "ml"}, {"uid", "u-1"}}},
      {"spec",
       {{"datasets", json::array({{{"name", "a"}, {"source", {{"pvc", "data-a"}}}},
                                  {{"name", "b"}, {"source", {{"uri", "s3://b"}}}}})},
        {"models", json::array({{{"name", "full"},
                                 {"resources", {{"limits", {{"cpu", "2"}}}}},
                                 {"env", json::array({{{"name", "X"}, {"value", "1"}}})}}})},
        {"checkpoint", {{"pvc", "ckpt"}, {"path", "/ckpt"}}},
        {"podTemplate",
         {{"serviceAccountName", "trainer"},
          {"nodeSelector", {{"zone", "z1"}}},
          {"tolerations", json::array({{{"key", "spot"}, {"operator", "Exists"}}})}}}}}};
  solver::Problem problem;
  solver::Plan plan;
  Fixture() {
    problem.datasets = {{"a", 100, 1, 0, {}}, {"b", 100, 1, 0, {}}};
    solver::ModelVariant m{"full", "registry/full:1", 1, 1e6, 2, {}};
    m.loss = {2, 0.1, 0.5, 0.01, 200, 0};
    problem.models = {m};
    problem.pools = {{"a100", "A100", 8, 1000, 3, 1e9, 1e8, 0, {}, 0, 0}};
    plan = {{0, 1}, {{0, 5, 0, 2}}};
  }
  PhaseLaunch launch() {
    PhaseLaunch l;
    l.job = &job;
    l.problem = &problem;
    l.plan = &plan;
    l.phase = 0;
    l.start_epoch = 3;
    l.epochs = 5;
    l.progress_url = "http://127.0.0.1:8081";
    l.token_secret = "mnist-progress-q2w3e4r5";
    return l;
  }
};

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : e.dump();
  }
  return "<missing>";
}

TEST(WorkerPods, CarriesTheWorkerContract) {
  Fixture f;
  json pod = build_worker_pod(f.launch(), 1);
  EXPECT_EQ(pod["metadata"]["name"], "mnist-p0-w1");
  EXPECT_EQ(pod["metadata"]["namespace"], "ml");
  EXPECT_EQ(env_of(pod, "DEPL_JOB"), "mnist");
  EXPECT_EQ(env_of(pod, "DEPL_NAMESPACE"), "ml");
  EXPECT_EQ(env_of(pod, "DEPL_PHASE"), "0");
  EXPECT_EQ(env_of(pod, "DEPL_MODEL"), "full");
  EXPECT_EQ(env_of(pod, "DEPL_EPOCHS"), "5");
  EXPECT_EQ(env_of(pod, "DEPL_START_EPOCH"), "3");
  EXPECT_EQ(env_of(pod, "DEPL_DATASETS"), "a,b");
  EXPECT_EQ(env_of(pod, "DEPL_CHECKPOINT_DIR"), "/ckpt/ml/mnist/u-1");
  EXPECT_EQ(env_of(pod, "DEPL_PROGRESS_URL"),
            "http://127.0.0.1:8081/v1/namespaces/ml/jobs/mnist/progress");
  EXPECT_EQ(json::parse(env_of(pod, "DEPL_PROGRESS_TOKEN")),
            (json{{"name", "DEPL_PROGRESS_TOKEN"},
                  {"valueFrom",
                   {{"secretKeyRef", {{"name", "mnist-progress-q2w3e4r5"}, {"key", "token"}}}}}}));
  EXPECT_EQ(json::parse(env_of(pod, "DEPL_LOSS_PROFILE"))["decayPerEpoch"], 0.5);
  EXPECT_EQ(env_of(pod, "WORLD_SIZE"), "2");
  EXPECT_EQ(env_of(pod, "RANK"), "1");
  EXPECT_EQ(env_of(pod, "MASTER_ADDR"), "mnist-p0-w0.mnist-p0.ml.svc");
  EXPECT_EQ(env_of(pod, "DEPL_DATASET_URIS"), "b=s3://b");
  // Kubeflow Trainer's status reporting: the same endpoint at Trainer's path, the token as a file.
  EXPECT_EQ(env_of(pod, "KUBEFLOW_TRAINER_SERVER_URL"),
            "http://127.0.0.1:8081/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/"
            "mnist/status?phase=0&rank=1");
  EXPECT_EQ(env_of(pod, "KUBEFLOW_TRAINER_SERVER_TOKEN"), "/var/run/secrets/kubeflow/trainer/token");
  EXPECT_EQ(env_of(pod, "X"), "1");
}

// The validator refuses models[].env entries that would override these (worker_spec_validation):
// the list must be exactly what the builder sets.
TEST(WorkerPods, SetsExactlyTheContractsEnvNames) {
  Fixture f;
  const json pod = build_worker_pod(f.launch(), 1);
  std::set<std::string> set_by_operator;
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] != "X") set_by_operator.insert(e["name"].get<std::string>());
  }
  const std::set<std::string> contract(kContractEnvNames.begin(), kContractEnvNames.end());
  EXPECT_EQ(set_by_operator, contract);
}

TEST(WorkerPods, PlacesOnThePoolWithGpusAndOwner) {
  Fixture f;
  json pod = build_worker_pod(f.launch(), 0);
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["nodeSelector"]["depl.dev/pool"], "a100");
  EXPECT_EQ(spec["nodeSelector"]["zone"], "z1");
  EXPECT_EQ(spec["serviceAccountName"], "trainer");
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["tolerations"].size(), 2u);
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["image"], "registry/full:1");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(c["resources"]["limits"]["cpu"], "2");
  EXPECT_EQ(spec["volumes"].size(), 3u);
  const json& owner = pod["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["uid"], "u-1");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(owner["kind"], "DependableTrainingJob");
}

// A phase placed on a tainted spot pool tolerates exactly that pool's spot taints, after the
// operator's and the job's own tolerations; a phase elsewhere gets none of them. The pod stays
// within the restricted Pod Security Standard (tolerations are not the standard's concern; the
// securityContext is unchanged).
TEST(WorkerPods, ToleratesOnlyThePoolsSpotTaints) {
  Fixture f;
  PhaseLaunch launch = f.launch();
  const json spot = {{"key", "kubernetes.azure.com/scalesetpriority"},
                     {"operator", "Equal"},
                     {"value", "spot"},
                     {"effect", "NoSchedule"}};
  launch.pool_tolerations = json::array({spot});
  json pod = build_worker_pod(launch, 0);
  ASSERT_EQ(pod["spec"]["tolerations"].size(), 3u);
  EXPECT_EQ(pod["spec"]["tolerations"][2], spot);
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
  EXPECT_EQ(testing::restricted_violations(pod), std::vector<std::string>{}) << pod.dump(1);
  pod = build_worker_pod(f.launch(), 0);
  for (const auto& t : pod["spec"]["tolerations"]) EXPECT_NE(t, spot);
}

// The grace period leaves the worker time to write its checkpoint: 30 s plus twice its write
// time on the pool's storage bandwidth (4.5 GB at 100 MB/s: 45 s), capped at an hour; 30 s
// without a checkpoint size. Before, the pods had Kubernetes' default 30 s whatever they wrote.
TEST(WorkerPods, TheGracePeriodFollowsTheCheckpointsWriteTime) {
  Fixture f;
  EXPECT_EQ(build_worker_pod(f.launch(), 0)["spec"]["terminationGracePeriodSeconds"], 30);
  f.problem.models[0].checkpoint_bytes = 4.5e9;
  EXPECT_EQ(build_worker_pod(f.launch(), 0)["spec"]["terminationGracePeriodSeconds"], 120);
  EXPECT_EQ(termination_grace_seconds(f.problem.models[0], f.problem.pools[0]), 120);
  f.problem.models[0].checkpoint_bytes = 4.5e9 + 1;  // rounded up
  EXPECT_EQ(termination_grace_seconds(f.problem.models[0], f.problem.pools[0]), 121);
  f.problem.models[0].checkpoint_bytes = 1e15;
  EXPECT_EQ(termination_grace_seconds(f.problem.models[0], f.problem.pools[0]), kMaxGraceSeconds);
  f.problem.pools[0].storage_bandwidth = 0;  // unknown: nothing to add
  EXPECT_EQ(termination_grace_seconds(f.problem.models[0], f.problem.pools[0]), 30);
}

TEST(WorkerPods, LoopbackRendezvousAndCheckpointRoot) {
  Fixture f;
  PhaseLaunch l = f.launch();
  l.rendezvous = RendezvousMode::Loopback;
  l.checkpoint_root = "/tmp/demo/";
  json pod = build_worker_pod(l, 0);
  EXPECT_EQ(env_of(pod, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env_of(pod, "DEPL_CHECKPOINT_DIR"), "/tmp/demo/ml/mnist/u-1");
  EXPECT_EQ(env_of(pod, "MASTER_PORT"), std::to_string(rendezvous_port("u-1", 0)));
}

// A job deleted and created again under the same name is another job (another UID): its workers
// must not find the first one's checkpoints. Before, both wrote <root>/<namespace>/<name>.
TEST(WorkerPods, AJobRecreatedUnderTheSameNameGetsItsOwnCheckpointDirectory) {
  Fixture f;
  const std::string first = env_of(build_worker_pod(f.launch(), 0), "DEPL_CHECKPOINT_DIR");
  f.job["metadata"]["uid"] = "7c4b1a52-9e0f-4d55-8a4e-2f1c0d9b6e31";
  const std::string second = env_of(build_worker_pod(f.launch(), 0), "DEPL_CHECKPOINT_DIR");
  EXPECT_NE(first, second);
  EXPECT_EQ(second, "/ckpt/ml/mnist/7c4b1a52-9e0f-4d55-8a4e-2f1c0d9b6e31");
  // A UID that is not plain text (not the API server's) never becomes a path of its own.
  f.job["metadata"]["uid"] = "../../etc";
  const std::string odd = env_of(build_worker_pod(f.launch(), 0), "DEPL_CHECKPOINT_DIR");
  EXPECT_EQ(odd.rfind("/ckpt/ml/mnist/", 0), 0u) << odd;
  EXPECT_EQ(odd.find(".."), std::string::npos) << odd;
}

// Worker pods are admitted in namespaces that enforce the restricted Pod Security Standard.

TEST(WorkerPods, PassTheRestrictedPodSecurityStandard) {
  Fixture f;
  for (int rank = 0; rank < 2; ++rank) {
    const json pod = build_worker_pod(f.launch(), rank);
    EXPECT_EQ(testing::restricted_violations(pod), std::vector<std::string>{}) << pod.dump(1);
  }
  // Without a ServiceAccount the pod runs as the namespace's default one, without its token.
  f.job["spec"]["podTemplate"].erase("serviceAccountName");
  const json pod = build_worker_pod(f.launch(), 0);
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
  EXPECT_FALSE(pod["spec"].contains("serviceAccountName"));
  EXPECT_TRUE(testing::restricted_violations(pod).empty());
  // The check is not blind: the same pod without its securityContext breaks four of the
  // controls.
  json bare = pod;
  bare["spec"].erase("securityContext");
  bare["spec"]["containers"][0].erase("securityContext");
  EXPECT_EQ(testing::restricted_violations(bare).size(), 4u);
  json host = pod;
  host["spec"]["volumes"].push_back({{"name", "host"}, {"hostPath", {{"path", "/"}}}});
  host["spec"]["containers"][0]["securityContext"]["privileged"] = true;
  EXPECT_EQ(testing::restricted_violations(host).size(), 2u);
}

TEST(WorkerPods, DeterministicAndServiceMatchesPods) {
  Fixture f;
  EXPECT_EQ(build_worker_pod(f.launch(), 0), build_worker_pod(f.launch(), 0));
  json svc = build_rendezvous_service(f.launch());
  EXPECT_EQ(svc["metadata"]["name"], "mnist-p0");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  json pod = build_worker_pod(f.launch(), 0);
  for (const auto& [k, v] : svc["spec"]["selector"].items()) {
    EXPECT_EQ(pod["metadata"]["labels"][k], v);
  }
  EXPECT_NE(rendezvous_port("u-1", 0), rendezvous_port("u-1", 1));
}

}  // namespace
}  // namespace depl::controller
