// Builds the objects that run one phase of a plan: a headless Service for rendezvous and one Pod
// per worker, carrying the worker contract (docs/worker-contract.md) in their environment. Pure:
// the same inputs give the same objects, so reconcile can compare and re-create them safely.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::controller {

inline constexpr const char* kJobLabel = "depl.dev/job";
inline constexpr const char* kPhaseLabel = "depl.dev/phase";
inline constexpr const char* kRankLabel = "depl.dev/rank";
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByValue = "depl-operator";
// Key in the job's token Secret that holds the progress token (progress_token.hpp).
inline constexpr const char* kTokenKey = "token";
// Where worker pods find the progress token as a file (kTokenKey in it): where Kubeflow
// Trainer's TrainJobStatus plugin mounts its token (/var/run/secrets/kubeflow/trainer/token), so
// that a callback written for Trainer finds it there too.
inline constexpr const char* kProgressTokenDir = "/var/run/secrets/kubeflow/trainer";

// The environment variables the operator sets on worker pods (docs/worker-contract.md, section
// 1). A job's models[].env may add others but not these.
inline constexpr std::array<std::string_view, 18> kContractEnvNames = {
    "DEPL_JOB",
    "DEPL_NAMESPACE",
    "DEPL_PHASE",
    "DEPL_MODEL",
    "DEPL_EPOCHS",
    "DEPL_START_EPOCH",
    "DEPL_DATASETS",
    "DEPL_CHECKPOINT_DIR",
    "DEPL_PROGRESS_URL",
    "DEPL_PROGRESS_TOKEN",
    "DEPL_LOSS_PROFILE",
    "DEPL_DATASET_URIS",
    "WORLD_SIZE",
    "RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "KUBEFLOW_TRAINER_SERVER_URL",
    "KUBEFLOW_TRAINER_SERVER_TOKEN"};

// How workers find their rank-0 peer: through the headless Service's DNS name (a real cluster),
// or on loopback (the dev cluster, where every pod is a local process).
enum class RendezvousMode { Dns, Loopback };

struct PhaseLaunch {
  const nlohmann::json* job = nullptr;       // the DependableTrainingJob object
  const solver::Problem* problem = nullptr;  // parsed from the job's spec
  const solver::Plan* plan = nullptr;        // the plan in force
  std::size_t phase = 0;                     // index into plan->phases
  int start_epoch = 0;                       // epochs trained before this phase
  int epochs = 1;                            // epochs the pods of this phase run
  std::string pool_label = "depl.dev/pool";  // node label that selects the phase's pool
  // The tolerations of the spot taints the pool's nodes carry (DiscoveredPools::spot_tolerations),
  // added after the job's own: the pods of a phase placed on a tainted spot pool can run there.
  nlohmann::json pool_tolerations = nlohmann::json::array();
  std::string progress_url;                  // base URL of the controller's progress endpoint
  std::string checkpoint_root;               // overrides spec.checkpoint.path when not empty
  std::string token_secret;                  // the Secret holding the job's progress token
  RendezvousMode rendezvous = RendezvousMode::Dns;
};

std::string worker_pod_name(const std::string& job, std::size_t phase, int rank);
std::string rendezvous_service_name(const std::string& job, std::size_t phase);
// The worker-facing checkpoint directory of a job: <root>/<namespace>/<name>/<uid>, so that a job
// re-created under the same name starts afresh.
std::string checkpoint_dir(const nlohmann::json& job, const std::string& checkpoint_root);
// A port for the phase's rendezvous, stable for (job uid, phase) and spread out so that phases
// running side by side on one machine (the dev cluster, host-network pods) do not collide. The
// range [kRendezvousPortFirst, kRendezvousPortEnd) lies below Linux's ephemeral ports (32768 and
// up by default), so no outgoing connection or port-0 listener on that machine can hold it.
inline constexpr int kRendezvousPortFirst = 20000;
inline constexpr int kRendezvousPortEnd = 32000;
int rendezvous_port(const std::string& job_uid, std::size_t phase);

// Worker pods meet the restricted Pod Security Standard, so they run in namespaces that enforce
// it: not root (user and group 65532, which also owns mounted volumes through fsGroup), no
// privilege escalation, every capability dropped, the runtime's default seccomp profile.
inline constexpr int kWorkerUid = 65532;
nlohmann::json restricted_pod_security();
nlohmann::json restricted_container_security();

// terminationGracePeriodSeconds of a phase's worker pods: the time a worker told to stop (SIGTERM)
// has to finish its step, agree with its peers and write its checkpoint (docs/worker-contract.md
// section 7): Kubernetes' default 30 s plus twice the checkpoint's write time, C_v / beta_obj of
// the pool (docs/depl-model.md section 2), rounded up; at most kMaxGraceSeconds. A spot reclaim
// may give less: the cloud's notice ends the node regardless.
inline constexpr int kBaseGraceSeconds = 30;
inline constexpr int kMaxGraceSeconds = 3600;
int termination_grace_seconds(const solver::ModelVariant& model, const solver::Pool& pool);

// An ownerReference that makes the job the controller of an object.
nlohmann::json owner_reference(const nlohmann::json& job);

nlohmann::json build_rendezvous_service(const PhaseLaunch& launch);
nlohmann::json build_worker_pod(const PhaseLaunch& launch, int rank);

}  // namespace depl::controller
