#include "depl/controller/gpu_ledger.hpp"

#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

std::string text_at(const json& object, const char* outer, const char* key) {
  auto o = object.find(outer);
  if (o == object.end() || !o->is_object()) return "";
  auto v = o->find(key);
  return v != o->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string pod_key(const json& pod) {
  return text_at(pod, "metadata", "namespace") + "/" + text_at(pod, "metadata", "name");
}

void subtract(GpusByNode& map, const std::string& node, int gpus) {
  auto it = map.find(node);
  if (it == map.end()) return;
  it->second -= gpus;
  if (it->second <= 0) map.erase(it);
}

}  // namespace

kube::ResourceEventHandlers GpuLedger::handlers() {
  kube::ResourceEventHandlers h;
  h.on_add = [this](const kube::ObjectPtr& pod) { put(*pod); };
  h.on_update = [this](const kube::ObjectPtr&, const kube::ObjectPtr& pod) { put(*pod); };
  h.on_delete = [this](const kube::ObjectPtr& pod) { remove(*pod); };
  return h;
}

void GpuLedger::put(const json& pod) {
  const std::string key = pod_key(pod);
  std::string before_owner, after_owner;
  bool before = false, after = false;
  {
    std::lock_guard lock(mutex_);
    // Forget what it held (by key, whatever the event says), then record what it holds now.
    if (auto it = by_pod_.find(key); it != by_pod_.end()) {
      const Holding& h = it->second;
      subtract(by_node_, h.node, h.gpus);
      if (auto owner = by_owner_.find(h.owner); owner != by_owner_.end()) {
        subtract(owner->second, h.node, h.gpus);
        if (owner->second.empty()) by_owner_.erase(owner);
      }
      if (auto total = total_by_owner_.find(h.owner); total != total_by_owner_.end()) {
        total->second -= h.gpus;
        if (total->second <= 0) total_by_owner_.erase(total);
      }
      before = true;
      before_owner = h.owner;
      by_pod_.erase(it);
    }
    if (pod_holds_gpus(pod)) {
      Holding h{text_at(pod, "spec", "nodeName"), kube::controller_uid(pod), pod_gpu_request(pod)};
      by_node_[h.node] += h.gpus;
      by_owner_[h.owner][h.node] += h.gpus;
      total_by_owner_[h.owner] += h.gpus;
      after = true;
      after_owner = h.owner;
      by_pod_.emplace(key, std::move(h));
    }
  }
  if (!listener_) return;
  if (before) listener_(before_owner);
  if (after && (!before || after_owner != before_owner)) listener_(after_owner);
}

void GpuLedger::remove(const json& pod) {
  json gone = json::object();
  gone["metadata"] = {{"namespace", text_at(pod, "metadata", "namespace")},
                      {"name", text_at(pod, "metadata", "name")}};
  put(gone);  // holds nothing
}

GpusByNode GpuLedger::by_node(const std::string& except_owner) const {
  std::lock_guard lock(mutex_);
  GpusByNode out = by_node_;
  if (except_owner.empty()) return out;
  if (auto owner = by_owner_.find(except_owner); owner != by_owner_.end()) {
    for (const auto& [node, gpus] : owner->second) subtract(out, node, gpus);
  }
  return out;
}

int GpuLedger::held_by(const std::string& owner) const {
  std::lock_guard lock(mutex_);
  auto it = total_by_owner_.find(owner);
  return it == total_by_owner_.end() ? 0 : it->second;
}

void GpuLedger::on_owner_change(std::function<void(const std::string&)> listener) {
  listener_ = std::move(listener);
}

}  // namespace depl::controller
