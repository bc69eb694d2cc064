// Whole runs of the worker on a few hundred real Fashion-MNIST samples: data-parallel ranks against
// a single rank, and operator mode against a local progress endpoint.
#include "depl/worker/worker_run.hpp"

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "depl/worker/checkpoint.hpp"
#include "test_http_server.hpp"
#include "test_support.hpp"

namespace depl::worker {
namespace {

using testing::CannedResponse;
using testing::RecordedRequest;
using testing::TempDir;
using testing::TestHttpServer;

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

WorkerConfig small_run(const TempDir& dir) {
  {
    std::ofstream out(dir.file("shards.json"));
    out << R"({"shards": [{"name": "tiny-a", "samples": 200}, {"name": "tiny-b", "samples": 100,
             "labelNoise": 0.2}]})";
  }
  WorkerConfig c;
  c.variant = *variant_from_name("quarter");
  c.epochs = 2;
  c.shards = dir.file("shards.json");
  c.datasets = {"tiny-a", "tiny-b"};
  c.seed = 5;
  c.batch_size = 25;  // slices of 12 and 13 samples with two ranks
  c.test_samples = 200;
  c.listen_address = "127.0.0.1";
  c.master_addr = "127.0.0.1";
  c.peer_timeout = std::chrono::seconds(60);
  return c;
}

TEST(WorkerRun, StandaloneRunPrintsOneJsonLinePerEpoch) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  WorkerConfig c = small_run(dir);
  c.eval_initial = true;
  std::ostringstream out;
  auto summary = run_worker(c, out);
  ASSERT_TRUE(summary) << summary.error().message;
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 3u);  // the initial evaluation, then epochs 1 and 2
  EXPECT_EQ(lines[0]["epoch"], 0);
  for (const auto& key : {"epoch", "loss", "accuracy", "variant", "seconds",
                          "computePerSampleGflop", "parameterBytes"}) {
    EXPECT_TRUE(lines[2].contains(key)) << key;
  }
  // The quarter-width MLP: two hidden layers of 64 units, 55,050 parameters.
  EXPECT_DOUBLE_EQ(lines[2]["parameterBytes"].get<double>(), 4.0 * 55050);
  EXPECT_DOUBLE_EQ(lines[2]["computePerSampleGflop"].get<double>(), 6 * 55050 * 1e-9);
  EXPECT_EQ(lines[2]["epoch"], 2);
  EXPECT_EQ(lines[2]["variant"], "quarter");
  EXPECT_LT(lines[2]["loss"].get<double>(), lines[0]["loss"].get<double>());
  EXPECT_EQ(summary->last_epoch, 2);
}

TEST(WorkerRun, ZeroEpochsWithEvalInitialOnlyEvaluates) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  WorkerConfig c = small_run(dir);
  c.epochs = 0;
  c.start_epoch = 4;
  c.eval_initial = true;
  std::ostringstream out;
  auto summary = run_worker(c, out);
  ASSERT_TRUE(summary) << summary.error().message;
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["epoch"], 4);
  EXPECT_GT(lines[0]["loss"].get<double>(), 1.5);  // untrained
  EXPECT_EQ(summary->last_epoch, 4);
}

TEST(WorkerRun, TwoRanksMatchOneRank) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  std::ostringstream single_out;
  ASSERT_TRUE(run_worker(small_run(dir), single_out));

  // Both configurations are made before the ranks start: small_run() writes the shards file,
  // which a running rank reads.
  WorkerConfig c0 = small_run(dir);
  c0.world_size = 2;
  c0.rank = 0;
  c0.master_port = 0;
  WorkerConfig c1 = small_run(dir);
  c1.world_size = 2;
  c1.rank = 1;
  std::promise<std::uint16_t> port;
  auto port_future = port.get_future();
  std::ostringstream out0;
  std::ostringstream out1;
  std::string error0;
  std::string error1;
  std::thread rank0([&] {
    bool listened = false;
    c0.on_listening = [&](std::uint16_t p) {
      listened = true;
      port.set_value(p);
    };
    auto r = run_worker(c0, out0);
    if (!r) error0 = r.error().message;
    if (!listened) port.set_value(0);  // rank 1 must not wait for ever
  });
  std::thread rank1([&] {
    c1.master_port = port_future.get();
    if (c1.master_port == 0) {
      error1 = "rank 0 stopped before it listened";
      return;
    }
    auto r = run_worker(c1, out1);
    if (!r) error1 = r.error().message;
  });
  rank0.join();
  rank1.join();
  ASSERT_EQ(error0, "");
  ASSERT_EQ(error1, "");
  EXPECT_EQ(out1.str(), "");  // only rank 0 reports
  const auto single = lines_of(single_out.str());
  const auto distributed = lines_of(out0.str());
  ASSERT_EQ(single.size(), 2u);
  ASSERT_EQ(distributed.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    const double a = single[e]["loss"].get<double>();
    const double b = distributed[e]["loss"].get<double>();
    // Same batches, same steps: only the order of float additions differs.
    EXPECT_NEAR(a, b, 1e-3 * a) << "epoch " << e + 1;
    EXPECT_NEAR(single[e]["trainLoss"].get<double>(), distributed[e]["trainLoss"].get<double>(),
                1e-3 * a);
  }
  // A different seed moves the curve by far more than that tolerance (the test can fail).
  WorkerConfig other = small_run(dir);
  other.seed = 6;
  std::ostringstream other_out;
  ASSERT_TRUE(run_worker(other, other_out));
  EXPECT_GT(std::abs(lines_of(other_out.str())[0]["loss"].get<double>() -
                     single[0]["loss"].get<double>()),
            1e-3 * single[0]["loss"].get<double>());
}

