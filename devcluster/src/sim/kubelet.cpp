// The kubelet's loop: pod and node events from the caches, tasks posted by timers and process
// waiters; and the Kubelet API.
#include "sim/kubelet_impl.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "sim/scheduling.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

namespace fs = std::filesystem;

Kubelet::Impl::Impl(ApiStore& s, KubeletOptions o) : store(s), options(std::move(o)) {
  if (options.work_dir.empty()) {
    options.work_dir = (fs::temp_directory_path() / "depl-devcluster-kubelet").string();
  }
  std::error_code ec;
  fs::create_directories(options.work_dir, ec);
}

void Kubelet::Impl::post(std::function<void()> task) {
  {
    std::lock_guard lock(tasks_mutex);
    tasks.push_back(std::move(task));
  }
  signal.notify();
}

void Kubelet::Impl::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::deque<std::function<void()>> batch;
    {
      std::lock_guard lock(tasks_mutex);
      batch.swap(tasks);
    }
    {
      std::lock_guard lock(mutex);
      for (auto& t : batch) t();
      std::vector<std::string> changed_nodes;
      nodes.sync([&](const std::string& type, const ObjectCache::ObjectPtr& node) {
        on_node_event(type, *node, changed_nodes);
      });
      pods.sync([&](const std::string& type, const ObjectCache::ObjectPtr& pod) {
        on_pod_event(type, pod);
      });
      // Pods that were waiting for their node to appear or become ready.
      for (const auto& node : changed_nodes) {
        for (const auto& [key, pod] : pods.objects()) {
          if (pod_node_name(*pod) == node) on_pod_event("MODIFIED", pod);
        }
      }
    }
    signal.wait(std::chrono::milliseconds(500));
  }
}

void Kubelet::Impl::on_node_event(const std::string& type, const json& node,
                                  std::vector<std::string>& changed) {
  const std::string name = node["metadata"].value("name", "");
  const bool ready = type != "DELETED" && node_is_ready(node);
  const bool was_ready = ready_nodes.count(name) > 0;
  if (ready) {
    ready_nodes.insert(name);
  } else {
    ready_nodes.erase(name);
  }
  if (type == "DELETED") {
    // The machine is gone, and its kubelet with it: the processes die and nothing more is
    // reported about its pods. The pod garbage collector (sim/pod_gc) fails and removes them.
    for (auto it = runs.begin(); it != runs.end();) {
      if (it->second.node != name) {
        ++it;
        continue;
      }
      stop_all(it->second, SIGKILL);
      spdlog::info("event=pod_lost pod={}/{} node={} reason=NodeDeleted", it->second.ns,
                   it->second.name, name);
      it = runs.erase(it);  // reaps its processes; their exit reports find no run
    }
    return;
  }
  if (!ready && was_ready) {
    for (auto& [uid, run] : runs) {
      if (run.node == name && run.failed_reason.empty()) node_lost(run);
    }
  }
  if (ready != was_ready) changed.push_back(name);
}

void Kubelet::Impl::on_pod_event(const std::string& type, const ObjectCache::ObjectPtr& shared) {
  const json& pod = *shared;
  const std::string uid = pod["metadata"].value("uid", "");
  auto it = runs.find(uid);
  if (type == "DELETED") {
    if (it != runs.end()) {
      stop_all(it->second, SIGKILL);
      runs.erase(it);
    }
    return;
  }
  const std::string node(pod_node_name(pod));
  if (node.empty()) return;
  const bool deleting = pod["metadata"].contains("deletionTimestamp");
  if (it == runs.end()) {
    // No node, no kubelet: a pod bound to a node that is gone (or not registered yet) is
    // neither started nor removed here; the pod garbage collector (sim/pod_gc) deals with it.
    auto found = nodes.objects().find(node);
    if (found == nodes.objects().end()) return;
    if (deleting) return force_remove(pod);
    if (pod_is_terminal(pod)) return;
    const json* node_object = found->second.get();
    if (!node_is_ready(*node_object)) {
      fail_unstarted(pod, node);
      return;
    }
    start_pod(shared);
    return;
  }
  PodRun& run = it->second;
  run.pod = shared;
  if (deleting && !run.terminating) begin_termination(run);
}

void Kubelet::Impl::fail_unstarted(const json& pod, const std::string& node) {
  json status = {{"status",
                  {{"phase", "Failed"},
                   {"reason", "NodeLost"},
                   {"message", "Node " + node + " is not ready"}}}};
  patch_status(pod["metadata"].value("namespace", ""), pod["metadata"].value("name", ""), status);
}

json container_list(const json& pod) {
  if (pod.contains("spec") && pod["spec"].contains("containers") &&
      pod["spec"]["containers"].is_array()) {
    return pod["spec"]["containers"];
  }
  return json::array();
}

Kubelet::Kubelet(ApiStore& store, KubeletOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {
  impl_->thread = std::jthread([impl = impl_.get()](std::stop_token stop) { impl->run(stop); });
}

Kubelet::~Kubelet() {
  impl_->thread.request_stop();
  impl_->signal.notify();
  impl_->thread.join();
  std::lock_guard lock(impl_->mutex);
  for (auto& [uid, run] : impl_->runs) {
    for (auto& c : run.containers) c.process.reset();  // SIGKILL and reap
  }
}

int Kubelet::container_pid(const std::string& ns, const std::string& pod,
                           const std::string& container) {
  std::lock_guard lock(impl_->mutex);
  for (const auto& [uid, run] : impl_->runs) {
    if (run.ns != ns || run.name != pod) continue;
    for (const auto& c : run.containers) {
      if (c.name == container && c.process && !c.process->exited()) return c.process->pid();
    }
  }
  return 0;
}

Expected<void> Kubelet::kill_container(const std::string& ns, const std::string& pod,
                                       const std::string& container) {
  std::lock_guard lock(impl_->mutex);
  for (const auto& [uid, run] : impl_->runs) {
    if (run.ns != ns || run.name != pod || run.containers.empty()) continue;
    for (const auto& c : run.containers) {
      if (!container.empty() ? c.name != container : &c != &run.containers.front()) continue;
      if (!c.process || c.process->exited()) break;
      spdlog::info("event=container_killed pod={}/{} container={} pid={} signal=SIGKILL", ns, pod,
                   c.name, c.process->pid());
      c.process->signal_group(SIGKILL);
      return {};
    }
  }
  return error("no running container process " + (container.empty() ? "" : container + " ") +
               "in pod " + ns + "/" + pod);
}

}  // namespace depl::devcluster
