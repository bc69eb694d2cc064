// The job's life outside running its plan: an invalid spec, suspension, the end (Succeeded or
// Failed) and what follows it (ttlSecondsAfterFinished).
#include <chrono>

#include "decision_state.hpp"
#include "depl/common/time.hpp"

namespace depl::controller {

void mark_invalid(DecisionState& state, const std::vector<std::string>& messages) {
  const std::string text = summarise(messages);
  JobStatus& status = state.status;
  const bool was_invalid = status.condition_is(conditions::kValid) == false &&
                           status.message == "spec is invalid: " + text;
  state.condition(conditions::kValid, false, "InvalidSpec", text);
  state.condition(conditions::kRunning, false, "InvalidSpec",
                  "no workers run while the spec is invalid");
  if (status.phase != phases::kSucceeded && status.phase != phases::kFailed) {
    state.set_phase(phases::kPending, "spec is invalid: " + text);
  }
  if (!was_invalid) state.event("Warning", "InvalidSpec", text);
  state.delete_pods(/*only_running=*/true);
  status.replan_requested = true;  // the spec will change; plan again once it is valid
}

void keep_finished(DecisionState& state) {
  state.delete_pods(/*only_running=*/true);
  auto ttl = state.spec.find("ttlSecondsAfterFinished");
  if (ttl == state.spec.end() || !ttl->is_number_integer()) return;
  const auto finished = parse_rfc3339(state.status.finished_at);
  if (!finished) return;
  const auto expiry = *finished + std::chrono::seconds(ttl->get<long>());
  if (state.view.now >= expiry) {
    state.decision.delete_job = true;
  } else {
    state.decision.requeue_after =
        std::chrono::duration_cast<std::chrono::seconds>(expiry - state.view.now) +
        std::chrono::seconds(1);
  }
}

void suspend(DecisionState& state) {
  state.delete_pods(/*only_running=*/true);
  if (state.status.phase != phases::kSuspended) {
    state.event("Normal", "Suspended", "workers stopped; the job resumes from its last checkpoint");
  }
  state.set_phase(phases::kSuspended, "suspended: workers stopped, progress kept");
  state.condition(conditions::kRunning, false, "Suspended", "spec.suspend is true");
  state.status.replan_requested = true;  // capacity may differ on resume
}

void end_job(DecisionState& state, bool success, const std::string& reason,
             const std::string& message) {
  state.set_phase(success ? phases::kSucceeded : phases::kFailed, message);
  state.condition(conditions::kRunning, false, reason, message);
  state.condition(success ? conditions::kSucceeded : conditions::kFailed, true, reason, message);
  state.status.finished_at = state.now;
  state.event(success ? "Normal" : "Warning", reason, message);
  state.delete_pods(/*only_running=*/true);
}

}  // namespace depl::controller
