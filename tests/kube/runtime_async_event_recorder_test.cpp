// AsyncEventRecorder over a scripted API whose answers the test holds back: post() returns while
// the request is still unanswered, events go out in the order they were posted, a full queue
// drops (and counts) what does not fit, and stop() sends what is queued until its deadline and
// drops the rest.
#include "depl/kube/runtime/async_event_recorder.hpp"

#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Every Event create waits at a gate the test opens; `entered` counts requests that reached it.
struct GatedApi : runtime_test::ClientFixture {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;
  runtime_test::Signal entered;
  EventRecorder recorder{client, *clock, options()};

  GatedApi() {
    transport->set_handler(
        [this](const HttpRequest& request) -> std::optional<testing::ScriptedTransport::Outcome> {
          entered.bump();
          std::unique_lock lock(mutex);
          // Bounded only so that a broken recorder fails the test instead of hanging it.
          if (!opened_cv.wait_for(lock, 30s, [&] { return opened; }))
            return HttpResponse{500, {}, R"({"kind":"Status","code":500})"};
          return HttpResponse{201, {}, request.body};
        });
  }
  static EventRecorderOptions options() {
    EventRecorderOptions o;
    o.component = "depl-controller";
    return o;
  }
  void open() {
    {
      std::lock_guard lock(mutex);
      opened = true;
    }
    opened_cv.notify_all();
  }
  std::vector<std::string> sent_reasons() {
    std::vector<std::string> out;
    for (const auto& r : transport->requests())
      out.push_back(json::parse(r.request.body).value("reason", ""));
    return out;
  }
};

json job(const std::string& name) {
  return {{"apiVersion", "depl.dev/v1alpha1"},
          {"kind", "DependableTrainingJob"},
          {"metadata", {{"namespace", "team"}, {"name", name}, {"uid", "uid-" + name}}},
          {"spec", {{"datasets", json::array({"a", "b"})}}},
          {"status", {{"phase", "Running"}}}};
}

TEST(AsyncEventRecorderTest, PostReturnsBeforeTheRequestIsAnsweredAndEventsKeepTheirOrder) {
  GatedApi api;
  AsyncEventRecorder events(api.recorder, *api.clock);
  // The first request is held at the gate, so these posts cannot have been sent synchronously.
  EXPECT_TRUE(events.post(job("a"), EventType::Normal, "Planned", "plan 1"));
  ASSERT_TRUE(api.entered.wait_for(1));
  EXPECT_TRUE(events.post(job("a"), EventType::Normal, "PhaseStarted", "phase 0"));
  EXPECT_TRUE(events.post(job("b"), EventType::Warning, "Infeasible", "no room"));
  EXPECT_EQ(api.transport->request_count(), 1u);
  api.open();
  events.flush();
  EXPECT_EQ(api.sent_reasons(), (std::vector<std::string>{"Planned", "PhaseStarted", "Infeasible"}));
  // The involved object is the reference, not a copy of the job.
  const json event = json::parse(api.transport->requests().at(2).request.body);
  EXPECT_EQ(event["involvedObject"], (json{{"apiVersion", "depl.dev/v1alpha1"},
                                           {"kind", "DependableTrainingJob"},
                                           {"name", "b"},
                                           {"namespace", "team"},
                                           {"uid", "uid-b"}}));
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(events.dropped(), 0u);
}

TEST(AsyncEventRecorderTest, AFullQueueDropsAndCountsWhatDoesNotFit) {
  GatedApi api;
  AsyncEventRecorderOptions small;
  small.queue_size = 3;
  AsyncEventRecorder events(api.recorder, *api.clock, small);
  ASSERT_TRUE(events.post(job("in-flight"), EventType::Normal, "R0", "m"));
  ASSERT_TRUE(api.entered.wait_for(1));  // taken off the queue, held at the gate
  for (int i = 1; i <= 3; ++i)
    EXPECT_TRUE(events.post(job("j"), EventType::Normal, "R" + std::to_string(i), "m")) << i;
  EXPECT_FALSE(events.post(job("j"), EventType::Normal, "R4", "m"));
  EXPECT_FALSE(events.post(job("j"), EventType::Normal, "R5", "m"));
  EXPECT_EQ(events.dropped(), 2u);
  api.open();
  events.flush();
  EXPECT_EQ(api.sent_reasons(), (std::vector<std::string>{"R0", "R1", "R2", "R3"}));
  // Room again once sent.
  EXPECT_TRUE(events.post(job("j"), EventType::Normal, "R6", "m"));
  events.flush();
  EXPECT_EQ(api.transport->request_count(), 5u);
}

TEST(AsyncEventRecorderTest, StopSendsWhatIsQueuedBeforeTheDeadlineAndDropsTheRest) {
  {
    GatedApi api;
    AsyncEventRecorder events(api.recorder, *api.clock);
    for (int i = 0; i < 4; ++i)
      ASSERT_TRUE(events.post(job("j"), EventType::Normal, "R" + std::to_string(i), "m"));
    api.open();
    events.stop(api.clock->now() + 2s);  // time does not move: everything queued goes out
    EXPECT_EQ(api.sent_reasons(), (std::vector<std::string>{"R0", "R1", "R2", "R3"}));
    EXPECT_EQ(events.dropped(), 0u);
    EXPECT_FALSE(events.post(job("j"), EventType::Normal, "late", "m"));
    EXPECT_EQ(events.dropped(), 1u);
  }
  {
    GatedApi api;
    AsyncEventRecorder events(api.recorder, *api.clock);
    ASSERT_TRUE(events.post(job("j"), EventType::Normal, "R0", "m"));
    ASSERT_TRUE(api.entered.wait_for(1));
    for (int i = 1; i < 4; ++i)
      ASSERT_TRUE(events.post(job("j"), EventType::Normal, "R" + std::to_string(i), "m"));
    // The deadline has passed by the time the request in flight is answered.
    const auto deadline = api.clock->now() + 1s;
    api.clock->advance(5s);
    auto stopped = std::async(std::launch::async, [&] { events.stop(deadline); });
    while (events.accepting()) std::this_thread::yield();  // stop() has begun
    api.open();
    stopped.get();
    EXPECT_EQ(api.sent_reasons(), (std::vector<std::string>{"R0"}));
    EXPECT_EQ(events.dropped(), 3u);
    events.flush();  // returns at once: nothing will be sent any more
  }
}

}  // namespace
}  // namespace depl::kube
