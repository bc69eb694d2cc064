// decide() on the quickstart job against a hand-built cluster view: the reconcile logic as a
// pure function, step by step through a job's life.
#include "depl/controller/job_decision.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "decision_fixture.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/creation_rejection.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/pod_cache.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/parse.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

using fixture::apply;
using fixture::has_event;
using fixture::options;
using fixture::shared;

JobView view_with_nodes() {
  json job = fixture::quickstart_job();
  job["metadata"]["creationTimestamp"] = "2026-11-22T05:00:00Z";
  return fixture::job_view(std::move(job), {fixture::gpu_node("a100-0", "a100", 8, 120000, 2.5),
                                            fixture::gpu_node("a100-1", "a100", 8, 120000, 2.5),
                                            fixture::gpu_node("t4-0", "t4", 1, 30000, 0.35),
                                            fixture::gpu_node("t4-1", "t4", 1, 30000, 0.35)});
}

void set_pods_phase(JobView& v, const std::string& phase) {
  for (auto& p : v.owned_pods) p["status"]["phase"] = phase;
}

void report(JobView& v, int epoch, double loss) {
  json& p = v.job["status"]["progress"];
  p["epoch"] = epoch;
  p["loss"] = loss;
}

std::string condition_message(const json& status, const std::string& type) {
  return fixture::condition_field(status, type, "message");
}

TEST(JobDecision, PlansThenStartsTheFirstPhase) {
  JobView v = view_with_nodes();
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  const json& s = *d.status;
  EXPECT_EQ(condition_status(s, "Valid"), true);
  EXPECT_EQ(condition_status(s, "Planned"), true) << s.dump(2);
  EXPECT_EQ(s["phase"], "Running");
  EXPECT_TRUE(d.ensure_token_secret);
  EXPECT_TRUE(d.replanned);
  EXPECT_TRUE(has_event(d, "Planned"));
  EXPECT_TRUE(has_event(d, "PhaseStarted"));
  auto plan = plan_from_json(s);
  ASSERT_TRUE(plan.has_value());
  ASSERT_FALSE(plan->phases.empty());
  // One rendezvous Service and one pod per worker of phase 0.
  ASSERT_EQ(d.create.size(), 1u + static_cast<std::size_t>(plan->phases[0].workers));
  EXPECT_EQ(d.create[0]["kind"], "Service");
  EXPECT_EQ(d.create[1]["metadata"]["name"], "quickstart-p0-w0");
  EXPECT_EQ(d.create[1]["spec"]["nodeSelector"]["depl.dev/pool"], plan->phases[0].pool);
  // Its pods read the token from the Secret the executor creates under the view's name.
  const json& env = d.create[1]["spec"]["containers"][0]["env"];
  const auto token = std::find_if(env.begin(), env.end(),
                                  [](const json& e) { return e["name"] == "DEPL_PROGRESS_TOKEN"; });
  ASSERT_NE(token, env.end());
  EXPECT_EQ((*token)["valueFrom"]["secretKeyRef"]["name"], v.new_token_secret);
  // Once the status records a token, pods use its Secret and no other is made.
  apply(v, d);
  v.new_token_secret.clear();
  v.owned_pods.clear();
  const Decision again = decide(v, options());
  EXPECT_FALSE(again.ensure_token_secret);
  ASSERT_FALSE(again.create.empty());
  const json& again_env = again.create.back()["spec"]["containers"][0]["env"];
  const auto again_token = std::find_if(again_env.begin(), again_env.end(), [](const json& e) {
    return e["name"] == "DEPL_PROGRESS_TOKEN";
  });
  ASSERT_NE(again_token, again_env.end());
  EXPECT_EQ(*again_token, *token);
  EXPECT_EQ(s["observedGeneration"], 1);
  EXPECT_DOUBLE_EQ(s["plan"]["predicted"]["probability"].get<double>(), plan->probability);
  EXPECT_GE(plan->probability, 0.9);
}

// The plan in the status carries the solver's certificate and says whether its budget ran out;
// the controller's budget reaches the solver.
TEST(JobDecision, ThePlanCarriesItsLowerBoundAndWhetherTheBudgetRanOut) {
  JobView v = view_with_nodes();
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  const json& predicted = (*d.status)["plan"]["predicted"];
  ASSERT_TRUE(predicted.contains("lowerBound")) << predicted.dump();
  const double cost = predicted["cost"].get<double>();
  EXPECT_GT(predicted["lowerBound"].get<double>(), 0.0);
  EXPECT_LE(predicted["lowerBound"].get<double>(), cost);
  EXPECT_DOUBLE_EQ(predicted["gap"].get<double>(),
                   (cost - predicted["lowerBound"].get<double>()) / cost);
  EXPECT_EQ((*d.status)["plan"]["budgetLimited"], false);
  EXPECT_NE(condition_message(*d.status, "Planned")
                .find(fmt::format("the least possible cost is at least {:.4g} (certified gap",
                                  predicted["lowerBound"].get<double>())),
            std::string::npos)
      << condition_message(*d.status, "Planned");
  const PlanRecord record = *plan_from_json(*d.status);
  EXPECT_EQ(record.lower_bound, predicted["lowerBound"].get<double>());
  EXPECT_FALSE(record.budget_limited);

  // A memory budget too small for any graph search: the one-phase plans are all there is.
  DecideOptions tight = options();
  tight.solve.budget.memory_bytes = 1024;
  d = decide(view_with_nodes(), tight);
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ((*d.status)["plan"]["budgetLimited"], true) << d.status->dump(1);
  EXPECT_TRUE(plan_from_json(*d.status)->budget_limited);
  EXPECT_NE(condition_message(*d.status, "Planned").find("the solve's budget ran out"),
            std::string::npos);
}

TEST(JobDecision, DecidingAgainChangesNothing) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  Decision again = decide(v, options());
  EXPECT_FALSE(again.status.has_value()) << again.status->dump(2);
  EXPECT_TRUE(again.create.empty());
  EXPECT_TRUE(again.remove.empty());
  EXPECT_FALSE(again.replanned);
}

// The round was started (status written) and the API server refused its pods: without the
// reconciler's note the retry starts another round; with it, the same round's pods are created
// again, with no PhaseStarted and no status change. A note for another round changes nothing.
TEST(JobDecision, ARoundWhosePodsWereRefusedIsNotStartedAgain) {
  JobView v = view_with_nodes();
  Decision first = decide(v, options());
  ASSERT_TRUE(first.status);
  v.job["status"] = *first.status;  // written; no pod or Service was created
  const json& progress = (*first.status)["progress"];
  ASSERT_EQ(progress.value("round", 0), 1);

  Decision unaware = decide(v, options());
  ASSERT_TRUE(unaware.status);
  EXPECT_EQ((*unaware.status)["progress"].value("round", 0), 2);
  EXPECT_TRUE(has_event(unaware, "PhaseStarted"));

  JobView::Round other_round{progress.value("phase", 0), 7};
  v.round_without_pods = other_round;
  EXPECT_TRUE(has_event(decide(v, options()), "PhaseStarted"));

  v.round_without_pods = JobView::Round{progress.value("phase", 0), 1};
  Decision retry = decide(v, options());
  EXPECT_FALSE(retry.status.has_value()) << retry.status->dump(2);
  EXPECT_FALSE(has_event(retry, "PhaseStarted"));
  ASSERT_EQ(retry.create.size(), first.create.size());
  for (std::size_t i = 0; i < retry.create.size(); ++i)
    EXPECT_EQ(retry.create[i]["metadata"]["name"], first.create[i]["metadata"]["name"]);
}

TEST(JobDecision, InvalidSpecIsReportedWithTheFieldAndRunsNothing) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  v.job["spec"]["models"][1]["lossProfile"]["decayPerEpoch"] = 1.2;
  v.job["metadata"]["generation"] = 2;
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(condition_status(*d.status, "Valid"), false);
  EXPECT_NE(
      (*d.status)["message"].get<std::string>().find("spec.models[1].lossProfile.decayPerEpoch"),
      std::string::npos);
  EXPECT_TRUE(has_event(d, "InvalidSpec"));
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(d.remove.size(), v.owned_pods.size());
  apply(v, d);
  // Fixing the spec recovers the job.
  v.job["spec"]["models"][1]["lossProfile"]["decayPerEpoch"] = 0.82;
  v.job["metadata"]["generation"] = 3;
  Decision fixed = decide(v, options());
  EXPECT_EQ(condition_status(*fixed.status, "Valid"), true);
  EXPECT_EQ(condition_status(*fixed.status, "Planned"), true);
  EXPECT_FALSE(fixed.create.empty());
}

