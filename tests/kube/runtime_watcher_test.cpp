// Watcher and Informer against a scripted API: paged lists, watch parameters, bookmarks, ERROR
// events without a resourceVersion, 410 in every form (relist, never the same version, no tight
// loop), reconnect backoff on the fake clock, prompt stop.
#include "depl/kube/runtime/watcher.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "depl/kube/runtime/informer.hpp"
#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using runtime_test::ClientFixture;
using runtime_test::pod;
using testing::StreamScript;
using Type = WatcherEvent::Type;
using namespace std::chrono_literals;

json list_body(const std::string& rv, std::vector<json> items, const std::string& next = "") {
  json metadata = {{"resourceVersion", rv}};
  if (!next.empty()) metadata["continue"] = next;
  return {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", metadata}, {"items", items}};
}

// List items of built-in kinds arrive without apiVersion/kind.
json bare_pod(const std::string& name, const std::string& rv) {
  json object = pod("ns", name, rv);
  object.erase("kind");
  object.erase("apiVersion");
  return object;
}

std::string line(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

json gone_status() {
  return testing::status_body(410, "Expired", "too old resource version: 101 (150)");
}

StreamScript stream(std::vector<std::string> chunks) {
  StreamScript script;
  script.chunks = std::move(chunks);
  return script;
}

struct WatcherFixture : ClientFixture {
  WatcherOptions options() {
    WatcherOptions o;
    o.page_size = 0;
    return o;
  }
  std::stop_source stop;
  std::unique_ptr<Watcher> watcher;
  Watcher& make(WatcherOptions o) {
    watcher = std::make_unique<Watcher>(client, resources::pods(), o, *clock, random);
    return *watcher;
  }
  WatcherEvent next() {
    auto event = watcher->next(stop.get_token());
    EXPECT_TRUE(event.has_value());
    return event.value_or(WatcherEvent{});
  }
  std::string param(std::size_t request, const char* name) {
    auto requests = transport->requests();
    if (request >= requests.size()) return "<no request>";
    return requests[request].request.query_param(name).value_or("<unset>");
  }
};

TEST(WatcherTest, PagedListThenWatchFromTheListVersion) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {bare_pod("a", "90"), bare_pod("b", "91")}, "tok"));
  f.transport->push_json(200, list_body("100", {bare_pod("c", "95")}));
  f.transport->push_stream(
      stream({line("ADDED", pod("ns", "d", "101")), line("MODIFIED", pod("ns", "a", "102"))}));
  WatcherOptions options = f.options();
  options.page_size = 2;
  options.label_selector = "app=web";
  f.make(options);

  EXPECT_EQ(f.next().type, Type::InitStarted);
  for (const char* name : {"a", "b", "c"}) {
    WatcherEvent event = f.next();
    EXPECT_EQ(event.type, Type::InitApply);
    EXPECT_EQ(event.object["metadata"]["name"], name);
    EXPECT_EQ(event.object["kind"], "Pod");  // filled in from the resource type
    EXPECT_EQ(event.object["apiVersion"], "v1");
  }
  EXPECT_EQ(f.next().type, Type::InitDone);
  WatcherEvent added = f.next();
  EXPECT_EQ(added.type, Type::Apply);
  EXPECT_EQ(added.object["metadata"]["name"], "d");
  EXPECT_EQ(f.next().object["metadata"]["resourceVersion"], "102");

  auto requests = f.transport->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].request.path, "/api/v1/pods");
  EXPECT_EQ(f.param(0, "limit"), "2");
  EXPECT_EQ(f.param(0, "continue"), "<unset>");
  EXPECT_EQ(f.param(0, "resourceVersion"), "<unset>");  // consistent read, never "0"
  EXPECT_EQ(f.param(0, "labelSelector"), "app=web");
  EXPECT_EQ(f.param(1, "continue"), "tok");
  EXPECT_TRUE(requests[2].stream);
  EXPECT_EQ(f.param(2, "watch"), "1");
  EXPECT_EQ(f.param(2, "resourceVersion"), "100");
  EXPECT_EQ(f.param(2, "allowWatchBookmarks"), "true");
  EXPECT_EQ(f.param(2, "labelSelector"), "app=web");
  const int timeout = std::stoi(f.param(2, "timeoutSeconds"));
  EXPECT_GE(timeout, 300);
  EXPECT_LT(timeout, 600);
  EXPECT_EQ(f.watcher->stats().resource_version, "102");
}

