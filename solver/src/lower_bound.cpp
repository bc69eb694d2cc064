#include "lower_bound.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <span>
#include <unordered_map>

#include "schedule_graph.hpp"

namespace depl::solver::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Class data.

struct DatasetFigures {
  double samples = 0;           // n_d
  double effective = 0;         // q_d * (1 - epsilon_d) * n_d
  double wrong = 0;             // epsilon_d * n_d
  std::vector<double> staging;  // per pool: seconds to stage d there (0 when local)
};

std::vector<DatasetFigures> dataset_figures(const Problem& problem) {
  std::vector<DatasetFigures> out(problem.datasets.size());
  for (std::size_t d = 0; d < out.size(); ++d) {
    const Dataset& ds = problem.datasets[d];
    out[d].samples = static_cast<double>(ds.samples);
    out[d].effective = effective_samples(ds);
    out[d].wrong = wrong_labels(ds);
    out[d].staging.resize(problem.pools.size());
    for (std::size_t k = 0; k < problem.pools.size(); ++k) {
      out[d].staging[k] = staging_seconds(problem, {d}, problem.pools[k]);
    }
  }
  return out;
}

// The least sum of `cost` over a fractional choice of the free datasets whose effective
// samples reach `need` (a fractional knapsack: by cost per effective sample). `fraction`: the
// dataset taken in part, kNone when none was.
double knapsack(const std::vector<DatasetFigures>& figures, const SelectionClass& cls, double need,
                const std::vector<double>& cost, int* fraction, double* taken = nullptr) {
  if (fraction) *fraction = kNone;
  if (need <= 0) return 0;
  std::vector<std::size_t> order;
  for (std::size_t d = 0; d < figures.size(); ++d) {
    if (!cls.in[d] && !cls.out[d] && figures[d].effective > 0) order.push_back(d);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double ra = cost[a] / figures[a].effective, rb = cost[b] / figures[b].effective;
    if (ra != rb) return ra < rb;
    return a < b;
  });
  double total = 0;
  for (std::size_t d : order) {
    if (figures[d].effective >= need) {
      const double part = need / figures[d].effective;
      total += cost[d] * part;
      if (fraction && part < 1) *fraction = static_cast<int>(d);
      if (taken) *taken = part;
      return total;
    }
    total += cost[d];
    need -= figures[d].effective;
  }
  return total;  // the class cannot reach e_low: callers keep e_low reachable
}

// The least share of wrong labels W / N over the class's selections, relaxed to fractional
// choices of the free datasets (E's range ignored, which can only lower it): starting from the
// datasets in the class, take the free ones in order of their own share while it is below the
// share so far (the minimum of a weighted average). With no dataset in the class a selection
// holds at least one free dataset, and its share is at least the least free one's.
double least_wrong_share(const std::vector<DatasetFigures>& figures, const SelectionClass& cls) {
  double samples = 0, wrong = 0;
  std::vector<std::pair<double, std::size_t>> free;
  for (std::size_t d = 0; d < figures.size(); ++d) {
    if (cls.in[d]) {
      samples += figures[d].samples;
      wrong += figures[d].wrong;
    } else if (!cls.out[d] && figures[d].samples > 0) {
      free.emplace_back(figures[d].wrong / figures[d].samples, d);
    }
  }
  std::sort(free.begin(), free.end());
  if (samples <= 0) return free.empty() ? 0.0 : free.front().first;
  for (const auto& [share, d] : free) {
    if (share >= wrong / samples) break;
    samples += figures[d].samples;
    wrong += figures[d].wrong;
  }
  return wrong / samples;
}

// Decides the free datasets that every selection of the class decides alike: one whose
// effective samples take E above e_high with the datasets in the class is in none of them
// (out), one without which the rest cannot reach e_low is in all of them (in). The class keeps
// its selections; its data (the knapsacks over the free datasets) come closer to theirs: a
// knapsack that takes part of a dataset no selection of the class can hold reaches e_low with
// fewer samples than any of them.
void decide_forced(const std::vector<DatasetFigures>& figures, SelectionClass& cls) {
  constexpr double kSlack = 1e-9;  // sums of E in another order differ in the last bits
  for (bool changed = true; changed;) {
    changed = false;
    double e_in = 0, e_free = 0;
    for (std::size_t d = 0; d < figures.size(); ++d) {
      if (cls.in[d]) {
        e_in += figures[d].effective;
      } else if (!cls.out[d]) {
        e_free += figures[d].effective;
      }
    }
    for (std::size_t d = 0; d < figures.size() && !changed; ++d) {
      if (cls.in[d] || cls.out[d]) continue;
      const double e = figures[d].effective;
      if (e_in + e > cls.e_high * (1 + kSlack)) {
        cls.out[d] = true;
        changed = true;
      } else if (e > 0 && e_in + e_free - e < cls.e_low * (1 - kSlack)) {
        cls.in[d] = true;
        changed = true;
      }
    }
  }
}

}  // namespace