// A job the API server stores past the solver's limits (its schema does not enforce them) is
// valid and kept: it is not planned, and its status names the field, until the spec is brought
// within them.
TEST(JobDecision, AJobPastTheSolversLimitsIsKeptUnplannedNamingTheField) {
  JobView v = view_with_nodes();
  v.job["spec"]["training"]["maxEpochs"] = 5000;
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(condition_status(*d.status, "Valid"), true) << d.status->dump(2);
  EXPECT_EQ(condition_status(*d.status, "Planned"), false);
  const std::string message = condition_message(*d.status, "Planned");
  EXPECT_NE(message.find("spec.training.maxEpochs: must be in [1,1000], got 5000"),
            std::string::npos)
      << message;
  EXPECT_EQ((*d.status)["phase"], "Pending");
  EXPECT_NE((*d.status)["message"].get<std::string>().find("spec.training.maxEpochs"),
            std::string::npos);
  EXPECT_TRUE(has_event(d, "PastSolverLimits"));
  EXPECT_FALSE(d.status->contains("plan"));
  EXPECT_TRUE(d.create.empty());
  EXPECT_FALSE(d.delete_job);
  EXPECT_LT(d.solve_seconds, 0) << "the solver ran";
  apply(v, d);
  const Decision again = decide(v, options());
  EXPECT_FALSE(has_event(again, "PastSolverLimits")) << "the Warning is told once";
  EXPECT_FALSE(again.status.has_value());

  v.job["spec"]["training"]["maxEpochs"] = 1000;
  v.job["metadata"]["generation"] = 2;
  const Decision fixed = decide(v, options());
  ASSERT_TRUE(fixed.status.has_value());
  EXPECT_EQ(condition_status(*fixed.status, "Planned"), true);
  EXPECT_FALSE(fixed.create.empty());
}

// A job planned and running when the limits came in keeps its plan and its workers: nothing
// already accepted is lost, only a new plan waits for a spec within the limits.
TEST(JobDecision, APlanInForceRunsOnPastTheSolversLimits) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  const PlanRecord first = *plan_from_json(v.job["status"]);
  // The spec as stored before the limits: the same generation, a plan in force.
  v.job["spec"]["training"]["maxEpochs"] = 5000;
  report(v, 2, 1.5);
  Decision d = decide(v, options());
  EXPECT_TRUE(d.remove.empty());
  EXPECT_FALSE(d.delete_job);
  EXPECT_FALSE(d.replanned);
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(condition_status(*d.status, "Valid"), true);
  EXPECT_EQ((*d.status)["phase"], "Running");
  EXPECT_EQ(plan_from_json(*d.status)->revision, first.revision);
  EXPECT_NE(condition_message(*d.status, "Planned").find("spec.training.maxEpochs"),
            std::string::npos);
  EXPECT_LT(d.solve_seconds, 0) << "the solver ran";
}

// The fields only worker pods use are validated with the rest: a bad quantity or env name is an
// InvalidSpec naming the field, not a pod the API server refuses.
TEST(JobDecision, InvalidWorkerFieldsAreReportedWithTheFieldAndRunNothing) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  const json good_spec = v.job["spec"];
  v.job["spec"]["models"][2]["resources"] = {{"limits", {{"memory", "lots"}}}};
  v.job["spec"]["models"][0]["env"] = json::array({{{"name", "A=B"}, {"value", "1"}}});
  v.job["metadata"]["generation"] = 2;
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ(condition_status(*d.status, "Valid"), false);
  const std::string message = (*d.status)["message"];
  EXPECT_NE(message.find("spec.models[2].resources.limits.memory: must be a quantity such as "
                         "10Gi or 1.5G, got \"lots\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("spec.models[0].env[0].name: \"A=B\""), std::string::npos) << message;
  ASSERT_TRUE(has_event(d, "InvalidSpec"));
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(d.remove.size(), v.owned_pods.size());
  apply(v, d);
  // Fixing the spec recovers the job.
  v.job["spec"] = good_spec;
  v.job["metadata"]["generation"] = 3;
  Decision fixed = decide(v, options());
  EXPECT_EQ(condition_status(*fixed.status, "Valid"), true);
  EXPECT_EQ(condition_status(*fixed.status, "Planned"), true);
  EXPECT_FALSE(fixed.create.empty());
}

// The API server refused a worker the spec makes (creation_rejection.hpp): for that generation
// of the spec nothing more is created, so retries write nothing; a changed spec is tried afresh.
TEST(JobDecision, ARefusalOfTheWorkersHoldsTheSpecGenerationUntilItChanges) {
  JobView v = view_with_nodes();
  Decision first = decide(v, options());
  ASSERT_FALSE(first.create.empty());
  JobStatus refused = decode_status(*first.status);
  ASSERT_TRUE(record_rejection(refused, "the API server refused Pod quickstart-p0-w0", 1,
                               "2026-11-22T05:00:00Z"));
  v.job["status"] = encode_status(refused);
  Decision held = decide(v, options());
  EXPECT_TRUE(held.create.empty());
  EXPECT_TRUE(held.events.empty());
  EXPECT_FALSE(held.status.has_value()) << held.status->dump(1);
  EXPECT_EQ(condition_status(v.job["status"], "Valid"), false);

  v.job["spec"]["models"][2]["env"] = json::array({{{"name", "FIXED"}, {"value", "1"}}});
  v.job["metadata"]["generation"] = 2;
  Decision fixed = decide(v, options());
  ASSERT_TRUE(fixed.status.has_value());
  EXPECT_EQ(condition_status(*fixed.status, "Valid"), true);
  EXPECT_EQ(condition_status(*fixed.status, "Running"), true);
  EXPECT_EQ((*fixed.status)["phase"], "Running");
  EXPECT_FALSE(fixed.create.empty());
}

TEST(JobDecision, FirstPlanWaitsForAnEarlierJobStillUnplanned) {
  JobView v = view_with_nodes();
  v.unplanned_earlier_job = "default/older";
  Decision d = decide(v, options());
  EXPECT_FALSE(d.ensure_token_secret) << "no progress token before there are workers";
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ((*d.status)["phase"], "Pending");
  EXPECT_NE((*d.status)["message"].get<std::string>().find("created earlier"), std::string::npos);
  EXPECT_FALSE(d.status->contains("plan"));
  EXPECT_TRUE(d.create.empty());
  EXPECT_FALSE(d.replanned);
  ASSERT_TRUE(d.requeue_after.has_value());
  apply(v, d);
  // Another earlier job at the head of the line changes nothing: no status write per job placed
  // before this one (with a thousand jobs waiting that would be a million writes).
  v.unplanned_earlier_job = "default/old2";
  Decision still = decide(v, options());
  EXPECT_FALSE(still.status.has_value()) << still.status->dump(1);
  EXPECT_TRUE(still.events.empty());
  // Once the earlier job has had its turn, this one plans.
  v.unplanned_earlier_job.clear();
  Decision later = decide(v, options());
  EXPECT_EQ(condition_status(*later.status, "Planned"), true);
  EXPECT_FALSE(later.create.empty());
  EXPECT_TRUE(later.ensure_token_secret);
  // A job that already has a plan is not held back by a newer unplanned neighbour's ordering.
  apply(v, later);
  v.unplanned_earlier_job = "default/older";
  Decision again = decide(v, options());
  EXPECT_TRUE(again.remove.empty());
  EXPECT_FALSE(again.status.has_value() && (*again.status)["phase"] == "Pending");
}

// One of a burst of jobs applied at once usually gets its turn within moments: it writes no
// "waiting" status (a thousand such writes would hold back the placements themselves) until it
// has waited waiting_status_after, and looks again then.
TEST(JobDecision, AShortWaitForAnEarlierJobWritesNoStatus) {
  JobView v = view_with_nodes();
  v.unplanned_earlier_job = "default/older";
  v.job["metadata"]["creationTimestamp"] = format_rfc3339(v.now - std::chrono::seconds(2));
  DecideOptions o = options();
  o.waiting_status_after = std::chrono::seconds(30);
  Decision d = decide(v, o);
  EXPECT_FALSE(d.status.has_value()) << d.status->dump(1);
  EXPECT_TRUE(d.create.empty());
  EXPECT_TRUE(d.events.empty());
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_EQ(*d.requeue_after, std::chrono::seconds(28));
  // Still waiting 30 s after its creation: it says so.
  v.now += std::chrono::seconds(28);
  Decision later = decide(v, o);
  ASSERT_TRUE(later.status.has_value());
  EXPECT_EQ((*later.status)["phase"], "Pending");
  EXPECT_NE((*later.status)["message"].get<std::string>().find("created earlier"),
            std::string::npos);
  // Its turn within the 30 s: it plans at once.
  v.now -= std::chrono::seconds(27);
  v.unplanned_earlier_job.clear();
  Decision planned = decide(v, o);
  EXPECT_EQ(condition_status(*planned.status, "Planned"), true);
  EXPECT_FALSE(planned.create.empty());
}