TEST(WatcherTest, WatchTimeoutIsRandomisedPerWatchAndReplaysFromTheSeed) {
  auto timeouts = [](std::uint64_t seed) {
    WatcherFixture f;
    RandomSource random(seed);
    f.transport->push_json(200, list_body("1", {}));
    // Each stream delivers one bookmark then ends: the watcher re-watches without backoff.
    for (int i = 0; i < 5; ++i) {
      f.transport->push_stream(stream(
          {line("BOOKMARK", {{"kind", "Pod"},
                             {"apiVersion", "v1"},
                             {"metadata", {{"resourceVersion", std::to_string(10 + i)}}}})}));
    }
    f.transport->push_stream(stream({line("ADDED", pod("ns", "x", "20"))}));
    f.watcher =
        std::make_unique<Watcher>(f.client, resources::pods(), f.options(), *f.clock, random);
    while (f.next().type != Type::Apply) {
    }
    std::vector<std::string> values;
    for (std::size_t i = 1; i < f.transport->request_count(); ++i) {
      values.push_back(f.param(i, "timeoutSeconds"));
    }
    return values;
  };
  const auto first = timeouts(1);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(first, timeouts(1));
  EXPECT_NE(first, timeouts(2));
  EXPECT_GT(std::set<std::string>(first.begin(), first.end()).size(), 1u);
}

TEST(WatcherTest, BookmarkMovesTheVersionOnlyAndTheNextWatchResumesThere) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {}));
  // A skeletal bookmark: kind and resourceVersion only, as servers send them.
  f.transport->push_stream(stream(
      {line("BOOKMARK",
            {{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "150"}}}})}));
  f.transport->push_stream(stream({line("ADDED", pod("ns", "x", "151"))}));
  f.make(f.options());
  EXPECT_EQ(f.next().type, Type::InitStarted);
  EXPECT_EQ(f.next().type, Type::InitDone);
  WatcherEvent event = f.next();  // the bookmark produces no event
  EXPECT_EQ(event.type, Type::Apply);
  EXPECT_EQ(event.object["metadata"]["name"], "x");
  EXPECT_EQ(f.param(1, "resourceVersion"), "100");
  EXPECT_EQ(f.param(2, "resourceVersion"), "150");
  EXPECT_EQ(f.watcher->stats().bookmarks, 1u);
  EXPECT_EQ(f.watcher->stats().errors, 0u);
}