namespace {

SelectionData class_data(const SearchContext& ctx, const std::vector<DatasetFigures>& figures,
                         const SelectionClass& given, int* fraction, double* fraction_share) {
  SelectionClass cls = given;
  decide_forced(figures, cls);
  const Problem& problem = *ctx.problem;
  SelectionData data;
  double samples_in = 0, effective_in = 0;
  std::vector<double> staging_in(problem.pools.size(), 0.0);
  for (std::size_t d = 0; d < figures.size(); ++d) {
    if (!cls.in[d]) continue;
    data.datasets.push_back(d);
    samples_in += figures[d].samples;
    effective_in += figures[d].effective;
    for (std::size_t k = 0; k < staging_in.size(); ++k) staging_in[k] += figures[d].staging[k];
  }
  const double need = cls.e_low - effective_in;
  std::vector<double> cost(figures.size());
  for (std::size_t d = 0; d < figures.size(); ++d) cost[d] = figures[d].samples;
  int part = kNone;
  double taken = 1;
  data.samples = samples_in + knapsack(figures, cls, need, cost, &part, &taken);
  if (fraction) *fraction = part;
  if (fraction_share) {
    // What N may be short of a whole selection's: the part of the dataset the knapsack took a
    // fraction of that it left out, relative to N.
    const double missing =
        part == kNone ? 0.0 : (1 - taken) * figures[static_cast<std::size_t>(part)].samples;
    *fraction_share = data.samples > 0 ? missing / data.samples : 0.0;
  }
  data.effective = cls.e_high;
  data.wrong_share = least_wrong_share(figures, cls);
  data.staging_seconds.resize(problem.pools.size());
  for (std::size_t k = 0; k < problem.pools.size(); ++k) {
    for (std::size_t d = 0; d < figures.size(); ++d) cost[d] = figures[d].staging[k];
    data.staging_seconds[k] = staging_in[k] + knapsack(figures, cls, need, cost, nullptr);
  }
  data.dynamics.resize(problem.models.size());
  for (std::size_t v = 0; v < problem.models.size(); ++v) {
    const LossProfile& lp = problem.models[v].loss;
    VariantDynamics& dyn = data.dynamics[v];
    dyn.rho = std::pow(lp.decay_per_epoch, cls.e_high / lp.reference_samples);
    dyn.rho_below = std::pow(lp.decay_per_epoch, cls.e_low / lp.reference_samples);
    // The least floor: the most data and the least noise any selection of the class has.
    dyn.floor = loss_floor(lp, cls.e_high, data.wrong_share);
    dyn.noise_variance = lp.noise_stddev * lp.noise_stddev;
    dyn.validation_variance = lp.validation_noise_stddev * lp.validation_noise_stddev;
  }
  fill_placements(ctx, data);
  return data;
}

}  // namespace

SelectionData make_class_data(const SearchContext& ctx, const SelectionClass& cls, int* fraction) {
  return class_data(ctx, dataset_figures(*ctx.problem), cls, fraction, nullptr);
}

// ---------------------------------------------------------------------------------------------
// The search within a class.

namespace {

// The cheapest weight of a phase of e epochs over a set of placements: the lower envelope of
// lines a + e * b, with the seconds and the placement of the line that attains it. Evaluated
// lazily, per e.
class Envelope {
 public:
  struct Line {
    double fixed_weight = 0;
    double epoch_weight = 0;
    double fixed_seconds = 0;
    double epoch_seconds = 0;
    std::uint32_t placement = 0;  // index into the variant's placements
    std::uint32_t pool = 0;       // that placement's
  };
  struct Value {
    double weight = kInf;
    double seconds = kInf;
    std::uint32_t placement = 0;
    std::uint32_t pool = 0;
  };

  void add(const Line& line) {
    lines_.push_back(line);
    all_.push_back(line);
  }

  // The placements of a phase of `epochs` epochs that neither cost more nor take longer than
  // another in the same pool (for searches with a deadline), cheapest first.
  const std::vector<Value>& pareto(int epochs) {
    const auto e = static_cast<std::size_t>(epochs);
    if (pareto_.size() <= e) pareto_.resize(e + 1);
    std::vector<Value>& out = pareto_[e];
    if (!out.empty() || all_.empty()) return out;
    const double n = epochs;
    std::vector<Value> every;
    std::uint32_t pools = 0;
    for (const Line& l : all_) {
      every.push_back({l.fixed_weight + n * l.epoch_weight, l.fixed_seconds + n * l.epoch_seconds,
                       l.placement, l.pool});
      pools = std::max(pools, l.pool + 1);
    }
    std::sort(every.begin(), every.end(), [](const Value& a, const Value& b) {
      if (a.weight != b.weight) return a.weight < b.weight;
      return a.seconds < b.seconds;
    });
    std::vector<double> fastest(per_pool_ ? pools : 1, kInf);
    for (const Value& v : every) {
      double& least = fastest[per_pool_ ? v.pool : 0];
      if (v.seconds < least) {
        least = v.seconds;
        out.push_back(v);
      }
    }
    return out;
  }

  // Whether pareto() keeps the fastest for their weight in each pool rather than overall.
  void set_per_pool(bool per_pool) { per_pool_ = per_pool; }

  // The cheapest phase of `epochs` epochs in each pool (`out[pool]`; infinite weight where the
  // pool has no placement).
  void cheapest_per_pool(int epochs, std::vector<Value>& out) const {
    std::fill(out.begin(), out.end(), Value{});
    for (const Line& l : all_) {
      const double w = l.fixed_weight + epochs * l.epoch_weight;
      if (l.pool < out.size() && w < out[l.pool].weight) {
        out[l.pool] = {w, l.fixed_seconds + epochs * l.epoch_seconds, l.placement, l.pool};
      }
    }
  }

  // The least seconds of a phase of `epochs` epochs over every placement.
  double least_seconds(int epochs) const {
    double best = kInf;
    for (const Line& l : all_) best = std::min(best, l.fixed_seconds + epochs * l.epoch_seconds);
    return best;
  }

  // Drops lines another beats for every e (no more fixed and no more per-epoch weight): what is
  // left is a staircase, per-epoch weight rising as the fixed weight falls.
  void prune() {
    std::sort(lines_.begin(), lines_.end(), [](const Line& a, const Line& b) {
      if (a.epoch_weight != b.epoch_weight) return a.epoch_weight < b.epoch_weight;
      return a.fixed_weight < b.fixed_weight;
    });
    std::vector<Line> kept;
    for (const Line& l : lines_) {
      if (kept.empty() || l.fixed_weight < kept.back().fixed_weight) kept.push_back(l);
    }
    lines_ = std::move(kept);
  }

  bool empty() const { return lines_.empty(); }

