// The reconciles in progress, by job, each with the stop its solve honours: a job deleted while
// its plan is being solved stops that solve at the solver's next budget check (stoppable_solve.hpp)
// instead of holding a reconcile worker and the solver's memory until its budget runs out.
// Thread-safe: reconcile workers begin and end scopes, the jobs informer cancels.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>

#include "depl/kube/runtime/object_key.hpp"

namespace depl::controller {

class SolveCancellations {
 public:
  // Held by one reconcile of `key` while it runs. Its token is requested when `controller_stop`
  // is (shutdown, a lost Lease) or when cancel() names the key.
  class Scope {
   public:
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    std::stop_token token() const { return source_->get_token(); }

   private:
    friend class SolveCancellations;
    Scope(SolveCancellations& owner, kube::ObjectKey key, std::stop_token controller_stop);

    SolveCancellations& owner_;
    kube::ObjectKey key_;
    std::shared_ptr<std::stop_source> source_;
    std::stop_callback<std::function<void()>> forward_;
  };

  // Begin before the reconcile reads the job from the cache: a deletion the cache does not show
  // yet then reaches the scope through cancel().
  std::unique_ptr<Scope> begin(const kube::ObjectKey& key, std::stop_token controller_stop);
  // Stops the solve of the reconcile of `key` in progress, if any (the job was deleted, or is
  // being deleted). A job created again under the same name has its solve retried, at worst.
  void cancel(const kube::ObjectKey& key);

 private:
  std::mutex mutex_;
  // The work queue runs one reconcile per key at a time; a multimap all the same, so that a
  // scope ending never drops another's.
  std::multimap<kube::ObjectKey, std::shared_ptr<std::stop_source>> running_;
};

}  // namespace depl::controller
