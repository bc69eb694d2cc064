#include "depl/controller/job_status.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <limits>

#include "depl/common/json_fields.hpp"
#include "depl/common/significant.hpp"
#include "depl/common/time.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

// An integer field, leniently: any number in range (a float is truncated), `fallback` otherwise.
// A user may have edited the status: a number that does not fit is as unreadable as a string
// (converting it would be undefined behaviour).
int int_or(const json& object, const char* key, int fallback) {
  const json& value = json_member(object, key);
  if (!value.is_number()) return fallback;
  const double number = value.get<double>();
  if (!(number >= static_cast<double>(std::numeric_limits<int>::min()) &&
        number <= static_cast<double>(std::numeric_limits<int>::max()))) {
    return fallback;
  }
  return value.is_number_float() ? static_cast<int>(number) : value.get<int>();
}

double number_or(const json& object, const char* key, double fallback = 0) {
  return json_number(object, key).value_or(fallback);
}

// The keys encode_status writes; everything else is kept in JobStatus::unknown.
constexpr const char* kKnownKeys[] = {
    "phase",        "message",     "observedGeneration", "startedAt",       "finishedAt",
    "conditions",   "plan",        "plannedAtEpoch",     "replanRequested", "progress",
    "failedPods",   "poolFigures", "preemptions",        "progressToken",   "queue",
    "capacityWait", "display"};

// status.display: the figures `kubectl get` and `kubectl describe` show, as text rounded for
// people (display_loss, display_probability, display_cost). Written from the full-precision
// figures at every encode and never read back, so rounding changes no decision and no identity
// between the figures (the plan's gap is computed from its unrounded cost).
json encode_display(const JobStatus& s) {
  json out = json::object();
  if (s.progress.loss) out["loss"] = display_loss(*s.progress.loss);
  if (s.plan) out["probability"] = display_probability(s.plan->probability);
  if (s.plan || !(s.progress == ProgressRecord{})) {
    out["cost"] = display_cost(s.progress.cost);
  }
  return out;
}

std::optional<PlanRecord> decode_plan(const json& p) {
  if (!p.is_object()) return std::nullopt;
  PlanRecord plan;
  const json& ds = json_member(p, "datasets");
  const json& ph = json_member(p, "phases");
  if (!ds.is_array() || !ph.is_array()) return std::nullopt;
  for (const auto& d : ds) {
    if (!d.is_string()) return std::nullopt;
    plan.datasets.push_back(d.get<std::string>());
  }
  for (const auto& x : ph) {
    if (!x.is_object()) return std::nullopt;
    PhaseRecord r{json_string(x, "model"), int_or(x, "epochs", 0), json_string(x, "pool"),
                  int_or(x, "workers", 0)};
    if (r.model.empty() || r.pool.empty() || r.epochs < 0 || r.workers < 1) return std::nullopt;
    plan.phases.push_back(std::move(r));
  }
  if (plan.datasets.empty() || plan.phases.empty()) return std::nullopt;
  const json& predicted = json_object(p, "predicted");
  plan.cost = number_or(predicted, "cost");
  plan.duration_seconds = number_or(predicted, "durationSeconds");
  plan.loss_mean = number_or(predicted, "lossMean");
  plan.loss_stddev = number_or(predicted, "lossStddev");
  plan.probability = number_or(predicted, "probability");
  plan.lower_bound = json_number(predicted, "lowerBound");
  plan.algorithm = json_string(p, "algorithm");
  plan.solve_seconds = number_or(p, "solveSeconds");
  plan.revision = int_or(p, "revision", 0);
  plan.budget_limited = json_bool(p, "budgetLimited").value_or(false);
  return plan;
}