// SIGTERM in the middle of an epoch: the run stops after the step it is in, checkpoints that
// step, and a run resumed from it trains exactly what an uninterrupted run trains.
TEST(WorkerRun, TerminationCheckpointsTheStepAndTheResumedRunMatchesAnUninterruptedOne) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  WorkerConfig plain = small_run(dir);
  plain.checkpoint_dir = dir.file("plain");
  std::ostringstream plain_out;
  ASSERT_TRUE(run_worker(plain, plain_out));
  const auto uninterrupted = lines_of(plain_out.str());
  ASSERT_EQ(uninterrupted.size(), 2u);

  WorkerConfig c = small_run(dir);
  c.checkpoint_dir = dir.file("interrupted");
  int asked = 0;
  // 300 samples in steps of 25: 12 steps per epoch; the request comes during step 5 of epoch 2.
  c.termination_requested = [&] { return ++asked > 12 + 4; };
  std::ostringstream first_out;
  auto stopped = run_worker(c, first_out);
  ASSERT_TRUE(stopped) << stopped.error().message;
  EXPECT_TRUE(stopped->terminated);
  EXPECT_EQ(stopped->last_epoch, 1);
  EXPECT_EQ(stopped->stopped_at_step, 5 * 25);
  EXPECT_EQ(lines_of(first_out.str()).size(), 1u);  // epoch 1 only
  auto saved = read_checkpoint(checkpoint_path(c.checkpoint_dir));
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->epoch, 1);
  EXPECT_EQ(saved->step, 5 * 25);

  c.termination_requested = {};
  std::ostringstream resumed_out;
  auto resumed = run_worker(c, resumed_out);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_FALSE(resumed->terminated);
  const auto rest = lines_of(resumed_out.str());
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0]["epoch"], 2);
  EXPECT_EQ(rest[0]["loss"].get<double>(), uninterrupted[1]["loss"].get<double>());
  EXPECT_NEAR(rest[0]["trainLoss"].get<double>(), uninterrupted[1]["trainLoss"].get<double>(),
              1e-6);
  EXPECT_EQ(read_checkpoint(checkpoint_path(c.checkpoint_dir))->step, 0);
}

// Two ranks agree: the one told to stop is not rank 0, yet both stop after the same step and
// rank 0 writes it down.
TEST(WorkerRun, TerminationOfAnyRankStopsEveryRankAfterTheSameStep) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  WorkerConfig c0 = small_run(dir);
  c0.world_size = 2;
  c0.rank = 0;
  c0.master_port = 0;
  c0.checkpoint_dir = dir.file("ckpt");
  WorkerConfig c1 = small_run(dir);
  c1.world_size = 2;
  c1.rank = 1;
  int asked = 0;
  c1.termination_requested = [&] { return ++asked > 7; };
  std::promise<std::uint16_t> port;
  auto port_future = port.get_future();
  std::ostringstream out0, out1;
  Expected<RunSummary> r0 = error("not run"), r1 = error("not run");
  std::thread rank0([&] {
    bool listened = false;
    c0.on_listening = [&](std::uint16_t p) {
      listened = true;
      port.set_value(p);
    };
    r0 = run_worker(c0, out0);
    if (!listened) port.set_value(0);
  });
  std::thread rank1([&] {
    c1.master_port = port_future.get();
    if (c1.master_port != 0) r1 = run_worker(c1, out1);
  });
  rank0.join();
  rank1.join();
  ASSERT_TRUE(r0) << r0.error().message;
  ASSERT_TRUE(r1) << r1.error().message;
  EXPECT_TRUE(r0->terminated);
  EXPECT_TRUE(r1->terminated);
  EXPECT_EQ(r0->stopped_at_step, 8 * 25);
  EXPECT_EQ(r1->stopped_at_step, 8 * 25);
  auto saved = read_checkpoint(checkpoint_path(c0.checkpoint_dir));
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->epoch, 0);
  EXPECT_EQ(saved->step, 8 * 25);
}

