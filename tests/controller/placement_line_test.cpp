// PlacementLine: jobs in creation order, who waits for a first plan, and what earlier jobs were
// promised but do not hold yet.
#include "depl/controller/placement_line.hpp"

#include <gtest/gtest.h>

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
  PlacementLine line;
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
  PlacementLine line;
  GpuLedger gpus;
  line.put(planned(job("a", "2026-11-22T05:00:01Z"), "p", 3));               // 3 x 2 GPUs
  line.put(planned(job("b", "2026-11-22T05:00:02Z"), "q", 1, "Pending"));    // 1 x 2 GPUs
  line.put(planned(job("c", "2026-11-22T05:00:03Z"), "p", 4, "Succeeded"));  // done: nothing
  line.put(planned(job("d", "2026-11-22T05:00:04Z"), "p", 1));               // later than x
  const json x = job("x", "2026-11-22T05:00:03Z");
  auto reservations = line.reservations_before(x, gpus);
  ASSERT_EQ(reservations.size(), 2u);
  EXPECT_EQ(reservations[0].pool, "p");
  EXPECT_EQ(reservations[0].gpus, 6);
  EXPECT_EQ(reservations[1].pool, "q");
  EXPECT_EQ(reservations[1].gpus, 2);

  gpus.put(gpu_pod("a-w0", "uid-a", 2));
  gpus.put(gpu_pod("a-w1", "uid-a", 2));
  gpus.put(gpu_pod("b-w0", "uid-b", 2));
  reservations = line.reservations_before(x, gpus);
  ASSERT_EQ(reservations.size(), 1u);
  EXPECT_EQ(reservations[0].pool, "p");
  EXPECT_EQ(reservations[0].gpus, 2);
  EXPECT_TRUE(line.reservations_before(job("a", "2026-11-22T05:00:01Z"), gpus).empty());
}

}  // namespace
}  // namespace depl::controller