// The prefilter applies to listed and watched objects (not to bookmarks), and always keeps what
// the watcher and the store need: a filter naming nothing of metadata still leaves name,
// namespace and version.
TEST(WatcherTest, PrefilterDecodesWatchedObjectsWithOnlyWhatItKeeps) {
  WatcherFixture f;
  json listed = bare_pod("a", "90");
  listed["spec"] = {{"nodeName", "n1"}, {"volumes", json::array()}};
  f.transport->push_json(200, list_body("100", {listed}));
  json watched = pod("ns", "b", "101");
  watched["metadata"]["uid"] = "u";
  watched["spec"] = {{"nodeName", "n2"}, {"volumes", json::array()}};
  f.transport->push_stream(
      stream({line("ADDED", watched),
              line("BOOKMARK", {{"kind", "Pod"},
                                {"metadata",
                                 {{"resourceVersion", "150"},
                                  {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}}),
              line("DELETED", pod("ns", "b", "151"))}));
  WatcherOptions options = f.options();
  options.prefilter = FieldFilter().keep({"spec", "nodeName"});
  f.make(options);
  EXPECT_EQ(f.next().type, Type::InitStarted);
  WatcherEvent list_item = f.next();
  EXPECT_EQ(list_item.object,
            json({{"metadata", {{"namespace", "ns"}, {"name", "a"}, {"resourceVersion", "90"}}},
                  {"spec", {{"nodeName", "n1"}}},
                  {"kind", "Pod"},  // filled in from the resource type, as without a filter
                  {"apiVersion", "v1"}}));
  EXPECT_EQ(f.next().type, Type::InitDone);
  EXPECT_EQ(f.watcher->stats().resource_version, "100");  // the List's own metadata is whole
  const json kept = {{"metadata", {{"namespace", "ns"}, {"name", "b"}, {"resourceVersion", "101"}}},
                     {"spec", {{"nodeName", "n2"}}}};
  WatcherEvent added = f.next();
  EXPECT_EQ(added.type, Type::Apply);
  EXPECT_EQ(added.object, kept);
  WatcherEvent deleted = f.next();  // the bookmark in between is not an event
  EXPECT_EQ(deleted.type, Type::Delete);
  EXPECT_EQ(deleted.object,
            json({{"metadata", {{"namespace", "ns"}, {"name", "b"}, {"resourceVersion", "151"}}}}));
  EXPECT_EQ(f.watcher->stats().bookmarks, 1u);
  EXPECT_EQ(f.watcher->stats().resource_version, "151");
}

TEST(WatcherTest, ErrorEventWithoutVersionKeepsTheLastVersionAndBacksOff) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {}));
  f.transport->push_stream(
      stream({line("ADDED", pod("ns", "x", "101")),
              line("ERROR", testing::status_body(500, "InternalError", "etcd hiccup"))}));
  f.transport->push_stream(stream({line("ADDED", pod("ns", "y", "102"))}));
  f.make(f.options());
  EXPECT_EQ(f.next().type, Type::InitStarted);
  EXPECT_EQ(f.next().type, Type::InitDone);
  EXPECT_EQ(f.next().object["metadata"]["name"], "x");

  auto next = std::async(std::launch::async, [&] { return f.watcher->next(f.stop.get_token()); });
  ASSERT_TRUE(f.clock->wait_for_sleepers(1));  // backing off, not reconnecting at once
  EXPECT_EQ(f.transport->request_count(), 2u);
  const auto before = f.clock->now();
  ASSERT_TRUE(f.clock->advance_to_next_deadline());
  const auto waited = f.clock->now() - before;
  EXPECT_GE(waited, 800ms);
  EXPECT_LT(waited, 1600ms);
  ASSERT_EQ(next.wait_for(10s), std::future_status::ready);
  auto event = next.get();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->object["metadata"]["name"], "y");
  EXPECT_EQ(f.param(2, "resourceVersion"), "101");  // not "", not the ERROR's nothing
  EXPECT_EQ(f.watcher->stats().relists, 0u);
}

TEST(WatcherTest, GoneInStreamRelistsAndNeverWatchesTheExpiredVersionAgain) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {bare_pod("a", "100")}));
  f.transport->push_stream(
      stream({line("ADDED", pod("ns", "b", "101")), line("ERROR", gone_status())}));
  f.transport->push_json(200, list_body("200", {bare_pod("b", "101")}));
  f.transport->push_stream(stream({line("ADDED", pod("ns", "c", "201"))}));
  f.make(f.options());
  std::vector<Type> types;
  for (int i = 0; i < 8; ++i) types.push_back(f.next().type);
  EXPECT_EQ(types,
            (std::vector<Type>{Type::InitStarted, Type::InitApply, Type::InitDone, Type::Apply,
                               Type::InitStarted, Type::InitApply, Type::InitDone, Type::Apply}));
  auto requests = f.transport->requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_FALSE(requests[2].stream);  // a list, not a watch from 101
  EXPECT_EQ(f.param(2, "resourceVersion"), "<unset>");
  EXPECT_EQ(f.param(3, "resourceVersion"), "200");
  EXPECT_EQ(f.watcher->stats().relists, 1u);
  EXPECT_EQ(f.watcher->stats().errors, 0u);  // a watch that made progress relists at once
}