TEST(JobDecision, PoolLostMidPhaseIsReplannedOntoTheRemainingPoolOnce) {
  JobView v = view_with_nodes();
  v.job["spec"]["target"].erase("deadlineSeconds");  // either pool can finish the job
  apply(v, decide(v, options()));
  const std::string lost = plan_from_json(v.job["status"])->phases[0].pool;
  ASSERT_TRUE(v.job["status"]["poolFigures"].contains(lost)) << v.job["status"].dump(1);
  report(v, 2, 1.8);
  // The pool's nodes are deleted, and their pods with them; the controller saw the pod go before
  // the node and recreated it, so a pod for the lost pool waits, unschedulable.
  std::erase_if(v.nodes,
                [&](const auto& n) { return (*n)["metadata"]["labels"]["depl.dev/pool"] == lost; });
  for (auto& pod : v.owned_pods) pod["status"]["phase"] = "Pending";

  Decision d = decide(v, options());
  EXPECT_TRUE(has_event(d, "Replanned"));
  ASSERT_TRUE(d.status.has_value());
  auto plan = plan_from_json(*d.status);
  ASSERT_TRUE(plan.has_value());
  // What ran on the lost pool stays in the plan; everything after runs elsewhere.
  EXPECT_EQ(plan->phases[0].pool, lost);
  EXPECT_EQ(plan->phases[0].epochs, 2);
  ASSERT_GE(plan->phases.size(), 2u);
  for (std::size_t i = 1; i < plan->phases.size(); ++i) EXPECT_NE(plan->phases[i].pool, lost);
  EXPECT_GT((*d.status)["progress"]["cost"].get<double>(), 0.0);  // the lost pool's epochs cost

  // The waiting pod of the lost pool has nothing left to do: removed.
  bool removed = false;
  for (const auto& r : d.remove) removed = removed || r.name == "quickstart-p0-w0";
  EXPECT_TRUE(removed);
  // It settles: no re-plan loop, and the next phase's pods go to the remaining pool.
  bool created = false;
  for (int round = 0; round < 4 && !created; ++round) {
    apply(v, d);
    d = decide(v, options());
    EXPECT_FALSE(has_event(d, "Replanned")) << "round " << round;
    for (const auto& o : d.create) {
      if (o["kind"] != "Pod") continue;
      created = true;
      EXPECT_NE(o["spec"]["nodeSelector"]["depl.dev/pool"], lost);
    }
  }
  EXPECT_TRUE(created);
}

TEST(JobDecision, InfeasibleWithoutNodesThenPlannedWhenNodesArrive) {
  JobView v = view_with_nodes();
  v.nodes.clear();
  Decision d = decide(v, options());
  EXPECT_EQ(condition_status(*d.status, "Planned"), false);
  EXPECT_EQ((*d.status)["phase"], "Pending");
  EXPECT_TRUE(has_event(d, "Infeasible"));
  EXPECT_TRUE(d.create.empty());
  EXPECT_FALSE(d.ensure_token_secret);
  apply(v, d);
  EXPECT_FALSE(has_event(decide(v, options()), "Infeasible"));  // no event spam while waiting
  v.nodes = view_with_nodes().nodes;
  Decision later = decide(v, options());
  EXPECT_EQ(condition_status(*later.status, "Planned"), true);
  EXPECT_FALSE(later.create.empty());
}

TEST(JobDecision, WalksThroughPhasesToTargetReached) {
  JobView v = view_with_nodes();
  v.job["spec"]["replan"] = "Never";  // the first plan runs as planned, phase by phase
  apply(v, decide(v, options()));
  auto plan = *plan_from_json(v.job["status"]);
  int epoch = 0;
  for (std::size_t phase = 0; phase < plan.phases.size(); ++phase) {
    plan = *plan_from_json(v.job["status"]);
    epoch += plan.phases[phase].epochs;
    const bool last = phase + 1 == plan.phases.size();
    report(v, epoch, last ? 0.3 : 1.0);
    Decision reported = decide(v, options());
    apply(v, reported);
    if (last) {  // the report that meets the target ends the job
      EXPECT_TRUE(has_event(reported, "TargetReached"));
      break;
    }
    set_pods_phase(v, "Succeeded");
    Decision done = decide(v, options());
    apply(v, done);
    EXPECT_TRUE(has_event(done, "PhaseCompleted"));
    EXPECT_EQ(v.job["status"]["progress"]["phase"], phase + 1);
    Decision next = decide(v, options());
    apply(v, next);
    EXPECT_TRUE(has_event(next, "PhaseStarted"));
  }
  EXPECT_EQ(v.job["status"]["phase"], "Succeeded");
  EXPECT_EQ(condition_status(v.job["status"], "Succeeded"), true);
  EXPECT_TRUE(v.job["status"].contains("finishedAt"));
}

TEST(JobDecision, TargetReachedMidPhaseEndsTheJobAndCutsThePlan) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  const PlanRecord first = *plan_from_json(v.job["status"]);
  ASSERT_GE(first.phases.size(), 2u);
  ASSERT_GT(first.phases[0].epochs, 3);
  ASSERT_FALSE(v.owned_pods.empty());
  report(v, 3, 0.3);  // far better than predicted: the target is met in phase 0
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ((*d.status)["phase"], "Succeeded");
  EXPECT_TRUE(has_event(d, "TargetReached"));
  EXPECT_EQ(d.remove.size(), v.owned_pods.size());  // nobody trains on at a cost
  const PlanRecord cut = *plan_from_json(*d.status);
  ASSERT_EQ(cut.phases.size(), 1u);  // the plan shows what ran
  EXPECT_EQ(cut.phases[0].epochs, 3);
  EXPECT_EQ(cut.revision, first.revision + 1);
  EXPECT_DOUBLE_EQ(cut.cost, (*d.status)["progress"]["cost"].get<double>());
  EXPECT_LT(cut.cost, first.cost);
  EXPECT_DOUBLE_EQ(cut.probability, 1.0);
}

TEST(JobDecision, AJobThatNeverReplansStillEndsAtTheFirstEpochThatMeetsTheTarget) {
  // Training on past the target only costs, and past the curve's bottom the loss rises again:
  // a plan kept as first made still stops where the promise is met.
  JobView v = view_with_nodes();
  v.job["spec"]["replan"] = "Never";
  apply(v, decide(v, options()));
  const PlanRecord first = *plan_from_json(v.job["status"]);
  ASSERT_GT(first.phases[0].epochs, 3);
  report(v, 3, 0.3);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status.has_value());
  EXPECT_EQ((*d.status)["phase"], "Succeeded");
  EXPECT_TRUE(has_event(d, "TargetReached"));
  EXPECT_EQ(d.remove.size(), v.owned_pods.size());
  const PlanRecord cut = *plan_from_json(*d.status);
  ASSERT_EQ(cut.phases.size(), 1u);
  EXPECT_EQ(cut.phases[0].epochs, 3);
}

TEST(JobDecision, ReportsOnCourseKeepThePlanInForce) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  const PlanRecord first = *plan_from_json(v.job["status"]);
  // The loss the plan predicts after 2 epochs of its first phase: no deviation at all.
  solver::Problem problem = *solver::parse_job_json(v.job);
  std::ifstream pools_file(std::string(DEPL_SOURCE_DIR) + "/examples/quickstart/pools.yaml");
  std::stringstream pools_text;
  pools_text << pools_file.rdbuf();
  auto pools = solver::parse_pools_yaml(pools_text.str(), "pools.yaml");
  ASSERT_TRUE(pools.has_value()) << pools.error().joined();
  double loss = 0;
  {
    auto combined = solver::combine(problem, *pools);
    ASSERT_TRUE(combined.has_value());
    auto mapped = to_solver_plan(first, *combined);
    ASSERT_TRUE(mapped.has_value());
    loss = solver::loss_trajectory(*combined, *mapped)[2].mean;
  }
  report(v, 2, loss);
  Decision d = decide(v, options());
  EXPECT_FALSE(d.replanned);
  EXPECT_FALSE(has_event(d, "Replanned"));
  ASSERT_TRUE(d.status.has_value());
  const PlanRecord kept = *plan_from_json(*d.status);
  EXPECT_EQ(kept.revision, first.revision);
  EXPECT_EQ(kept.phases.size(), first.phases.size());
  // The figures are refreshed from the observed point (zero variance there): the promise only
  // gets firmer, and the continuing phase pays no second startup.
  EXPECT_GE(kept.probability, first.probability);
  EXPECT_NEAR(kept.cost, first.cost, 1e-6 * first.cost);
}

