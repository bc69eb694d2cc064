#include "decision_state.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <chrono>

#include "depl/common/json_fields.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/queue_admission.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

long generation_of(const json& job) {
  return json_integer(json_member(job, "metadata"), "generation").value_or(1);
}

double default_seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Keeps the figures of the pools the plan in force names (and only those).
void remember_pool_figures(DecisionState& state) {
  JobStatus& status = state.status;
  if (!status.plan) {
    status.pool_figures.clear();
    return;
  }
  std::map<std::string, PoolFigures> next;
  for (const auto& phase : status.plan->phases) {
    const int k = state.full.pool_index(phase.pool);
    if (k >= 0 && state.vanished.count(phase.pool) == 0) {
      next[phase.pool] = figures_of(state.full.pools[static_cast<std::size_t>(k)]);
    } else if (auto kept = status.pool_figures.find(phase.pool);
               kept != status.pool_figures.end()) {
      next[phase.pool] = kept->second;
    }
  }
  status.pool_figures = std::move(next);
}

}  // namespace

DecisionState::DecisionState(const JobView& view_, const DecideOptions& options_)
    : view(view_),
      options(options_),
      job(view_.job),
      spec(json_object(view_.job, "spec")),
      generation(generation_of(view_.job)),
      now(format_rfc3339(view_.now)),
      queue_name(queue_name_of(view_.job)),
      original(decode_status(json_member(view_.job, "status"))),
      status(original) {}

void DecisionState::condition(const char* type, bool value, const std::string& reason,
                              const std::string& message) {
  set_condition(status, type, value, reason, message, generation, now);
}

void DecisionState::event(const char* type, const std::string& reason, const std::string& message) {
  decision.events.push_back({type, reason, message});
}

void DecisionState::set_phase(const char* phase, const std::string& message) {
  status.phase = phase;
  status.message = message;
}

void DecisionState::remove(const char* kind, const json& object) {
  if (is_terminating(object)) return;
  const json& meta = json_member(object, "metadata");
  decision.remove.push_back({kind, json_string(meta, "name"), json_string(meta, "uid")});
}

void DecisionState::delete_pods(bool only_running) {
  for (const auto& pod : view.owned_pods) {
    if (only_running && has_ended(pod)) continue;
    remove("Pod", pod);
  }
}

bool DecisionState::replans_on_deviation() const {
  return json_string(spec, "replan", "OnDeviation") == "OnDeviation";
}

int DecisionState::backoff_limit() const {
  return spec.value("backoffLimit", 3);
}

double DecisionState::seconds_now() const {
  return options.seconds_now ? options.seconds_now() : default_seconds_now();
}

Decision DecisionState::finish() {
  // The progress token is for workers: made with the first of them (the executor creates it
  // before any pod), not for a job that waits or cannot run, which in a burst of thousands
  // of jobs would be that many writes ahead of the first plan.
  if (!status.progress_token) {
    const bool creates_pods =
        std::any_of(decision.create.begin(), decision.create.end(),
                    [](const json& o) { return json_string(o, "kind") == "Pod"; });
    if (creates_pods || !view.owned_pods.empty()) {
      decision.ensure_token_secret = true;
      decision.token_secret = view.new_token_secret;
    }
  }
  decision.round = {status.progress.phase, status.progress.round};
  if (hold_status) return std::move(decision);
  if (pools_known) remember_pool_figures(*this);
  status.observed_generation = generation;
  if (!(status == original)) decision.status = encode_status(status);
  return std::move(decision);
}

std::string pod_phase(const json& pod) {
  return json_string(json_member(pod, "status"), "phase", "Pending");
}

bool has_ended(const json& pod) {
  const std::string phase = pod_phase(pod);
  return phase == "Succeeded" || phase == "Failed";
}

bool is_terminating(const json& object) {
  return json_object(object, "metadata").contains("deletionTimestamp");
}

int label_int(const json& object, const char* key) {
  const std::string text = json_string(json_at(object, {"metadata", "labels"}), key);
  int value = -1;
  if (std::from_chars(text.data(), text.data() + text.size(), value).ec != std::errc()) return -1;
  return value;
}

std::string short_plan(const PlanRecord& plan) {
  std::string out;
  for (const auto& p : plan.phases) {
    if (!out.empty()) out += " -> ";
    out += fmt::format("{} x{} on {} ({} workers)", p.model, p.epochs, p.pool, p.workers);
  }
  return out;
}

std::string summarise(const std::vector<std::string>& messages) {
  std::string out;
  for (std::size_t i = 0; i < messages.size() && i < 5; ++i) {
    if (!out.empty()) out += "; ";
    out += messages[i];
  }
  if (messages.size() > 5) out += fmt::format("; and {} more", messages.size() - 5);
  return out;
}

}  // namespace depl::controller