TEST(WatcherTest, GoneAsWatchResponseRelists) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {}));
  f.transport->push_status(410, "Gone", "too old resource version: 100 (150)");
  f.transport->push_json(200, list_body("160", {}));
  f.transport->push_stream(stream({line("ADDED", pod("ns", "c", "161"))}));
  f.make(f.options());
  EXPECT_EQ(f.next().type, Type::InitStarted);
  EXPECT_EQ(f.next().type, Type::InitDone);
  // Straight after a list the 410 is suspicious: the relist waits one backoff period.
  auto rest = std::async(std::launch::async, [&] {
    std::vector<Type> types;
    for (int i = 0; i < 3; ++i) types.push_back(f.watcher->next(f.stop.get_token())->type);
    return types;
  });
  ASSERT_TRUE(f.clock->wait_for_sleepers(1));
  EXPECT_EQ(f.transport->request_count(), 2u);
  f.clock->advance_to_next_deadline();
  ASSERT_EQ(rest.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(rest.get(), (std::vector<Type>{Type::InitStarted, Type::InitDone, Type::Apply}));
  EXPECT_FALSE(f.transport->requests()[2].stream);
  EXPECT_EQ(f.param(3, "resourceVersion"), "160");
}

TEST(WatcherTest, GoneAsNonChunkedBodyWithoutNewlineRelists) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {}));
  // One ERROR event as a plain 200 body with no trailing newline.
  f.transport->push_stream(stream({json{{"type", "ERROR"}, {"object", gone_status()}}.dump()}));
  f.transport->push_json(200, list_body("160", {}));
  f.transport->push_stream(stream({line("ADDED", pod("ns", "c", "161"))}));
  f.make(f.options());
  auto events = std::async(std::launch::async, [&] {
    std::vector<Type> types;
    for (int i = 0; i < 5; ++i) types.push_back(f.watcher->next(f.stop.get_token())->type);
    return types;
  });
  ASSERT_TRUE(f.clock->wait_for_sleepers(1));
  f.clock->advance_to_next_deadline();
  ASSERT_EQ(events.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(events.get(), (std::vector<Type>{Type::InitStarted, Type::InitDone, Type::InitStarted,
                                             Type::InitDone, Type::Apply}));
  EXPECT_EQ(f.watcher->stats().relists, 1u);
}

// A server that answers every watch with 410 must not drive list/watch in a tight loop: each
// round waits a growing, jittered backoff, and every watch starts from a fresh list's version.
TEST(WatcherTest, RepeatedGoneWithoutProgressBacksOffInsteadOfLooping) {
  WatcherFixture f;
  std::mutex mutex;
  std::vector<Clock::TimePoint> list_times;
  int lists = 0;
  f.transport->set_handler(
      [&](const HttpRequest& request) -> std::optional<testing::ScriptedTransport::Outcome> {
        if (request.query_param("watch")) {
          return HttpResponse{410, {}, testing::status_body(410, "Expired", "too old").dump()};
        }
        std::lock_guard lock(mutex);
        list_times.push_back(f.clock->now());
        ++lists;
        return HttpResponse{200, {}, list_body(std::to_string(100 * lists), {}).dump()};
      });
  f.make(f.options());
  std::jthread runner([&](std::stop_token stop) {
    while (f.watcher->next(stop)) {
    }
  });
  for (std::size_t round = 1; round <= 4; ++round) {
    ASSERT_TRUE(f.transport->wait_for_requests(2 * round, 10s));
    ASSERT_TRUE(f.clock->wait_for_sleepers(1));
    // Blocked in the backoff: no request can happen until the clock moves.
    EXPECT_EQ(f.transport->request_count(), 2 * round);
    f.clock->advance_to_next_deadline();
  }
  ASSERT_TRUE(f.transport->wait_for_requests(10, 10s));
  runner.request_stop();
  runner.join();
  auto requests = f.transport->requests();
  for (std::size_t i = 0; i + 1 < 10; i += 2) {
    EXPECT_FALSE(requests[i].stream) << i;
    EXPECT_TRUE(requests[i + 1].stream) << i;
    EXPECT_EQ(requests[i + 1].request.query_param("resourceVersion"),
              std::to_string(100 * (i / 2 + 1)));
  }
  std::lock_guard lock(mutex);
  ASSERT_GE(list_times.size(), 5u);
  for (std::size_t i = 1; i < 5; ++i) {
    const auto gap = list_times[i] - list_times[i - 1];
    const auto base = 800ms * (1 << (i - 1));
    EXPECT_GE(gap, base) << i;
    EXPECT_LT(gap, 2 * base) << i;
  }
}