TEST(JobDecision, FailedWorkerRestartsThePhaseUntilTheBackoffLimit) {
  JobView v = view_with_nodes();
  v.job["spec"]["backoffLimit"] = 1;
  apply(v, decide(v, options()));
  v.owned_pods[0]["status"]["phase"] = "Failed";
  Decision first = decide(v, options());
  EXPECT_TRUE(has_event(first, "WorkerFailed"));
  EXPECT_EQ((*first.status)["progress"]["failures"], 1);
  EXPECT_EQ(first.remove.size(), v.owned_pods.size());  // the whole phase restarts
  // The same failed pod seen again (status written, deletes not yet done) is not counted twice.
  JobView replay = v;
  replay.job["status"] = *first.status;
  Decision replayed = decide(replay, options());
  EXPECT_FALSE(has_event(replayed, "WorkerFailed"));
  EXPECT_TRUE(!replayed.status || (*replayed.status)["progress"]["failures"] == 1);
  apply(v, first);
  apply(v, decide(v, options()));  // recreated
  ASSERT_FALSE(v.owned_pods.empty());
  v.owned_pods[0]["status"]["phase"] = "Failed";
  v.owned_pods[0]["metadata"]["uid"] = "uid-second-incarnation";
  Decision second = decide(v, options());
  EXPECT_EQ((*second.status)["phase"], "Failed");
  EXPECT_TRUE(has_event(second, "BackoffLimitExceeded"));
}

void exited(json& pod, int code, const std::string& uid) {
  pod["status"]["phase"] = "Failed";
  pod["metadata"]["uid"] = uid;
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "worker"},
                    {"state", {{"terminated", {{"exitCode", code}, {"reason", "Error"}}}}}}});
}

// A worker that exits 75 could not reach the progress endpoint within its retry deadline (the
// controller was restarting, or out of reach): the phase restarts from its checkpoint and no
// failure is counted. Before, such exits counted against backoffLimit like any other.
TEST(JobDecision, AWorkerThatCouldNotReachTheControllerIsNotAFailure) {
  JobView v = view_with_nodes();
  v.job["spec"]["backoffLimit"] = 0;
  apply(v, decide(v, options()));
  for (int i = 0; i < 4; ++i) {
    ASSERT_FALSE(v.owned_pods.empty()) << i;
    exited(v.owned_pods[0], 75, "uid-away-" + std::to_string(i));
    Decision d = decide(v, options());
    ASSERT_TRUE(d.status) << i;
    EXPECT_EQ((*d.status)["phase"], "Running") << i;
    EXPECT_EQ((*d.status)["progress"].value("failures", 0), 0) << i;
    EXPECT_EQ((*d.status)["progress"]["unreachable"]["rounds"], i + 1);
    EXPECT_TRUE(has_event(d, "ProgressUnreachable")) << i;
    EXPECT_FALSE(has_event(d, "WorkerFailed")) << i;
    EXPECT_EQ(d.remove.size(), v.owned_pods.size()) << i;  // the phase restarts
    apply(v, d);
    apply(v, decide(v, options()));  // recreated
  }
  // An epoch recorded in between: the rounds in a row start again.
  v.job["status"]["progress"]["epoch"] = 1;
  exited(v.owned_pods[0], 75, "uid-away-after-progress");
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["progress"]["unreachable"]["rounds"], 1);
  EXPECT_EQ((*d.status)["phase"], "Running");
}

// Rounds that all end with exit 75 while nothing is recorded between them mean the workers
// cannot reach a controller that is running: the job fails, saying where to look.
TEST(JobDecision, WorkersThatNeverReachTheControllerFailTheJobInTheEnd) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  Decision d;
  for (int i = 0; i < 5; ++i) {
    ASSERT_FALSE(v.owned_pods.empty()) << i;
    for (std::size_t p = 0; p < v.owned_pods.size(); ++p)
      exited(v.owned_pods[p], 75, fmt::format("uid-{}-{}", i, p));
    d = decide(v, options());
    ASSERT_TRUE(d.status) << i;
    if (i < 4) {
      EXPECT_EQ((*d.status)["phase"], "Running") << i;
      EXPECT_EQ((*d.status)["progress"]["unreachable"]["rounds"], i + 1);  // once per round
      apply(v, d);
      apply(v, decide(v, options()));
    }
  }
  EXPECT_EQ((*d.status)["phase"], "Failed");
  EXPECT_TRUE(has_event(d, "ProgressUnreachable"));
  EXPECT_NE((*d.status)["message"].get<std::string>().find("--progress-advertise-url"),
            std::string::npos)
      << (*d.status)["message"];
}

// Any other exit code is a failure, as before.
TEST(JobDecision, OtherExitCodesAreFailures) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  exited(v.owned_pods[0], 4, "uid-exit-4");
  Decision d = decide(v, options());
  EXPECT_TRUE(has_event(d, "WorkerFailed"));
  EXPECT_EQ((*d.status)["progress"]["failures"], 1);
}

json disruption_target(const std::string& reason) {
  return json{{"type", "DisruptionTarget"},
              {"status", "True"},
              {"reason", reason},
              {"message", "reclaimed"}};
}

int preemptions_on(const json& status, const std::string& pool) {
  return status.value("preemptions", json::object()).value(pool, json::object()).value("count", 0);
}