  // The cheapest phase of `epochs` epochs.
  const Value& at(int epochs) {
    const auto e = static_cast<std::size_t>(epochs);
    while (values_.size() <= e) {
      const double n = static_cast<double>(values_.size());
      Value best;
      for (const Line& l : lines_) {
        const double w = l.fixed_weight + n * l.epoch_weight;
        if (w < best.weight) {
          best = {w, l.fixed_seconds + n * l.epoch_seconds, l.placement, l.pool};
        }
      }
      values_.push_back(best);
    }
    return values_[e];
  }

  std::size_t memory_bytes() const {
    std::size_t bytes =
        (lines_.capacity() + all_.capacity()) * sizeof(Line) + values_.capacity() * sizeof(Value);
    for (const auto& p : pareto_) bytes += sizeof(p) + p.capacity() * sizeof(Value);
    return bytes;
  }

 private:
  std::vector<Line> lines_;  // the staircase of the cheapest (prune())
  std::vector<Line> all_;    // every placement
  std::vector<Value> values_;
  std::vector<std::vector<Value>> pareto_;
  bool per_pool_ = false;
};

// Settled phase starts a dominance test compares with, per layer (the latest).
constexpr std::size_t kDominanceScan = 32;

class BoundSearch {
 public:
  BoundSearch(const SearchContext& ctx, const SelectionData& data,
              const BoundSearchOptions& options, CostToGo& heuristic)
      : ctx_(ctx), problem_(*ctx.problem), data_(data), options_(options), bound_(heuristic) {
    build_envelopes();
  }

  BoundSearchResult run() {
    BoundSearchResult result;
    push_roots();
    result.complete = true;
    while (!heap_.empty()) {
      const Open top = heap_.front();
      if (!(top.priority < cut())) break;
      if (nodes_.size() >= options_.max_nodes || work_ >= options_.max_work || out_of_memory_ ||
          ctx_.out_of_budget()) {
        result.complete = false;
        break;
      }
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.pop_back();
      if (dominated(nodes_[top.node])) continue;
      settle(nodes_[top.node]);
      expand(top.node);
    }
    result.bound = heap_.empty() ? cut() : std::min(cut(), heap_.front().priority);
    result.nodes = nodes_.size();
    result.work = work_;
    if (goal_) {
      result.goal_seconds = goal_->seconds;
      result.plan = reconstruct();
    }
    report_memory();
    return result;
  }

 private:
  static constexpr std::uint32_t kRoot = 0xFFFFFFFFu;

  struct Node {
    double weight = 0;
    double seconds = 0;
    LossState state;  // before the phase's first epoch (after the switch into it)
    int epochs = 0;   // used before the phase
    int envelope = 0;
    std::uint32_t parent = kRoot;  // the node of the phase before
    int parent_epochs = 0;         // that phase's length
    std::uint32_t parent_placement = 0;
    std::uint16_t model = 0;
    std::uint16_t switches = 0;
  };
  struct Open {
    double priority = 0;
    std::uint32_t node = 0;
    bool operator<(const Open& o) const { return priority > o.priority; }  // min-heap
  };
  // The cheapest goal so far: the last phase (of `model`, from the end of `parent`'s phase).
  struct Goal {
    double weight = kInf;
    double seconds = 0;
    Node last;  // the last phase's start (not stored among the nodes)
    int epochs = 0;
    std::uint32_t placement = 0;
  };

  double cut() const { return std::min(options_.cutoff, goal_ ? goal_->weight : kInf); }

  void build_envelopes() {
    const std::size_t nv = problem_.models.size();
    target_loss_ = problem_.target.loss + 1e-12;
    // One envelope per first variant, then one per listed switch (the phase it leads into) and
    // pool of the phase before it (which stages nothing), built when first needed.
    const std::size_t pools = problem_.pools.size();
    envelopes_.resize(nv + problem_.switching.size() * pools);
    built_.assign(envelopes_.size(), false);
    for (Envelope& e : envelopes_) e.set_per_pool(options_.later_staging);
    const Weights& w = options_.weights;
    for (std::size_t v = 0; v < nv; ++v) {
      double tau = 0;
      if (ctx_.start_model != kNone && ctx_.start_model != static_cast<int>(v)) {
        const int sw = ctx_.switch_index[static_cast<std::size_t>(ctx_.start_model)][v];
        if (sw != kNone) tau = problem_.switching[static_cast<std::size_t>(sw)].overhead_seconds;
      }
      const auto& placements = data_.pareto[v];
      for (std::size_t i = 0; i < placements.size(); ++i) {
        const Placement& p = placements[i];
        double fixed = 0;
        if (!problem_.continues_start(0, v, p.pool, p.workers)) {
          fixed =
              problem_.pools[p.pool].startup_seconds + tau +
              (static_cast<int>(p.pool) != ctx_.start_pool ? data_.staging_seconds[p.pool] : 0.0);
        }
        envelopes_[v].add({w.of(p.rate, fixed), w.of(p.rate, p.epoch_seconds), fixed,
                           p.epoch_seconds, static_cast<std::uint32_t>(i),
                           static_cast<std::uint32_t>(p.pool)});
      }
      envelopes_[v].prune();
      built_[v] = true;
    }
    edges_.resize(nv);
    for (std::size_t v = 0; v < nv; ++v) {
      for (std::size_t w = 0; w < nv; ++w) {
        const int sw = ctx_.switch_index[v][w];
        if (sw == kNone || data_.pareto[w].empty()) continue;
        edges_[v].push_back({w, sw});
      }
    }
    // What a phase's pool can save the phase after it at most: that phase's staging there.
    saving_.assign(pools, 0.0);
    for (std::size_t v = 0; v < nv; ++v) {
      for (const Placement& p : data_.pareto[v]) {
        saving_[p.pool] = std::max(saving_[p.pool], w.of(p.rate, data_.staging_seconds[p.pool]));
      }
    }
    branches_.resize(pools);
  }

