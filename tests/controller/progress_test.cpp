#include "depl/controller/progress.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "depl/common/time.hpp"
#include "depl/controller/job_status.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

const auto kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

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
  auto first = apply_progress(job, {0, 0, 2, 0.9}, kNow);
  EXPECT_TRUE(first.status_changed);
  EXPECT_EQ(first.action, "continue");
  EXPECT_EQ(job["status"]["progress"]["epoch"], 2);
  EXPECT_EQ(job["status"]["progress"]["history"].size(), 1u);
  auto again = apply_progress(job, {0, 0, 2, 0.9}, kNow);  // a retry changes nothing
  EXPECT_FALSE(again.status_changed);
  auto other_rank = apply_progress(job, {0, 1, 3, 0.8}, kNow);
  EXPECT_FALSE(other_rank.status_changed);
  EXPECT_EQ(other_rank.action, "checkpointAndExit");
  auto last = apply_progress(job, {0, 0, 3, 0.8}, kNow);
  EXPECT_TRUE(last.status_changed);
  EXPECT_EQ(last.action, "checkpointAndExit");
}

// A recorded epoch is a checkpoint: its time is kept (a preemption loses only what follows it),
// and on a pool with interruptions the phase's workers are credited with the time they trained
// since the last one, the exposure the pool's observed interruption rate is measured over. An
// on-demand pool gets no record.
TEST(ApplyProgress, ARecordedEpochIsACheckpointAndCountsTheTimeTrainedOnASpotPool) {
  json job = running_job();
  job["status"]["poolFigures"] = {
      {"t4", {{"gpuGflops", 1000}, {"capacityType", "Spot"}, {"interruptionsPerHour", 0.5}}},
      {"a100", {{"gpuGflops", 2000}}}};
  job["status"]["progress"]["checkpointedAt"] = "2027-01-15T07:00:00Z";
  const auto at = *parse_rfc3339("2027-01-15T07:10:00Z");
  ASSERT_TRUE(apply_progress(job, {0, 0, 2, 0.9}, at).status_changed);
  const json& status = job["status"];
  EXPECT_EQ(status["progress"]["checkpointedAt"], "2027-01-15T07:10:00Z");
  // Two workers for ten minutes since the round's last checkpoint.
  EXPECT_DOUBLE_EQ(status["preemptions"]["t4"]["workerSeconds"].get<double>(), 1200.0);
  EXPECT_EQ(status["preemptions"]["t4"]["count"], 0);
  // A retry is not credited again.
  EXPECT_FALSE(apply_progress(job, {0, 0, 2, 0.9}, at + std::chrono::minutes(5)).status_changed);
  ASSERT_TRUE(apply_progress(job, {0, 0, 3, 0.8}, at + std::chrono::minutes(5)).status_changed);
  EXPECT_DOUBLE_EQ(job["status"]["preemptions"]["t4"]["workerSeconds"].get<double>(), 1800.0);

  json on_demand = running_job();
  on_demand["status"]["poolFigures"] = {{"t4", {{"gpuGflops", 1000}}}};
  on_demand["status"]["progress"]["checkpointedAt"] = "2027-01-15T07:00:00Z";
  ASSERT_TRUE(apply_progress(on_demand, {0, 0, 2, 0.9}, at).status_changed);
  EXPECT_FALSE(on_demand["status"].contains("preemptions")) << on_demand["status"].dump();
  EXPECT_EQ(on_demand["status"]["progress"]["checkpointedAt"], "2027-01-15T07:10:00Z");
}

TEST(ApplyProgress, OldPhasesAndBadRanksAreTurnedAway) {
  json job = running_job();
  auto old = apply_progress(job, {5, 0, 2, 0.9}, kNow);
  EXPECT_EQ(old.action, "checkpointAndExit");
  EXPECT_FALSE(old.status_changed);
  auto rank = apply_progress(job, {0, 2, 2, 0.9}, kNow);
  EXPECT_EQ(rank.http_status, 400);
  auto past = apply_progress(job, {0, 0, 9, 0.9}, kNow);
  EXPECT_EQ(past.action, "checkpointAndExit");
  EXPECT_FALSE(past.status_changed);
  job["status"]["phase"] = "Suspended";
  EXPECT_EQ(apply_progress(job, {0, 0, 2, 0.9}, kNow).action, "checkpointAndExit");
}