// A worker whose node is reclaimed (DisruptionTarget, its pod terminating) is a preemption: the
// peers of its round are stopped at once (they checkpoint on SIGTERM), the round starts again
// from the checkpoint once they are gone, and nothing counts against backoffLimit, however often
// it happens. Each preemption is counted once, per pool and in all, with an Event. Before, a
// terminating pod was only waited for and its peers kept running without it.
TEST(JobDecision, ADisruptedWorkerIsAPreemptionNotAFailure) {
  JobView v = view_with_nodes();
  v.job["spec"]["backoffLimit"] = 0;
  apply(v, decide(v, options()));
  ASSERT_GE(v.owned_pods.size(), 2u) << "a round with peers to stop";
  const std::string pool =
      v.owned_pods[0]["metadata"]["annotations"]["depl.dev/pool"].get<std::string>();
  for (int i = 1; i <= 3; ++i) {
    SCOPED_TRACE(::testing::Message() << "preemption " << i);
    json& lost = v.owned_pods[0];
    lost["metadata"]["uid"] = "uid-reclaimed-" + std::to_string(i);
    lost["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
    lost["status"]["conditions"] = json::array({disruption_target("EvictionByEvictionAPI")});
    const std::string lost_name = lost["metadata"]["name"].get<std::string>();
    Decision d = decide(v, options());
    ASSERT_TRUE(d.status);
    EXPECT_EQ((*d.status)["phase"], "Running");
    EXPECT_EQ((*d.status)["progress"].value("failures", 0), 0);
    EXPECT_EQ((*d.status)["progress"]["preemptions"], i);
    EXPECT_EQ(preemptions_on(*d.status, pool), i);
    EXPECT_EQ((*d.status)["preemptions"][pool]["lastCause"],
              "DisruptionTarget: EvictionByEvictionAPI");
    EXPECT_TRUE(has_event(d, "WorkerPreempted"));
    EXPECT_FALSE(has_event(d, "WorkerFailed"));
    // Every peer is stopped; the terminating pod is left to end.
    EXPECT_EQ(d.remove.size(), v.owned_pods.size() - 1);
    for (const auto& r : d.remove) EXPECT_NE(r.name, lost_name);
    // Seen again before the status write lands elsewhere: not counted twice.
    JobView replay = v;
    replay.job["status"] = *d.status;
    Decision replayed = decide(replay, options());
    EXPECT_FALSE(has_event(replayed, "WorkerPreempted"));
    EXPECT_TRUE(!replayed.status || (*replayed.status)["progress"]["preemptions"] == i);
    apply(v, d);
    std::erase_if(v.owned_pods, [&](const json& p) { return p["metadata"]["name"] == lost_name; });
    const int round = v.job["status"]["progress"].value("round", 0);
    Decision restart = decide(v, options());
    EXPECT_FALSE(restart.create.empty());  // the round starts again, with no backoff
    ASSERT_TRUE(restart.status);
    EXPECT_EQ((*restart.status)["progress"]["round"], round + 1);
    apply(v, restart);
  }
  EXPECT_EQ(v.job["status"]["phase"], "Running");
}

// A pod the garbage collector marked Failed for its lost node (DisruptionTarget,
// DeletionByPodGC), and a Failed pod whose node is gone or not Ready without a condition, are
// preemptions too; a Failed pod on a Ready node is a failure.
TEST(JobDecision, PodsOfLostNodesArePreemptionsAndOthersFailures) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  exited(v.owned_pods[0], 137, "uid-gc");
  v.owned_pods[0]["status"]["conditions"] = json::array({disruption_target("DeletionByPodGC")});
  Decision gc = decide(v, options());
  ASSERT_TRUE(gc.status);
  EXPECT_EQ((*gc.status)["progress"]["preemptions"], 1);
  EXPECT_EQ((*gc.status)["progress"].value("failures", 0), 0);
  EXPECT_EQ(gc.remove.size(), v.owned_pods.size());

  JobView gone = view_with_nodes();
  apply(gone, decide(gone, options()));
  exited(gone.owned_pods[0], 143, "uid-node-gone");
  gone.owned_pods[0]["spec"]["nodeName"] = "a100-9";
  Decision g = decide(gone, options());
  ASSERT_TRUE(g.status);
  EXPECT_EQ((*g.status)["progress"]["preemptions"], 1);
  EXPECT_TRUE(has_event(g, "WorkerPreempted"));

  JobView ready = view_with_nodes();
  apply(ready, decide(ready, options()));
  exited(ready.owned_pods[0], 1, "uid-plain-failure");
  ready.owned_pods[0]["spec"]["nodeName"] = "a100-0";
  Decision f = decide(ready, options());
  ASSERT_TRUE(f.status);
  EXPECT_EQ((*f.status)["progress"]["failures"], 1);
  EXPECT_EQ((*f.status)["progress"].value("preemptions", 0), 0);
  EXPECT_TRUE(has_event(f, "WorkerFailed"));
}

// Kueue evicts the round's pod group (a workload of higher priority preempted it): each pod gets
// TerminationTarget=True and is deleted, and ends Failed (SIGTERM) on its Ready node. That is a
// preemption of every worker, never a failure against backoffLimit (0 here), and the round
// starts again from its checkpoint, to be admitted anew. Before, the pods were failures and the
// job failed with BackoffLimitExceeded.
TEST(JobDecision, AKueueEvictionIsAPreemptionNotAFailure) {
  JobView v = view_with_nodes();
  v.job["spec"]["backoffLimit"] = 0;
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  const std::size_t workers = v.owned_pods.size();
  int i = 0;
  for (auto& pod : v.owned_pods) {
    exited(pod, 143, "uid-evicted-" + std::to_string(i++));
    pod["spec"]["nodeName"] = "a100-0";
    pod["metadata"]["deletionTimestamp"] = format_rfc3339(v.now);
    pod["status"]["conditions"] =
        json::array({{{"type", "TerminationTarget"},
                      {"status", "True"},
                      {"reason", "WorkloadEvicted"},
                      {"message",
                       "Preempted to accommodate a workload due to prioritization in the "
                       "ClusterQueue"}}});
  }
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["phase"], "Running") << d.status->dump(1);
  EXPECT_EQ((*d.status)["progress"].value("failures", 0), 0);
  EXPECT_EQ((*d.status)["progress"]["preemptions"], static_cast<int>(workers));
  EXPECT_FALSE(has_event(d, "WorkerFailed"));
  EXPECT_TRUE(has_event(d, "WorkerPreempted"));
  apply(v, d);
  v.owned_pods.clear();  // deleted
  Decision restart = decide(v, options());
  EXPECT_EQ(restart.create.size(), workers) << "the round starts again";
}

// A preemption records the time it cost (docs/depl-model.md section 7): the work since the
// round's last checkpoint, up to the pod's DisruptionTarget time, plus the pool's restart (its
// startup and reading the checkpoint back), once per round: a second worker of the round
// disrupted with the first loses nothing more. The round's start is its first checkpoint. Before,
// the status kept only the count.
TEST(JobDecision, APreemptionRecordsTheTimeItCost) {
  JobView v = view_with_nodes();
  for (auto& model : v.job["spec"]["models"]) model["checkpointBytes"] = "4G";
  apply(v, decide(v, options()));
  ASSERT_GE(v.owned_pods.size(), 2u) << "a round of two workers";
  const auto start = v.now;
  EXPECT_EQ(v.job["status"]["progress"]["checkpointedAt"], format_rfc3339(start));
  // Epoch 2 was recorded (and checkpointed) ten minutes in; both workers are reclaimed five
  // minutes later, and the controller sees it another two minutes on.
  report(v, 2, 1.2);
  v.job["status"]["progress"]["checkpointedAt"] = format_rfc3339(start + std::chrono::minutes(10));
  v.now = start + std::chrono::minutes(17);
  const std::string pool =
      v.owned_pods[0]["metadata"]["annotations"]["depl.dev/pool"].get<std::string>();
  for (std::size_t i = 0; i < 2; ++i) {
    json& pod = v.owned_pods[i];
    pod["metadata"]["uid"] = "uid-reclaimed-" + std::to_string(i);
    pod["metadata"]["deletionTimestamp"] = format_rfc3339(v.now);
    json condition = disruption_target("EvictionByEvictionAPI");
    condition["lastTransitionTime"] = format_rfc3339(start + std::chrono::minutes(15));
    pod["status"]["conditions"] = json::array({condition});
  }
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  const json& figures = (*d.status)["poolFigures"][pool];
  const double restart =
      figures["startupSeconds"].get<double>() + 4e9 / figures["storageBandwidth"].get<double>();
  const double lost = 300 + restart;
  EXPECT_EQ((*d.status)["progress"]["preemptions"], 2);
  EXPECT_NEAR((*d.status)["progress"]["lostSeconds"].get<double>(), lost, 1e-6)
      << d.status->dump(1);
  EXPECT_NEAR((*d.status)["preemptions"][pool]["lostSeconds"].get<double>(), lost, 1e-6);
  EXPECT_FALSE((*d.status)["progress"].contains("checkpointedAt")) << "the round's loss is counted";
  // The next round trains from its own start.
  apply(v, d);
  std::erase_if(v.owned_pods,
                [](const json& p) { return p["metadata"].contains("deletionTimestamp"); });
  Decision restarted = decide(v, options());
  ASSERT_TRUE(restarted.status);
  EXPECT_FALSE(restarted.create.empty());
  EXPECT_EQ((*restarted.status)["progress"]["checkpointedAt"], format_rfc3339(v.now));
  EXPECT_NEAR((*restarted.status)["progress"]["lostSeconds"].get<double>(), lost, 1e-6);
}

