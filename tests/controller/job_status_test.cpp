// The job's status as typed values: what is written reads back the same, what a user may have
// edited reads leniently, and what this version does not know is kept.
#include "depl/controller/job_status.hpp"

#include <gtest/gtest.h>
#include <fstream>
#include <sstream>

#include "depl/common/yaml_json.hpp"
#include "depl/devcluster/structural_schema.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

PlanRecord record() {
  PlanRecord r;
  r.datasets = {"a", "b"};
  r.phases = {{"small", 4, "a100", 2}, {"full", 6, "a100", 4}};
  r.revision = 1;
  return r;
}

JobStatus a_running_status() {
  JobStatus s;
  s.phase = phases::kRunning;
  s.message = "phase 1/2";
  s.observed_generation = 3;
  s.started_at = "2026-11-22T05:00:00Z";
  set_condition(s, conditions::kPlanned, true, "Planned", "plan 1", 3, "2026-11-22T05:00:00Z");
  s.plan = record();
  s.plan->cost = 1.25;
  s.plan->lower_bound = 1.0;
  s.plan->budget_limited = true;
  s.planned_at_epoch = 2;
  s.progress.epoch = 3;
  s.progress.loss = 0.5;
  s.progress.history = {{3, 0, 0.5}};
  s.progress.round = 1;
  s.progress.stop_after_epoch = 4;
  s.progress.model = "small";
  s.progress.pool = "a100";
  s.failed_pods = {"uid-1"};
  s.pool_figures["a100"] = {"A100", 1000, 3.6, 1e9, 1e8, 30, {{"t4", 1e8}}};
  s.pool_figures["spot"] = {"A100", 1000, 1.2, 1e9, 1e8, 30, {}, solver::CapacityType::Spot, 0.5};
  s.progress.preemptions = 2;
  s.progress.lost_seconds = 95.5;
  s.progress.checkpointed_at = "2026-11-22T05:40:00Z";
  s.preemptions["spot"] = {2, "2026-11-22T05:30:00Z", "node spot-0: gone", 95.5, 7200};
  s.progress_token = ProgressTokenRecord{"mnist-progress-a1b2c3d4", "3f7a"};
  return s;
}

TEST(JobStatus, WhatIsEncodedDecodesTheSame) {
  const JobStatus status = a_running_status();
  const json encoded = encode_status(status);
  EXPECT_EQ(decode_status(encoded), status);
  EXPECT_EQ(encode_status(decode_status(encoded)), encoded);
  EXPECT_EQ(encoded["plan"]["predicted"]["cost"], 1.25);
  EXPECT_EQ(encoded["progress"]["stopAfterEpoch"], 4);
  EXPECT_EQ(encoded["poolFigures"]["a100"]["interPool"]["t4"], 1e8);
  EXPECT_EQ(encoded["poolFigures"]["a100"]["capacityType"], "OnDemand");
  EXPECT_EQ(encoded["poolFigures"]["spot"]["capacityType"], "Spot");
  EXPECT_EQ(encoded["poolFigures"]["spot"]["interruptionsPerHour"], 0.5);
  EXPECT_EQ(encoded["progress"]["preemptions"], 2);
  EXPECT_EQ(encoded["preemptions"]["spot"], (json{{"count", 2},
                                                  {"lastTime", "2026-11-22T05:30:00Z"},
                                                  {"lastCause", "node spot-0: gone"},
                                                  {"lostSeconds", 95.5},
                                                  {"workerSeconds", 7200}}));
  EXPECT_EQ(encoded["progress"]["lostSeconds"], 95.5);
  EXPECT_EQ(encoded["progress"]["checkpointedAt"], "2026-11-22T05:40:00Z");
  EXPECT_EQ(encoded["plan"]["predicted"]["lowerBound"], 1.0);
  EXPECT_EQ(encoded["plan"]["predicted"]["gap"], 0.2);
  EXPECT_EQ(encoded["plan"]["budgetLimited"], true);
  EXPECT_EQ(encoded["progressToken"],
            (json{{"secret", "mnist-progress-a1b2c3d4"}, {"sha256", "3f7a"}}));
  EXPECT_FALSE(encoded.contains("replanRequested")) << "written only when asked for";
  EXPECT_FALSE(encoded.contains("finishedAt"));
}

