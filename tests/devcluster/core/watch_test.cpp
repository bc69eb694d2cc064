// Watches: start points (unset / "0" / exact), selector transitions, bookmarks, the history
// window with 410 after compaction, and delivery across threads.
#include <thread>

#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using namespace testing;
using std::chrono::milliseconds;

std::vector<std::string> types_of(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.type);
  return out;
}

std::vector<std::string> names_of(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    out.push_back(e.object->value("/metadata/name"_json_pointer, std::string()));
  }
  return out;
}

TEST_F(StoreTest, WatchWithoutVersionStartsWithCurrentState) {
  must(store.create(core("pods", "default"), a_pod("a")), 201);
  for (std::string rv : {"", "0"}) {
    auto sub = store.watch(core("pods", "default"), {.resource_version = rv});
    ASSERT_TRUE(sub);
    auto initial = (*sub)->drain();
    EXPECT_EQ(types_of(initial), std::vector<std::string>{"ADDED"});
    EXPECT_EQ(names_of(initial), std::vector<std::string>{"a"});
    (*sub)->close();
  }
}

TEST_F(StoreTest, WatchFromExactVersionReplaysLaterChanges) {
  json a = must(store.create(core("pods", "default"), a_pod("a")), 201);
  std::string from = rv_of(a);
  must(store.create(core("pods", "default"), a_pod("b")), 201);
  must(store.patch(core("pods", "default", "a"), PatchType::Merge,
                   R"({"metadata":{"labels":{"x":"1"}}})"));
  must(store.remove(core("pods", "default", "b")));
  auto sub = store.watch(core("pods", "default"), {.resource_version = from});
  ASSERT_TRUE(sub);
  auto events = (*sub)->drain();
  EXPECT_EQ(types_of(events), (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));
  EXPECT_EQ(names_of(events), (std::vector<std::string>{"b", "a", "b"}));
  // Live events follow without a gap.
  must(store.create(core("pods", "default"), a_pod("c")), 201);
  auto live = (*sub)->next(milliseconds(1000));
  ASSERT_TRUE(live);
  EXPECT_EQ(live->type, "ADDED");
  EXPECT_EQ(live->object->at("metadata").at("name"), "c");
}

TEST_F(StoreTest, EachEventCarriesTheTimeItWasQueuedForThisWatch) {
  using Clock = std::chrono::steady_clock;
  auto sub = store.watch(core("pods", "default"), {});
  ASSERT_TRUE(sub);
  const auto before_a = Clock::now();
  must(store.create(core("pods", "default"), a_pod("a")), 201);
  const auto after_a = Clock::now();
  must(store.create(core("pods", "default"), a_pod("b")), 201);
  const auto after_b = Clock::now();
  const auto events = (*sub)->drain();
  ASSERT_EQ(names_of(events), (std::vector<std::string>{"a", "b"}));
  // Drained later, each stamped when its write queued it: a consumer that drains in batches
  // still knows when each change happened.
  EXPECT_GE(events[0].queued, before_a);
  EXPECT_LE(events[0].queued, after_a);
  EXPECT_GE(events[1].queued, after_a);
  EXPECT_LE(events[1].queued, after_b);
}

TEST_F(StoreTest, WatchSelectorsTurnTransitionsIntoAddedAndDeleted) {
  must(store.create(core("pods", "default"), a_pod("a", {{"app", "x"}})), 201);
  auto sub = store.watch(core("pods", "default"),
                         {.label_selector = "app=x", .resource_version = store.resource_version()});
  ASSERT_TRUE(sub);
  must(store.patch(core("pods", "default", "a"), PatchType::Merge,
                   R"({"metadata":{"labels":{"app":"y"}}})"));
  must(store.patch(core("pods", "default", "a"), PatchType::Merge,
                   R"({"metadata":{"labels":{"app":"x"}}})"));
  must(store.create(core("pods", "default"), a_pod("other", {{"app", "z"}})), 201);
  auto events = (*sub)->drain();
  EXPECT_EQ(types_of(events), (std::vector<std::string>{"DELETED", "ADDED"}));
}