// Found by fuzz/progress_endpoint_fuzz.cpp: a status whose running phase is past the plan's
// phases was read out of bounds, and a non-string status.phase threw from json::value.
TEST(ApplyProgress, EditedStatusIsReadWithoutTrustingIt) {
  json job = running_job();
  job["status"]["progress"]["phase"] = 2;  // the plan has phases 0 and 1
  auto past = apply_progress(job, {2, 0, 5, 0.4}, kNow);
  EXPECT_EQ(past.http_status, 200);
  EXPECT_EQ(past.action, "checkpointAndExit");
  EXPECT_EQ(past.message, "the job's status has no readable plan for its running phase");
  EXPECT_FALSE(past.status_changed);
  job = running_job();
  job["status"]["phase"] = 5;
  ProgressOutcome not_a_string;
  EXPECT_NO_THROW(not_a_string = apply_progress(job, {0, 0, 2, 0.9}, kNow));
  EXPECT_EQ(not_a_string.action, "checkpointAndExit");
  EXPECT_FALSE(not_a_string.status_changed);
}

class FakeAccess : public JobAccess {
 public:
  json job = running_job();                                       // what every known job reads as
  std::map<std::string, std::string> tokens = {{"j", "s3cret"}};  // the known jobs (ns "ns")
  bool cache_shows_tokens = true;  // the jobs cache holds every known job's token record
  int conflicts = 0;
  int writes = 0;
  int cached_lookups = 0;
  int token_lookups = 0;  // token records read from the API server
  bool api_down = false;  // every read fails as when the API server cannot be reached
  Expected<json, AccessError> get_job(const std::string&, const std::string& name) override {
    if (api_down) return unexpected(AccessError{"connection refused", true});
    if (!tokens.contains(name)) return unexpected(AccessError{"not found"});
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
  std::optional<ProgressTokenRecord> cached_token(const std::string&,
                                                  const std::string& name) override {
    ++cached_lookups;
    auto it = tokens.find(name);
    if (!cache_shows_tokens || it == tokens.end()) return std::nullopt;
    return record_of(it->second);
  }
  Expected<ProgressTokenRecord, AccessError> token(const std::string&,
                                                   const std::string& name) override {
    ++token_lookups;
    if (api_down) return unexpected(AccessError{"connection refused", true});
    auto it = tokens.find(name);
    if (it == tokens.end()) return unexpected(AccessError{"no progress token"});
    return record_of(it->second);
  }
  // What the job's status records: the hash, never the token ("" records none).
  static ProgressTokenRecord record_of(const std::string& token) {
    return {"j-progress-x1y2z3w4", token.empty() ? "" : sha256_hex(token)};
  }
};

HttpRequestView post(const std::string& body, const std::string& token = "s3cret",
                     const std::string& path = "/v1/namespaces/ns/jobs/j/progress",
                     const std::string& peer = "10.0.0.7") {
  HttpRequestView r;
  r.method = "POST";
  r.target = path;
  r.body = body;
  r.peer = peer;
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
  EXPECT_EQ(body["error"].get<std::string>().rfind("no job ns/\uFFFD: ", 0), 0u) << reply.body;
}

// A namespace or job name that Kubernetes could not have given is refused before anything is
// looked up, in the cache or the API server (a name that is not UTF-8 must not cost retried
// GETs and a 503).
TEST(ProgressEndpoint, NamesKubernetesCannotHaveAreRefusedBeforeAnyLookup) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpoint endpoint(access, clock, {});
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  const std::string long_label(64, 'n');
  for (const std::string& path :
       {std::string("/v1/namespaces/ns/jobs/\xff\xfe/progress"),
        std::string("/v1/namespaces/ns/jobs/UPPER/progress"),
        std::string("/v1/namespaces/ns/jobs/-dash/progress"),
        std::string("/v1/namespaces/ns/jobs/") + std::string(254, 'a') + "/progress",
        std::string("/v1/namespaces/") + long_label + "/jobs/j/progress",
        std::string("/v1/namespaces/n.s/jobs/j/progress"),
        std::string("/v1/namespaces/ns/jobs/a%2Fb/progress")}) {
    HttpReply reply = endpoint.handle(post(body, "s3cret", path));
    EXPECT_EQ(reply.status, 404) << path << " " << reply.body;
    EXPECT_NE(reply.body.find("DNS-1123"), std::string::npos) << reply.body;
  }
  EXPECT_EQ(access.cached_lookups, 0);
  EXPECT_EQ(access.token_lookups, 0);
  EXPECT_EQ(endpoint.peer_buckets(), 0u);
  // A name of a subdomain's form (dots) is a valid job name.
  access.tokens["j.v2"] = "s3cret";
  EXPECT_EQ(endpoint.handle(post(body, "s3cret", "/v1/namespaces/ns/jobs/j.v2/progress")).status,
            200);
}