  // The envelope of the phase a listed switch leads into, after a phase in `pool`: a placement
  // in another pool stages the data there.
  int switch_envelope(int index, std::uint32_t pool) {
    const std::size_t nv = problem_.models.size();
    if (!options_.later_staging) pool = 0;  // one envelope per switch
    const std::size_t id = nv + static_cast<std::size_t>(index) * problem_.pools.size() + pool;
    if (built_[id]) return static_cast<int>(id);
    built_[id] = true;
    const Switch& swi = problem_.switching[static_cast<std::size_t>(index)];
    const auto to = static_cast<std::size_t>(problem_.model_index(swi.to));
    const Weights& w = options_.weights;
    const auto& placements = data_.pareto[to];
    for (std::size_t i = 0; i < placements.size(); ++i) {
      const Placement& p = placements[i];
      const bool stages = options_.later_staging && p.pool != pool;
      const double fixed = problem_.pools[p.pool].startup_seconds + swi.overhead_seconds +
                           (stages ? data_.staging_seconds[p.pool] : 0.0);
      envelopes_[id].add({w.of(p.rate, fixed), w.of(p.rate, p.epoch_seconds), fixed,
                          p.epoch_seconds, static_cast<std::uint32_t>(i),
                          static_cast<std::uint32_t>(p.pool)});
    }
    envelopes_[id].prune();
    return static_cast<int>(id);
  }

  Envelope& envelope(const Node& node) {
    return envelopes_[static_cast<std::size_t>(node.envelope)];
  }

  // Lower bound on the weight from a phase start (state before its first epoch) to a goal: one
  // epoch at least, then CostToGo from the state after it.
  double enter_bound(const Node& node) {
    const LossState first = step(data_.dynamics[node.model], node.state);
    const double one = envelope(node).at(1).weight;
    if (goal(first, data_.dynamics[node.model])) return one;
    const CostToGo::Need need = bound_.need(node.model, node.switches, first.mean, first.variance);
    if (node.epochs + 1 + need.epochs > ctx_.horizon()) return kInf;
    return one + need.weight;
  }

  // `x` after an epoch of the variant `d` describes.
  bool goal(const LossState& x, const VariantDynamics& d) const {
    return x.mean <= target_loss_ &&
           meets(ctx_.kappa, problem_.target.loss, x.mean, reported(d, x));
  }

  void push(const Node& node, double priority) {
    if (!(priority < cut())) return;
    heap_.push_back({priority, static_cast<std::uint32_t>(nodes_.size())});
    std::push_heap(heap_.begin(), heap_.end());
    nodes_.push_back(node);
    if (nodes_.size() == nodes_.capacity() && !report_memory()) out_of_memory_ = true;
  }

  void push_roots() {
    if (ctx_.horizon() < 1) return;
    for (std::size_t v = 0; v < problem_.models.size(); ++v) {
      if (data_.pareto[v].empty() || envelopes_[v].empty()) continue;
      Node root;
      root.model = static_cast<std::uint16_t>(v);
      root.envelope = static_cast<int>(v);
      root.state = initial_state(ctx_, v);
      if (ctx_.start_model != kNone && ctx_.start_model != static_cast<int>(v)) {
        const int sw = ctx_.switch_index[static_cast<std::size_t>(ctx_.start_model)][v];
        if (sw == kNone || ctx_.max_switches() < 1) continue;
        const Switch& s = problem_.switching[static_cast<std::size_t>(sw)];
        root.state.mean += s.jump_mean;
        root.state.variance += s.jump_stddev * s.jump_stddev;
        root.switches = 1;
      }
      const double h = enter_bound(root);
      if (!in_time(enter_time(root))) continue;
      if (root.switches >= ctx_.max_switches()) {
        if (h < cut()) finish(root);
      } else {
        push(root, h);
      }
    }
  }

  // A settled phase start with no more weight, seconds (with a deadline), epochs used, loss
  // mean and variance, entering the same phase (variant, switch into it) with no more switches
  // used, can do whatever this one can at no more weight: this one is dropped. Exact (no
  // rounding); only the latest settled starts of a layer are compared, which keeps the test
  // cheap and catches most of what a full scan would (A* settles similar states together).
  bool dominated(const Node& node) const {
    for (int s = node.switches; s >= 0; --s) {
      const auto it = settled_.find(layer(node.envelope, s));
      if (it == settled_.end()) continue;
      const std::vector<Settled>& list = it->second;
      const std::size_t from = list.size() > kDominanceScan ? list.size() - kDominanceScan : 0;
      for (std::size_t i = list.size(); i-- > from;) {
        const Settled& a = list[i];
        if (a.weight <= node.weight && a.mean <= node.state.mean &&
            a.variance <= node.state.variance && a.epochs <= node.epochs &&
            (!options_.deadline || a.seconds <= node.seconds)) {
          return true;
        }
      }
    }
    return false;
  }

  void settle(const Node& node) {
    settled_[layer(node.envelope, node.switches)].push_back(
        {node.weight, node.seconds, node.state.mean, node.state.variance, node.epochs});
  }

  static std::uint64_t layer(int envelope, int switches) {
    return (static_cast<std::uint64_t>(envelope) << 16) | static_cast<std::uint64_t>(switches);
  }

  // The placements a phase of `epochs` epochs is tried with: the cheapest, or with a deadline
  // every one that is neither dearer nor slower than another.
  // `cheapest` holds the one choice without a deadline. (The Pareto lists stay put: a vector
  // keeps its buffer when the list of lists grows.)
  std::span<const Envelope::Value> choices(const Node& node, int epochs,
                                           Envelope::Value& cheapest) {
    Envelope& env = envelope(node);
    if (options_.deadline) return env.pareto(epochs);
    cheapest = env.at(epochs);
    return {&cheapest, 1};
  }

  bool in_time(double seconds) const {
    return !options_.deadline || seconds <= *options_.deadline * (1 + 1e-12);
  }

