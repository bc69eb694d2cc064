// Writes computed with the store unlocked (store_write_path.cpp): a write that another write
// overtakes between reading the object and storing its own is computed again from the newer
// object, so both land, in order, and preconditions still answer 409. The StoreOptions seam runs
// the overtaking write at exactly that moment; a clock the seam advances tells an unlocked try
// that stored its object (the time it read) from one computed again (the time after).
#include <atomic>
#include <thread>

#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;

class ConcurrentWriteTest : public ::testing::Test {
 protected:
  FixedClock clock;
  // What the seam does the next time a write is about to store its result (once).
  std::function<void(const ResourceRef&)> overtake;
  std::atomic<int> seam_calls{0};  // the seam runs on every writer's thread
  ApiStore store{StoreOptions{100, [this] { return clock.now; }, false, 7,
                              [this](const ResourceRef& ref) {
                                ++seam_calls;
                                if (!overtake) return;
                                auto once = std::move(overtake);
                                overtake = nullptr;
                                clock.now += std::chrono::seconds(60);
                                once(ref);
                              }}};

  static constexpr const char* kBefore = "2026-01-01T00:00:00Z";
  static constexpr const char* kAfter = "2026-01-01T00:01:00Z";

  json must(const ApiResult& r, int code = 200) {
    EXPECT_EQ(r.code, code) << r.body.dump();
    return r.body;
  }
  static std::string rv_of(const json& o) {
    return o["metadata"]["resourceVersion"].get<std::string>();
  }
  static std::string time_of(const json& o, const std::string& manager) {
    for (const auto& m : o["metadata"]["managedFields"]) {
      if (m["manager"] == manager) return m["time"].get<std::string>();
    }
    return "";
  }
  std::shared_ptr<WatchSubscription> watch_pods() {
    auto w = store.watch(core("pods", "default"), {.resource_version = store.resource_version()});
    EXPECT_TRUE(w);
    return *w;
  }
  static std::string annotation_patch(const std::string& key) {
    return json{{"metadata", {{"annotations", {{key, "1"}}}}}}.dump();
  }
};

TEST_F(ConcurrentWriteTest, PatchOvertakenBetweenReadAndStoreIsComputedAgainAndBothLand) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  auto events = watch_pods();
  const int seam_calls_before = seam_calls;
  overtake = [&](const ResourceRef&) {
    must(store.patch(core("pods", "default", "p"), PatchType::Merge, annotation_patch("second"),
                     {.field_manager = "second"}));
  };
  json first = must(store.patch(core("pods", "default", "p"), PatchType::Merge,
                                annotation_patch("first"), {.field_manager = "first"}));

  // Nothing lost: the first write was computed again from the second's object (at the later
  // time: its unlocked try read the earlier one), and stored after it.
  EXPECT_EQ(first["metadata"]["annotations"], json({{"first", "1"}, {"second", "1"}}));
  EXPECT_EQ(time_of(first, "first"), kAfter);
  EXPECT_EQ(must(store.get(core("pods", "default", "p"))), first);
  auto delivered = events->drain();
  ASSERT_EQ(delivered.size(), 2u);
  EXPECT_EQ(delivered[0].object->at("metadata").at("annotations"), json({{"second", "1"}}));
  EXPECT_EQ(*delivered[1].object, first);
  EXPECT_EQ(std::stoull(rv_of(first)), std::stoull(rv_of(*delivered[0].object)) + 1);
  // The seam ran for the first write and the second; the first's second try held the lock.
  EXPECT_EQ(seam_calls - seam_calls_before, 2);
}

TEST_F(ConcurrentWriteTest, WriteToAnotherObjectMeanwhileDoesNotComputeAgain) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  must(store.create(core("pods", "default"), a_pod("q")), 201);
  overtake = [&](const ResourceRef&) {
    must(store.patch(core("pods", "default", "q"), PatchType::Merge, annotation_patch("other")));
  };
  json first = must(store.patch(core("pods", "default", "p"), PatchType::Merge,
                                annotation_patch("first"), {.field_manager = "first"}));
  EXPECT_EQ(time_of(first, "first"), kBefore);  // stored as computed, unlocked
  EXPECT_EQ(first["metadata"]["annotations"], json({{"first", "1"}}));
}

TEST_F(ConcurrentWriteTest, StaleResourceVersionStillConflictsAfterBeingOvertaken) {
  json pod = must(store.create(core("pods", "default"), a_pod("p")), 201);
  overtake = [&](const ResourceRef&) {
    must(store.patch(core("pods", "default", "p"), PatchType::Merge, annotation_patch("second")));
  };
  // The PUT's resourceVersion was current when it was read; the second write made it stale.
  json put = pod;
  put["metadata"]["labels"] = {{"changed", "yes"}};
  ApiResult updated = store.update(core("pods", "default", "p"), put);
  EXPECT_EQ(updated.code, 409);
  EXPECT_EQ(updated.body["message"],
            "Operation cannot be fulfilled on pods \"p\": the object has been modified; please "
            "apply your changes to the latest version and try again");
  json stored = must(store.get(core("pods", "default", "p")));
  EXPECT_FALSE(stored["metadata"].contains("labels") &&
               stored["metadata"]["labels"].contains("changed"));
  EXPECT_EQ(stored["metadata"]["annotations"], json({{"second", "1"}}));

  // The same through a merge patch carrying the resourceVersion as its precondition.
  json current = must(store.get(core("pods", "default", "p")));
  overtake = [&](const ResourceRef&) {
    must(store.patch(core("pods", "default", "p"), PatchType::Merge, annotation_patch("third")));
  };
  ApiResult patched = store.patch(
      core("pods", "default", "p"), PatchType::Merge,
      json{{"metadata", {{"resourceVersion", rv_of(current)}, {"labels", {{"x", "y"}}}}}}.dump());
  EXPECT_EQ(patched.code, 409) << patched.body.dump();
}