ProgressRecord decode_progress(const json& p) {
  ProgressRecord out;
  if (!p.is_object()) return out;
  out.phase = std::max(0, int_or(p, "phase", 0));
  out.epoch = std::max(0, int_or(p, "epoch", 0));
  out.loss = json_number(p, "loss");
  if (const json& history = json_member(p, "history"); history.is_array()) {
    for (const auto& x : history) {
      if (!x.is_object()) continue;
      out.history.push_back({int_or(x, "epoch", 0), int_or(x, "phase", 0), number_or(x, "loss")});
    }
  }
  out.cost = number_or(p, "cost");
  out.seconds = number_or(p, "seconds");
  out.failures = std::max(0, int_or(p, "failures", 0));
  out.preemptions = std::max(0, int_or(p, "preemptions", 0));
  out.lost_seconds = std::max(0.0, number_or(p, "lostSeconds"));
  out.round = std::max(0, int_or(p, "round", 0));
  out.stop_after_epoch = std::max(0, int_or(p, "stopAfterEpoch", 0));
  out.model = json_string(p, "model");
  out.pool = json_string(p, "pool");
  if (const json& u = json_member(p, "unreachable"); u.is_object()) {
    out.unreachable = UnreachableRecord{std::max(0, int_or(u, "rounds", 0)), int_or(u, "epoch", -1),
                                        int_or(u, "round", -1)};
  }
  out.checkpointed_at = json_string(p, "checkpointedAt");
  if (!parse_rfc3339(out.checkpointed_at)) out.checkpointed_at.clear();
  return out;
}

std::vector<Condition> decode_conditions(const json& list) {
  std::vector<Condition> out;
  if (!list.is_array()) return out;
  for (const auto& c : list) {
    if (!c.is_object() || !json_member(c, "type").is_string()) continue;
    Condition condition{json_string(c, "type"),
                        json_string(c, "status"),
                        json_string(c, "reason"),
                        json_string(c, "message"),
                        std::nullopt,
                        json_string(c, "lastTransitionTime")};
    if (auto g = json_integer(c, "observedGeneration")) condition.observed_generation = *g;
    out.push_back(std::move(condition));
  }
  return out;
}

json encode_condition(const Condition& c) {
  json out = {{"type", c.type},
              {"status", c.status},
              {"reason", c.reason},
              {"message", c.message},
              {"lastTransitionTime", c.last_transition_time}};
  if (c.observed_generation) out["observedGeneration"] = *c.observed_generation;
  return out;
}

std::optional<PoolFigures> decode_pool_figures(const json& f) {
  if (!f.is_object()) return std::nullopt;
  PoolFigures out;
  out.gpu_type = json_string(f, "gpuType");
  out.gpu_gflops = number_or(f, "gpuGflops");
  out.price_per_gpu_hour = number_or(f, "pricePerGpuHour");
  out.bandwidth = number_or(f, "bandwidth");
  out.storage_bandwidth = number_or(f, "storageBandwidth");
  out.startup_seconds = number_or(f, "startupSeconds");
  // A spot pool whose nodes were all reclaimed keeps pricing the interruptions of what ran there.
  if (json_string(f, "capacityType") == solver::to_string(solver::CapacityType::Spot)) {
    out.capacity_type = solver::CapacityType::Spot;
  }
  out.interruptions_per_hour = std::max(0.0, number_or(f, "interruptionsPerHour"));
  for (const auto& [source, bw] : json_object(f, "interPool").items()) {
    if (bw.is_number()) out.inter_pool[source] = bw.get<double>();
  }
  return out;
}

json encode_pool_figures(const PoolFigures& f) {
  return json{{"gpuType", f.gpu_type},
              {"gpuGflops", f.gpu_gflops},
              {"pricePerGpuHour", f.price_per_gpu_hour},
              {"bandwidth", f.bandwidth},
              {"storageBandwidth", f.storage_bandwidth},
              {"startupSeconds", f.startup_seconds},
              {"capacityType", solver::to_string(f.capacity_type)},
              {"interruptionsPerHour", f.interruptions_per_hour},
              {"interPool", f.inter_pool}};
}

std::optional<PreemptionRecord> decode_preemption(const json& p) {
  if (!p.is_object()) return std::nullopt;
  return PreemptionRecord{std::max(0, int_or(p, "count", 0)), json_string(p, "lastTime"),
                          json_string(p, "lastCause"), std::max(0.0, number_or(p, "lostSeconds")),
                          std::max(0.0, number_or(p, "workerSeconds"))};
}

