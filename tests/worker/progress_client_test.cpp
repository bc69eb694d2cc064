#include "depl/worker/progress_client.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_http_server.hpp"

namespace depl::worker {
namespace {

using testing::CannedResponse;
using testing::RecordedRequest;
using testing::TestHttpServer;

ProgressClientOptions options_for(const TestHttpServer& server,
                                  std::vector<long long>* waits = nullptr) {
  ProgressClientOptions o;
  o.url = server.url("/v1/namespaces/ns/jobs/j/progress");
  o.token = "s3cret";
  o.attempts = 3;
  o.first_backoff = std::chrono::milliseconds(100);
  o.sleep = [waits](std::chrono::milliseconds d) {
    if (waits) waits->push_back(d.count());
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

TEST(ProgressClient, AnUnreachableEndpointFailsAfterTheAttempts) {
  std::string url;
  {
    TestHttpServer closed([](const RecordedRequest&) { return CannedResponse{}; });
    url = closed.url("/p");
  }  // the port is free again: connections are refused
  std::vector<long long> waits;
  ProgressClientOptions o;
  o.url = url;
  o.token = "t";
  o.attempts = 3;
  o.first_backoff = std::chrono::milliseconds(10);
  o.sleep = [&waits](std::chrono::milliseconds d) { waits.push_back(d.count()); };
  auto client = ProgressClient::create(o);
  ASSERT_TRUE(client);
  auto action = client->post({0, 0, 1, 1.0});
  ASSERT_FALSE(action);
  EXPECT_FALSE(action.error().rejected);
  EXPECT_NE(action.error().message.find("after 3 attempt(s)"), std::string::npos)
      << action.error().message;
  EXPECT_EQ(waits, (std::vector<long long>{10, 20}));
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