// The status schema of crds/ (the chart's copy is the same file), with every
// x-kubernetes-preserve-unknown-fields taken away: what it declares, and nothing else.
json declared_status_schema() {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/crds/depl.dev_dependabletrainingjobs.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto crd = yaml_to_json(text.str());
  EXPECT_TRUE(crd.has_value());
  if (!crd) return json::object();
  json schema = (*crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
  auto strip = [](auto& self, json& node) -> void {
    if (!node.is_object()) return;
    node.erase("x-kubernetes-preserve-unknown-fields");
    for (auto& [key, child] : node.items()) self(self, child);
  };
  strip(strip, schema);
  return schema;
}

// Every field the controller writes in a status is declared by the CRD, so an API server that
// prunes by the structural schema (the dev cluster does, as a real one) keeps it on its own
// terms, not only through the status's x-kubernetes-preserve-unknown-fields (which is there for
// the keys of other versions): a status with every field set loses nothing to the declared
// schema and validates against it. Failed before the CRD declared status.preemptions (and the
// other fields beyond plan, progress, queue and progressToken).
TEST(JobStatus, TheCrdDeclaresEveryFieldTheControllerWrites) {
  JobStatus status = a_running_status();
  status.finished_at = "2026-11-22T06:00:00Z";
  status.replan_requested = true;
  status.progress.unreachable = UnreachableRecord{1, 3, 1};
  status.queue = QueueRecord{"2026-11-22T05:01:00Z", 30, true};
  json written = encode_status(status);
  const json schema = declared_status_schema();
  json pruned = written;
  EXPECT_EQ(devcluster::prune_unknown_fields(pruned, schema), std::vector<std::string>{});
  EXPECT_EQ(pruned, written);
  for (const auto& e : devcluster::validate_against_schema(written, schema)) {
    ADD_FAILURE() << e.field << ": " << e.message;
  }
  // The declared schema prunes at all: a field nobody declared goes.
  json extra = written;
  extra["preemptions"]["spot"]["undeclared"] = 1;
  EXPECT_EQ(devcluster::prune_unknown_fields(extra, schema),
            std::vector<std::string>{"preemptions.spot.undeclared"});
}

TEST(JobStatus, AnEmptyStatusEncodesAsAnEmptyObject) {
  EXPECT_EQ(encode_status(JobStatus{}), json::object());
  EXPECT_EQ(decode_status(json()), JobStatus{});
  EXPECT_EQ(decode_status(json::array({1, 2})), JobStatus{});
  // A planned job's progress says nothing of losses before a worker reported one.
  JobStatus planned;
  planned.plan = record();
  const json progress = encode_status(planned)["progress"];
  EXPECT_FALSE(progress.contains("history")) << progress.dump();
  EXPECT_FALSE(progress.contains("loss")) << progress.dump();
}

// status.display holds what the printer columns and `kubectl describe` show: loss and P(target)
// to 4 significant digits, cost to 3. The figures themselves stay unrounded, so the plan's gap
// is still (cost - lowerBound) / cost of the exact cost.
TEST(JobStatus, DisplayRoundsForPeopleAndLeavesTheFiguresExact) {
  JobStatus s = a_running_status();
  s.plan->cost = 1.2440797475555556;
  s.plan->lower_bound = 1.2;
  s.plan->probability = 0.90123456;
  s.progress.loss = 0.444352511658695;
  s.progress.cost = 1.2440797475555556;
  const json encoded = encode_status(s);
  EXPECT_EQ(encoded["display"],
            (json{{"loss", "0.4444"}, {"probability", "0.9012"}, {"cost", "1.24"}}));
  EXPECT_EQ(encoded["plan"]["predicted"]["cost"], 1.2440797475555556);
  EXPECT_EQ(encoded["plan"]["predicted"]["probability"], 0.90123456);
  EXPECT_EQ(encoded["progress"]["loss"], 0.444352511658695);
  EXPECT_EQ(encoded["progress"]["cost"], 1.2440797475555556);
  const double cost = encoded["plan"]["predicted"]["cost"].get<double>();
  EXPECT_EQ(encoded["plan"]["predicted"]["gap"].get<double>(), (cost - 1.2) / cost);
  // Derived, never read back: an edited display is not kept as an unknown key.
  json edited = encoded;
  edited["display"]["cost"] = "9";
  EXPECT_EQ(decode_status(edited), s);
  EXPECT_EQ(encode_status(decode_status(edited))["display"]["cost"], "1.24");
  // Before a plan and a report there is nothing to show.
  EXPECT_FALSE(encode_status(JobStatus{}).contains("display"));
  JobStatus planned;
  planned.plan = record();
  planned.plan->probability = 0.95;
  EXPECT_EQ(encode_status(planned)["display"], (json{{"probability", "0.9500"}, {"cost", "0"}}));
}

// status.queue is written from the first wait for admission on, and not before.
TEST(JobStatus, TheQueueRecordIsWrittenOnceTheJobHasWaited) {
  JobStatus status = a_running_status();
  EXPECT_FALSE(encode_status(status).contains("queue"));
  status.queue = QueueRecord{"2026-11-22T05:01:00Z", 30, true};
  const json encoded = encode_status(status);
  EXPECT_EQ(encoded["queue"],
            json({{"since", "2026-11-22T05:01:00Z"}, {"waitedSeconds", 30}, {"replanned", true}}));
  EXPECT_EQ(decode_status(encoded), status);
  // Edited: what cannot be read is absent.
  json edited = encoded;
  edited["queue"] = {{"since", "soon"}, {"waitedSeconds", "long"}};
  EXPECT_EQ(decode_status(edited).queue, QueueRecord{});
  edited["queue"] = "queued";
  EXPECT_EQ(decode_status(edited).queue, std::nullopt);
}

// A replica of another version may write fields this one does not know: they stay.
TEST(JobStatus, KeysThisVersionDoesNotKnowAreKept) {
  json written = encode_status(a_running_status());
  written["reservation"] = {{"position", 3}};
  written["checkpoints"] = json::array({"spot"});
  JobStatus status = decode_status(written);
  status.progress.epoch = 4;
  const json again = encode_status(status);
  EXPECT_EQ(again["reservation"], written["reservation"]);
  EXPECT_EQ(again["checkpoints"], written["checkpoints"]);
  EXPECT_EQ(again["progress"]["epoch"], 4);
}

TEST(JobStatus, EditedFieldsReadAsAbsent) {
  json written = encode_status(a_running_status());
  written["phase"] = 5;
  written["observedGeneration"] = "3";
  written["conditions"].push_back("not a condition");
  written["failedPods"].push_back(7);
  written["poolFigures"]["t4"] = "junk";
  written["preemptions"]["od"] = 3;
  written["replanRequested"] = "yes";
  const JobStatus status = decode_status(written);
  EXPECT_EQ(status.phase, "");
  EXPECT_EQ(status.observed_generation, std::nullopt);
  EXPECT_EQ(status.conditions.size(), 1u);
  EXPECT_EQ(status.failed_pods, std::vector<std::string>{"uid-1"});
  EXPECT_EQ(status.pool_figures.count("t4"), 0u);
  EXPECT_EQ(status.preemptions.count("od"), 0u);
  EXPECT_EQ(status.preemptions.at("spot").count, 2);
  EXPECT_FALSE(status.replan_requested);
  EXPECT_TRUE(status.unknown.empty()) << status.unknown.dump();
}

TEST(JobStatus, PoolsComeBackFromTheirFiguresWithoutGpus) {
  solver::Pool pool{"a100", "A100", 8, 1000, 3.6, 1e9, 1e8, 30, {{"t4", 1e8}}, 2, 4};
  auto back = pool_from_figures("a100", figures_of(pool));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->gpus, 0);
  EXPECT_EQ(back->gpu_gflops, 1000);
  EXPECT_EQ(back->inter_pool, pool.inter_pool);
  EXPECT_EQ(back->capacity_type, solver::CapacityType::OnDemand);
  EXPECT_FALSE(pool_from_figures("x", PoolFigures{}).has_value()) << "no speed, no pool";
  // A spot pool whose nodes are all gone is still priced with its interruptions.
  pool.capacity_type = solver::CapacityType::Spot;
  pool.interruptions_per_hour = 0.5;
  auto spot = pool_from_figures("a100", figures_of(pool));
  ASSERT_TRUE(spot.has_value());
  EXPECT_EQ(spot->capacity_type, solver::CapacityType::Spot);
  EXPECT_EQ(spot->interruptions_per_hour, 0.5);
}