json encode_preemption(const PreemptionRecord& p) {
  json out = {
      {"count", p.count}, {"lostSeconds", p.lost_seconds}, {"workerSeconds", p.worker_seconds}};
  // A pool the job trained on without a preemption has no last one.
  if (!p.last_time.empty()) out["lastTime"] = p.last_time;
  if (!p.last_cause.empty()) out["lastCause"] = p.last_cause;
  return out;
}

}  // namespace

PoolFigures figures_of(const solver::Pool& pool) {
  return {pool.gpu_type,   pool.gpu_gflops,        pool.price_per_gpu_hour,
          pool.bandwidth,  pool.storage_bandwidth, pool.startup_seconds,
          pool.inter_pool, pool.capacity_type,     pool.interruptions_per_hour};
}

std::optional<solver::Pool> pool_from_figures(const std::string& name, const PoolFigures& figures) {
  if (figures.gpu_gflops <= 0) return std::nullopt;
  solver::Pool pool;
  pool.name = name;
  pool.gpu_type = figures.gpu_type;
  pool.gpus = 0;
  pool.gpu_gflops = figures.gpu_gflops;
  pool.price_per_gpu_hour = figures.price_per_gpu_hour;
  pool.bandwidth = figures.bandwidth;
  pool.storage_bandwidth = figures.storage_bandwidth;
  pool.startup_seconds = figures.startup_seconds;
  pool.capacity_type = figures.capacity_type;
  pool.interruptions_per_hour = figures.interruptions_per_hour;
  pool.inter_pool = figures.inter_pool;
  return pool;
}

const Condition* JobStatus::condition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

std::optional<bool> JobStatus::condition_is(const std::string& type) const {
  const Condition* c = condition(type);
  if (c == nullptr) return std::nullopt;
  return c->status == "True";
}

std::string display_loss(double loss) {
  return format_significant(loss, 4);
}

std::string display_probability(double probability) {
  return format_significant(probability, 4);
}

std::string display_cost(double cost) {
  return format_significant(cost, 3);
}

JobStatus decode_status(const json& status) {
  JobStatus out;
  if (!status.is_object()) return out;
  out.phase = json_string(status, "phase");
  out.message = json_string(status, "message");
  if (auto g = json_integer(status, "observedGeneration")) out.observed_generation = *g;
  out.started_at = json_string(status, "startedAt");
  out.finished_at = json_string(status, "finishedAt");
  out.conditions = decode_conditions(json_member(status, "conditions"));
  out.plan = decode_plan(json_member(status, "plan"));
  if (json_member(status, "plannedAtEpoch").is_number()) {
    out.planned_at_epoch = int_or(status, "plannedAtEpoch", 0);
  }
  out.replan_requested = json_bool(status, "replanRequested").value_or(false);
  out.progress = decode_progress(json_member(status, "progress"));
  if (const json& failed = json_member(status, "failedPods"); failed.is_array()) {
    for (const auto& uid : failed) {
      if (uid.is_string()) out.failed_pods.push_back(uid.get<std::string>());
    }
  }
  for (const auto& [name, figures] : json_object(status, "poolFigures").items()) {
    if (auto f = decode_pool_figures(figures)) out.pool_figures.emplace(name, std::move(*f));
  }
  for (const auto& [pool, record] : json_object(status, "preemptions").items()) {
    if (auto p = decode_preemption(record)) out.preemptions.emplace(pool, std::move(*p));
  }
  out.progress_token = decode_progress_token(json_member(status, "progressToken"));
  if (json_member(status, "queue").is_object()) out.queue = queue_from_json(status);
  if (json_member(status, "capacityWait").is_object()) {
    out.capacity_wait = capacity_wait_from_json(status);
  }
  for (const auto& item : status.items()) {
    const std::string& key = item.key();
    if (std::find_if(std::begin(kKnownKeys), std::end(kKnownKeys),
                     [&](const char* known) { return key == known; }) == std::end(kKnownKeys)) {
      out.unknown[key] = item.value();
    }
  }
  return out;
}

