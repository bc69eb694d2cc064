// Leader election for depl-controller and the write fence it feeds. With --leader-elect nothing
// but the Lease is written unless this replica holds the lease right now (renewed within
// renewDeadline): not its reconciles, not its progress endpoint, not a request stuck in a retry
// loop while the lease runs out. Until the elector exists, and for good once it stops leading,
// the fence is closed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <stop_token>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/leader_election.hpp"

namespace depl::controller {

class WriteFence {
 public:
  // Whether writes may go out: the watched elector holds the lease. Thread-safe, lock-free.
  bool open() const;
  // open() as a function, for kube::ClientOptions::write_fence; valid while the fence lives.
  std::function<bool()> predicate() const;
  void watch(const kube::LeaderElector* elector) { elector_ = elector; }

 private:
  std::atomic<const kube::LeaderElector*> elector_{nullptr};
};

struct ElectionHooks {
  std::function<void(std::stop_token leading)> lead;  // runs while this replica leads
  std::function<void()> started;                      // before lead()
  std::function<void()> stopped;                      // leadership lost or released
};

// Takes part in leader election until `stop`, opening `fence` while this replica holds the lease.
// The elector writes through a client of its own made from `transport`, `credentials` and
// `client_options`: unfenced (it writes the Lease to earn the fence) and without the client's
// retries, which could hold one renewal past the renew deadline (the elector retries every
// retryPeriod itself). The error names what is wrong with `config`.
Expected<void> run_elected(std::shared_ptr<kube::Transport> transport,
                           std::shared_ptr<kube::CredentialProvider> credentials,
                           kube::ClientOptions client_options, Clock& clock, RandomSource& random,
                           kube::LeaderElectionConfig config, WriteFence& fence,
                           ElectionHooks hooks, std::stop_token stop);

}  // namespace depl::controller
