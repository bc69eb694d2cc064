// PlacementLine: jobs in creation order, who waits for a first plan, and what earlier jobs were
// promised but do not hold yet.
#include "depl/controller/placement_line.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace depl::controller {
namespace {

using nlohmann::json;

json job(const std::string& name, const std::string& created, const std::string& uid = "") {
  return {{"metadata",
           {{"namespace", "default"},
            {"name", name},
            {"uid", uid.empty() ? "uid-" + name : uid},
            {"creationTimestamp", created}}},
          {"spec", {{"models", json::array({{{"name", "big"}, {"gpusPerWorker", 2}}})}}}};
}

json planned(json j, const std::string& pool, int workers, const std::string& phase = "Running") {
  j["status"] = {
      {"phase", phase},
      {"conditions", json::array({{{"type", "Planned"}, {"status", "True"}}})},
      {"plan",
       {{"datasets", json::array({"d"})},
        {"phases",
         json::array({{{"model", "big"}, {"epochs", 3}, {"pool", pool}, {"workers", workers}}})}}}};
  return j;
}

json gpu_pod(const std::string& name, const std::string& owner_uid, int gpus) {
  return {{"metadata",
           {{"namespace", "default"},
            {"name", name},
            {"ownerReferences", json::array({{{"uid", owner_uid}, {"controller", true}}})}}},
          {"spec",
           {{"nodeName", "n1"},
            {"containers",
             json::array(
                 {{{"name", "w"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
          {"status", {{"phase", "Running"}}}};
}

TEST(PlacementLine, TheEarliestJobWithoutAPlanIsNext) {
  GpuLedger gpus;
  PlacementLine line(gpus);
  EXPECT_FALSE(line.next().has_value());
  line.put(job("c", "2026-11-22T05:00:02Z"));
  line.put(job("b", "2026-11-22T05:00:01Z"));
  line.put(job("a", "2026-11-22T05:00:01Z"));  // same second: by name
  EXPECT_EQ(line.next()->name, "a");
  EXPECT_EQ(line.unplanned_before(job("a", "2026-11-22T05:00:01Z")), "");
  EXPECT_EQ(line.unplanned_before(job("c", "2026-11-22T05:00:02Z")), "default/a");

  line.put(planned(job("a", "2026-11-22T05:00:01Z"), "p", 1));
  EXPECT_EQ(line.next()->name, "b");
  json invalid = job("b", "2026-11-22T05:00:01Z");
  invalid["status"]["conditions"] = json::array({{{"type", "Valid"}, {"status", "False"}}});
  line.put(invalid);
  EXPECT_EQ(line.next()->name, "c");
  EXPECT_EQ(line.unplanned_before(job("c", "2026-11-22T05:00:02Z")), "");
  json suspended = job("c", "2026-11-22T05:00:02Z");
  suspended["spec"]["suspend"] = true;
  line.put(suspended);
  EXPECT_FALSE(line.next().has_value());

  line.put(job("d", "2026-11-22T05:00:03Z"));
  line.remove(job("d", "2026-11-22T05:00:03Z"));
  EXPECT_FALSE(line.next().has_value());
  // Recreated under the same name, later: it moves to its new place.
  line.put(job("a", "2026-11-22T05:00:09Z", "uid-a2"));
  EXPECT_EQ(line.next()->name, "a");
  EXPECT_EQ(line.unplanned_before(job("z", "2026-11-22T05:00:05Z")), "");
}

TEST(PlacementLine, EarlierJobsReserveWhatTheirPodsDoNotHoldYet) {
  GpuLedger gpus;
  PlacementLine line(gpus);
  line.put(planned(job("a", "2026-11-22T05:00:01Z"), "p", 3));               // 3 x 2 GPUs
  line.put(planned(job("b", "2026-11-22T05:00:02Z"), "q", 1, "Pending"));    // 1 x 2 GPUs
  line.put(planned(job("c", "2026-11-22T05:00:03Z"), "p", 4, "Succeeded"));  // done: nothing
  line.put(planned(job("d", "2026-11-22T05:00:04Z"), "p", 1));               // later than x
  const json x = job("x", "2026-11-22T05:00:03Z");
  auto reservations = line.reservations_before(x);
  ASSERT_EQ(reservations.size(), 2u);
  EXPECT_EQ(reservations[0].pool, "p");
  EXPECT_EQ(reservations[0].gpus, 6);
  EXPECT_EQ(reservations[1].pool, "q");
  EXPECT_EQ(reservations[1].gpus, 2);

  gpus.put(gpu_pod("a-w0", "uid-a", 2));
  gpus.put(gpu_pod("a-w1", "uid-a", 2));
  gpus.put(gpu_pod("b-w0", "uid-b", 2));
  reservations = line.reservations_before(x);
  ASSERT_EQ(reservations.size(), 1u);
  EXPECT_EQ(reservations[0].pool, "p");
  EXPECT_EQ(reservations[0].gpus, 2);
  EXPECT_TRUE(line.reservations_before(job("a", "2026-11-22T05:00:01Z")).empty());
}

json waiting_for_capacity(json j) {
  j["status"] = {
      {"phase", "Pending"},
      {"message", "no feasible plan: no node pool with free GPUs"},
      {"conditions",
       json::array({{{"type", "Planned"}, {"status", "False"}, {"reason", "Infeasible"}}})}};
  return j;
}

// Jobs that found no room keep their place: once room may have grown (GPUs freed, a job
// reserving less), a later waiting job plans only after the earlier ones looked again. Room
// taken moves nothing.
TEST(PlacementLine, JobsWaitingForRoomLookAgainInCreationOrder) {
  GpuLedger gpus;
  PlacementLine line(gpus);
  const json a = job("a", "2026-11-22T05:00:01Z");
  const json b = waiting_for_capacity(job("b", "2026-11-22T05:00:02Z"));
  const json c = waiting_for_capacity(job("c", "2026-11-22T05:00:03Z"));
  EXPECT_TRUE(waits_for_capacity(b));
  EXPECT_FALSE(waits_for_capacity(a));
  EXPECT_FALSE(waits_for_capacity(planned(job("d", "2026-11-22T05:00:04Z"), "p", 1, "Pending")));
  line.put(planned(a, "p", 1));
  gpus.put(gpu_pod("a-w0", "uid-a", 2));
  line.put(b);
  line.put(c);
  // Neither has looked since it found no room: b first, then c.
  EXPECT_EQ(line.next()->name, "b");
  EXPECT_EQ(line.unplanned_before(c), "default/b");
  EXPECT_EQ(line.unplanned_before(b), "");
  std::uint64_t epoch = line.capacity_epoch();
  line.looked_at(b, epoch);
  EXPECT_EQ(line.next()->name, "c");
  EXPECT_EQ(line.unplanned_before(c), "");
  line.looked_at(c, epoch);
  EXPECT_FALSE(line.next().has_value());

  // Another pod takes GPUs: no room grew, nobody needs to look again.
  gpus.put(gpu_pod("other", "uid-other", 1));
  EXPECT_EQ(line.capacity_epoch(), epoch);
  EXPECT_EQ(line.unplanned_before(c), "");

  // a's worker ends: b looks first; c waits for it, even having looked before.
  gpus.remove(gpu_pod("a-w0", "uid-a", 2));
  EXPECT_GT(line.capacity_epoch(), epoch);
  epoch = line.capacity_epoch();
  EXPECT_EQ(line.unplanned_before(c), "default/b");
  EXPECT_EQ(line.next()->name, "b");
  line.looked_at(b, epoch);  // b could not use it
  EXPECT_EQ(line.unplanned_before(c), "");
  line.looked_at(c, epoch);

  // a finishes (it reserves nothing any more): room grew again.
  json done = planned(a, "p", 1, "Succeeded");
  line.put(done);
  EXPECT_GT(line.capacity_epoch(), epoch);
  EXPECT_EQ(line.unplanned_before(c), "default/b");
  // b takes the room: planned, it no longer waits, and c looks after it.
  line.put(planned(job("b", "2026-11-22T05:00:02Z"), "p", 1, "Pending"));
  EXPECT_EQ(line.unplanned_before(c), "");
  EXPECT_EQ(line.next()->name, "c");
  // A look from a view older than the last change does not count.
  line.looked_at(c, epoch);
  EXPECT_EQ(line.next()->name, "c");
  line.looked_at(c, line.capacity_epoch());
  EXPECT_FALSE(line.next().has_value());
}

json gpu_node(const std::string& name, int gpus, bool ready = true) {
  return {{"metadata", {{"name", name}, {"labels", {{"depl.dev/pool", "p"}}}}},
          {"spec", json::object()},
          {"status",
           {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}},
            {"conditions",
             json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

TEST(PlacementLine, ANodeThatMayOfferMoreGpusMovesTheEpoch) {
  const json n4 = gpu_node("n", 4);
  EXPECT_TRUE(node_may_add_room(nullptr, n4));                      // added
  EXPECT_FALSE(node_may_add_room(nullptr, gpu_node("n", 0)));       // added without GPUs
  EXPECT_FALSE(node_may_add_room(nullptr, gpu_node("n", 4, false))); // added, not Ready yet
  const json not_ready = gpu_node("n", 4, false);
  EXPECT_TRUE(node_may_add_room(&not_ready, n4));                   // became Ready
  EXPECT_FALSE(node_may_add_room(&n4, not_ready));                  // went NotReady
  const json n8 = gpu_node("n", 8);
  EXPECT_TRUE(node_may_add_room(&n4, n8));                          // more GPUs
  EXPECT_FALSE(node_may_add_room(&n8, n4));                         // fewer
  json heartbeat = n4;
  heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-27T18:00:00Z";
  EXPECT_FALSE(node_may_add_room(&n4, heartbeat));                  // a status heartbeat
  json cordoned = n4;
  cordoned["spec"]["unschedulable"] = true;
  EXPECT_FALSE(node_may_add_room(&n4, cordoned));
  EXPECT_TRUE(node_may_add_room(&cordoned, n4));                    // uncordoned
  json priced = n4;
  priced["metadata"]["annotations"] = {{"depl.dev/gpu-gflops", "1000"}};
  EXPECT_TRUE(node_may_add_room(&n4, priced));                      // now priced or placed
  json elsewhere = gpu_node("m", 4);
  elsewhere["metadata"]["labels"] = json::object();                 // in no pool
  EXPECT_FALSE(node_may_add_room(nullptr, elsewhere));

  // Through the line's node handlers: jobs waiting for room look again, in creation order.
  GpuLedger gpus;
  PlacementLine line(gpus);
  const json b = waiting_for_capacity(job("b", "2026-11-22T05:00:02Z"));
  const json c = waiting_for_capacity(job("c", "2026-11-22T05:00:03Z"));
  line.put(b);
  line.put(c);
  std::uint64_t epoch = line.capacity_epoch();
  line.looked_at(b, epoch);
  line.looked_at(c, epoch);
  ASSERT_FALSE(line.next().has_value());
  auto h = line.node_handlers();
  h.on_update(std::make_shared<const json>(n4), std::make_shared<const json>(heartbeat));
  EXPECT_EQ(line.capacity_epoch(), epoch);
  EXPECT_FALSE(line.next().has_value());
  h.on_add(std::make_shared<const json>(gpu_node("new", 2)));
  EXPECT_GT(line.capacity_epoch(), epoch);
  EXPECT_EQ(line.next()->name, "b");
  EXPECT_EQ(line.unplanned_before(c), "default/b");  // c, woken too, waits for b's look
  line.looked_at(b, line.capacity_epoch());
  EXPECT_EQ(line.next()->name, "c");
}

// What the line says earlier jobs still need follows the ledger whichever comes first, the
// plan or the pods, and whatever happens to the pods afterwards.
TEST(PlacementLine, ReservationsFollowThePodsWhicheverArrivesFirst) {
  GpuLedger gpus;
  PlacementLine line(gpus);
  const json x = job("x", "2026-11-22T05:00:09Z");
  gpus.put(gpu_pod("a-w0", "uid-a", 2));  // a's pod before a's plan reaches the line
  line.put(planned(job("a", "2026-11-22T05:00:01Z"), "p", 2));
  auto reservations = line.reservations_before(x);
  ASSERT_EQ(reservations.size(), 1u);
  EXPECT_EQ(reservations[0].gpus, 2);
  gpus.put(gpu_pod("a-w1", "uid-a", 2));
  EXPECT_TRUE(line.reservations_before(x).empty());
  gpus.remove(gpu_pod("a-w0", "uid-a", 2));  // a worker gone: its GPUs are promised again
  reservations = line.reservations_before(x);
  ASSERT_EQ(reservations.size(), 1u);
  EXPECT_EQ(reservations[0].gpus, 2);
  line.remove(job("a", "2026-11-22T05:00:01Z"));
  EXPECT_TRUE(line.reservations_before(x).empty());
  gpus.remove(gpu_pod("a-w1", "uid-a", 2));  // the ledger's news of a job no longer in line
  EXPECT_TRUE(line.reservations_before(x).empty());
}

// Seeded random plans, pods and removals: the line's answer is always the sum over the jobs
// before, worked out from scratch.
TEST(PlacementLine, ReservationsAgreeWithSummingOverEveryEarlierJob) {
  std::mt19937 rng(7);
  GpuLedger gpus;
  PlacementLine line(gpus);
  struct Model {
    int workers = 0;                  // 0: no plan in line
    std::map<std::string, int> pods;  // pod name -> GPUs
  };
  std::map<std::string, Model> jobs;  // by name; job names sort as their creation times
  auto created = [](int i) {
    return "2026-11-22T05:00:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "Z";
  };
  for (int step = 0; step < 3000; ++step) {
    const int i = static_cast<int>(rng() % 12);
    const std::string name = "j" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    Model& m = jobs[name];
    switch (rng() % 4) {
      case 0:  // planned (again), 1-4 workers of 2 GPUs
        m.workers = 1 + static_cast<int>(rng() % 4);
        line.put(planned(job(name, created(i)), "p", m.workers));
        break;
      case 1:  // gone from the line
        m.workers = 0;
        line.remove(job(name, created(i)));
        break;
      case 2: {  // a pod of 1-2 GPUs bound
        const std::string pod = name + "-w" + std::to_string(rng() % 5);
        m.pods[pod] = 1 + static_cast<int>(rng() % 2);
        gpus.put(gpu_pod(pod, "uid-" + name, m.pods[pod]));
        break;
      }
      default: {  // a pod deleted
        const std::string pod = name + "-w" + std::to_string(rng() % 5);
        m.pods.erase(pod);
        gpus.remove(gpu_pod(pod, "uid-" + name, 1));
      }
    }
    const int before = static_cast<int>(rng() % 13);
    int want = 0;
    for (const auto& [n, model] : jobs) {
      // Same creation second: by name, and "jNN" sorts before "x".
      if (std::stoi(n.substr(1)) > before || model.workers == 0) continue;
      int held = 0;
      for (const auto& [pod, g] : model.pods) held += g;
      want += std::max(0, model.workers * 2 - held);
    }
    int got = 0;
    for (const auto& r : line.reservations_before(job("x", created(before)))) {
      EXPECT_GT(r.gpus, 0);
      got += r.gpus;
    }
    ASSERT_EQ(got, want) << "step " << step;
  }
}

// Two jobs in line, `a` before `b`; the reconciler assumes plans of `a` into the line.
class AssumedPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    line.put(a);
    line.put(b);
  }
  GpuLedger gpus;
  PlacementLine line{gpus};
  const json a = job("a", "2026-11-22T05:00:01Z");
  const json b = job("b", "2026-11-22T05:00:02Z");
};

// The reconciler assumes a first plan before its status write: the next job's turn comes at
// once, and counts the plan's GPUs.
TEST_F(AssumedPlan, LetsTheNextJobInAndReserves) {
  EXPECT_EQ(line.unplanned_before(b), "default/a");
  line.assume(planned(a, "p", 3, "Pending"));
  EXPECT_EQ(line.next()->name, "b");
  EXPECT_EQ(line.unplanned_before(b), "");
  auto reservations = line.reservations_before(b);
  ASSERT_EQ(reservations.size(), 1u);
  EXPECT_EQ(reservations[0].gpus, 6);
  // An event from before the write (the job as it was) does not undo the assumption...
  line.put(a);
  EXPECT_EQ(line.next()->name, "b");
  // ...and once the informer delivers the written version, the assumption is done with.
  line.put(planned(a, "p", 3, "Pending"));
  line.forget(a);  // a late failure of a retried write changes nothing now
  EXPECT_EQ(line.next()->name, "b");
  EXPECT_EQ(line.reservations_before(b).size(), 1u);
}

TEST_F(AssumedPlan, AFailedWriteGoesBackToWhatTheInformerDelivered) {
  line.assume(planned(a, "p", 3, "Pending"));
  line.forget(a);
  EXPECT_EQ(line.next()->name, "a");
  EXPECT_EQ(line.unplanned_before(b), "default/a");
  EXPECT_TRUE(line.reservations_before(b).empty());
  // A job recreated under the same name is a new job: its events are not held back.
  line.assume(planned(a, "p", 3, "Pending"));
  line.put(job("a", "2026-11-22T05:00:05Z", "uid-a2"));
  EXPECT_EQ(line.next()->name, "b");
  EXPECT_EQ(line.unplanned_before(job("c", "2026-11-22T05:00:09Z")), "default/b");
}

// A retry from a cache that had not yet seen the job's own first write: the informer delivers
// that write between the retry's read and its assumption, the retry's write then fails with a
// conflict, and the line must keep the delivered plan, not the retry's older copy of the job
// (that stalled a burst of 1,000 jobs: no later event would have corrected the line).
TEST_F(AssumedPlan, ARetryFromAStaleCacheDoesNotUndoADeliveredPlan) {
  line.assume(planned(a, "p", 3, "Pending"));  // the first reconcile; its write succeeds
  line.put(planned(a, "p", 3, "Pending"));     // the informer delivers it
  line.assume(planned(a, "p", 2, "Pending"));  // the retry, decided from the stale copy `a`
  line.forget(a);                              // its write: 409 Conflict
  EXPECT_EQ(line.next()->name, "b");
  EXPECT_EQ(line.unplanned_before(b), "");
  auto reservations = line.reservations_before(b);
  ASSERT_EQ(reservations.size(), 1u);
  EXPECT_EQ(reservations[0].gpus, 6) << "the delivered plan's 3 workers x 2 GPUs";
}

}  // namespace
}  // namespace depl::controller
