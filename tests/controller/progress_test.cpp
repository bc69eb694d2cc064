#include "depl/controller/progress.hpp"

#include <gtest/gtest.h>

#include "depl/controller/job_status.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

json running_job() {
  PlanRecord plan;
  plan.datasets = {"a"};
  plan.phases = {{"small", 3, "t4", 2}, {"full", 4, "a100", 1}};
  ProgressRecord progress;
  progress.phase = 0;
  progress.epoch = 1;
  progress.stop_after_epoch = 3;
  return json{
      {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"resourceVersion", "5"}}},
      {"status", {{"phase", "Running"}, {"plan", to_json(plan)}, {"progress", to_json(progress)}}}};
}

TEST(ProgressReport, ParsesAndNamesBadFields) {
  auto ok = parse_progress_report(R"({"phase":0,"rank":1,"epoch":2,"loss":0.5})");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->epoch, 2);
  EXPECT_EQ(parse_progress_report("nope").error().message.substr(0, 5), "body:");
  EXPECT_EQ(parse_progress_report("[1]").error().message, "body: must be a JSON object");
  EXPECT_NE(parse_progress_report(R"({"phase":0,"rank":0,"epoch":0,"loss":1})")
                .error()
                .message.find("epoch:"),
            std::string::npos);
  EXPECT_NE(parse_progress_report(R"({"phase":0,"rank":0,"epoch":1,"loss":"x"})")
                .error()
                .message.find("loss:"),
            std::string::npos);
  EXPECT_NE(parse_progress_report(R"({"phase":0,"rank":-1,"epoch":1,"loss":1})")
                .error()
                .message.find("rank:"),
            std::string::npos);
  EXPECT_NE(parse_progress_report(R"({"rank":0,"epoch":1,"loss":1})")
                .error()
                .message.find("phase: required"),
            std::string::npos);
}

TEST(ApplyProgress, RecordsRankZeroOnceAndAnswersTheStop) {
  json job = running_job();
  auto first = apply_progress(job, {0, 0, 2, 0.9});
  EXPECT_TRUE(first.status_changed);
  EXPECT_EQ(first.action, "continue");
  EXPECT_EQ(job["status"]["progress"]["epoch"], 2);
  EXPECT_EQ(job["status"]["progress"]["history"].size(), 1u);
  auto again = apply_progress(job, {0, 0, 2, 0.9});  // a retry changes nothing
  EXPECT_FALSE(again.status_changed);
  auto other_rank = apply_progress(job, {0, 1, 3, 0.8});
  EXPECT_FALSE(other_rank.status_changed);
  EXPECT_EQ(other_rank.action, "checkpointAndExit");
  auto last = apply_progress(job, {0, 0, 3, 0.8});
  EXPECT_TRUE(last.status_changed);
  EXPECT_EQ(last.action, "checkpointAndExit");
}

TEST(ApplyProgress, OldPhasesAndBadRanksAreTurnedAway) {
  json job = running_job();
  auto old = apply_progress(job, {5, 0, 2, 0.9});
  EXPECT_EQ(old.action, "checkpointAndExit");
  EXPECT_FALSE(old.status_changed);
  auto rank = apply_progress(job, {0, 2, 2, 0.9});
  EXPECT_EQ(rank.http_status, 400);
  auto past = apply_progress(job, {0, 0, 9, 0.9});
  EXPECT_EQ(past.action, "checkpointAndExit");
  EXPECT_FALSE(past.status_changed);
  job["status"]["phase"] = "Suspended";
  EXPECT_EQ(apply_progress(job, {0, 0, 2, 0.9}).action, "checkpointAndExit");
}

// Found by fuzz/progress_endpoint_fuzz.cpp: a status whose running phase is past the plan's
// phases was read out of bounds, and a non-string status.phase threw from json::value.
TEST(ApplyProgress, EditedStatusIsReadWithoutTrustingIt) {
  json job = running_job();
  job["status"]["progress"]["phase"] = 2;  // the plan has phases 0 and 1
  auto past = apply_progress(job, {2, 0, 5, 0.4});
  EXPECT_EQ(past.http_status, 200);
  EXPECT_EQ(past.action, "checkpointAndExit");
  EXPECT_EQ(past.message, "the job's status has no readable plan for its running phase");
  EXPECT_FALSE(past.status_changed);
  job = running_job();
  job["status"]["phase"] = 5;
  ProgressOutcome not_a_string;
  EXPECT_NO_THROW(not_a_string = apply_progress(job, {0, 0, 2, 0.9}));
  EXPECT_EQ(not_a_string.action, "checkpointAndExit");
  EXPECT_FALSE(not_a_string.status_changed);
}