json encode_status(const JobStatus& s) {
  json out = s.unknown.is_object() ? s.unknown : json::object();
  if (!s.phase.empty()) out["phase"] = s.phase;
  if (!s.message.empty()) out["message"] = s.message;
  if (s.observed_generation) out["observedGeneration"] = *s.observed_generation;
  if (!s.started_at.empty()) out["startedAt"] = s.started_at;
  if (!s.finished_at.empty()) out["finishedAt"] = s.finished_at;
  if (!s.conditions.empty()) {
    json conditions = json::array();
    for (const auto& c : s.conditions) conditions.push_back(encode_condition(c));
    out["conditions"] = std::move(conditions);
  }
  if (s.plan) out["plan"] = to_json(*s.plan);
  if (s.planned_at_epoch) out["plannedAtEpoch"] = *s.planned_at_epoch;
  if (s.replan_requested) out["replanRequested"] = true;
  if (s.plan || !(s.progress == ProgressRecord{})) out["progress"] = to_json(s.progress);
  if (!s.failed_pods.empty()) out["failedPods"] = s.failed_pods;
  if (s.plan || !s.pool_figures.empty()) {
    json figures = json::object();
    for (const auto& [name, f] : s.pool_figures) figures[name] = encode_pool_figures(f);
    out["poolFigures"] = std::move(figures);
  }
  if (!s.preemptions.empty()) {
    json by_pool = json::object();
    for (const auto& [pool, p] : s.preemptions) by_pool[pool] = encode_preemption(p);
    out["preemptions"] = std::move(by_pool);
  }
  if (s.progress_token) out["progressToken"] = to_json(*s.progress_token);
  if (s.queue) out["queue"] = to_json(*s.queue);
  if (s.capacity_wait) out["capacityWait"] = to_json(*s.capacity_wait);
  if (json display = encode_display(s); !display.empty()) out["display"] = std::move(display);
  return out;
}

bool set_condition(JobStatus& status, const std::string& type, bool value,
                   const std::string& reason, const std::string& message, long generation,
                   const std::string& now) {
  const std::string wanted = value ? "True" : "False";
  for (auto& c : status.conditions) {
    if (c.type != type) continue;
    const Condition before = c;
    if (c.status != wanted) {
      c.status = wanted;
      c.last_transition_time = now;
    }
    c.reason = reason;
    c.message = message;
    c.observed_generation = generation;
    return !(c == before);
  }
  status.conditions.push_back({type, wanted, reason, message, generation, now});
  return true;
}

json to_json(const PlanRecord& plan) {
  json phases = json::array();
  for (const auto& p : plan.phases) {
    phases.push_back(
        {{"model", p.model}, {"epochs", p.epochs}, {"pool", p.pool}, {"workers", p.workers}});
  }
  json out{{"datasets", plan.datasets},
           {"phases", phases},
           {"predicted",
            {{"cost", plan.cost},
             {"durationSeconds", plan.duration_seconds},
             {"lossMean", plan.loss_mean},
             {"lossStddev", plan.loss_stddev},
             {"probability", plan.probability}}},
           {"algorithm", plan.algorithm},
           {"solveSeconds", plan.solve_seconds},
           {"revision", plan.revision},
           {"budgetLimited", plan.budget_limited}};
  if (plan.lower_bound) {
    out["predicted"]["lowerBound"] = *plan.lower_bound;
    out["predicted"]["gap"] = plan.cost > 0 ? (plan.cost - *plan.lower_bound) / plan.cost : 0.0;
  }
  return out;
}

json to_json(const ProgressRecord& progress) {
  json history = json::array();
  for (const auto& h : progress.history) {
    history.push_back({{"epoch", h.epoch}, {"phase", h.phase}, {"loss", h.loss}});
  }
  json out = {{"phase", progress.phase},       {"epoch", progress.epoch},
              {"cost", progress.cost},         {"seconds", progress.seconds},
              {"failures", progress.failures}, {"preemptions", progress.preemptions},
              {"round", progress.round},       {"stopAfterEpoch", progress.stop_after_epoch}};
  if (progress.preemptions > 0 || progress.lost_seconds > 0) {
    out["lostSeconds"] = progress.lost_seconds;
  }
  if (!progress.checkpointed_at.empty()) out["checkpointedAt"] = progress.checkpointed_at;
  // No history and no loss until a worker reports.
  if (!history.empty()) out["history"] = std::move(history);
  if (progress.loss) out["loss"] = *progress.loss;
  if (!progress.model.empty()) out["model"] = progress.model;
  if (!progress.pool.empty()) out["pool"] = progress.pool;
  if (const auto& u = progress.unreachable) {
    out["unreachable"] = {{"rounds", u->rounds}, {"epoch", u->epoch}, {"round", u->round}};
  }
  return out;
}

