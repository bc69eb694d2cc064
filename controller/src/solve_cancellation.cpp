#include "depl/controller/solve_cancellation.hpp"

namespace depl::controller {

SolveCancellations::Scope::Scope(SolveCancellations& owner, kube::ObjectKey key,
                                 std::stop_token controller_stop)
    : owner_(owner),
      key_(std::move(key)),
      source_(std::make_shared<std::stop_source>()),
      forward_(std::move(controller_stop),
               std::function<void()>([source = source_] { source->request_stop(); })) {}

SolveCancellations::Scope::~Scope() {
  std::lock_guard lock(owner_.mutex_);
  auto [first, last] = owner_.running_.equal_range(key_);
  for (auto it = first; it != last; ++it) {
    if (it->second == source_) {
      owner_.running_.erase(it);
      break;
    }
  }
}

std::unique_ptr<SolveCancellations::Scope> SolveCancellations::begin(
    const kube::ObjectKey& key, std::stop_token controller_stop) {
  std::unique_ptr<Scope> scope(new Scope(*this, key, std::move(controller_stop)));
  std::lock_guard lock(mutex_);
  running_.emplace(key, scope->source_);
  return scope;
}

void SolveCancellations::cancel(const kube::ObjectKey& key) {
  std::lock_guard lock(mutex_);
  auto [first, last] = running_.equal_range(key);
  for (auto it = first; it != last; ++it) it->second->request_stop();
}

}  // namespace depl::controller
