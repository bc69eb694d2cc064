// The simulated cluster's kubelet, one for all nodes: for every pod bound to a node it runs the
// containers (as local processes when the image is mapped, otherwise simulated), keeps the pod's
// status (phase, conditions, container states, restartCount, podIP on 127.0.0.x) up to date,
// honours restartPolicy, terminates gracefully on delete (SIGTERM, SIGKILL after the grace
// period, then removes the object), fails the pods of NotReady nodes and kills the processes of
// deleted nodes' pods (the pod garbage collector removes those). It also serves container logs
// to the API layer and kills containers on a test's request (fault injection).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "depl/devcluster/api_store.hpp"
#include "server/api_handler.hpp"

namespace depl::devcluster {

struct KubeletOptions {
  // image -> executable; the key "*" maps every image not listed.
  std::map<std::string, std::string> image_map;
  // How long a simulated (unmapped) container runs before exiting 0. Negative: until deleted.
  // Containers of restartPolicy Always pods run until deleted either way.
  std::chrono::milliseconds simulated_run_time = std::chrono::seconds(5);
  // First restart delay after a container exits (doubles per restart, capped at 10 s).
  std::chrono::milliseconds restart_backoff = std::chrono::milliseconds(200);
  // Holds one directory per pod: container logs and the default working directory.
  std::string work_dir;
  // Extra environment for every container (e.g. how to reach the dev cluster).
  std::map<std::string, std::string> extra_env;
};

class Kubelet : public PodLogSource {
 public:
  Kubelet(ApiStore& store, KubeletOptions options);
  ~Kubelet() override;  // kills every container it started
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  Expected<std::string, ApiResult> read_log(const nlohmann::json& pod,
                                            const PodLogQuery& query) override;
  void follow_log(const nlohmann::json& pod, const PodLogQuery& query,
                  std::shared_ptr<ChunkWriter> out) override;

  // Pid of a running container's process (tests: signal handling), or 0.
  int container_pid(const std::string& ns, const std::string& pod, const std::string& container);
  // SIGKILLs the process group of a running container (`container` "" = the pod's first); the
  // exit is reported like any other (exit code 137). An error when no such process runs.
  Expected<void> kill_container(const std::string& ns, const std::string& pod,
                                const std::string& container);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::devcluster