TEST(WatcherTest, ConnectionFailuresReconnectFromTheSameVersionWithGrowingBackoff) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {}));
  for (int i = 0; i < 3; ++i) {
    f.transport->push_error(ApiError::transport(ApiError::kConnectFailed, "connection refused"));
  }
  auto feed = f.transport->push_live_stream();
  f.make(f.options());
  EXPECT_EQ(f.next().type, Type::InitStarted);
  EXPECT_EQ(f.next().type, Type::InitDone);
  auto event = std::async(std::launch::async, [&] { return f.watcher->next(f.stop.get_token()); });
  std::vector<Clock::Duration> waits;
  for (std::size_t attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_TRUE(f.transport->wait_for_requests(1 + attempt, 10s));
    ASSERT_TRUE(f.clock->wait_for_sleepers(1));
    const auto before = f.clock->now();
    f.clock->advance_to_next_deadline();
    waits.push_back(f.clock->now() - before);
  }
  ASSERT_TRUE(f.transport->wait_for_requests(5, 10s));
  feed->push(line("ADDED", pod("ns", "z", "105")));
  ASSERT_EQ(event.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(event.get()->object["metadata"]["name"], "z");
  for (std::size_t i = 0; i < waits.size(); ++i) {
    const auto base = 800ms * (1 << i);
    EXPECT_GE(waits[i], base) << i;
    EXPECT_LT(waits[i], 2 * base) << i;
  }
  auto requests = f.transport->requests();
  for (std::size_t i = 1; i < requests.size(); ++i) {
    EXPECT_TRUE(requests[i].stream);
    EXPECT_EQ(requests[i].request.query_param("resourceVersion"), "100");
  }
  EXPECT_EQ(f.watcher->stats().errors, 3u);
  EXPECT_EQ(f.watcher->stats().relists, 0u);
}

