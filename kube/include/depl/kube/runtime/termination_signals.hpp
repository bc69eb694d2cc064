// Clean shutdown on SIGTERM/SIGINT: the signals become a request on a std::stop_source that the
// controller, informers and leader elector all watch, so the process drains and releases its
// lease instead of dying mid-write. A second signal exits at once (status 1), like
// controller-runtime, for an operator who really means it.
#pragma once

#include <stop_token>
#include <thread>

namespace depl::kube {

// At most one instance at a time (signal dispositions are process-wide). The handler only
// writes to a pipe (async-signal-safe); a small thread turns that into request_stop().
class TerminationSignals {
 public:
  explicit TerminationSignals(std::stop_source stop, bool exit_on_second_signal = true);
  ~TerminationSignals();  // restores the previous handlers
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // The first signal received (SIGTERM or SIGINT), 0 when none yet.
  int received() const;

 private:
  std::jthread thread_;
};

}  // namespace depl::kube