TEST(WorkerRun, OperatorModeObeysCheckpointAndExitAndContinueThenResumesAsAnotherVariant) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  TestHttpServer server([](const RecordedRequest& r) {
    const auto report = nlohmann::json::parse(r.body);
    // Phase 0 is stopped after its second epoch, as a re-plan that switches early would; phase 1
    // was planned for one epoch and grew to two while it ran (the controller answers "continue"
    // at its planned end, then "checkpointAndExit" one epoch later).
    const bool stop = (report["phase"] == 0 && report["epoch"] == 2) ||
                      (report["phase"] == 1 && report["epoch"] == 4);
    return CannedResponse{200,
                          stop ? R"({"action":"checkpointAndExit"})" : R"({"action":"continue"})"};
  });
  WorkerConfig c = small_run(dir);
  c.epochs = 5;
  c.checkpoint_dir = dir.file("ckpt");
  c.operator_context =
      OperatorContext{"j", "ns", 0, server.url("/v1/namespaces/ns/jobs/j/progress"), "tok", ""};
  std::ostringstream out;
  auto first = run_worker(c, out);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->stopped_by_controller);
  EXPECT_EQ(first->last_epoch, 2);
  auto checkpoint = read_checkpoint(checkpoint_path(c.checkpoint_dir));
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_EQ(checkpoint->epoch, 2);
  EXPECT_EQ(checkpoint->variant, "quarter");

  // Phase 1: the eighth-width variant from epoch 2, planned for one epoch, converted from the
  // checkpoint.
  WorkerConfig next = c;
  next.variant = *variant_from_name("eighth");
  next.start_epoch = 2;
  next.epochs = 1;
  next.eval_initial = true;
  next.operator_context->phase = 1;
  std::ostringstream next_out;
  auto second = run_worker(next, next_out);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->stopped_by_controller);
  EXPECT_EQ(second->first_epoch, 2);
  EXPECT_EQ(second->last_epoch, 4);  // past its planned end: the controller said continue
  const auto lines = lines_of(next_out.str());
  ASSERT_EQ(lines.size(), 3u);
  // Pruning keeps the strongest units: right after the switch the loss is near, not back at
  // the untrained ~2.3.
  EXPECT_LT(lines[0]["loss"].get<double>(), 1.5);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].authorization, "Bearer tok");
  const auto last = nlohmann::json::parse(requests[3].body);
  EXPECT_EQ(last["phase"], 1);
  EXPECT_EQ(last["epoch"], 4);
  EXPECT_EQ(last["rank"], 0);
  auto after = read_checkpoint(checkpoint_path(c.checkpoint_dir));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->epoch, 4);
  EXPECT_EQ(after->variant, "eighth");
  EXPECT_EQ(after->parameters.shape().hidden, 32);

  // The phase is already done: a restarted pod finds the checkpoint at its end and exits at once.
  std::ostringstream again_out;
  auto again = run_worker(next, again_out);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->last_epoch, 4);
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(WorkerRun, ARejectedProgressReportFailsTheRun) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  TestHttpServer server([](const RecordedRequest&) { return CannedResponse{403, "forbidden"}; });
  WorkerConfig c = small_run(dir);
  c.epochs = 1;
  c.operator_context = OperatorContext{"j", "ns", 0, server.url("/p"), "wrong", ""};
  std::ostringstream out;
  auto r = run_worker(c, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("HTTP 403"), std::string::npos) << r.error().message;
}

// An endpoint that does not take the report within the retry deadline (here 0: one attempt)
// stops the run after the epoch is checkpointed, marked for exit code 75, not as an error (which
// exits 1 and counts as a failure of the phase). Before, the worker trained on without reporting.
TEST(WorkerRun, AnUnreachableEndpointStopsTheRunAfterTheCheckpoint) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  TestHttpServer server([](const RecordedRequest&) { return CannedResponse{503, "{}"}; });
  WorkerConfig c = small_run(dir);
  c.epochs = 3;
  c.checkpoint_dir = dir.file("ckpt");
  c.operator_context = OperatorContext{"j", "ns", 0, server.url("/p"), "tok", ""};
  c.operator_context->progress_retry = std::chrono::milliseconds(0);
  std::ostringstream out;
  auto r = run_worker(c, out);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->progress_unreachable);
  EXPECT_EQ(r->last_epoch, 1);
  EXPECT_EQ(server.requests().size(), 1u);
  auto checkpoint = read_checkpoint(checkpoint_path(c.checkpoint_dir));
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_EQ(checkpoint->epoch, 1);
}

TEST(WorkerRun, ACorruptCheckpointStopsTheRun) {
  DEPL_REQUIRE_FASHION_MNIST();
  TempDir dir;
  WorkerConfig c = small_run(dir);
  c.checkpoint_dir = dir.file("ckpt");
  std::filesystem::create_directories(c.checkpoint_dir);
  std::ofstream(checkpoint_path(c.checkpoint_dir)) << "garbage";
  std::ostringstream out;
  auto r = run_worker(c, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bad magic"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace depl::worker