std::optional<PlanRecord> plan_from_json(const json& status) {
  return decode_plan(json_member(status, "plan"));
}

ProgressRecord progress_from_json(const json& status) {
  return decode_progress(json_member(status, "progress"));
}

// The fields every wait record has (status.queue, status.capacityWait): when the running wait
// started, the earlier waits in total, and whether the running one has had the plan made again.
template <typename Wait>
void encode_wait(const Wait& wait, json& out) {
  if (!wait.since.empty()) out["since"] = wait.since;
  out["waitedSeconds"] = wait.waited_seconds;
  if (wait.replanned) out["replanned"] = true;
}

template <typename Wait>
void decode_wait(const json& in, Wait& wait) {
  wait.since = json_string(in, "since");
  if (!parse_rfc3339(wait.since)) wait.since.clear();
  if (auto waited = json_number(in, "waitedSeconds"); waited && *waited >= 0) {
    wait.waited_seconds = *waited;
  }
  wait.replanned = json_bool(in, "replanned").value_or(false);
}

json to_json(const QueueRecord& queue) {
  json out = json::object();
  encode_wait(queue, out);
  return out;
}

QueueRecord queue_from_json(const json& status) {
  QueueRecord q;
  decode_wait(json_member(status, "queue"), q);
  return q;
}

json to_json(const CapacityWaitRecord& wait) {
  json out = json::object();
  if (!wait.pool.empty()) out["pool"] = wait.pool;
  encode_wait(wait, out);
  return out;
}

CapacityWaitRecord capacity_wait_from_json(const json& status) {
  CapacityWaitRecord w;
  const json& wait = json_member(status, "capacityWait");
  w.pool = json_string(wait, "pool");
  decode_wait(wait, w);
  return w;
}

std::optional<bool> condition_status(const json& status, const std::string& type) {
  for (const auto& c : decode_conditions(json_member(status, "conditions"))) {
    if (c.type == type) return c.status == "True";
  }
  return std::nullopt;
}

Expected<solver::Plan> to_solver_plan(const PlanRecord& record, const solver::Problem& problem) {
  solver::Plan plan;
  for (const auto& name : record.datasets) {
    const int i = problem.dataset_index(name);
    if (i < 0)
      return error(fmt::format("plan names dataset \"{}\" which the spec no longer has", name));
    plan.datasets.push_back(static_cast<std::size_t>(i));
  }
  for (const auto& p : record.phases) {
    const int m = problem.model_index(p.model);
    if (m < 0)
      return error(fmt::format("plan names model \"{}\" which the spec no longer has", p.model));
    const int k = problem.pool_index(p.pool);
    if (k < 0)
      return error(fmt::format("plan names pool \"{}\" which the cluster no longer has", p.pool));
    plan.phases.push_back(
        {static_cast<std::size_t>(m), p.epochs, static_cast<std::size_t>(k), p.workers});
  }
  return plan;
}

PlanRecord to_record(const solver::Plan& plan, const solver::Problem& problem,
                     const solver::Figures& figures) {
  PlanRecord r;
  for (std::size_t d : plan.datasets) r.datasets.push_back(problem.datasets.at(d).name);
  for (const auto& p : plan.phases) {
    r.phases.push_back(
        {problem.models.at(p.model).name, p.epochs, problem.pools.at(p.pool).name, p.workers});
  }
  r.cost = figures.cost;
  r.duration_seconds = figures.duration_seconds;
  r.loss_mean = figures.loss_mean;
  r.loss_stddev = figures.loss_stddev;
  r.probability = figures.probability;
  return r;
}

}  // namespace depl::controller
