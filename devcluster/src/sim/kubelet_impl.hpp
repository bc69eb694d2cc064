// The kubelet's state and its parts, shared by the files that implement it: the loop, nodes and
// pod events (kubelet.cpp), processes (kubelet_processes.cpp), container environments
// (kubelet_environment.cpp), volumes (kubelet_volumes.cpp), termination (kubelet_termination.cpp),
// pod status (kubelet_status.cpp) and logs (kubelet_logs.cpp). Every member function runs on the
// loop thread with `mutex` held, except where it says otherwise; log readers take `mutex` to read
// `runs`.
#pragma once

#include <signal.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/timer_thread.hpp"
#include "sim/kubelet.hpp"
#include "sim/object_cache.hpp"
#include "sim/process_runner.hpp"

namespace depl::devcluster {

// $(VAR) references to earlier variables are expanded; $$(VAR) escapes; unknown stay as written.
std::string expand_variables(const std::string& text,
                             const std::map<std::string, std::string>& vars);

// The pod's spec.containers, or an empty array.
nlohmann::json container_list(const nlohmann::json& pod);

struct Kubelet::Impl {
  using json = nlohmann::json;
  struct ContainerRun {
    std::string name;
    std::string image;
    std::string executable;  // "" = simulated
    int restart_count = 0;
    enum class State { Waiting, Running, Terminated } state = State::Waiting;
    std::string waiting_reason = "ContainerCreating";
    std::string waiting_message;
    std::string started_at;
    std::string finished_at;
    int exit_code = 0;
    std::string terminated_reason;
    std::string terminated_message;
    json last_state = json::object();
    // One per start; back() is the current one. A process's output goes to a file under the pod
    // directory; a simulated container's one line is kept here (`path` empty), so simulating a
    // pod touches no disk.
    struct Log {
      std::string path;
      std::string text;
    };
    std::vector<Log> logs;
    std::unique_ptr<RunningProcess> process;
    std::uint64_t run_id = 0;
    TimerThread::Id timer = 0;
  };
  struct PodRun {
    std::string uid, ns, name, node, dir, ip, start_time, restart_policy;
    // The pod as last seen: the cache's object, shared (a pod is a few KB of JSON, and every
    // status write of ours comes back as an event).
    ObjectCache::ObjectPtr pod;
    std::vector<ContainerRun> containers;
    bool terminating = false;
    std::string failed_reason, failed_message;
    TimerThread::Id kill_timer = 0;
    json last_status;
  };

  ApiStore& store;
  KubeletOptions options;
  LoopSignal signal;
  ObjectCache pods{store, ResourceRef{"", "v1", "pods", "", "", ""}, signal};
  ObjectCache nodes{store, ResourceRef{"", "v1", "nodes", "", "", ""}, signal};
  std::mutex mutex;                    // guards runs (the loop thread writes; log readers read)
  std::map<std::string, PodRun> runs;  // by uid
  std::mutex tasks_mutex;
  std::deque<std::function<void()>> tasks;
  std::uint32_t next_ip = 2;
  std::set<std::string> ready_nodes;
  TimerThread timers;  // after the state it touches through tasks only
  std::jthread thread;

  // The loop, nodes and pod events (kubelet.cpp).
  Impl(ApiStore& s, KubeletOptions o);
  void post(std::function<void()> task);
  void run(std::stop_token stop);
  void on_node_event(const std::string& type, const json& node, std::vector<std::string>& changed);
  void on_pod_event(const std::string& type, const ObjectCache::ObjectPtr& shared);
  void fail_unstarted(const json& pod, const std::string& node);

  // Starting containers, their exits and restarts (kubelet_processes.cpp).
  std::string allocate_ip();
  std::string executable_for(const std::string& image) const;
  void start_pod(const ObjectCache::ObjectPtr& shared);
  const json* container_spec(const PodRun& run, const std::string& name) const;
  void start_container(PodRun& run, size_t index);
  void on_exit(const std::string& uid, size_t index, std::uint64_t run_id, ProcessExit exit);
  void after_exit(PodRun& run, size_t index);

  // Container environments (kubelet_environment.cpp).
  // Environment of one container: a minimal base, then envFrom, then env (later wins).
  Expected<std::vector<std::string>> container_env(const PodRun& run, const json& spec,
                                                   std::map<std::string, std::string>& vars);

  // Volumes (kubelet_volumes.cpp). There is no mount namespace: the secret volumes and the
  // secret sources of projected volumes that `container` mounts are written under
  // <pod dir>/volumes/<volume> (files read-only), and the answer maps each such mountPath to the
  // directory (or subPath) that stands in for it. Other volume types are not materialised. An
  // error (a missing Secret or key that is not optional) keeps the container from starting.
  Expected<std::map<std::string, std::string>> materialise_volumes(const PodRun& run,
                                                                   const json& container);
  // `path` with the longest mount path of `mounts` it lies under replaced by its directory;
  // `path` itself when none. Environment values and workingDir go through it, so a process finds
  // a mounted file where its pod spec says it is.
  static std::string host_path(const std::map<std::string, std::string>& mounts,
                               const std::string& path);

  // Lost nodes, deletion and the grace period (kubelet_termination.cpp).
  void node_lost(PodRun& run);
  void cancel_timer(ContainerRun& c);
  void stop_all(PodRun& run, int signal_number);
  void begin_termination(PodRun& run);
  void finish_termination_if_done(PodRun& run);
  void force_remove(const json& pod);

  // Pod status (kubelet_status.cpp).
  json container_status(const PodRun& run, const ContainerRun& c) const;
  std::string phase(const PodRun& run) const;
  void write_status(PodRun& run);
  void patch_status(const std::string& ns, const std::string& name, const json& body);
};

}  // namespace depl::devcluster