TEST_F(ConcurrentWriteTest, StatusUpdateOvertakenByAnotherStatusWriteKeepsBoth) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  json pod = must(store.get(core("pods", "default", "p")));
  overtake = [&](const ResourceRef&) {
    must(store.patch(core("pods", "default", "p", "status"), PatchType::Merge,
                     R"({"status":{"podIP":"10.0.0.9"}})", {.field_manager = "kubelet"}));
  };
  // A PUT without a resourceVersion (pods allow it) is computed again from the newer object.
  json put = pod;
  put["metadata"].erase("resourceVersion");
  put["status"]["phase"] = "Running";
  put["status"]["podIP"] = "10.0.0.9";
  json updated = must(
      store.update(core("pods", "default", "p", "status"), put, {.field_manager = "controller"}));
  EXPECT_EQ(updated["status"]["phase"], "Running");
  EXPECT_EQ(updated["status"]["podIP"], "10.0.0.9");
  EXPECT_EQ(time_of(updated, "controller"), kAfter);
}

TEST_F(ConcurrentWriteTest, BindingOvertakenByAnotherBindingConflicts) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  auto binding = [](const std::string& node) {
    return json{{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata", {{"name", "p"}}},
                {"target", {{"kind", "Node"}, {"name", node}}}};
  };
  overtake = [&](const ResourceRef&) {
    must(store.create(core("pods", "default", "p", "binding"), binding("node-b")), 201);
  };
  ApiResult first = store.create(core("pods", "default", "p", "binding"), binding("node-a"));
  EXPECT_EQ(first.code, 409);
  EXPECT_EQ(first.body["message"],
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is "
            "already assigned to node \"node-b\"");
  EXPECT_EQ(must(store.get(core("pods", "default", "p")))["spec"]["nodeName"], "node-b");
}

TEST_F(ConcurrentWriteTest, CreateOvertakenByCreateOfTheSameNameAlreadyExists) {
  overtake = [&](const ResourceRef&) {
    json winner = a_pod("p");
    winner["metadata"]["labels"] = {{"won", "yes"}};
    must(store.create(core("pods", "default"), winner), 201);
  };
  ApiResult loser = store.create(core("pods", "default"), a_pod("p"));
  EXPECT_EQ(loser.code, 409);
  EXPECT_EQ(loser.body["reason"], "AlreadyExists");
  EXPECT_EQ(must(store.get(core("pods", "default", "p")))["metadata"]["labels"]["won"], "yes");
}

TEST_F(ConcurrentWriteTest, CustomResourceCreateOvertakenByItsCrdWriteUsesTheNewType) {
  must(store.create(crds(), dtj_crd()), 201);
  overtake = [&](const ResourceRef&) {
    // Any write to the CRD serves new (here: equal) types.
    must(store.patch(crds("dependabletrainingjobs.depl.dev"), PatchType::Merge,
                     R"({"metadata":{"labels":{"touched":"yes"}}})"));
  };
  json job = must(store.create(dtj(), a_job("j")), 201);
  // Created again from the request's body, with the lock held, at the later time.
  EXPECT_EQ(job["metadata"]["creationTimestamp"], kAfter);
  EXPECT_EQ(job["spec"]["target"]["loss"], 0.3);
}

TEST_F(ConcurrentWriteTest, WritersOnManyThreadsLoseNothingAndEventsFollowResourceVersions) {
  must(store.create(core("pods", "default"), a_pod("p")), 201);
  auto events = watch_pods();
  constexpr int kThreads = 4;
  constexpr int kWrites = 150;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string key = "w" + std::to_string(t) + "-" + std::to_string(i);
        // Alternate the main endpoint and /status, as the controller and the kubelet do.
        if (i % 2 == 0) {
          store.patch(core("pods", "default", "p"), PatchType::Merge, annotation_patch(key),
                      {.field_manager = "t" + std::to_string(t)});
        } else {
          store.patch(
              core("pods", "default", "p", "status"), PatchType::Merge,
              json{{"status",
                    {{"conditions", json::array({{{"type", key}}})}, {"w" + std::to_string(t), i}}}}
                  .dump(),
              {.field_manager = "s" + std::to_string(t)});
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  json last = must(store.get(core("pods", "default", "p")));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kWrites; i += 2) {
      EXPECT_TRUE(last["metadata"]["annotations"].contains("w" + std::to_string(t) + "-" +
                                                           std::to_string(i)));
    }
    EXPECT_EQ(last["status"]["w" + std::to_string(t)], kWrites - 1);
  }
  // One MODIFIED event per write, in resourceVersion order, each keeping what came before.
  auto delivered = events->drain();
  ASSERT_EQ(delivered.size(), static_cast<std::size_t>(kThreads * kWrites));
  for (std::size_t i = 1; i < delivered.size(); ++i) {
    const json& before = *delivered[i - 1].object;
    const json& after = *delivered[i].object;
    EXPECT_EQ(std::stoull(rv_of(after)), std::stoull(rv_of(before)) + 1);
    const json none = json::object();
    const json& kept =
        before["metadata"].contains("annotations") ? before["metadata"]["annotations"] : none;
    for (const auto& [k, v] : kept.items()) {
      EXPECT_TRUE(after["metadata"]["annotations"].contains(k)) << "lost " << k << " at " << i;
    }
  }
  EXPECT_EQ(*delivered.back().object, last);
}

}  // namespace
}  // namespace depl::devcluster
