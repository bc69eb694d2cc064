// Store: keyed objects, the built-in and custom indexes, immutable snapshots, relist replace
// semantics, the synced signal, and readers running while the writer applies changes.
#include "depl/kube/runtime/store.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using runtime_test::pod;

ObjectPtr make(json object) {
  return std::make_shared<const json>(std::move(object));
}

ObjectPtr labelled_pod(const std::string& name, const std::string& rv, const std::string& app,
                       const std::string& node, const std::string& owner_uid) {
  json object = pod("ns", name, rv);
  object["metadata"]["labels"] = {{"app", app}};
  object["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "depl.dev/v1alpha1"},
                                                        {"kind", "DependableTrainingJob"},
                                                        {"name", "job"},
                                                        {"uid", owner_uid},
                                                        {"controller", true}}});
  object["spec"] = {{"nodeName", node}};
  return make(object);
}

std::vector<std::string> names(const std::vector<ObjectPtr>& objects) {
  std::vector<std::string> result;
  for (const auto& object : objects) result.push_back((*object)["metadata"]["name"]);
  std::sort(result.begin(), result.end());
  return result;
}

TEST(StoreTest, ApplyGetRemoveReturnPreviousState) {
  Store store;
  EXPECT_EQ(store.apply(make(pod("ns", "a", "1"))), nullptr);
  ObjectPtr previous = store.apply(make(pod("ns", "a", "2")));
  ASSERT_NE(previous, nullptr);
  EXPECT_EQ((*previous)["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*store.get({"ns", "a"}))["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(store.get({"other", "a"}), nullptr);
  EXPECT_EQ(store.size(), 1u);
  ObjectPtr removed = store.remove({"ns", "a"});
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(store.remove({"ns", "a"}), nullptr);
  EXPECT_EQ(store.size(), 0u);
}

TEST(StoreTest, BuiltInIndexesFollowUpdatesAndDeletes) {
  Store store;
  store.apply(labelled_pod("a", "1", "web", "node-1", "uid-1"));
  store.apply(labelled_pod("b", "1", "web", "node-2", "uid-1"));
  store.apply(labelled_pod("c", "1", "db", "node-1", "uid-2"));
  EXPECT_EQ(names(store.by_index(indexes::kByLabel, "app=web")),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(names(store.by_index(indexes::kByNodeName, "node-1")),
            (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(names(store.by_index(indexes::kByOwnerUid, "uid-1")),
            (std::vector<std::string>{"a", "b"}));

  // "a" moves to another node and app: it leaves its old index entries.
  store.apply(labelled_pod("a", "2", "db", "node-3", "uid-2"));
  EXPECT_EQ(names(store.by_index(indexes::kByLabel, "app=web")), (std::vector<std::string>{"b"}));
  EXPECT_EQ(names(store.by_index(indexes::kByNodeName, "node-1")), (std::vector<std::string>{"c"}));
  EXPECT_EQ(names(store.by_index(indexes::kByNodeName, "node-3")), (std::vector<std::string>{"a"}));
  store.remove({"ns", "c"});
  EXPECT_EQ(names(store.by_index(indexes::kByOwnerUid, "uid-2")), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(store.by_index("no-such-index", "x").empty());
}

TEST(StoreTest, CustomIndexFunction) {
  auto indexes = default_indexes();
  indexes.emplace("phase", [](const json& object) {
    std::vector<std::string> values;
    if (object.contains("status")) values.push_back(object["status"].value("phase", ""));
    return values;
  });
  Store store(std::move(indexes));
  json running = pod("ns", "r", "1");
  running["status"] = {{"phase", "Running"}};
  json pending = pod("ns", "p", "1");
  pending["status"] = {{"phase", "Pending"}};
  store.apply(make(running));
  store.apply(make(pending));
  EXPECT_EQ(names(store.by_index("phase", "Running")), (std::vector<std::string>{"r"}));
  EXPECT_EQ(names(store.by_index("phase", "Pending")), (std::vector<std::string>{"p"}));
}

TEST(StoreTest, SnapshotsAreImmutableAndSharedUntilTheNextChange) {
  Store store;
  store.apply(make(pod("ns", "a", "1")));
  auto first = store.snapshot();
  EXPECT_EQ(store.snapshot(), first);  // no change: the same snapshot is shared
  store.apply(make(pod("ns", "a", "2")));
  store.apply(make(pod("ns", "b", "1")));
  auto second = store.snapshot();
  EXPECT_NE(second, first);
  EXPECT_EQ(first->size(), 1u);
  EXPECT_EQ((*first->get({"ns", "a"}))["metadata"]["resourceVersion"], "1");
  EXPECT_EQ(second->size(), 2u);
  EXPECT_EQ((*second->get({"ns", "a"}))["metadata"]["resourceVersion"], "2");
}

TEST(StoreTest, ReplaceReportsAddsUpdatesDeletesAndMarksSynced) {
  Store store;
  EXPECT_FALSE(store.synced());
  EXPECT_FALSE(store.wait_synced_for(std::chrono::milliseconds(0)));
  store.apply(make(pod("ns", "keep", "1")));
  store.apply(make(pod("ns", "change", "1")));
  store.apply(make(pod("ns", "vanish", "1")));
  ReplaceResult result = store.replace(
      {make(pod("ns", "keep", "1")), make(pod("ns", "change", "2")), make(pod("ns", "new", "5"))});
  EXPECT_EQ(names(result.added), (std::vector<std::string>{"new"}));
  EXPECT_EQ(names(result.deleted), (std::vector<std::string>{"vanish"}));
  ASSERT_EQ(result.updated.size(), 1u);
  EXPECT_EQ((*result.updated[0].first)["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*result.updated[0].second)["metadata"]["resourceVersion"], "2");
  EXPECT_EQ(names(store.list()), (std::vector<std::string>{"change", "keep", "new"}));
  EXPECT_TRUE(store.synced());
  EXPECT_TRUE(store.wait_synced_for(std::chrono::milliseconds(0)));
}

TEST(StoreTest, WaitSyncedReturnsWhenTheFirstListLands) {
  Store store;
  std::jthread writer([&] { store.replace({make(pod("ns", "a", "1"))}); });
  EXPECT_TRUE(store.wait_synced(std::stop_token{}));
  std::stop_source stopped;
  stopped.request_stop();
  Store never;
  EXPECT_FALSE(never.wait_synced(stopped.get_token()));
}

// Readers take snapshots while the writer keeps updating: every snapshot must be internally
// consistent (each object is in the index entry its labels name, and nowhere else).
TEST(StoreTest, ConcurrentReadersSeeConsistentSnapshots) {
  Store store;
  constexpr int kObjects = 50;
  constexpr int kRounds = 200;
  std::atomic<bool> writing{true};
  std::atomic<int> inconsistencies{0};
  std::atomic<long> reads{0};
  std::vector<std::jthread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (writing.load()) {
        auto snapshot = store.snapshot();
        std::size_t indexed = 0;
        for (const char* app : {"even", "odd"}) {
          std::string value = "app=";
          value += app;
          for (const auto& object : snapshot->by_index(indexes::kByLabel, value)) {
            ++indexed;
            if ((*object)["metadata"]["labels"]["app"] != app) ++inconsistencies;
            if (snapshot->get(ObjectKey::of(*object)) != object) ++inconsistencies;
          }
        }
        if (indexed != snapshot->size()) ++inconsistencies;
        store.get({"ns", "p0"});  // plain reads interleave too
        ++reads;
      }
    });
  }
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kObjects; ++i) {
      json object = pod("ns", fmt::format("p{}", i), std::to_string(round));
      object["metadata"]["labels"] = {{"app", (round + i) % 2 == 0 ? "even" : "odd"}};
      store.apply(make(object));
    }
  }
  while (reads.load() == 0) std::this_thread::yield();  // at least one read overlapped
  writing = false;
  readers.clear();
  EXPECT_EQ(inconsistencies.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(store.size(), static_cast<std::size_t>(kObjects));
}

}  // namespace
}  // namespace depl::kube