  // Every length of the node's phase: a goal, or an end from which to switch.
  void expand(std::uint32_t index) {
    const Node node = nodes_[index];  // copy: pushes reallocate nodes_
    const std::size_t v = node.model;
    const VariantDynamics& dyn = data_.dynamics[v];
    LossState x = node.state;
    const int s = node.switches;
    for (int e = 1; node.epochs + e <= ctx_.horizon(); ++e) {
      ++work_;
      x = step(dyn, x);
      Envelope::Value cheapest;
      const std::span<const Envelope::Value> phases = choices(node, e, cheapest);
      bool alive = false;
      for (const Envelope::Value& phase : phases) {
        alive =
            alive || (node.weight + phase.weight < cut() && in_time(node.seconds + phase.seconds));
      }
      // Longer phases only cost more and take longer.
      if (!alive) break;
      if (goal(x, dyn)) {
        record(node, e, phases);
        break;  // and anything after a goal only costs more
      }
      // Every continuation of this path (more epochs of v, or a switch) is bounded here.
      const CostToGo::Need need = bound_.need(v, s, x.mean, x.variance);
      if (node.epochs + e + need.epochs > ctx_.horizon()) break;
      const double time_need = time_need_at(v, s, x);
      bool any = false;
      for (const Envelope::Value& phase : branches(node, e, phases)) {
        const double weight = node.weight + phase.weight;
        const double seconds = node.seconds + phase.seconds;
        if (!(weight + need.weight < cut()) || !in_time(seconds + time_need)) continue;
        any = true;
        for (const Edge& edge : edges_[v]) {
          const Switch& swi = problem_.switching[static_cast<std::size_t>(edge.index)];
          Node child;
          child.weight = weight;
          child.seconds = seconds;
          child.state = {x.mean + swi.jump_mean, x.variance + swi.jump_stddev * swi.jump_stddev};
          child.epochs = node.epochs + e;
          child.envelope = switch_envelope(edge.index, phase.pool);
          child.parent = index;
          child.parent_epochs = e;
          child.parent_placement = phase.placement;
          child.model = static_cast<std::uint16_t>(edge.to);
          child.switches = static_cast<std::uint16_t>(s + 1);
          const double enter = enter_bound(child);
          if (!(weight + enter < cut()) || !in_time(seconds + enter_time(child))) continue;
          if (child.switches >= ctx_.max_switches()) {
            finish(child);  // the last phase: its cheapest length directly, no node
          } else {
            push(child, weight + enter);
          }
        }
      }
      if (!any) break;
    }
  }

  // The last phase of a path, from its start: the fewest epochs that meet the guarantee (any
  // more only cost more), recorded as a goal when it beats the best.
  void finish(const Node& node) {
    const VariantDynamics& dyn = data_.dynamics[node.model];
    LossState x = node.state;
    for (int e = 1; node.epochs + e <= ctx_.horizon(); ++e) {
      ++work_;
      x = step(dyn, x);
      Envelope::Value cheapest;
      const std::span<const Envelope::Value> phases = choices(node, e, cheapest);
      bool alive = false;
      for (const Envelope::Value& phase : phases) {
        alive =
            alive || (node.weight + phase.weight < cut() && in_time(node.seconds + phase.seconds));
      }
      if (!alive) return;
      if (goal(x, dyn)) {
        record(node, e, phases);
        return;
      }
    }
  }

  // A goal at the end of `node`'s phase of `epochs` epochs: the cheapest choice within the
  // deadline, when it beats the best so far.
  void record(const Node& node, int epochs, std::span<const Envelope::Value> phases) {
    for (const Envelope::Value& phase : phases) {
      const double weight = node.weight + phase.weight;
      const double seconds = node.seconds + phase.seconds;
      if (weight < cut() && in_time(seconds)) {
        goal_ = Goal{weight, seconds, node, epochs, phase.placement};
      }
    }
  }

  // The placements a phase of `epochs` epochs ends in before a switch: the next phase stages its
  // data unless it stays in the pool, so besides the cheapest, the cheapest in each pool whose
  // extra weight the next phase's staging there could make up for. With a deadline, `phases`
  // already holds the fastest for their weight in every pool.
  std::span<const Envelope::Value> branches(const Node& node, int epochs,
                                            std::span<const Envelope::Value> phases) {
    if (options_.deadline || !options_.later_staging) return phases;
    const Envelope::Value& cheapest = phases.front();
    envelope(node).cheapest_per_pool(epochs, branches_);
    std::size_t n = 0;
    for (std::size_t k = 0; k < branches_.size(); ++k) {
      const Envelope::Value& v = branches_[k];
      if (v.pool == cheapest.pool || !(v.weight < cheapest.weight + saving_[k])) continue;
      branches_[n++] = v;
    }
    branches_.resize(n);
    branches_.push_back(cheapest);
    std::span<const Envelope::Value> out{branches_};
    branches_.resize(problem_.pools.size());  // keeps the buffer: `out` stays valid
    return out;
  }

  // Lower bound on the seconds still needed from a state after an epoch of `model`.
  double time_need_at(std::size_t model, int switches, const LossState& x) {
    if (!options_.time_heuristic) return 0;
    return options_.time_heuristic->need(model, switches, x.mean, x.variance).weight;
  }

  // Lower bound on the seconds from a phase start to a goal.
  double enter_time(const Node& node) {
    if (!options_.time_heuristic) return 0;
    const LossState first = step(data_.dynamics[node.model], node.state);
    const double one = envelope(node).least_seconds(1);
    if (goal(first, data_.dynamics[node.model])) return one;
    return one + time_need_at(node.model, node.switches, first);
  }

  // The goal's path as a plan (its placements are the envelopes' choices).
  Plan reconstruct() const {
    Plan plan;
    plan.datasets = data_.datasets;
    auto phase = [&](std::size_t model, int epochs, std::uint32_t placement) {
      const Placement& p = data_.pareto[model][placement];
      return Phase{model, epochs, p.pool, p.workers};
    };
    plan.phases.push_back(phase(goal_->last.model, goal_->epochs, goal_->placement));
    const Node* node = &goal_->last;
    while (node->parent != kRoot) {
      const Node& parent = nodes_[node->parent];
      plan.phases.push_back(phase(parent.model, node->parent_epochs, node->parent_placement));
      node = &parent;
    }
    std::reverse(plan.phases.begin(), plan.phases.end());
    return plan;
  }

