#include "depl/controller/job_status.hpp"

#include <fmt/format.h>
#include <limits>
#include <type_traits>

namespace depl::controller {

using nlohmann::json;

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
  json out = {{"phase", progress.phase},     {"epoch", progress.epoch},
              {"history", history},          {"cost", progress.cost},
              {"seconds", progress.seconds}, {"failures", progress.failures},
              {"round", progress.round},     {"stopAfterEpoch", progress.stop_after_epoch}};
  if (progress.loss) out["loss"] = *progress.loss;
  return out;
}

namespace {

template <typename T>
T get_or(const json& object, const char* key, T fallback) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->get<bool>() : fallback;
  } else if constexpr (std::is_integral_v<T>) {
    // A user may have edited the status: a number that does not fit is as unreadable as a
    // string (converting it would be undefined behaviour).
    if (!it->is_number()) return fallback;
    const double value = it->get<double>();
    if (!(value >= static_cast<double>(std::numeric_limits<T>::min()) &&
          value <= static_cast<double>(std::numeric_limits<T>::max()))) {
      return fallback;
    }
    return it->is_number_float() ? static_cast<T>(value) : it->get<T>();
  } else {
    return it->is_number() ? it->get<T>() : fallback;
  }
}

}  // namespace

std::optional<PlanRecord> plan_from_json(const json& status) {
  auto it = status.find("plan");
  if (it == status.end() || !it->is_object()) return std::nullopt;
  const json& p = *it;
  PlanRecord plan;
  auto ds = p.find("datasets");
  auto ph = p.find("phases");
  if (ds == p.end() || !ds->is_array() || ph == p.end() || !ph->is_array()) return std::nullopt;
  for (const auto& d : *ds) {
    if (!d.is_string()) return std::nullopt;
    plan.datasets.push_back(d.get<std::string>());
  }
  for (const auto& x : *ph) {
    if (!x.is_object()) return std::nullopt;
    PhaseRecord r{get_or<std::string>(x, "model", ""), get_or<int>(x, "epochs", 0),
                  get_or<std::string>(x, "pool", ""), get_or<int>(x, "workers", 0)};
    if (r.model.empty() || r.pool.empty() || r.epochs < 0 || r.workers < 1) return std::nullopt;
    plan.phases.push_back(std::move(r));
  }
  if (plan.datasets.empty() || plan.phases.empty()) return std::nullopt;
  if (auto pr = p.find("predicted"); pr != p.end() && pr->is_object()) {
    plan.cost = get_or<double>(*pr, "cost", 0);
    plan.duration_seconds = get_or<double>(*pr, "durationSeconds", 0);
    plan.loss_mean = get_or<double>(*pr, "lossMean", 0);
    plan.loss_stddev = get_or<double>(*pr, "lossStddev", 0);
    plan.probability = get_or<double>(*pr, "probability", 0);
    if (auto lb = pr->find("lowerBound"); lb != pr->end() && lb->is_number()) {
      plan.lower_bound = lb->get<double>();
    }
  }
  plan.algorithm = get_or<std::string>(p, "algorithm", "");
  plan.solve_seconds = get_or<double>(p, "solveSeconds", 0);
  plan.revision = get_or<int>(p, "revision", 0);
  plan.budget_limited = get_or<bool>(p, "budgetLimited", false);
  return plan;
}

ProgressRecord progress_from_json(const json& status) {
  ProgressRecord out;
  auto it = status.find("progress");
  if (it == status.end() || !it->is_object()) return out;
  const json& p = *it;
  out.phase = std::max(0, get_or<int>(p, "phase", 0));
  out.epoch = std::max(0, get_or<int>(p, "epoch", 0));
  if (auto l = p.find("loss"); l != p.end() && l->is_number()) out.loss = l->get<double>();
  if (auto h = p.find("history"); h != p.end() && h->is_array()) {
    for (const auto& x : *h) {
      if (!x.is_object()) continue;
      out.history.push_back(
          {get_or<int>(x, "epoch", 0), get_or<int>(x, "phase", 0), get_or<double>(x, "loss", 0)});
    }
  }
  out.cost = get_or<double>(p, "cost", 0);
  out.seconds = get_or<double>(p, "seconds", 0);
  out.failures = std::max(0, get_or<int>(p, "failures", 0));
  out.round = std::max(0, get_or<int>(p, "round", 0));
  out.stop_after_epoch = std::max(0, get_or<int>(p, "stopAfterEpoch", 0));
  return out;
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

bool set_condition(json& status, const std::string& type, bool value, const std::string& reason,
                   const std::string& message, long generation, const std::string& now) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) {
    status["conditions"] = json::array();
  }
  const std::string wanted = value ? "True" : "False";
  for (auto& c : status["conditions"]) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    bool changed = false;
    if (c.value("status", "") != wanted) {
      c["status"] = wanted;
      c["lastTransitionTime"] = now;
      changed = true;
    }
    for (const auto& [key, v] : {std::pair<const char*, json>{"reason", reason},
                                 {"message", message},
                                 {"observedGeneration", generation}}) {
      if (!c.contains(key) || c[key] != v) {
        c[key] = v;
        changed = true;
      }
    }
    return changed;
  }
  status["conditions"].push_back({{"type", type},
                                  {"status", wanted},
                                  {"reason", reason},
                                  {"message", message},
                                  {"observedGeneration", generation},
                                  {"lastTransitionTime", now}});
  return true;
}

std::optional<bool> condition_status(const json& status, const std::string& type) {
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return std::nullopt;
  for (const auto& c : *it) {
    if (c.is_object() && c.value("type", "") == type) return c.value("status", "") == "True";
  }
  return std::nullopt;
}

}  // namespace depl::controller