// The token is checked against the hash the job's status records; the token itself is nowhere
// but in the Secret the workers read. A job the cache does not show yet is read from the API
// server, and an authenticated report gives back what it spent of its address's budget.
TEST(ProgressEndpoint, TheTokenIsCheckedAgainstTheHashInTheStatus) {
  FakeAccess access;
  access.cache_shows_tokens = false;
  FakeClock clock;
  ProgressEndpointOptions o;
  o.failed_auth_burst = 2;
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  for (int i = 0; i < 5; ++i) EXPECT_EQ(endpoint.handle(post(body)).status, 200) << i;
  EXPECT_EQ(access.token_lookups, 5);
  EXPECT_EQ(endpoint.handle(post(body, FakeAccess::record_of("s3cret").sha256)).status, 401)
      << "the hash itself is not the token";
  EXPECT_EQ(access.token_lookups, 6);
  access.cache_shows_tokens = true;
  EXPECT_EQ(endpoint.handle(post(body)).status, 200);
  EXPECT_EQ(access.token_lookups, 6);  // from the cache
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

// The Retry-After header of a reply, or "" when it has none.
std::string retry_after(const HttpReply& reply) {
  std::string value;
  for (const auto& [name, v] : reply.headers) {
    if (name == "Retry-After") value = v;
  }
  return value;
}

// What Retry-After should say for a bucket refilling at `per_second` that holds `tokens` (< 1):
// the seconds until it holds one, rounded up, at least 1.
std::string seconds_until_a_token(double per_second, double tokens) {
  return std::to_string(
      static_cast<long long>(std::max(1.0, std::ceil((1 - tokens) / per_second))));
}

TEST(ProgressEndpoint, ThePerJobLimitSaysWhenToRetry) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpointOptions o;
  o.burst = 3;
  o.reports_per_second = 0.25;  // slower than one a second, so the answer counts down
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":1,"epoch":2,"loss":0.7})";
  for (int i = 0; i < 3; ++i) {
    HttpReply ok = endpoint.handle(post(body));
    EXPECT_EQ(ok.status, 200) << ok.body;
    EXPECT_TRUE(ok.headers.empty());
  }
  HttpReply limited = endpoint.handle(post(body));
  EXPECT_EQ(limited.status, 429) << limited.body;
  const std::string first = retry_after(limited);
  EXPECT_EQ(first, seconds_until_a_token(o.reports_per_second, 0));

  clock.advance(std::chrono::milliseconds(1500));  // 2.5 s to go: rounded up
  limited = endpoint.handle(post(body));
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_EQ(retry_after(limited), seconds_until_a_token(o.reports_per_second, 1.5 * 0.25));
  EXPECT_NE(retry_after(limited), first);

  // Waiting out what the answer said is enough.
  clock.advance(std::chrono::seconds(std::stoi(retry_after(limited))));
  HttpReply after = endpoint.handle(post(body));
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(retry_after(after), "");
}

TEST(ProgressEndpoint, RetryAfterIsAtLeastOneSecond) {
  // At the default 20 reports a second the next token is 50 ms away: "0" would invite a retry
  // that is refused again, so the answer rounds up.
  FakeAccess access;
  FakeClock clock;
  const ProgressEndpointOptions o;
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":1,"epoch":2,"loss":0.7})";
  for (int i = 0; i < static_cast<int>(o.burst); ++i) {
    ASSERT_EQ(endpoint.handle(post(body)).status, 200) << i;
  }
  HttpReply limited = endpoint.handle(post(body));
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_EQ(retry_after(limited), seconds_until_a_token(o.reports_per_second, 0));
  EXPECT_EQ(retry_after(limited), "1");
}