  bool report_memory() {
    std::size_t bytes =
        nodes_.capacity() * sizeof(Node) + heap_.capacity() * sizeof(Open) + bound_.memory_bytes();
    for (const Envelope& e : envelopes_) bytes += e.memory_bytes();
    return ctx_.report_memory(MemoryUse::LowerBound, bytes);
  }

  const SearchContext& ctx_;
  const Problem& problem_;
  const SelectionData& data_;
  BoundSearchOptions options_;
  CostToGo& bound_;
  struct Edge {
    std::size_t to = 0;
    int index = 0;  // into problem.switching
  };
  std::vector<Envelope> envelopes_;
  std::vector<bool> built_;     // per envelope
  std::vector<double> saving_;  // per pool (branches())
  std::vector<Envelope::Value> branches_;
  std::vector<std::vector<Edge>> edges_;  // the listed switches out of each variant
  double target_loss_ = 0;                // L* with the evaluator's tolerance
  std::vector<Node> nodes_;
  std::vector<Open> heap_;
  std::optional<Goal> goal_;
  std::size_t work_ = 0;
  bool out_of_memory_ = false;
  struct Settled {
    double weight, seconds, mean, variance;
    int epochs;
  };
  std::unordered_map<std::uint64_t, std::vector<Settled>> settled_;
};

}  // namespace

Heuristic::Heuristic(const SearchContext& ctx, const SelectionData& data, const Weights& weights,
                     double eta, int cells) {
  const LossGrid grid = make_grid(ctx, data, eta);
  table =
      std::make_unique<CostToGo>(ctx, data, weights, grid.mean_base, grid.mean_top, cells, memory);
}

BoundSearchResult bound_search(const SearchContext& ctx, const SelectionData& data,
                               const BoundSearchOptions& options, CostToGo& heuristic) {
  bool placeable = false;
  for (const auto& p : data.pareto) placeable = placeable || !p.empty();
  if (!placeable) {
    BoundSearchResult none;
    none.bound = kInf;
    none.complete = true;
    return none;
  }
  BoundSearch search(ctx, data, options, heuristic);
  return search.run();
}

// ---------------------------------------------------------------------------------------------
// Classes, the deadline multiplier and the branch and bound.

namespace {

// The certificate's effort: classes searched and epochs stepped through at most (the time
// budget applies as well).
constexpr std::size_t kMaxClassEvaluations = 512;
constexpr std::size_t kMaxWork = 5'000'000;
// A class that can still be split on E is searched with at most 1 / kSearchShare of the epochs
// left and 1 / kWideShare of the whole effort; past that its parts, on tighter data, usually
// prove more for less. (Large-family seed 4: two of the eight initial classes took 3.5 of the
// 5 million epochs, and two classes were never searched.)
constexpr std::size_t kSearchShare = 2;
constexpr std::size_t kWideShare = 8;
constexpr int kLambdaSteps = 8;
// The constrained search's effort per class (it branches on placements).
constexpr std::size_t kConstrainedNodes = 50'000;
// exact_schedule's effort: epochs stepped through.
constexpr std::size_t kExactScheduleWork = 1'000'000;
constexpr int kInitialClasses = 8;
// Up to this many datasets every selection is its own class from the start.
constexpr std::size_t kExactSelections = 6;
// A class whose E range and knapsack fraction are both below this (relative) is not refined.
constexpr double kFinest = 1e-4;
// Classes are split on E down to this relative width, then on datasets: a wider range lets the
// dynamics of its best E save an epoch over selections of its least E, and an epoch is a few
// per cent of a plan's cost.
constexpr double kClassWidth = 0.01;
// A class keeps its parent's heuristic while its data stay this close to the parent's (beyond,
// the looser heuristic costs the search more than building one).
constexpr double kHeuristicReach = 0.02;

struct SharedHeuristic {
  std::shared_ptr<Heuristic> heuristic;
  double e_high = 0;   // of the class it was built for
  double samples = 0;  // N of that class
};

struct Evaluated {
  double bound = 0;
  SelectionClass cls;
  int fraction = kNone;
  double fraction_share = 0;
  bool complete = true;
  SharedHeuristic heuristic;  // for cost alone (lambda = 0), handed to the class's parts
  bool operator<(const Evaluated& o) const { return bound > o.bound; }  // min-heap
};

class Certifier {
 public:
  Certifier(const SearchContext& ctx, double target, double eta, std::optional<double> hint,
            std::optional<double> gap)
      : ctx_(ctx),
        problem_(*ctx.problem),
        target_(target),
        gap_(gap),
        eta_(eta),
        hint_(hint),
        figures_(dataset_figures(problem_)) {}

