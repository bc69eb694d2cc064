// EventRecorder against a scripted API on a FakeClock: the Event body, aggregation of identical
// events into a count PATCH, the aggregation window, recreation after the Event expired, and the
// per-object spam filter (burst 25, then one per 300 s).
#include "depl/kube/runtime/event_recorder.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct RecorderFixture : runtime_test::ClientFixture {
  EventRecorder recorder{client, *clock, options()};
  json job = {
      {"apiVersion", "depl.dev/v1alpha1"},
      {"kind", "DependableTrainingJob"},
      {"metadata",
       {{"namespace", "team"}, {"name", "resnet"}, {"uid", "uid-1"}, {"resourceVersion", "42"}}}};

  RecorderFixture() {
    // Creates echo the body; patches answer with a minimal Event.
    transport->set_handler(
        [](const HttpRequest& request) -> std::optional<testing::ScriptedTransport::Outcome> {
          if (request.method == "POST") return HttpResponse{201, {}, request.body};
          if (request.method == "PATCH") return HttpResponse{200, {}, R"({"kind":"Event"})"};
          return std::nullopt;
        });
  }
  static EventRecorderOptions options() {
    EventRecorderOptions o;
    o.component = "depl-controller";
    o.host = "node-1";
    o.reporting_instance = "depl-controller-abc";
    return o;
  }
  json body(std::size_t i) { return json::parse(transport->requests().at(i).request.body); }
};

TEST(EventRecorderTest, CreatesACoreV1EventForTheObject) {
  RecorderFixture f;
  auto outcome = f.recorder.record(f.job, EventType::Warning, "PlanInfeasible", "no pool fits");
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(*outcome, EventOutcome::Created);
  auto requests = f.transport->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].request.method, "POST");
  EXPECT_EQ(requests[0].request.path, "/api/v1/namespaces/team/events");
  json event = f.body(0);
  EXPECT_EQ(event["involvedObject"], (json{{"apiVersion", "depl.dev/v1alpha1"},
                                           {"kind", "DependableTrainingJob"},
                                           {"name", "resnet"},
                                           {"namespace", "team"},
                                           {"uid", "uid-1"},
                                           {"resourceVersion", "42"}}));
  EXPECT_EQ(event["reason"], "PlanInfeasible");
  EXPECT_EQ(event["message"], "no pool fits");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["firstTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(event["lastTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(event["source"], (json{{"component", "depl-controller"}, {"host", "node-1"}}));
  EXPECT_EQ(event["reportingComponent"], "depl-controller");
  EXPECT_EQ(event["reportingInstance"], "depl-controller-abc");
  EXPECT_EQ(event["metadata"]["namespace"], "team");
  // client-go's naming: <object name>.<unix nanoseconds in hex>.
  EXPECT_EQ(event["metadata"]["name"], "resnet.18867251edfa0000");
}

TEST(EventRecorderTest, IdenticalEventBumpsCountWithAMergePatch) {
  RecorderFixture f;
  ASSERT_TRUE(f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers"));
  f.clock->advance(30s);
  auto second = f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers");
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, EventOutcome::Aggregated);
  f.clock->advance(30s);
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers"),
            EventOutcome::Aggregated);
  auto requests = f.transport->requests();
  ASSERT_EQ(requests.size(), 3u);
  const std::string name = f.body(0)["metadata"]["name"];
  EXPECT_EQ(requests[1].request.method, "PATCH");
  EXPECT_EQ(requests[1].request.path, fmt::format("/api/v1/namespaces/team/events/{}", name));
  EXPECT_EQ(requests[1].request.header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(f.body(1), (json{{"count", 2}, {"lastTimestamp", "2026-01-01T00:00:30Z"}}));
  EXPECT_EQ(f.body(2), (json{{"count", 3}, {"lastTimestamp", "2026-01-01T00:01:00Z"}}));
}

TEST(EventRecorderTest, DifferentMessageTypeOrObjectIsANewEvent) {
  RecorderFixture f;
  ASSERT_TRUE(f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers"));
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "Planned", "4 workers"),
            EventOutcome::Created);
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Warning, "Planned", "3 workers"),
            EventOutcome::Created);
  json other = f.job;
  other["metadata"]["name"] = "bert";
  EXPECT_EQ(*f.recorder.record(other, EventType::Normal, "Planned", "3 workers"),
            EventOutcome::Created);
  for (const auto& recorded : f.transport->requests()) EXPECT_EQ(recorded.request.method, "POST");
}

TEST(EventRecorderTest, AfterTheWindowOrAnExpiredEventANewOneIsCreated) {
  RecorderFixture f;
  ASSERT_TRUE(f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers"));
  f.clock->advance(601s);  // past the 10 min window
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers"),
            EventOutcome::Created);
  // The API lost the event (TTL): the PATCH gets 404, and the recorder creates it again.
  f.transport->push_status(404, "NotFound", "events not found");
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "Planned", "3 workers"),
            EventOutcome::Created);
  auto requests = f.transport->requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[2].request.method, "PATCH");
  EXPECT_EQ(requests[3].request.method, "POST");
}

TEST(EventRecorderTest, SpamFilterAllowsABurstOf25ThenOnePer300SecondsPerObject) {
  RecorderFixture f;
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, fmt::format("R{}", i), "m"),
              EventOutcome::Created)
        << i;
  }
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "R25", "m"), EventOutcome::Dropped);
  EXPECT_EQ(f.transport->request_count(), 25u);  // dropped events cost no request
  // Another object has its own bucket.
  json other = f.job;
  other["metadata"]["name"] = "bert";
  other["metadata"]["uid"] = "uid-2";
  EXPECT_EQ(*f.recorder.record(other, EventType::Normal, "R0", "m"), EventOutcome::Created);
  f.clock->advance(299s);
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "R26", "m"), EventOutcome::Dropped);
  f.clock->advance(1s);
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "R27", "m"), EventOutcome::Created);
  EXPECT_EQ(*f.recorder.record(f.job, EventType::Normal, "R28", "m"), EventOutcome::Dropped);
}

TEST(EventRecorderTest, ClusterScopedObjectsGetEventsInDefaultAndNamelessObjectsAreRejected) {
  RecorderFixture f;
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-1"}}}};
  ASSERT_TRUE(f.recorder.record(node, EventType::Normal, "Drained", "pool shrank"));
  EXPECT_EQ(f.transport->requests()[0].request.path, "/api/v1/namespaces/default/events");
  EXPECT_FALSE(f.body(0)["involvedObject"].contains("namespace"));

  auto rejected = f.recorder.record(json{{"kind", "Pod"}}, EventType::Normal, "X", "y");
  ASSERT_FALSE(rejected);
  EXPECT_NE(rejected.error().message.find("metadata.name"), std::string::npos);
}

TEST(EventRecorderTest, ApiErrorsAreReturned) {
  RecorderFixture f;
  f.transport->push_status(403, "Forbidden", "events is forbidden");
  auto outcome = f.recorder.record(f.job, EventType::Normal, "Planned", "x");
  ASSERT_FALSE(outcome);
  EXPECT_TRUE(outcome.error().is_forbidden());
}

}  // namespace
}  // namespace depl::kube