// The figures the status remembers of the plan's pools keep a spot pool's capacity type and
// rate, so the phases that ran there are still priced with their interruptions once every node
// of the pool has been reclaimed.
TEST(JobDecision, PoolFiguresKeepTheCapacityTypeAndRate) {
  JobView v = view_with_nodes();
  SharedObjects spot_nodes;
  for (const auto& n : v.nodes) {
    json copy = *n;
    copy["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot";
    copy["metadata"]["annotations"]["depl.dev/interruptions-per-hour"] = "0.25";
    spot_nodes.push_back(std::make_shared<const json>(std::move(copy)));
  }
  v.nodes = spot_nodes;
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  const json& figures = (*d.status)["poolFigures"];
  ASSERT_FALSE(figures.empty());
  for (const auto& [pool, f] : figures.items()) {
    EXPECT_EQ(f["capacityType"], "Spot") << pool;
    EXPECT_DOUBLE_EQ(f["interruptionsPerHour"].get<double>(), 0.25) << pool;
  }
}

// The running phase's pool marked spot, its nodes (`reclaimed` of them tainted for reclaim, the
// first of those under the pod `lost`), and the pod disrupted there: DisruptionTarget, terminating.
// Returns the pool's name.
std::string reclaim_under(JobView& v, json& lost, std::size_t reclaimed, bool keep_other_pools) {
  const std::string pool = lost["metadata"]["annotations"]["depl.dev/pool"].get<std::string>();
  std::vector<json> nodes;
  std::size_t tainted = 0;
  std::string under;
  for (const auto& n : v.nodes) {
    json copy = *n;
    const bool in_pool = copy["metadata"]["labels"]["depl.dev/pool"] == pool;
    if (!in_pool && !keep_other_pools) continue;
    if (in_pool) {
      copy["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot";
      if (tainted < reclaimed) {
        copy["spec"]["taints"] =
            json::array({{{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}});
        if (under.empty()) under = copy["metadata"]["name"].get<std::string>();
        ++tainted;
      }
    }
    nodes.push_back(std::move(copy));
  }
  v.nodes = fixture::shared(std::move(nodes));
  lost["spec"]["nodeName"] = under;
  lost["metadata"]["uid"] = "uid-reclaimed";
  lost["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  lost["status"]["conditions"] = json::array({disruption_target("EvictionByEvictionAPI")});
  return pool;
}

// A reclaim that takes the last node of the running phase's pool (the replacement has not
// registered yet) leaves the pool without room: the job waits for a plan, and the disrupted
// worker is a preemption all the same, counted once, not lost to the wait. Fails when only the
// round's logic (after planning) counts preemptions.
TEST(JobDecision, APreemptionThatEmptiesThePoolIsCountedWhileTheJobWaits) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  report(v, 2, 1.2);
  const std::string pool = reclaim_under(v, v.owned_pods[0], /*reclaimed=*/2,
                                         /*keep_other_pools=*/false);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_EQ((*d.status)["progress"].value("preemptions", 0), 1) << d.status->dump(1);
  EXPECT_EQ(preemptions_on(*d.status, pool), 1);
  EXPECT_EQ((*d.status)["progress"].value("failures", 0), 0);
  EXPECT_TRUE(has_event(d, "WorkerPreempted"));
  EXPECT_FALSE(has_event(d, "WorkerFailed"));
  // Seen again while the pool is still empty: not counted twice.
  apply(v, d);
  Decision again = decide(v, options());
  EXPECT_FALSE(has_event(again, "WorkerPreempted"));
  EXPECT_TRUE(!again.status || (*again.status)["progress"]["preemptions"] == 1);
}

// A reclaim that takes the last node of the running phase's pool while another pool has room:
// the rest of the job is re-planned there, and the disrupted worker (a leftover of the plan it
// ran under) is still counted as a preemption, never as a failure.
TEST(JobDecision, APreemptionThatMovesThePlanIsCounted) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  report(v, 2, 1.2);
  const std::string pool = reclaim_under(v, v.owned_pods[0], /*reclaimed=*/2,
                                         /*keep_other_pools=*/true);
  Decision d = decide(v, options());
  ASSERT_TRUE(d.status);
  EXPECT_TRUE(has_event(d, "Replanned"));
  EXPECT_EQ((*d.status)["progress"].value("preemptions", 0), 1) << d.status->dump(1);
  EXPECT_EQ(preemptions_on(*d.status, pool), 1);
  EXPECT_EQ((*d.status)["progress"].value("failures", 0), 0);
  EXPECT_TRUE(has_event(d, "WorkerPreempted"));
}

// An a100 pool on demand and a spot one at 30% of its price that states `rate` interruptions per
// worker-hour.
JobView view_with_spot_pool(double rate) {
  JobView v = view_with_nodes();
  std::vector<json> nodes = {fixture::gpu_node("a100-0", "a100", 8, 120000, 2.5),
                             fixture::gpu_node("a100-1", "a100", 8, 120000, 2.5)};
  for (int i = 0; i < 2; ++i) {
    json spot = fixture::gpu_node("spot-" + std::to_string(i), "spot", 8, 120000, 0.75);
    spot["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot";
    spot["metadata"]["annotations"]["depl.dev/interruptions-per-hour"] = fmt::format("{}", rate);
    spot["metadata"]["annotations"]["depl.dev/startup-seconds"] = "60";
    nodes.push_back(std::move(spot));
  }
  v.nodes = fixture::shared(std::move(nodes));
  return v;
}

// The pools the plan in force still runs on, from its running phase.
std::vector<std::string> pools_ahead(const json& status) {
  std::vector<std::string> out;
  const int running = status["progress"].value("phase", 0);
  const json& phases = status["plan"]["phases"];
  for (std::size_t i = static_cast<std::size_t>(running); i < phases.size(); ++i) {
    out.push_back(phases[i]["pool"].get<std::string>());
  }
  return out;
}

// A job planned on the spot pool (stated 0.5 interruptions per worker-hour, a deadline the spot
// plan only just keeps), with epoch 1 recorded two minutes in; then its running round's workers
// are reclaimed a minute apart, the round restarting each time. Returns the pools ahead after
// each reclaim, and the InterruptionRateRaised Events.
struct Reclaims {
  std::vector<std::vector<std::string>> pools_ahead;
  std::vector<double> planned_rate;  // status.poolFigures.spot.interruptionsPerHour
  int raised = 0;
};

Reclaims reclaim_repeatedly(int reclaims, const DecideOptions& opts) {
  JobView v = view_with_spot_pool(0.5);
  v.job["spec"]["target"]["deadlineSeconds"] = 2000;
  apply(v, decide(v, opts));
  v.now += std::chrono::minutes(2);
  report(v, 1, 1.5);
  v.job["status"]["progress"]["checkpointedAt"] = format_rfc3339(v.now);
  apply(v, decide(v, opts));
  EXPECT_EQ(pools_ahead(v.job["status"]), (std::vector<std::string>{"spot", "spot"}))
      << v.job["status"]["plan"].dump();
  Reclaims out;
  for (int i = 0; i < reclaims; ++i) {
    v.now += std::chrono::minutes(1);
    for (auto& pod : v.owned_pods) {
      pod["metadata"]["uid"] =
          fmt::format("uid-reclaim-{}-{}", i, pod["metadata"]["name"].get<std::string>());
      pod["metadata"]["deletionTimestamp"] = format_rfc3339(v.now);
      pod["status"]["conditions"] = json::array({disruption_target("EvictionByEvictionAPI")});
    }
    Decision d = decide(v, opts);
    EXPECT_TRUE(has_event(d, "WorkerPreempted"));
    if (has_event(d, "InterruptionRateRaised")) ++out.raised;
    apply(v, d);
    std::erase_if(v.owned_pods,
                  [](const json& p) { return p["metadata"].contains("deletionTimestamp"); });
    Decision restart = decide(v, opts);
    EXPECT_FALSE(restart.create.empty()) << "the round starts again";
    apply(v, restart);
    out.pools_ahead.push_back(pools_ahead(v.job["status"]));
    out.planned_rate.push_back(v.job["status"]["poolFigures"]
                                   .value("spot", json::object())
                                   .value("interruptionsPerHour", 0.0));
  }
  return out;
}

// A spot pool that interrupts the job more than it states is planned with the rate observed
// (docs/depl-model.md section 7): one early reclaim moves the rate by at most half (the stated
// rate weighs as two interruptions) and the plan stays on spot; by the third the rate is past
// twice the stated one, the plan no longer keeps its promise there, and the rest moves to the
// on-demand pool. Before, re-plans priced the pool at its annotation, and the job stayed on spot
// however often it was reclaimed: as it does here with the observed rate turned off.
TEST(JobDecision, RepeatedReclaimsMoveThePlanOffSpot) {
  const Reclaims observed = reclaim_repeatedly(3, options());
  ASSERT_EQ(observed.pools_ahead.size(), 3u);
  EXPECT_EQ(observed.pools_ahead[0], (std::vector<std::string>{"spot", "spot"}));
  EXPECT_GT(observed.planned_rate[0], 0.5);
  EXPECT_LE(observed.planned_rate[0], 0.75 + 1e-9);
  for (const auto& pool : observed.pools_ahead[2]) EXPECT_NE(pool, "spot");
  EXPECT_GE(observed.raised, 2);

  DecideOptions stated_only = options();
  stated_only.interruption_prior_events = 0;
  const Reclaims stated = reclaim_repeatedly(3, stated_only);
  ASSERT_EQ(stated.pools_ahead.size(), 3u);
  EXPECT_EQ(stated.pools_ahead[2], (std::vector<std::string>{"spot", "spot"}));
  EXPECT_EQ(stated.planned_rate[2], 0.5);
  EXPECT_EQ(stated.raised, 0);
}

// A job planned on the spot pool (no deadline), epoch 2 recorded; then a reclaim takes every
// node of the pool: the workers are disrupted and the nodes gone from the view. Returns the view
// after the decision that saw it, and that decision.
struct SpotPoolGone {
  JobView v;
  Decision d;
  std::vector<json> spot_nodes;  // the pool's nodes, to bring back
};

SpotPoolGone reclaim_whole_spot_pool(const DecideOptions& opts,
                                     std::optional<double> deadline_slack = std::nullopt) {
  SpotPoolGone out{view_with_spot_pool(0.5), {}, {}};
  JobView& v = out.v;
  apply(v, decide(v, opts));
  EXPECT_EQ(pools_ahead(v.job["status"]), (std::vector<std::string>{"spot", "spot"}))
      << v.job["status"]["plan"].dump();
  v.now += std::chrono::minutes(2);
  report(v, 2, 1.5);
  apply(v, decide(v, opts));
  if (deadline_slack) {
    // A deadline the plan in force keeps with this slack (not a spec change: the generation
    // stays).
    v.job["spec"]["target"]["deadlineSeconds"] =
        v.job["status"]["plan"]["predicted"]["durationSeconds"].get<double>() + *deadline_slack;
  }
  std::vector<json> kept;
  for (const auto& n : v.nodes) {
    if ((*n)["metadata"]["labels"]["depl.dev/pool"] == "spot") {
      out.spot_nodes.push_back(*n);
    } else {
      kept.push_back(*n);
    }
  }
  v.nodes = fixture::shared(std::move(kept));
  v.now += std::chrono::seconds(10);
  for (auto& pod : v.owned_pods) {
    pod["metadata"]["deletionTimestamp"] = format_rfc3339(v.now);
    pod["status"]["phase"] = "Failed";
    pod["status"]["conditions"] = json::array({disruption_target("EvictionByEvictionAPI")});
  }
  out.d = decide(v, opts);
  apply(v, out.d);
  std::erase_if(v.owned_pods,
                [](const json& p) { return p["metadata"].contains("deletionTimestamp"); });
  return out;
}

// A reclaim that takes every node of the running phase's spot pool leaves the job waiting for the
// pool, not re-planned onto the on-demand pool beside it nor Infeasible: Pending with
// Running=False (WaitingForSpotCapacity), status.capacityWait naming the pool and since when, an
// Event once, a requeue at the end of the wait, the plan in force unchanged. When the pool has a
// node again the round starts there from the epoch reached, and the wait is added up. Before, the
// job was re-planned at once onto on-demand (or Infeasible where spot was all it had).
TEST(JobDecision, AJobWaitsForItsReclaimedSpotPoolAndResumesThere) {
  SpotPoolGone gone = reclaim_whole_spot_pool(options());
  JobView& v = gone.v;
  const Decision& d = gone.d;
  ASSERT_TRUE(d.status);
  const json& status = *d.status;
  EXPECT_TRUE(has_event(d, "WorkerPreempted"));
  EXPECT_TRUE(has_event(d, "WaitingForSpotCapacity"));
  EXPECT_FALSE(has_event(d, "Replanned"));
  EXPECT_FALSE(has_event(d, "Infeasible"));
  EXPECT_EQ(status["phase"], "Pending") << status.dump(1);
  EXPECT_EQ(fixture::condition_field(status, "Running", "reason"), "WaitingForSpotCapacity");
  EXPECT_EQ(fixture::condition_field(status, "Planned", "status"), "True");
  EXPECT_EQ(status["plan"]["revision"], 1);
  EXPECT_EQ(status["capacityWait"]["pool"], "spot");
  EXPECT_EQ(status["capacityWait"]["since"], format_rfc3339(v.now));
  EXPECT_NE(status.value("message", "").find("waiting for spot capacity"), std::string::npos)
      << status.value("message", "");
  ASSERT_TRUE(d.requeue_after.has_value());
  EXPECT_EQ(*d.requeue_after, std::chrono::seconds(600));
  EXPECT_TRUE(d.create.empty());

  // Five minutes on, still waiting: nothing told again, the requeue at what is left.
  v.now += std::chrono::minutes(5);
  Decision later = decide(v, options());
  EXPECT_FALSE(has_event(later, "WaitingForSpotCapacity"));
  EXPECT_FALSE(has_event(later, "Replanned"));
  ASSERT_TRUE(later.requeue_after.has_value());
  EXPECT_EQ(*later.requeue_after, std::chrono::seconds(300));
  apply(v, later);

  // The replacement registers: the round starts again on spot at the epoch reached.
  std::vector<json> nodes;
  for (const auto& n : v.nodes) nodes.push_back(*n);
  for (const auto& n : gone.spot_nodes) nodes.push_back(n);
  v.nodes = fixture::shared(std::move(nodes));
  v.now += std::chrono::seconds(20);
  Decision back = decide(v, options());
  EXPECT_TRUE(has_event(back, "SpotCapacityBack"));
  EXPECT_FALSE(has_event(back, "Replanned"));
  ASSERT_FALSE(back.create.empty());
  for (const auto& pod : back.create) {
    if (pod["kind"] != "Pod") continue;
    EXPECT_EQ(pod["spec"]["nodeSelector"]["depl.dev/pool"], "spot");
  }
  ASSERT_TRUE(back.status);
  EXPECT_EQ((*back.status)["phase"], "Running");
  EXPECT_FALSE((*back.status)["capacityWait"].contains("since"));
  EXPECT_DOUBLE_EQ((*back.status)["capacityWait"]["waitedSeconds"].get<double>(), 320.0);
}

// The wait ends at --spot-capacity-wait: the job is planned without the pool (onto on demand
// here), once, continuing from the epoch reached.
TEST(JobDecision, ASpotCapacityWaitEndsAtItsLimitAndTheJobMoves) {
  DecideOptions opts = options();
  opts.spot_capacity_wait = std::chrono::seconds(120);
  SpotPoolGone gone = reclaim_whole_spot_pool(opts);
  JobView& v = gone.v;
  EXPECT_TRUE(has_event(gone.d, "WaitingForSpotCapacity"));
  ASSERT_TRUE(gone.d.requeue_after.has_value());
  EXPECT_EQ(*gone.d.requeue_after, std::chrono::seconds(120));
  v.now += std::chrono::seconds(120);
  Decision over = decide(v, opts);
  EXPECT_TRUE(has_event(over, "SpotCapacityWaitOver"));
  EXPECT_TRUE(has_event(over, "Replanned"));
  ASSERT_TRUE(over.status);
  for (const auto& pool : pools_ahead(*over.status)) EXPECT_NE(pool, "spot");
  EXPECT_TRUE((*over.status)["capacityWait"].value("replanned", false));
  apply(v, over);
  Decision next = decide(v, opts);
  EXPECT_FALSE(has_event(next, "WaitingForSpotCapacity"));
  EXPECT_FALSE(has_event(next, "SpotCapacityWaitOver"));
  ASSERT_FALSE(next.create.empty()) << "the rest runs on demand";
}

// With a deadline, the wait lasts no longer than the plan in force can afford: the deadline's
// slack (90 s here) ends it before --spot-capacity-wait does.
TEST(JobDecision, ASpotCapacityWaitEndsWhenTheDeadlinesSlackIsUsedUp) {
  SpotPoolGone gone = reclaim_whole_spot_pool(options(), /*deadline_slack=*/90);
  JobView& v = gone.v;
  EXPECT_TRUE(has_event(gone.d, "WaitingForSpotCapacity"));
  ASSERT_TRUE(gone.d.requeue_after.has_value());
  EXPECT_LE(*gone.d.requeue_after, std::chrono::seconds(90));
  EXPECT_GT(*gone.d.requeue_after, std::chrono::seconds(0));
  v.now += *gone.d.requeue_after;
  Decision over = decide(v, options());
  EXPECT_TRUE(has_event(over, "SpotCapacityWaitOver"));
  EXPECT_FALSE(has_event(over, "WaitingForSpotCapacity"));
}

// A spot pool that is all the job can use: its reclaim leaves the job waiting, not Infeasible.
TEST(JobDecision, AJobWhoseOnlyPoolIsReclaimedWaitsInsteadOfTurningInfeasible) {
  DecideOptions opts = options();
  JobView v = view_with_spot_pool(0.5);
  std::vector<json> spot_only;
  for (const auto& n : v.nodes) {
    if ((*n)["metadata"]["labels"]["depl.dev/pool"] == "spot") spot_only.push_back(*n);
  }
  v.nodes = fixture::shared(spot_only);
  apply(v, decide(v, opts));
  report(v, 2, 1.5);
  apply(v, decide(v, opts));
  v.nodes = fixture::shared({});
  v.now += std::chrono::seconds(10);
  for (auto& pod : v.owned_pods) {
    pod["metadata"]["deletionTimestamp"] = format_rfc3339(v.now);
    pod["status"]["conditions"] = json::array({disruption_target("EvictionByEvictionAPI")});
  }
  Decision d = decide(v, opts);
  EXPECT_TRUE(has_event(d, "WaitingForSpotCapacity"));
  EXPECT_FALSE(has_event(d, "Infeasible"));
  ASSERT_TRUE(d.status);
  EXPECT_NE(fixture::condition_field(*d.status, "Planned", "reason"), "Infeasible");
}

TEST(JobDecision, SuspendStopsWorkersAndResumeReplans) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  report(v, 2, 1.5);
  v.job["spec"]["suspend"] = true;
  v.job["metadata"]["generation"] = 2;
  Decision d = decide(v, options());
  EXPECT_EQ((*d.status)["phase"], "Suspended");
  EXPECT_EQ(d.remove.size(), v.owned_pods.size());
  apply(v, d);
  v.job["spec"]["suspend"] = false;
  v.job["metadata"]["generation"] = 3;
  Decision resumed = decide(v, options());
  EXPECT_TRUE(resumed.replanned);
  EXPECT_TRUE(has_event(resumed, "Replanned"));
  EXPECT_EQ((*resumed.status)["phase"], "Running");
  EXPECT_EQ((*resumed.status)["progress"]["epoch"], 2);  // progress kept
}

TEST(JobDecision, LeftoverPodsOfAnotherPhaseAreStoppedFirst) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  for (auto& p : v.owned_pods) p["metadata"]["labels"]["depl.dev/phase"] = "7";
  Decision d = decide(v, options());
  EXPECT_EQ(d.remove.size(), v.owned_pods.size());
  EXPECT_TRUE(d.create.empty());
}

// The controller caches its pods trimmed (trim_cached_pod): decide() must decide the same on
// them as on whole pods, at every step of a job's life.
void expect_same_on_trimmed_pods(const JobView& v, const std::string& step) {
  JobView trimmed = v;
  for (auto& pod : trimmed.owned_pods) {
    pod["metadata"]["ownerReferences"] = json::array({owner_reference(v.job)});
    trim_cached_pod(pod);
  }
  JobView whole = v;
  for (auto& pod : whole.owned_pods)
    pod["metadata"]["ownerReferences"] = json::array({owner_reference(v.job)});
  const Decision a = decide(whole, options());
  const Decision b = decide(trimmed, options());
  EXPECT_EQ(a.status, b.status) << step;
  ASSERT_EQ(a.create.size(), b.create.size()) << step;
  for (std::size_t i = 0; i < a.create.size(); ++i) EXPECT_EQ(a.create[i], b.create[i]) << step;
  ASSERT_EQ(a.remove.size(), b.remove.size()) << step;
  for (std::size_t i = 0; i < a.remove.size(); ++i) EXPECT_EQ(a.remove[i].uid, b.remove[i].uid);
  ASSERT_EQ(a.events.size(), b.events.size()) << step;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].reason, b.events[i].reason) << step;
    EXPECT_EQ(a.events[i].message, b.events[i].message) << step;
  }
  EXPECT_EQ(a.requeue_after, b.requeue_after) << step;
  EXPECT_EQ(a.ensure_token_secret, b.ensure_token_secret) << step;
}