TEST_F(StoreTest, WatchOnOneObjectByFieldSelector) {
  must(store.create(core("pods", "default"), a_pod("a")), 201);
  must(store.create(core("pods", "default"), a_pod("b")), 201);
  auto sub = store.watch(core("pods", "default"),
                         {.field_selector = "metadata.name=b", .resource_version = "0"});
  ASSERT_TRUE(sub);
  EXPECT_EQ(names_of((*sub)->drain()), std::vector<std::string>{"b"});
  EXPECT_FALSE(store.watch(core("pods"), {.field_selector = "spec.nope=1"}));
}

TEST_F(StoreTest, TooOldVersionGetsOne410ErrorEvent) {
  json a = must(store.create(core("pods", "default"), a_pod("a")), 201);
  store.compact();
  must(store.create(core("pods", "default"), a_pod("b")), 201);
  auto sub = store.watch(core("pods", "default"), {.resource_version = "2"});
  ASSERT_TRUE(sub);
  auto events = (*sub)->drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "ERROR");
  EXPECT_EQ(events[0].object->at("code"), 410);
  EXPECT_EQ(events[0].object->at("kind"), "Status");
  EXPECT_EQ(
      events[0].object->at("message").get<std::string>().rfind("too old resource version: 2 (", 0),
      0u);
  EXPECT_FALSE(events[0].object->at("metadata").contains("resourceVersion"));
  EXPECT_TRUE((*sub)->closed());
  // Resuming from the compaction point itself is fine.
  auto ok = store.watch(core("pods", "default"), {.resource_version = rv_of(a)});
  ASSERT_TRUE(ok);
  EXPECT_FALSE((*ok)->closed());
}

TEST_F(StoreTest, HistoryWindowIsBounded) {
  // The fixture keeps 100 events.
  json first = must(store.create(core("pods", "default"), a_pod("p")), 201);
  for (int i = 0; i < 120; ++i) {
    must(store.patch(core("pods", "default", "p"), PatchType::Merge,
                     json{{"metadata", {{"labels", {{"i", std::to_string(i)}}}}}}.dump()));
  }
  auto old = store.watch(core("pods", "default"), {.resource_version = rv_of(first)});
  ASSERT_TRUE(old);
  auto events = (*old)->drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "ERROR");
  std::string recent = std::to_string(std::stoull(store.resource_version()) - 50);
  auto fresh = store.watch(core("pods", "default"), {.resource_version = recent});
  ASSERT_TRUE(fresh);
  EXPECT_EQ((*fresh)->drain().size(), 50u);
}

TEST_F(StoreTest, AVersionPushedOutOfTheHistoryIsFreedByTheWriteThatPushedItOut) {
  // The fixture keeps 100 events: the first version of the pod is held by its ADDED event and, as
  // `previous`, by the MODIFIED event that follows it.
  ApiResult created = store.create(core("pods", "default"), a_pod("p"), {.shared_answer = true});
  ASSERT_EQ(created.code, 201);
  std::weak_ptr<const json> first = created.object;
  created.object.reset();
  auto label = [&](int i) {
    return store.patch(core("pods", "default", "p"), PatchType::Merge,
                       json{{"metadata", {{"labels", {{"i", std::to_string(i)}}}}}}.dump(),
                       {.shared_answer = true});
  };
  for (int i = 0; i < 100; ++i) ASSERT_EQ(label(i).code, 200);
  // 101 events since the create: its ADDED event is gone, the first MODIFIED one still holds it.
  EXPECT_FALSE(first.expired());
  ASSERT_EQ(label(100).code, 200);
  EXPECT_TRUE(first.expired());
}

TEST_F(StoreTest, BookmarksCarryOnlyTheResourceVersion) {
  auto with = store.watch(core("pods", "default"),
                          {.resource_version = store.resource_version(), .allow_bookmarks = true});
  auto without =
      store.watch(core("pods", "default"), {.resource_version = store.resource_version()});
  ASSERT_TRUE(with && without);
  store.send_bookmarks();
  auto events = (*with)->drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "BOOKMARK");
  EXPECT_EQ(*events[0].object,
            json({{"kind", "Pod"},
                  {"apiVersion", "v1"},
                  {"metadata", {{"resourceVersion", store.resource_version()}}}}));
  EXPECT_TRUE((*without)->drain().empty());
}