class FakeAccess : public JobAccess {
 public:
  json job = running_job();
  int conflicts = 0;
  int writes = 0;
  bool api_down = false;  // every read fails as when the API server cannot be reached
  Expected<json, AccessError> get_job(const std::string&, const std::string& name) override {
    if (api_down) return unexpected(AccessError{"connection refused", true});
    if (name != "j") return unexpected(AccessError{"not found"});
    return job;
  }
  Expected<bool> write_status(const json& j) override {
    if (conflicts > 0) {
      --conflicts;
      return false;
    }
    ++writes;
    job = j;
    return true;
  }
  Expected<std::string, AccessError> token(const std::string&, const std::string& name) override {
    if (api_down) return unexpected(AccessError{"connection refused", true});
    if (name != "j") return unexpected(AccessError{"no progress token"});
    return std::string("s3cret");
  }
};

HttpRequestView post(const std::string& body, const std::string& token = "s3cret",
                     const std::string& path = "/v1/namespaces/ns/jobs/j/progress") {
  HttpRequestView r;
  r.method = "POST";
  r.target = path;
  r.body = body;
  if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
  return r;
}

TEST(ProgressEndpoint, ApiTroubleIsAnsweredRetryableNotFinal) {
  // 503 makes a worker retry; 404 would end it (depl::worker::ProgressClient).
  FakeAccess access;
  FakeClock clock;
  ProgressEndpoint endpoint(access, clock, {});
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  access.api_down = true;
  HttpReply down = endpoint.handle(post(body));
  EXPECT_EQ(down.status, 503) << down.body;
  EXPECT_NE(down.body.find("connection refused"), std::string::npos) << down.body;
  EXPECT_EQ(access.writes, 0);
  access.api_down = false;
  EXPECT_EQ(endpoint.handle(post(body)).status, 200);
  EXPECT_EQ(endpoint.handle(post(body, "s3cret", "/v1/namespaces/ns/jobs/x/progress")).status, 404);
}

TEST(ProgressEndpoint, AuthenticatesParsesRecordsAndRetriesConflicts) {
  FakeAccess access;
  FakeClock clock;
  int recorded = 0;
  ProgressEndpoint endpoint(access, clock,
                            [&](const std::string&, const std::string&) { ++recorded; });
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  EXPECT_EQ(endpoint.handle(post(body, "")).status, 401);
  EXPECT_EQ(endpoint.handle(post(body, "wrong")).status, 401);
  EXPECT_EQ(endpoint.handle(post("{bad", "s3cret")).status, 400);
  EXPECT_EQ(endpoint.handle(post(body, "s3cret", "/v1/namespaces/ns/jobs/x/progress")).status, 404);
  EXPECT_EQ(endpoint.handle(post(body, "s3cret", "/elsewhere")).status, 404);
  EXPECT_EQ(access.writes, 0);  // nothing recorded from a rejected request
  access.conflicts = 2;
  HttpReply ok = endpoint.handle(post(body));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(json::parse(ok.body)["action"], "continue");
  EXPECT_EQ(access.writes, 1);
  EXPECT_EQ(recorded, 1);
  EXPECT_EQ(access.job["status"]["progress"]["loss"], 0.7);
  HttpRequestView get = post(body);
  get.method = "GET";
  EXPECT_EQ(endpoint.handle(get).status, 405);
}

// Found by fuzz/progress_endpoint_fuzz.cpp: a job name that is not UTF-8 made the reply's JSON
// throw (the server turned it into a 500) instead of answering 404 naming the job.
TEST(ProgressEndpoint, NamesThatAreNotUtf8AreAnsweredNotThrown) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpoint endpoint(access, clock, {});
  HttpReply reply;
  ASSERT_NO_THROW(reply = endpoint.handle(post(R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})",
                                               "s3cret", "/v1/namespaces/ns/jobs/\xff/progress")));
  EXPECT_EQ(reply.status, 404);
  const json body = json::parse(reply.body);
  EXPECT_EQ(body["error"], "job ns/\uFFFD: no progress token") << reply.body;
}

TEST(ProgressEndpoint, RateLimitsPerJob) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpointOptions o;
  o.burst = 3;
  o.reports_per_second = 1;
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":1,"epoch":2,"loss":0.7})";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(endpoint.handle(post(body)).status, 200);
  EXPECT_EQ(endpoint.handle(post(body)).status, 429);
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(endpoint.handle(post(body)).status, 200);
}

TEST(ProgressEndpoint, ConstantTimeCompare) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

}  // namespace
}  // namespace depl::controller
