// Executes profiling runs as Pods (restartPolicy Never) running the reference worker's image in
// its standalone mode: up to `parallel` pods at once, polled through the kube::Client until they
// end; a run's epoch lines are read from its pod's log (pods/NAME/log). A switch run is two pods
// in turn sharing a checkpoint directory on a volume. Every pod this executor created is deleted
// when it is done with it, and all of them on failure or cancellation (no owner references).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/cli/profile_runs.hpp"
#include "depl/kube/client.hpp"

namespace depl::cli {

// Labels on every profiling pod: `kubectl delete pods -l app.kubernetes.io/name=depl-profile`
// removes what an interrupted profile left.
inline constexpr const char* kProfilePodNameLabel = "app.kubernetes.io/name";
inline constexpr const char* kProfilePodNameValue = "depl-profile";
inline constexpr const char* kProfileSessionLabel = "depl.dev/profile-session";
inline constexpr const char* kProfileRunLabel = "depl.dev/profile-run";
inline constexpr const char* kProfileCheckpointMount = "/depl-profile";

struct PodRunOptions {
  std::string namespace_ = "default";
  std::string image = "depl.dev/reference-worker:0.1";
  int parallel = 4;  // pods at once, >= 1
  // Where switch runs keep the checkpoint the second pod starts from. With a claim: that
  // PersistentVolumeClaim (ReadWriteMany, or ReadWriteOnce with every pod on one node) mounted
  // at kProfileCheckpointMount, checkpoints under <mount>/<session>/. Without: a hostPath
  // volume of `checkpoint_host_dir` mounted at the same path, which the pods share when they run
  // on one node -- on the dev cluster they are processes of this machine, so a local directory.
  std::string checkpoint_claim;
  std::string checkpoint_host_dir;
  std::string session;  // value of kProfileSessionLabel: this profile's pods
  std::chrono::milliseconds poll_interval{500};
  // A pod still Pending this long after it was created (unschedulable, or its image still
  // pulling) is an error that names it and says why; 0 waits for ever.
  std::chrono::seconds start_timeout{600};
  // Set (e.g. by a SIGINT handler) to stop: the pods are deleted and execute() fails.
  const std::atomic<bool>* cancelled = nullptr;
};

// "depl-profile-<run>" for a run of one step, "-<step+1>" appended otherwise.
std::string profile_pod_name(const ProfileRun& run, std::size_t step);

// The Pod of step `step` of `run`, as a value.
nlohmann::json profile_pod(const ProfileRun& run, std::size_t step, const PodRunOptions& options);

class PodRunExecutor final : public ProfileRunExecutor {
 public:
  PodRunExecutor(kube::Client client, PodRunOptions options);
  Expected<std::vector<RunOutput>> execute(const std::vector<ProfileRun>& runs,
                                           const RunFinished& finished) override;

 private:
  kube::Client client_;
  PodRunOptions options_;
};

}  // namespace depl::cli
