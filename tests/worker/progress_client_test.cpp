#include "depl/worker/progress_client.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "test_http_server.hpp"

namespace depl::worker {
namespace {

using testing::CannedResponse;
using testing::RecordedRequest;
using testing::TestHttpServer;

// A steady clock that only the client's injected sleep moves on: the retry deadline is tested
// without waiting for it.
struct FakeTime {
  std::chrono::steady_clock::time_point now{};
  std::vector<long long> waits;  // every sleep, in ms
};

void use_fake_time(ProgressClientOptions& o, std::shared_ptr<FakeTime> time) {
  o.sleep = [time](std::chrono::milliseconds d) {
    time->waits.push_back(d.count());
    time->now += d;
  };
  o.now = [time] { return time->now; };
}

ProgressClientOptions options_for(const TestHttpServer& server,
                                  std::vector<long long>* waits = nullptr) {
  ProgressClientOptions o;
  o.url = server.url("/v1/namespaces/ns/jobs/j/progress");
  o.token = "s3cret";
  o.retry_for = std::chrono::milliseconds(300);  // 100 + 200: three attempts
  o.first_backoff = std::chrono::milliseconds(100);
  auto time = std::make_shared<FakeTime>();
  o.now = [time] { return time->now; };
  o.sleep = [waits, time](std::chrono::milliseconds d) {
    if (waits) waits->push_back(d.count());
    time->now += d;
  };
  return o;
}

TEST(ProgressClient, PostsTheReportWithTheBearerToken) {
  TestHttpServer server([](const RecordedRequest&) {
    return CannedResponse{200, R"({"action":"continue"})"};
  });
  auto client = ProgressClient::create(options_for(server));
  ASSERT_TRUE(client) << client.error().message;
  auto action = client->post({2, 0, 5, 0.4375});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(*action, ProgressAction::Continue);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/v1/namespaces/ns/jobs/j/progress");
  EXPECT_EQ(requests[0].authorization, "Bearer s3cret");
  EXPECT_EQ(requests[0].content_type, "application/json");
  EXPECT_EQ(nlohmann::json::parse(requests[0].body),
            (nlohmann::json{{"phase", 2}, {"rank", 0}, {"epoch", 5}, {"loss", 0.4375}}));
}

TEST(ProgressClient, CheckpointAndExitIsPassedOn) {
  TestHttpServer server([](const RecordedRequest&) {
    return CannedResponse{200, R"({"action":"checkpointAndExit","reason":"replanned"})"};
  });
  auto client = ProgressClient::create(options_for(server));
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(*action, ProgressAction::CheckpointAndExit);
}

TEST(ProgressClient, ServerErrorsAreRetriedWithBackoff) {
  int calls = 0;
  TestHttpServer server([&calls](const RecordedRequest&) {
    return ++calls < 3 ? CannedResponse{503, "busy"}
                       : CannedResponse{200, R"({"action":"continue"})"};
  });
  std::vector<long long> waits;
  auto client = ProgressClient::create(options_for(server, &waits));
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(waits, (std::vector<long long>{100, 200}));
}

// Answers `script` in turn, then 200 continue.
TestHttpServer::Handler answers(std::vector<CannedResponse> script) {
  auto next = std::make_shared<std::size_t>(0);
  return [script = std::move(script), next](const RecordedRequest&) {
    if (*next < script.size()) return script[(*next)++];
    return CannedResponse{200, R"({"action":"continue"})"};
  };
}

TEST(ProgressClient, RetryAfterIsWaitedOutWhenLongerThanTheBackoff) {
  TestHttpServer server(answers({
      {429, R"({"error":"too many progress reports for this job"})", {{"Retry-After", "2"}}},
      {503, R"({"error":"not the leader"})", {{"Retry-After", "1"}}},
      {429, R"({"error":"too many"})"},  // no Retry-After: the backoff
  }));
  std::vector<long long> waits;
  ProgressClientOptions o = options_for(server, &waits);
  o.retry_for = std::chrono::seconds(60);
  o.first_backoff = std::chrono::milliseconds(1500);  // 1.5 s, 3 s, 6 s
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(server.requests().size(), 4u);
  // max(backoff, Retry-After): 2 s over 1.5 s, then 3 s over 1 s; the backoff doubles throughout.
  EXPECT_EQ(waits, (std::vector<long long>{2000, 3000, 6000}));
}

TEST(ProgressClient, RetryAfterIsCappedAndReadOnlyAsWholeSeconds) {
  const long long cap = std::chrono::milliseconds(kMaxRetryAfter).count();
  TestHttpServer server(answers({
      {429, "{}", {{"Retry-After", "86400"}}},                     // a day: capped
      {429, "{}", {{"Retry-After", "123456789012345678901234"}}},  // too large to read: capped
      {503, "{}", {{"Retry-After", "1.5"}}},                       // not an integer: the backoff
      {429, "{}", {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}}},
      {503, "{}", {{"Retry-After", "-5"}}},
      {500, "{}", {{"Retry-After", "10"}}},  // only 429 and 503 are read
  }));
  std::vector<long long> waits;
  ProgressClientOptions o = options_for(server, &waits);
  o.retry_for = std::chrono::minutes(10);
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_EQ(server.requests().size(), 7u);
  EXPECT_EQ(waits, (std::vector<long long>{cap, cap, 400, 800, 1600, 3200}));
}

TEST(ProgressClient, RetryAfterIsNotWaitedAfterTheLastAttempt) {
  TestHttpServer server([](const RecordedRequest&) {
    return CannedResponse{429, "{}", {{"Retry-After", "30"}}};
  });
  std::vector<long long> waits;
  ProgressClientOptions o = options_for(server, &waits);
  o.retry_for = std::chrono::seconds(60);
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_FALSE(action);
  EXPECT_FALSE(action.error().rejected);
  EXPECT_NE(action.error().message.find("HTTP 429"), std::string::npos) << action.error().message;
  // Attempts at 0, 30 and 60 s, the last at the deadline.
  EXPECT_EQ(waits, (std::vector<long long>{30000, 30000}));
  // Told to the caller, who may retry on its own (depl-sim-worker does).
  EXPECT_EQ(action.error().retry_after, std::chrono::seconds(30));
}

TEST(ProgressClient, WaitsTheLongerOfBackoffAndRetryAfterCapped) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  EXPECT_EQ(wait_before_retry(milliseconds(400), std::nullopt), milliseconds(400));
  EXPECT_EQ(wait_before_retry(milliseconds(400), seconds(2)), milliseconds(2000));
  EXPECT_EQ(wait_before_retry(milliseconds(3000), seconds(1)), milliseconds(3000));
  EXPECT_EQ(wait_before_retry(milliseconds(100), seconds::max()), milliseconds(kMaxRetryAfter));
}