TEST(ProgressEndpoint, TheFailedAuthenticationLimitSaysWhenToRetry) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpointOptions o;
  o.failed_auth_burst = 2;
  o.failed_auth_per_second = 0.25;
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  const std::string path = "/v1/namespaces/ns/jobs/j/progress";
  for (int i = 0; i < 2; ++i) {
    HttpReply refused = endpoint.handle(post(body, "guess", path, "10.9.9.9"));
    EXPECT_EQ(refused.status, 401) << refused.body;
    EXPECT_EQ(retry_after(refused), "");  // retrying a wrong token cannot help
  }
  HttpReply limited = endpoint.handle(post(body, "guess", path, "10.9.9.9"));
  EXPECT_EQ(limited.status, 429) << limited.body;
  const std::string first = retry_after(limited);
  EXPECT_EQ(first, seconds_until_a_token(o.failed_auth_per_second, 0));

  // The job's own workers behind that address (SNAT) still get in with the right token: a
  // stranger sharing their address cannot lock them out.
  clock.advance(std::chrono::milliseconds(1500));
  HttpReply worker = endpoint.handle(post(body, "s3cret", path, "10.9.9.9"));
  EXPECT_EQ(worker.status, 200) << worker.body;
  EXPECT_EQ(access.writes, 1);
  // A wrong token is still refused before any lookup, and told for how long.
  limited = endpoint.handle(post(body, "guess", path, "10.9.9.9"));
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_EQ(retry_after(limited), seconds_until_a_token(o.failed_auth_per_second, 1.5 * 0.25));
  EXPECT_NE(retry_after(limited), first);

  clock.advance(std::chrono::seconds(std::stoi(retry_after(limited))));
  HttpReply after = endpoint.handle(post(body, "guess", path, "10.9.9.9"));
  EXPECT_EQ(after.status, 401) << after.body;
}

// A stranger without the token cannot spend the job's own budget: were the limit checked before
// the token, the job's workers would get 429 and drop their reports.
TEST(ProgressEndpoint, AStrangerCannotSpendAJobsBudget) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpointOptions o;
  o.burst = 3;
  o.reports_per_second = 1;
  o.failed_auth_burst = 5;
  o.failed_auth_per_second = 1;
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  const std::string path = "/v1/namespaces/ns/jobs/j/progress";
  int refused_after = 0;
  for (int i = 0; i < 100; ++i) {
    const int status = endpoint.handle(post(body, i % 2 ? "guess" : "", path, "10.9.9.9")).status;
    if (status == 429) break;
    EXPECT_EQ(status, 401);
    ++refused_after;
  }
  EXPECT_EQ(refused_after, 5);  // the stranger's own budget, not the job's
  EXPECT_EQ(endpoint.job_buckets(), 0u);
  EXPECT_EQ(access.writes, 0);

  HttpReply worker = endpoint.handle(post(body, "s3cret", path, "10.0.0.7"));
  EXPECT_EQ(worker.status, 200) << worker.body;
  EXPECT_EQ(access.writes, 1);
  EXPECT_EQ(access.job["status"]["progress"]["epoch"], 2);
  EXPECT_EQ(access.job["status"]["progress"]["loss"], 0.7);

  // The stranger stays bounded, and gets one more try per second.
  EXPECT_EQ(endpoint.handle(post(body, "guess", path, "10.9.9.9")).status, 429);
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(endpoint.handle(post(body, "guess", path, "10.9.9.9")).status, 401);
  EXPECT_EQ(endpoint.handle(post(body, "guess", path, "10.9.9.9")).status, 429);
}

// Each unauthenticated request costs a token lookup (an API read for a job whose Secret is not
// cached): a stranger trying many job names must be refused before it is looked up.
TEST(ProgressEndpoint, UnauthenticatedLookupsAreBoundedPerPeer) {
  FakeAccess access;
  FakeClock clock;
  ProgressEndpointOptions o;
  o.failed_auth_burst = 4;
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  std::map<int, int> statuses;
  for (int i = 0; i < 1000; ++i) {
    const std::string path = fmt::format("/v1/namespaces/ns/jobs/guess-{}/progress", i);
    statuses[endpoint.handle(post(body, "s3cret", path, "10.9.9.9")).status] += 1;
  }
  EXPECT_EQ(access.token_lookups, 4);
  EXPECT_EQ(statuses[404], 4);
  EXPECT_EQ(statuses[429], 996);
  EXPECT_EQ(endpoint.job_buckets(), 0u);
  // A worker elsewhere is not affected.
  EXPECT_EQ(endpoint.handle(post(body)).status, 200);
}

