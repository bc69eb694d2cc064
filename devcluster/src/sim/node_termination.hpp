// The simulated cluster's node termination controller: what Karpenter does when one of its
// nodes is deleted (a spot reclaim, a consolidation, `kubectl delete node`). A deleted node that
// carries the termination finalizer is tainted karpenter.sh/disrupted:NoSchedule, its pods get
// the condition DisruptionTarget (reason EvictionByEvictionAPI) and are deleted with their grace
// period (the kubelet sends SIGTERM, then SIGKILL), cut to what is left of the cloud's notice;
// once they are gone, or the notice is over, the finalizer goes and the node with it (the pod
// garbage collector removes what is left). A pool may bring a replacement node after a delay.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_store.hpp"
#include "sim/node_pools.hpp"

namespace depl::devcluster {

inline constexpr const char* kDisruptedTaint = "karpenter.sh/disrupted";

// How one reclaim goes; unset fields follow the node's pool (reclaimNoticeSeconds,
// replacementSeconds).
struct ReclaimSettings {
  std::optional<std::chrono::milliseconds> notice;
  // A replacement node joins the pool this long after the node is gone; a negative value: none.
  std::optional<std::chrono::milliseconds> replacement_after;
};

class NodeTerminator {
 public:
  NodeTerminator(ApiStore& store, std::vector<NodePool> pools);
  ~NodeTerminator();  // stops the loop
  NodeTerminator(const NodeTerminator&) = delete;
  NodeTerminator& operator=(const NodeTerminator&) = delete;

  // Settings for the next termination of `node` (before it is deleted).
  void set_reclaim(const std::string& node, ReclaimSettings settings);

 private:
  struct Loop;
  std::unique_ptr<Loop> loop_;
  std::jthread thread_;
};

// Creates a Node with its status, as a kubelet registers it.
Expected<void> register_node(ApiStore& store, const nlohmann::json& node);

}  // namespace depl::devcluster