TEST_F(StoreTest, SendInitialEventsEndsWithAnnotatedBookmark) {
  must(store.create(core("pods", "default"), a_pod("a")), 201);
  auto sub =
      store.watch(core("pods", "default"), {.allow_bookmarks = true, .send_initial_events = true});
  ASSERT_TRUE(sub);
  auto events = (*sub)->drain();
  EXPECT_EQ(types_of(events), (std::vector<std::string>{"ADDED", "BOOKMARK"}));
  EXPECT_EQ(events[1].object->at("metadata").at("annotations").at("k8s.io/initial-events-end"),
            "true");
}

TEST_F(StoreTest, CloseAllWatchesAndNotifierAcrossThreads) {
  auto sub = store.watch(core("configmaps"), {.resource_version = store.resource_version()});
  ASSERT_TRUE(sub);
  std::atomic<int> notified{0};
  (*sub)->set_notifier([&] { ++notified; });
  std::thread writer([&] {
    for (int i = 0; i < 20; ++i) {
      store.create(core("configmaps", "default"),
                   {{"apiVersion", "v1"},
                    {"kind", "ConfigMap"},
                    {"metadata", {{"name", "c" + std::to_string(i)}}}});
    }
  });
  int received = 0;
  while (received < 20) {
    auto e = (*sub)->next(milliseconds(5000));
    ASSERT_TRUE(e) << "timed out after " << received;
    ++received;
  }
  writer.join();
  EXPECT_GE(notified.load(), 1);
  store.close_all_watches();
  EXPECT_TRUE((*sub)->closed());
  EXPECT_FALSE((*sub)->next(milliseconds(10)));
}

TEST_F(StoreTest, ConsumerBlockedInNextWakesOnTheWriteNotItsTimeout) {
  // Events are queued under the store's lock and the consumer is woken after it: each of these
  // waits must end with its write (a missed wake-up would wait the whole 10 s).
  auto sub = store.watch(core("configmaps"), {.resource_version = store.resource_version()});
  ASSERT_TRUE(sub);
  const auto start = std::chrono::steady_clock::now();
  std::thread writer([&] {
    for (int i = 0; i < 20; ++i) {
      store.create(core("configmaps", "default"),
                   {{"apiVersion", "v1"},
                    {"kind", "ConfigMap"},
                    {"metadata", {{"name", "c" + std::to_string(i)}}}});
    }
  });
  for (int received = 0; received < 20; ++received) {
    ASSERT_TRUE((*sub)->next(std::chrono::seconds(10))) << "timed out after " << received;
  }
  writer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(StoreTest, DroppingClientWatchesLeavesObserversOpen) {
  auto client =
      store.watch(core("pods", "default"), {.resource_version = store.resource_version()});
  auto observer = store.watch(core("pods", "default"), observer_watch_options());
  ASSERT_TRUE(client);
  ASSERT_TRUE(observer);
  store.close_client_watches();
  EXPECT_TRUE((*client)->closed());
  EXPECT_FALSE((*observer)->closed());
  must(store.create(core("pods", "default"), a_pod("after")), 201);
  auto event = (*observer)->next(milliseconds(1000));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->object->at("metadata").at("name"), "after");
  store.close_all_watches();  // shutting down closes observers too
  EXPECT_TRUE((*observer)->closed());
}

TEST_F(StoreTest, CustomResourceWatchSeesTheServedVersion) {
  install_crd();
  auto sub = store.watch(dtj(""), {.resource_version = store.resource_version()});
  ASSERT_TRUE(sub);
  must(store.create(dtj("default"), a_job("j")), 201);
  auto events = (*sub)->drain();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].object->at("apiVersion"), "depl.dev/v1alpha1");
  EXPECT_EQ(events[0].object->at("spec").at("target").at("probability"), 0.9);
}

TEST_F(StoreTest, DeletingTheCrdEndsItsWatches) {
  install_crd();
  must(store.create(dtj("default"), a_job("j")), 201);
  auto sub = store.watch(dtj(""), {.resource_version = store.resource_version()});
  ASSERT_TRUE(sub);
  must(store.remove(crds("dependabletrainingjobs.depl.dev")));
  auto deleted = (*sub)->next(milliseconds(1000));
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->type, "DELETED");
  EXPECT_TRUE((*sub)->closed());
  EXPECT_FALSE((*sub)->next(milliseconds(10)));
}

}  // namespace
}  // namespace depl::devcluster