TEST(ProgressEndpoint, OneJobsTokenCannotReportForAnother) {
  FakeAccess access;
  access.tokens["k"] = "k-token";
  FakeClock clock;
  int recorded = 0;
  ProgressEndpoint endpoint(access, clock,
                            [&](const std::string&, const std::string&) { ++recorded; });
  const json before = access.job;
  const std::string body = R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})";
  HttpReply reply = endpoint.handle(post(body, "s3cret", "/v1/namespaces/ns/jobs/k/progress"));
  EXPECT_EQ(reply.status, 401) << reply.body;
  EXPECT_EQ(json::parse(reply.body)["error"], "wrong progress token for this job");
  reply = endpoint.handle(post(body, "k-token", "/v1/namespaces/ns/jobs/j/progress"));
  EXPECT_EQ(reply.status, 401) << reply.body;
  EXPECT_EQ(access.writes, 0);
  EXPECT_EQ(recorded, 0);
  EXPECT_EQ(access.job, before);
  EXPECT_EQ(endpoint.job_buckets(), 0u);  // no budget spent for either job
}

TEST(ProgressEndpoint, AnEmptyTokenAdmitsNobody) {
  FakeAccess access;
  access.tokens["j"] = "";  // the status was edited to record an empty hash
  FakeClock clock;
  ProgressEndpoint endpoint(access, clock, {});
  HttpRequestView request = post(R"({"phase":0,"rank":0,"epoch":2,"loss":0.7})");
  request.headers["authorization"] = "Bearer ";
  HttpReply reply = endpoint.handle(request);
  EXPECT_EQ(reply.status, 404) << reply.body;
  EXPECT_NE(reply.body.find("records no progress token"), std::string::npos) << reply.body;
  EXPECT_EQ(access.writes, 0);
}

// Buckets are keyed by names and addresses from the network: jobs come and go, so the buckets of
// jobs that stopped reporting must not pile up.
TEST(ProgressEndpoint, RateLimitBucketsDoNotAccumulate) {
  FakeAccess access;
  for (int i = 0; i < 300; ++i) access.tokens[fmt::format("job-{}", i)] = fmt::format("t{}", i);
  FakeClock clock;
  ProgressEndpointOptions o;
  o.burst = 2;
  o.reports_per_second = 1;
  o.max_tracked = 100;
  o.sweep_every = std::chrono::seconds(60);
  ProgressEndpoint endpoint(access, clock, {}, o);
  const std::string body = R"({"phase":0,"rank":1,"epoch":2,"loss":0.7})";
  auto report = [&](int i, const std::string& peer) {
    return endpoint
        .handle(post(body, fmt::format("t{}", i),
                     fmt::format("/v1/namespaces/ns/jobs/job-{}/progress", i), peer))
        .status;
  };
  for (int i = 0; i < 300; ++i) ASSERT_EQ(report(i, "10.0.0.7"), 200) << i;
  EXPECT_LE(endpoint.job_buckets(), 100u);  // capped while all are live
  EXPECT_LE(endpoint.peer_buckets(), 1u);
  for (int i = 0; i < 300; ++i) {
    endpoint.handle(post(body, "nope", "/v1/namespaces/ns/jobs/j/progress",
                         fmt::format("10.1.{}.{}", i / 250, i % 250)));
  }
  EXPECT_LE(endpoint.peer_buckets(), 100u);

  // Once the buckets have refilled they are forgotten at the next sweep.
  clock.advance(std::chrono::seconds(61));
  EXPECT_EQ(report(0, "10.0.0.7"), 200);
  EXPECT_EQ(endpoint.job_buckets(), 1u);
  // An authenticated worker spends no address budget; the next failed authentication sweeps.
  EXPECT_EQ(
      endpoint.handle(post(body, "nope", "/v1/namespaces/ns/jobs/j/progress", "10.2.0.1")).status,
      401);
  EXPECT_EQ(endpoint.peer_buckets(), 1u);
}