TEST(ProgressClient, ParsesRetryAfterDelaySeconds) {
  using std::chrono::seconds;
  EXPECT_EQ(parse_retry_after("0"), seconds(0));
  EXPECT_EQ(parse_retry_after("7"), seconds(7));
  EXPECT_EQ(parse_retry_after(" 120\t"), seconds(120));
  EXPECT_EQ(parse_retry_after("99999999999999999999"), seconds::max());
  for (const char* bad :
       {"", " ", "1.5", "-1", "+1", "7s", "0x10", "1 2", "Wed, 21 Oct 2015 07:28:00 GMT"}) {
    EXPECT_EQ(parse_retry_after(bad), std::nullopt) << bad;
  }
}

TEST(ProgressClient, ARejectedReportIsNotRetried) {
  TestHttpServer server([](const RecordedRequest&) {
    return CannedResponse{401, R"({"error":"bad token"})"};
  });
  auto client = ProgressClient::create(options_for(server));
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_FALSE(action);
  EXPECT_TRUE(action.error().rejected);
  EXPECT_NE(action.error().message.find("HTTP 401"), std::string::npos) << action.error().message;
  EXPECT_NE(action.error().message.find("DEPL_PROGRESS_TOKEN"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(ProgressClient, AnUnreachableEndpointFailsAtTheDeadline) {
  std::string url;
  {
    TestHttpServer closed([](const RecordedRequest&) { return CannedResponse{}; });
    url = closed.url("/p");
  }  // the port is free again: connections are refused
  auto time = std::make_shared<FakeTime>();
  ProgressClientOptions o;
  o.url = url;
  o.token = "t";
  o.retry_for = std::chrono::milliseconds(30);
  o.first_backoff = std::chrono::milliseconds(10);
  use_fake_time(o, time);
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_FALSE(action);
  EXPECT_FALSE(action.error().rejected);
  EXPECT_NE(action.error().message.find("after 3 attempt(s)"), std::string::npos)
      << action.error().message;
  EXPECT_EQ(time->waits, (std::vector<long long>{10, 20}));
}

// A controller that is away for two minutes (restarted, rescheduled, its caches syncing): the
// report waits it out, backing off to 10 s between attempts, and is delivered. Before, five
// attempts over 1.6 s gave up and depl-sim-worker exited 4, a failure of the phase.
TEST(ProgressClient, AReportOutlastsAControllerAwayForMinutes) {
  auto time = std::make_shared<FakeTime>();
  const auto back_at = time->now + std::chrono::minutes(2);
  TestHttpServer server([time, back_at](const RecordedRequest&) {
    return time->now < back_at ? CannedResponse{503, R"({"error":"starting"})"}
                               : CannedResponse{200, R"({"action":"continue"})"};
  });
  ProgressClientOptions o;
  o.url = server.url("/p");
  o.token = "t";
  use_fake_time(o, time);
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_TRUE(action) << action.error().message;
  EXPECT_GE(time->now - (back_at - std::chrono::minutes(2)), std::chrono::minutes(2));
  EXPECT_LT(time->now - back_at, std::chrono::seconds(10));  // within one backoff of its return
  EXPECT_EQ(*std::max_element(time->waits.begin(), time->waits.end()), 10000);
  EXPECT_EQ(time->waits.front(), 200);
}

TEST(ProgressClient, GivesUpAtTheRetryDeadline) {
  TestHttpServer server([](const RecordedRequest&) { return CannedResponse{503, "{}"}; });
  auto time = std::make_shared<FakeTime>();
  ProgressClientOptions o;
  o.url = server.url("/p");
  o.token = "t";
  o.retry_for = kDefaultProgressRetry;
  use_fake_time(o, time);
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_FALSE(action);
  EXPECT_FALSE(action.error().rejected);
  EXPECT_EQ(time->now - std::chrono::steady_clock::time_point{},
            std::chrono::steady_clock::duration(kDefaultProgressRetry));
  EXPECT_EQ(server.requests().size(), time->waits.size() + 1);
}

TEST(ProgressClient, TheRetryDeadlineIsReadInWholeSeconds) {
  EXPECT_EQ(parse_progress_retry("").value(), std::chrono::milliseconds(kDefaultProgressRetry));
  EXPECT_EQ(parse_progress_retry("0").value(), std::chrono::milliseconds(0));
  EXPECT_EQ(parse_progress_retry("900").value(), std::chrono::milliseconds(900000));
  for (const char* bad : {"-1", "1.5", "5m", " 3", "604801"}) {
    auto parsed = parse_progress_retry(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message.find("DEPL_PROGRESS_RETRY_SECONDS"), std::string::npos);
  }
}

TEST(ProgressClient, MalformedAnswersAreErrors) {
  EXPECT_FALSE(parse_progress_response("not json"));
  EXPECT_FALSE(parse_progress_response(R"({"next":"continue"})"));
  auto unknown = parse_progress_response(R"({"action":"explode"})");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'explode'"), std::string::npos);
  TestHttpServer server([](const RecordedRequest&) { return CannedResponse{200, "{}"}; });
  auto client = ProgressClient::create(options_for(server));
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_FALSE(action);
  EXPECT_NE(action.error().message.find("\"action\""), std::string::npos);
}

TEST(ProgressClient, OnlyPlainHttpUrlsAreAccepted) {
  ProgressClientOptions o;
  o.url = "https://controller:8081/p";
  auto https = ProgressClient::create(o);
  ASSERT_FALSE(https);
  EXPECT_NE(https.error().message.find("DEPL_PROGRESS_URL"), std::string::npos);
  o.url = "controller:8081/p";
  EXPECT_FALSE(ProgressClient::create(o));
  o.url = "http://controller:99999/p";
  auto port = ProgressClient::create(o);
  ASSERT_FALSE(port);
  EXPECT_NE(port.error().message.find("'99999'"), std::string::npos);
  o.url = "http://controller/p";
  EXPECT_TRUE(ProgressClient::create(o));
}

}  // namespace
}  // namespace depl::worker