TEST(JobDecision, DecidesTheSameOnTrimmedCachedPods) {
  JobView v = view_with_nodes();
  v.job["spec"]["backoffLimit"] = 1;
  apply(v, decide(v, options()));
  expect_same_on_trimmed_pods(v, "running");
  report(v, 2, 1.5);
  expect_same_on_trimmed_pods(v, "reported");
  for (auto& p : v.owned_pods) p["metadata"]["labels"]["depl.dev/phase"] = "7";
  expect_same_on_trimmed_pods(v, "leftovers of another phase");
  for (auto& p : v.owned_pods) p["metadata"]["labels"]["depl.dev/phase"] = "0";
  for (auto& p : v.owned_pods) p["metadata"]["annotations"]["depl.dev/pool"] = "elsewhere";
  expect_same_on_trimmed_pods(v, "made for another pool");
  for (auto& p : v.owned_pods) p["metadata"]["annotations"].erase("depl.dev/pool");
  v.owned_pods[0]["status"]["phase"] = "Failed";
  v.owned_pods[0]["status"]["containerStatuses"] =
      json::array({{{"name", "worker"},
                    {"ready", false},
                    {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}}}}});
  expect_same_on_trimmed_pods(v, "a worker failed");
  v.owned_pods[0]["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  expect_same_on_trimmed_pods(v, "terminating");
  json evicted = disruption_target("EvictionByEvictionAPI");
  evicted["lastTransitionTime"] = "2027-01-15T07:58:00Z";
  v.owned_pods[0]["status"]["conditions"] =
      json::array({{{"type", "Ready"}, {"status", "False"}}, evicted});
  expect_same_on_trimmed_pods(v, "disrupted");
  v.owned_pods[0]["status"]["conditions"] = json::array();
  v.owned_pods[0]["status"]["reason"] = "Evicted";
  expect_same_on_trimmed_pods(v, "evicted by the kubelet");
  v.owned_pods[0]["status"].erase("reason");
  v.owned_pods[0]["metadata"].erase("deletionTimestamp");
  set_pods_phase(v, "Succeeded");
  const auto plan = *plan_from_json(v.job["status"]);
  report(v, plan.phases[0].epochs, 1.0);
  expect_same_on_trimmed_pods(v, "phase done");
  v.job["spec"]["suspend"] = true;
  expect_same_on_trimmed_pods(v, "suspended");
}