TEST(WatcherTest, StopCancelsABlockedWatchPromptly) {
  WatcherFixture f;
  f.transport->push_json(200, list_body("100", {}));
  auto feed = f.transport->push_live_stream();
  f.make(f.options());
  EXPECT_EQ(f.next().type, Type::InitStarted);
  EXPECT_EQ(f.next().type, Type::InitDone);
  auto event = std::async(std::launch::async, [&] { return f.watcher->next(f.stop.get_token()); });
  ASSERT_TRUE(f.transport->wait_for_requests(2, 10s));
  // The watcher is (about to be) blocked reading a silent stream; stop must cancel that read
  // (it would otherwise block forever: the feed never ends).
  f.stop.request_stop();
  ASSERT_EQ(event.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(event.get().has_value());
}

TEST(InformerTest, AppliesEventsAndRelistDeletesWhatVanished) {
  ClientFixture f;
  f.transport->push_json(200, list_body("100", {bare_pod("a", "100"), bare_pod("b", "100")}));
  f.transport->push_stream(
      stream({line("ADDED", pod("ns", "c", "101")), line("MODIFIED", pod("ns", "a", "102")),
              line("DELETED", pod("ns", "b", "103")), line("ERROR", gone_status())}));
  // While we were away, "c" was deleted and "d" created.
  f.transport->push_json(200, list_body("200", {bare_pod("a", "102"), bare_pod("d", "150")}));
  auto feed = f.transport->push_live_stream();

  WatcherOptions options;
  options.page_size = 0;
  Informer informer(f.client, resources::pods(), options, *f.clock, f.random);
  std::mutex mutex;
  std::vector<std::string> log;
  runtime_test::Signal changes;
  auto record = [&](std::string entry) {
    {
      std::lock_guard lock(mutex);
      log.push_back(std::move(entry));
    }
    changes.bump();
  };
  informer.add_handlers(
      {[&](const ObjectPtr& o) {
         record(fmt::format("add {}", (*o)["metadata"]["name"].get<std::string>()));
       },
       [&](const ObjectPtr& old_object, const ObjectPtr& new_object) {
         record(fmt::format("update {}->{}",
                            (*old_object)["metadata"]["resourceVersion"].get<std::string>(),
                            (*new_object)["metadata"]["resourceVersion"].get<std::string>()));
       },
       [&](const ObjectPtr& o) {
         record(fmt::format("delete {}", (*o)["metadata"]["name"].get<std::string>()));
       }});
  std::jthread runner([&](std::stop_token stop) { informer.run(stop); });
  ASSERT_TRUE(informer.store().wait_synced_for(10s));
  ASSERT_TRUE(changes.wait_for(7));
  runner.request_stop();
  runner.join();  // returns although the live stream never ends: the read is cancelled
  std::lock_guard lock(mutex);
  // The initial adds come from one replace, in no particular order.
  ASSERT_EQ(log.size(), 7u);
  std::sort(log.begin(), log.begin() + 2);
  EXPECT_EQ(log, (std::vector<std::string>{"add a", "add b", "add c", "update 100->102", "delete b",
                                           "delete c", "add d"}));
  std::vector<std::string> names;
  for (const auto& object : informer.store().list()) names.push_back((*object)["metadata"]["name"]);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "d"}));
}

TEST(InformerTest, TransformRewritesListedWatchedAndDeletedObjects) {
  ClientFixture f;
  Informer informer(f.client, resources::pods(), WatcherOptions{}, *f.clock, f.random);
  informer.set_transform([](json& object) {
    object.erase("spec");
    object["metadata"]["annotations"]["trimmed"] = "yes";
  });
  std::vector<json> seen;  // what the handlers got, in order
  informer.add_handlers({[&](const ObjectPtr& o) { seen.push_back(*o); },
                         [&](const ObjectPtr&, const ObjectPtr& o) { seen.push_back(*o); },
                         [&](const ObjectPtr& o) { seen.push_back(*o); }});
  json a = pod("ns", "a", "100");
  a["spec"] = {{"nodeName", "n1"}};
  informer.apply({Type::InitStarted, {}});
  informer.apply({Type::InitApply, a});
  informer.apply({Type::InitDone, {}});
  a["metadata"]["resourceVersion"] = "101";
  informer.apply({Type::Apply, a});
  informer.apply({Type::Apply, pod("ns", "b", "102")});
  informer.apply({Type::Delete, a});
  ASSERT_EQ(seen.size(), 4u);
  for (const json& o : seen) {
    EXPECT_FALSE(o.contains("spec")) << o.dump();
    EXPECT_EQ(o["metadata"]["annotations"]["trimmed"], "yes");
  }
  ASSERT_EQ(informer.store().size(), 1u);
  const auto b = informer.store().get({"ns", "b"});
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->contains("spec"));
  EXPECT_EQ((*b)["metadata"]["resourceVersion"], "102");
}

TEST(InformerTest, StripManagedFieldsKeepsEverythingElse) {
  json object = pod("ns", "a", "100");
  object["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  object["spec"] = {{"nodeName", "n1"}};
  json expected = object;
  expected["metadata"].erase("managedFields");
  strip_managed_fields(object);
  EXPECT_EQ(object, expected);
  json odd = "not an object";
  strip_managed_fields(odd);  // left alone, no throw
  EXPECT_EQ(odd, "not an object");
}

}  // namespace
}  // namespace depl::kube