TEST(JobStatus, RoundTripsAndConditions) {
  PlanRecord r = record();
  r.cost = 1.5;
  auto back = plan_from_json(json{{"plan", to_json(r)}});
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->phases, r.phases);
  EXPECT_DOUBLE_EQ(back->cost, 1.5);
  EXPECT_FALSE(plan_from_json(json{{"plan", {{"phases", "junk"}}}}).has_value());

  ProgressRecord pr;
  pr.epoch = 4;
  pr.loss = 0.7;
  pr.history = {{4, 0, 0.7}};
  auto pback = progress_from_json(json{{"progress", to_json(pr)}});
  EXPECT_EQ(pback.epoch, 4);
  EXPECT_DOUBLE_EQ(*pback.loss, 0.7);
  EXPECT_EQ(pback.history.size(), 1u);

  JobStatus typed;
  EXPECT_TRUE(set_condition(typed, "Planned", true, "Planned", "ok", 1, "t1"));
  EXPECT_FALSE(set_condition(typed, "Planned", true, "Planned", "ok", 1, "t2"));
  const json status = encode_status(typed);
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], "t1");
  EXPECT_TRUE(set_condition(typed, "Planned", false, "Infeasible", "no", 2, "t3"));
  const json flipped = encode_status(typed);
  EXPECT_EQ(flipped["conditions"][0]["lastTransitionTime"], "t3");
  EXPECT_EQ(flipped["conditions"][0]["observedGeneration"], 2);
  EXPECT_EQ(condition_status(flipped, "Planned"), false);
  EXPECT_EQ(condition_status(flipped, "Valid"), std::nullopt);
  EXPECT_EQ(typed.condition_is("Planned"), false);
}