// docs/operations.md ("Security") quotes these numbers: change both together.
TEST(ProgressEndpoint, DefaultLimitsAreTheDocumentedOnes) {
  const ProgressEndpointOptions o;
  EXPECT_EQ(o.failed_auth_per_second, 1);
  EXPECT_EQ(o.failed_auth_burst, 10);
  EXPECT_EQ(o.reports_per_second, 20);
  EXPECT_EQ(o.burst, 40);
  EXPECT_EQ(o.max_tracked, 10000u);
  EXPECT_EQ(o.sweep_every, std::chrono::seconds(60));
  EXPECT_EQ(HttpServerOptions{}.max_body_bytes, 64u * 1024);
}

TEST(ProgressEndpoint, ConstantTimeCompare) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

// Kubeflow Trainer's report, at Trainer's path with the phase and rank in the query, moves the
// job forward as the native report does, behind the same token and limits.
TEST(ProgressEndpoint, ATrainerStyleReportMovesTheJobForward) {
  FakeAccess access;
  FakeClock clock;
  int recorded = 0;
  ProgressEndpoint endpoint(access, clock,
                            [&](const std::string&, const std::string&) { ++recorded; });
  const std::string path =
      "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status?phase=0&rank=0";
  const std::string body = R"({"trainerStatus":{"progressPercentage":40,)"
                           R"("estimatedRemainingSeconds":30,"metrics":[)"
                           R"({"name":"loss","value":"0.9"},{"name":"eval_loss","value":"0.61"},)"
                           R"({"name":"currentEpoch","value":"2"},{"name":"totalEpochs",)"
                           R"("value":"3"}],"lastUpdatedTime":"2026-01-01T00:00:00Z"}})";
  EXPECT_EQ(endpoint.handle(post(body, "", path)).status, 401);
  EXPECT_EQ(endpoint.handle(post(body, "wrong", path)).status, 401);
  HttpReply no_rank = endpoint.handle(
      post(body, "s3cret", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/j/status"));
  EXPECT_EQ(no_rank.status, 400);
  EXPECT_NE(no_rank.body.find("phase: required in the query"), std::string::npos) << no_rank.body;
  EXPECT_EQ(access.writes, 0);

  // Progress in the middle of an epoch is acknowledged and records nothing.
  HttpReply midway = endpoint.handle(
      post(R"({"trainerStatus":{"progressPercentage":20,"metrics":[{"name":"epoch","value":"1.5"},)"
           R"({"name":"loss","value":"1.2"}]}})",
           "s3cret", path));
  EXPECT_EQ(midway.status, 200) << midway.body;
  EXPECT_EQ(access.writes, 0);

  HttpReply ok = endpoint.handle(post(body, "s3cret", path));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["action"], "continue");
  EXPECT_EQ(recorded, 1);
  EXPECT_EQ(access.job["status"]["progress"]["epoch"], 2);
  EXPECT_EQ(access.job["status"]["progress"]["loss"], 0.61);  // the validation loss
  // The phase's last epoch is answered as natively (a Trainer client ignores the answer).
  HttpReply last =
      endpoint.handle(post(R"({"trainerStatus":{"metrics":[{"name":"currentEpoch","value":"3"},)"
                           R"({"name":"eval_loss","value":"0.55"}]}})",
                           "s3cret", path));
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_EQ(json::parse(last.body)["action"], "checkpointAndExit");
  EXPECT_EQ(access.job["status"]["progress"]["epoch"], 3);
}

// Workers admitted a moment ago may report before the controller has seen them run: a Queued
// job takes their reports.
TEST(ApplyProgress, AQueuedJobTakesReportsOfItsAdmittedWorkers) {
  json job = running_job();
  job["status"]["phase"] = phases::kQueued;
  const ProgressOutcome out = apply_progress(job, {0, 0, 2, 0.6}, kNow);
  EXPECT_EQ(out.action, "continue");
  EXPECT_TRUE(out.status_changed);
  EXPECT_EQ(job["status"]["progress"]["epoch"], 2);
}

}  // namespace
}  // namespace depl::controller
