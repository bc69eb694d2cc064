#include "pod_recorder.hpp"

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"

namespace depl::e2e {

using nlohmann::json;

namespace {

std::string label(const json& pod, const char* key) {
  return json_string(pod["metadata"].value("labels", json::object()), key);
}

int int_quantity(const json& v) {
  if (v.is_number_integer()) return v.get<int>();
  if (v.is_string()) {
    try {
      return std::stoi(v.get<std::string>());
    } catch (...) {
    }
  }
  return 0;
}

}  // namespace

int gpu_request(const json& pod) {
  int gpus = 0;
  for (const auto& c : pod["spec"].value("containers", json::array())) {
    const json& requests = c.value("resources", json::object()).value("requests", json::object());
    if (auto it = requests.find("nvidia.com/gpu"); it != requests.end()) gpus += int_quantity(*it);
  }
  return gpus;
}

bool pod_terminal(const json& pod) {
  const std::string phase = json_string(pod.value("status", json::object()), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

PodRecorder::PodRecorder(devcluster::ApiStore& store) : store_(store) {
  auto watch = store_.watch(devcluster::ResourceRef{"", "v1", "pods", "", "", ""},
                            devcluster::observer_watch_options());
  if (watch) watch_ = *watch;
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

PodRecorder::~PodRecorder() {
  thread_.request_stop();
  if (watch_) watch_->close();
  if (thread_.joinable()) thread_.join();
}

void PodRecorder::check_pools(bool on) {
  std::lock_guard lock(mutex_);
  check_pools_ = on;
}

std::vector<std::string> PodRecorder::violations() const {
  std::lock_guard lock(mutex_);
  if (!watch_) return {"could not watch pods"};
  return violations_;
}

std::vector<std::string> PodRecorder::incarnations(const std::string& ns,
                                                   const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = incarnations_.find(ns + "/" + name);
  return it == incarnations_.end() ? std::vector<std::string>{} : it->second;
}

std::vector<json> PodRecorder::created() const {
  std::lock_guard lock(mutex_);
  return created_;
}

std::vector<json> PodRecorder::created_for(const std::string& job) const {
  std::vector<json> out;
  for (const auto& pod : created()) {
    if (label(pod, "depl.dev/job") == job) out.push_back(pod);
  }
  return out;
}

std::vector<json> PodRecorder::deleted_for(const std::string& job) const {
  std::lock_guard lock(mutex_);
  std::vector<json> out;
  for (const auto& pod : deleted_) {
    if (label(pod, "depl.dev/job") == job) out.push_back(pod);
  }
  return out;
}

void PodRecorder::run(std::stop_token stop) {
  if (!watch_) return;
  while (!stop.stop_requested()) {
    auto event = watch_->next(std::chrono::milliseconds(100));
    if (!event) {
      if (watch_->closed()) return;
      continue;
    }
    if (!event->object) continue;
    const json& pod = *event->object;
    const std::string key =
        json_string(pod["metadata"], "namespace") + "/" + json_string(pod["metadata"], "name");
    std::lock_guard lock(mutex_);
    if (event->type == "ADDED") {
      created_.push_back(pod);
      incarnations_[key].push_back(json_string(pod["metadata"], "uid"));
      live_[key] = pod;
    } else if (event->type == "MODIFIED") {
      live_[key] = pod;
    } else if (event->type == "DELETED") {
      deleted_.push_back(pod);
      live_.erase(key);
    } else {
      continue;
    }
    check(json_string(pod["spec"], "nodeName"));
  }
}

// Runs with mutex_ held after every event.
void PodRecorder::check(const std::string& changed_node) {
  // One live pod per (job, phase, rank): names are deterministic, so a second one would have
  // to carry another name; count by labels to catch that.
  std::map<std::string, std::vector<std::string>> by_slot;
  for (const auto& [key, pod] : live_) {
    const std::string job = label(pod, "depl.dev/job");
    if (job.empty() || pod_terminal(pod)) continue;
    const std::string slot =
        fmt::format("{}/{} phase {} rank {}", json_string(pod["metadata"], "namespace"), job,
                    label(pod, "depl.dev/phase"), label(pod, "depl.dev/rank"));
    by_slot[slot].push_back(key);
  }
  for (const auto& [slot, keys] : by_slot) {
    if (keys.size() > 1) {
      violations_.push_back(
          fmt::format("{} has {} live pods ({}, ...)", slot, keys.size(), keys.front()));
    }
  }

  // GPUs bound to the node that changed.
  if (!changed_node.empty()) {
    auto node = store_.get(devcluster::ResourceRef{"", "v1", "nodes", "", changed_node, ""});
    if (node.ok()) {
      const int capacity = int_quantity(
          node.body["status"].value("allocatable", json::object()).value("nvidia.com/gpu", json()));
      int bound = 0;
      for (const auto& [key, pod] : live_) {
        if (json_string(pod["spec"], "nodeName") == changed_node && !pod_terminal(pod))
          bound += gpu_request(pod);
      }
      if (bound > capacity) {
        violations_.push_back(fmt::format("node {} has {} GPUs bound, allocatable {}", changed_node,
                                          bound, capacity));
      }
    }
  }

  if (!check_pools_) return;
  std::map<std::string, int> capacity;
  auto nodes = store_.list(devcluster::ResourceRef{"", "v1", "nodes", "", "", ""});
  for (const auto& n : nodes.body.value("items", json::array())) {
    capacity[label(n, "depl.dev/pool")] += int_quantity(
        n["status"].value("allocatable", json::object()).value("nvidia.com/gpu", json()));
  }
  std::map<std::string, int> promised;
  for (const auto& [key, pod] : live_) {
    if (pod_terminal(pod) || pod["metadata"].contains("deletionTimestamp")) continue;
    const std::string pool =
        json_string(pod["spec"].value("nodeSelector", json::object()), "depl.dev/pool");
    if (!pool.empty()) promised[pool] += gpu_request(pod);
  }
  for (const auto& [pool, gpus] : promised) {
    if (gpus > capacity[pool]) {
      violations_.push_back(
          fmt::format("pool {} has pods for {} GPUs, it has {}", pool, gpus, capacity[pool]));
    }
  }
}

}  // namespace depl::e2e