// An edited status with a number too large for an int reads as absent: converting it would be
// undefined behaviour (fuzz/progress_endpoint_fuzz.cpp under UBSan covers it too).
TEST(JobStatus, NumbersThatDoNotFitAnIntReadAsAbsent) {
  const auto status = json::parse(R"({
      "plan": {"datasets": ["a"], "revision": 1e20,
               "phases": [{"model": "m", "epochs": 2.0, "pool": "p", "workers": 3}]},
      "progress": {"phase": 1e10, "epoch": 18446744073709551615, "stopAfterEpoch": -1e300,
                   "history": [{"epoch": 1e10, "phase": 2147483648, "loss": 0.5}]}})");
  auto plan = plan_from_json(status);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->revision, 0);
  EXPECT_EQ(plan->phases[0].epochs, 2);
  ProgressRecord progress = progress_from_json(status);
  EXPECT_EQ(progress.phase, 0);
  EXPECT_EQ(progress.epoch, 0);
  EXPECT_EQ(progress.stop_after_epoch, 0);
  ASSERT_EQ(progress.history.size(), 1u);
  EXPECT_EQ(progress.history[0].epoch, 0);
  EXPECT_EQ(progress.history[0].phase, 0);
  EXPECT_DOUBLE_EQ(progress.history[0].loss, 0.5);
}

}  // namespace
}  // namespace depl::controller