  LowerBound run() {
    LowerBound out;
    const std::size_t n = problem_.datasets.size();
    std::priority_queue<Evaluated> open;
    double e_all = 0, e_min = kInf;
    for (const DatasetFigures& f : figures_) {
      e_all += f.effective;
      if (f.effective > 0) e_min = std::min(e_min, f.effective);
    }
    if (!(e_all > 0)) return out;
    SelectionClass root{std::vector<bool>(n, false), std::vector<bool>(n, false), e_min, e_all};
    if (problem_.fixed_datasets) {
      root.in.assign(n, true);
      root.e_low = root.e_high = e_all;
      open.push(evaluate(root, {}));
    } else if (n <= kExactSelections) {
      for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
        SelectionClass cls = root;
        for (std::size_t d = 0; d < n; ++d) {
          cls.in[d] = (mask >> d) & 1;
          cls.out[d] = !cls.in[d];
        }
        if (clip(cls)) open.push(evaluate(cls, {}));
      }
    } else {
      const double ratio = std::pow(e_all / e_min, 1.0 / kInitialClasses);
      double lo = e_min;
      for (int i = 0; i < kInitialClasses; ++i) {
        SelectionClass cls = root;
        cls.e_low = lo;
        cls.e_high = i + 1 == kInitialClasses ? e_all : lo * ratio;
        lo = cls.e_high;
        open.push(evaluate(cls, {}));
      }
    }
    bool complete = true;
    std::vector<Evaluated> final_classes;
    while (!open.empty() && open.top().bound < target_) {
      if (evaluations_ >= kMaxClassEvaluations || work_left() == 0 || ctx_.out_of_budget()) {
        complete = false;
        break;
      }
      Evaluated top = open.top();
      open.pop();
      std::optional<std::vector<SelectionClass>> parts = split(top);
      if (!parts) {
        // Nothing left to refine: the class's bound is what it is.
        complete = complete && top.complete;
        top.heuristic = {};
        final_classes.push_back(std::move(top));
        continue;
      }
      // Every selection of the class is in one of its parts: with none, the class has none.
      for (SelectionClass& part : *parts) {
        Evaluated e = evaluate(part, top.heuristic);
        // A part's selections are the class's: the class's bound holds for them too (a part's own
        // search may have been cut by the effort cap before it proved as much).
        e.bound = std::max(e.bound, top.bound);
        open.push(std::move(e));
      }
    }
    double bound = target_;
    if (!open.empty()) bound = std::min(bound, open.top().bound);
    for (const Evaluated& e : final_classes) bound = std::min(bound, e.bound);
    out.cost = bound;
    out.complete = complete && !ctx_.out_of_budget();
    out.classes = evaluations_;
    out.searches = searches_;
    out.work = work_;
    return out;
  }

 private:
  // The class's datasets reachable: e_low and e_high clipped to what `in` and the free datasets
  // can give. False when the class is empty.
  bool clip(SelectionClass& cls) const {
    decide_forced(figures_, cls);
    double e_in = 0, e_free = 0, e_smallest_free = kInf;
    bool any_in = false;
    for (std::size_t d = 0; d < figures_.size(); ++d) {
      if (cls.in[d]) {
        e_in += figures_[d].effective;
        any_in = true;
      } else if (!cls.out[d]) {
        e_free += figures_[d].effective;
        e_smallest_free = std::min(e_smallest_free, figures_[d].effective);
      }
    }
    const double least = any_in ? e_in : e_in + e_smallest_free;
    cls.e_low = std::max(cls.e_low, least);
    cls.e_high = std::min(cls.e_high, e_in + e_free);
    return cls.e_low <= cls.e_high * (1 + 1e-12);
  }

  // Refines the relaxation where it is loosest: the E range (the dynamics of its best E) or
  // the dataset the samples knapsack took a fraction of (in, or out). The parts that hold a
  // selection (none: the class holds none, its relaxation reached E where no selection of whole
  // datasets does); nullopt when nothing is worth refining.
  std::optional<std::vector<SelectionClass>> split(const Evaluated& e) const {
    std::vector<SelectionClass> parts;
    const SelectionClass& cls = e.cls;
    const double width = cls.e_high / cls.e_low - 1;
    if (std::max(width, e.fraction_share) < kFinest) {
      // E and N are as tight as they get; the floor may still take less label noise than any
      // member has: split on the free dataset with the most wrong labels.
      int noisy = kNone;
      for (std::size_t d = 0; d < figures_.size(); ++d) {
        if (cls.in[d] || cls.out[d] || !(figures_[d].wrong > 0)) continue;
        if (noisy == kNone || figures_[d].wrong > figures_[static_cast<std::size_t>(noisy)].wrong) {
          noisy = static_cast<int>(d);
        }
      }
      if (noisy == kNone) return std::nullopt;
      SelectionClass with = cls, without = cls;
      with.in[static_cast<std::size_t>(noisy)] = true;
      without.out[static_cast<std::size_t>(noisy)] = true;
      for (SelectionClass* part : {&with, &without}) {
        if (clip(*part)) parts.push_back(*part);
      }
      return parts;
    }
    if (width > kClassWidth || e.fraction == kNone) {
      const double mid = std::sqrt(cls.e_low * cls.e_high);
      SelectionClass low = cls, high = cls;
      low.e_high = mid;
      high.e_low = mid;
      for (SelectionClass* part : {&low, &high}) {
        if (clip(*part)) parts.push_back(*part);
      }
      return parts;
    }
    const auto f = static_cast<std::size_t>(e.fraction);
    SelectionClass with = cls, without = cls;
    with.in[f] = true;
    without.out[f] = true;
    for (SelectionClass* part : {&with, &without}) {
      if (clip(*part)) parts.push_back(*part);
    }
    return parts;
  }