// Pods removed or created from the cached progress without a status write to fence them are
// marked: the reconciler carries them out only if the cached job is the latest (after an API
// outage the pods watch can be back before the jobs watch; a phase whose workers had finished
// was restarted from epochs they had already reported).
TEST(JobDecision, RestartsNotFencedByAStatusWriteNeedTheLatestJob) {
  JobView v = view_with_nodes();
  apply(v, decide(v, options()));
  ASSERT_FALSE(v.owned_pods.empty());
  report(v, 2, 1.8);
  Decision running = decide(v, options());
  EXPECT_FALSE(running.needs_latest_job) << "nothing to restart";
  apply(v, running);

  // Every worker exited 0 before the phase's end (as cached): a restart of the phase.
  set_pods_phase(v, "Succeeded");
  Decision restart = decide(v, options());
  EXPECT_EQ(restart.remove.size(), v.owned_pods.size());
  EXPECT_TRUE(restart.needs_latest_job);

  // A rank missing from a running phase is created from the cached progress.
  set_pods_phase(v, "Running");
  v.owned_pods.pop_back();
  Decision missing = decide(v, options());
  ASSERT_EQ(missing.create.size(), 1u);
  EXPECT_TRUE(missing.needs_latest_job);

  // The phase done: moving on writes the status, which fences itself.
  const auto plan = *plan_from_json(v.job["status"]);
  report(v, plan.phases[0].epochs, 1.0);
  set_pods_phase(v, "Succeeded");
  Decision next = decide(v, options());
  EXPECT_TRUE(next.status.has_value());
  EXPECT_FALSE(next.needs_latest_job);
}

TEST(JobDecision, TtlDeletesFinishedJobs) {
  JobView v = view_with_nodes();
  v.job["spec"]["ttlSecondsAfterFinished"] = 60;
  v.job["status"] = {{"phase", "Succeeded"},
                     {"finishedAt", format_rfc3339(v.now - std::chrono::seconds(30))}};
  Decision wait = decide(v, options());
  EXPECT_FALSE(wait.delete_job);
  ASSERT_TRUE(wait.requeue_after.has_value());
  EXPECT_LE(wait.requeue_after->count(), 31);
  v.now += std::chrono::seconds(31);
  EXPECT_TRUE(decide(v, options()).delete_job);
}

}  // namespace
}  // namespace depl::controller