  Evaluated evaluate(const SelectionClass& cls, const SharedHeuristic& parent) {
    ++evaluations_;
    Evaluated out;
    out.cls = cls;
    if (ctx_.out_of_budget_now()) {
      out.complete = false;  // bound 0: nothing proved for this class
      return out;
    }
    const SelectionData data = class_data(ctx_, figures_, cls, &out.fraction, &out.fraction_share);
    wide_ = cls.e_high / cls.e_low - 1 > kClassWidth;
    BoundSearchOptions options;
    options.eta = eta_;
    options.cutoff = target_;
    // On one selection the later phases' staging is known: the bound counts it, and the
    // minimiser is then the selection's cheapest plan.
    options.later_staging = exact(cls);
    // The parent's tables while this class's data are close to those they were built for.
    if (parent.heuristic && data.effective >= parent.e_high * (1 - kHeuristicReach) &&
        data.samples <= parent.samples * (1 + kHeuristicReach)) {
      out.heuristic = parent;
    } else {
      out.heuristic = {
          std::make_shared<Heuristic>(ctx_, data, options.weights, eta_, options.cells),
          data.effective, data.samples};
    }
    BoundSearchResult r = search(data, options, *out.heuristic.heuristic->table);
    consider(cls, r);
    out.bound = r.bound;
    out.complete = r.complete;
    const auto& deadline = problem_.target.deadline_seconds;
    if (!deadline || r.bound >= target_ || r.goal_seconds < 0 || r.goal_seconds <= *deadline) {
      return out;  // no deadline, proved, or the cheapest plan of the class meets it anyway
    }
    // The deadline binds in the relaxation: maximise the Lagrangian bound over lambda (concave;
    // the minimiser's time against T is its slope).
    const double T = *deadline;
    double lambda = hint_.value_or(0);
    if (!(lambda > 0)) lambda = std::max(r.bound / std::max(r.goal_seconds, 1.0), 1e-12);
    double lo = 0, hi = kInf;
    const LossGrid grid = make_grid(ctx_, data, eta_);
    for (int i = 0; i < kLambdaSteps; ++i) {
      options.weights = Weights{1, lambda};
      options.cutoff = target_ + lambda * T;
      CostToGo heuristic(ctx_, data, options.weights, grid.mean_base, grid.mean_top, options.cells,
                         weighted_tables_);
      const BoundSearchResult l = search(data, options, heuristic);
      consider(cls, l);
      const double value = l.bound - lambda * T;
      if (value > out.bound) {
        out.bound = value;
        out.complete = l.complete;
      }
      if (out.bound >= target_ || l.goal_seconds < 0 || !l.complete) break;
      if (l.goal_seconds > T) {
        lo = lambda;  // the minimiser is too slow: weigh time more
      } else {
        hi = lambda;
      }
      lambda = std::isfinite(hi) ? (lo > 0 ? std::sqrt(lo * hi) : hi / 4) : lambda * 4;
    }
    if (out.bound >= target_ || !exact(cls)) return out;
    // On one selection, where the Lagrangian bound falls short (its weight reaches only plans
    // on the convex hull of cost and time), the search with the deadline itself: exact, and its
    // minimiser is a plan.
    BoundSearchOptions constrained;
    constrained.eta = eta_;
    constrained.cutoff = target_;
    constrained.deadline = T;
    constrained.max_nodes = kConstrainedNodes;
    constrained.later_staging = true;
    CostToGo seconds(ctx_, data, Weights{0, 1}, grid.mean_base, grid.mean_top, constrained.cells,
                     weighted_tables_);
    constrained.time_heuristic = &seconds;
    const BoundSearchResult c = search(data, constrained, *out.heuristic.heuristic->table);
    consider(cls, c);
    if (c.bound > out.bound) {
      out.bound = c.bound;
      out.complete = c.complete;
    }
    return out;
  }

  static bool exact(const SelectionClass& cls) {
    for (std::size_t d = 0; d < cls.in.size(); ++d) {
      if (!cls.in[d] && !cls.out[d]) return false;
    }
    return true;
  }

  // A bound search's minimiser on a class of one selection is a real plan (its later phases'
  // staging aside): one that the exact evaluator accepts and that is cheaper than the plan
  // being certified improves it.
  void consider(const SelectionClass& cls, const BoundSearchResult& r) {
    if (!r.plan || !exact(cls)) return;
    const Figures figures = solver::evaluate(problem_, *r.plan);
    if (!figures.feasible) return;
    if (!found_ || figures.cost < found_cost_) {
      found_ = *r.plan;
      found_cost_ = figures.cost;
      // The plan certified is this one now: the bound need prove only `gap` below it.
      if (gap_) target_ = std::min(target_, found_cost_ * (1 - *gap_));
    }
  }

 public:
  const std::optional<Plan>& found() const { return found_; }

 private:
  BoundSearchResult search(const SelectionData& data, BoundSearchOptions options,
                           CostToGo& heuristic) {
    ++searches_;
    options.max_work =
        wide_ ? std::min(kMaxWork / kWideShare, work_left() / kSearchShare) : work_left();
    BoundSearchResult r = bound_search(ctx_, data, options, heuristic);
    work_ += r.work;
    return r;
  }

  std::size_t work_left() const { return work_ < kMaxWork ? kMaxWork - work_ : 0; }

  const SearchContext& ctx_;
  const Problem& problem_;
  double target_;
  std::optional<double> gap_;
  bool wide_ = true;  // the class being searched is wider in E than kClassWidth
  double eta_;
  std::optional<double> hint_;
  std::vector<DatasetFigures> figures_;
  std::size_t evaluations_ = 0;
  std::size_t searches_ = 0;
  std::size_t work_ = 0;
  std::optional<Plan> found_;
  double found_cost_ = kInf;
  // The tables of the Lagrangian weights' and the time's heuristics: those of one class share
  // everything but the weight tables (CostToGo::Memory).
  CostToGo::Memory weighted_tables_;
};

}  // namespace

std::optional<Plan> exact_schedule(const SearchContext& ctx, const SelectionData& data,
                                   double cutoff, double eta) {
  BoundSearchOptions options;
  options.eta = eta;
  options.cutoff = cutoff;
  options.max_work = kExactScheduleWork;
  options.later_staging = true;
  std::unique_ptr<Heuristic> seconds;
  if (const auto& deadline = ctx.problem->target.deadline_seconds) {
    options.deadline = *deadline;
    options.max_nodes = kConstrainedNodes;
    seconds = std::make_unique<Heuristic>(ctx, data, Weights{0, 1}, eta, options.cells);
    options.time_heuristic = seconds->table.get();
  }
  const Heuristic heuristic(ctx, data, options.weights, eta, options.cells);
  BoundSearchResult r = bound_search(ctx, data, options, *heuristic.table);
  ctx.report_memory(MemoryUse::LowerBound, 0);
  return std::move(r.plan);
}

LowerBound certify_lower_bound(const SearchContext& ctx, double target, double eta,
                               std::optional<double> lambda_hint, std::optional<double> gap) {
  if (ctx.problem->datasets.empty() || ctx.problem->models.empty()) return {};
  Certifier certifier(ctx, target, eta, lambda_hint, gap);
  LowerBound out = certifier.run();
  out.plan = certifier.found();
  ctx.report_memory(MemoryUse::LowerBound, 0);
  return out;
}

}  // namespace depl::solver::internal
