// The Client over a scripted transport: credentials, errors, retries and Retry-After, rate
// limiting on a fake clock, watches, paging.
#include "depl/kube/client.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <tuple>
#include <vector>

#include "depl/kube/testing/scripted_transport.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using testing::ScriptedTransport;
using testing::StreamScript;
using namespace std::chrono_literals;

class CountingCredentials : public CredentialProvider {
 public:
  Expected<Credentials, ApiError> credentials() override {
    return Credentials{"Bearer token-" + std::to_string(generation.load()), nullptr};
  }
  void on_unauthorized() override { ++generation; }
  std::atomic<int> generation{1};
};

struct Fixture {
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<CountingCredentials> credentials = std::make_shared<CountingCredentials>();
  ClientOptions options() {
    ClientOptions o;
    o.clock = clock;
    o.random = std::make_shared<RandomSource>(42);
    o.rate_limit = {0, 0};  // off unless a test turns it on
    return o;
  }
  Client client() { return Client(transport, credentials, options()); }
};

TEST(Client, GetSendsCredentialsAndParsesObject) {
  Fixture f;
  f.transport->push_json(200, {{"kind", "Pod"}, {"metadata", {{"name", "p"}}}});
  auto pod = f.client().get(resources::pods(), "ns", "p");
  ASSERT_TRUE(pod) << pod.error().to_string();
  EXPECT_EQ((*pod)["metadata"]["name"], "p");
  auto sent = f.transport->requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].request.target(), "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(sent[0].request.header("Authorization"), "Bearer token-1");
  EXPECT_EQ(sent[0].request.header("User-Agent"), "depl-operator/0.1");
  EXPECT_EQ(sent[0].timeout, 30s);
}

TEST(Client, ErrorStatusBecomesApiError) {
  Fixture f;
  f.transport->push_status(404, "NotFound", "pods \"p\" not found");
  auto pod = f.client().get(resources::pods(), "ns", "p");
  ASSERT_FALSE(pod);
  EXPECT_TRUE(pod.error().is_not_found());
  EXPECT_EQ(pod.error().message, "pods \"p\" not found");
}

// A write whose caller only needs to know it was applied: the answer is not decoded (not even
// looked at as JSON), while a refusal is still the server's Status.
TEST(Client, WritesWithoutReturnObjectSkipDecodingTheAnswer) {
  Fixture f;
  Client client = f.client();
  WriteOptions quiet;
  quiet.return_object = false;
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}};
  f.transport->push_response(201, "{not json");
  auto decoded = client.create(resources::pods(), "ns", pod);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().reason, ApiError::kDecodeError);
  for (int i = 0; i < 3; ++i) f.transport->push_response(i == 0 ? 201 : 200, "{not json");
  auto created = client.create(resources::pods(), "ns", pod, quiet);
  ASSERT_TRUE(created) << created.error().to_string();
  EXPECT_TRUE(created->is_null());
  json versioned = pod;
  versioned["metadata"]["resourceVersion"] = "7";
  auto replaced = client.replace(resources::pods(), versioned, quiet);
  EXPECT_TRUE(replaced && replaced->is_null());
  auto status_written = client.replace_status(resources::pods(), versioned, quiet);
  EXPECT_TRUE(status_written && status_written->is_null());
  EXPECT_EQ(f.transport->requests().size(), 4u);
  f.transport->push_status(409, "Conflict", "the object has been modified");
  auto refused = client.replace_status(resources::pods(), versioned, quiet);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(refused.error().is_conflict());
  EXPECT_EQ(refused.error().message, "the object has been modified");
}

TEST(Client, InvalidRequestIsNotSent) {
  Fixture f;
  auto pod = f.client().get(resources::pods(), "", "p");
  ASSERT_FALSE(pod);
  EXPECT_EQ(pod.error().reason, ApiError::kInvalidRequest);
  EXPECT_EQ(f.transport->request_count(), 0u);
}

TEST(Client, UnauthorizedResetsCredentialsButIsReturned) {
  Fixture f;
  f.transport->push_status(401, "Unauthorized", "Unauthorized");
  f.transport->push_json(200, json::object());
  auto client = f.client();
  auto first = client.get(resources::pods(), "ns", "p");
  ASSERT_FALSE(first);
  EXPECT_TRUE(first.error().is_unauthorized());
  EXPECT_EQ(f.transport->request_count(), 1u);  // no retry of a 401
  ASSERT_TRUE(client.get(resources::pods(), "ns", "p"));
  EXPECT_EQ(f.transport->requests()[1].request.header("Authorization"), "Bearer token-2");
}

// Runs `call` on a thread, advancing the fake clock to each deadline it sleeps until (so time
// moves exactly as far as the client asked); returns the result, the fake time that passed and
// how many times the clock was advanced.
template <typename Call>
auto run_with_clock(Fixture& f, int expected_sleeps, Call call) {
  auto start = f.clock->now();
  auto future = std::async(std::launch::async, call);
  int advances = 0;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (future.wait_for(0s) != std::future_status::ready &&
         std::chrono::steady_clock::now() < give_up) {
    if (f.clock->wait_for_sleepers(1, 5ms) && f.clock->advance_to_next_deadline()) ++advances;
  }
  auto result = future.get();
  EXPECT_EQ(advances, expected_sleeps);
  return std::make_pair(std::move(result), f.clock->now() - start);
}

TEST(Client, RetriesGetOnServerErrorWithJitteredBackoff) {
  Fixture f;
  f.transport->push_status(503, "ServiceUnavailable", "busy");
  f.transport->push_error(ApiError::transport(ApiError::kTransportError, "connection reset"));
  f.transport->push_json(200, {{"ok", true}});
  auto client = f.client();
  auto [result, waited] =
      run_with_clock(f, 2, [&] { return client.get(resources::pods(), "ns", "p"); });
  ASSERT_TRUE(result) << result.error().to_string();
  EXPECT_EQ(f.transport->request_count(), 3u);
  // 100 ms * [1, 1.5) + 200 ms * [1, 1.5).
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 450ms);
}

TEST(Client, HonoursRetryAfter) {
  Fixture f;
  f.transport->push_status(429, "TooManyRequests", "slow down", {{"Retry-After", "7"}});
  f.transport->push_json(200, json::object());
  auto client = f.client();
  auto [result, waited] =
      run_with_clock(f, 1, [&] { return client.list(resources::pods(), "ns"); });
  ASSERT_TRUE(result);
  EXPECT_EQ(waited, 7s);
}

TEST(Client, RetryAfterBeyondLimitIsReturned) {
  Fixture f;
  f.transport->push_status(429, "TooManyRequests", "slow down", {{"Retry-After", "3600"}});
  auto result = f.client().get(resources::pods(), "ns", "p");
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().is_too_many_requests());
  ASSERT_TRUE(result.error().retry_after);
  EXPECT_EQ(f.transport->request_count(), 1u);
}

TEST(Client, PostAndPatchAreNotRetriedOnceSent) {
  Fixture f;
  f.transport->push_status(503, "ServiceUnavailable", "busy");
  f.transport->push_error(ApiError::transport(ApiError::kTransportError, "reset after send"));
  auto client = f.client();
  auto created = client.create(resources::pods(), "ns", {{"metadata", {{"name", "p"}}}});
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, 503);
  auto patched = client.patch(resources::pods(), "ns", "p", PatchType::Merge, json::object());
  ASSERT_FALSE(patched);
  EXPECT_EQ(patched.error().reason, ApiError::kTransportError);
  EXPECT_EQ(f.transport->request_count(), 2u);
}

TEST(Client, ReplaceAndDeleteAreRetried) {
  Fixture f;
  f.transport->push_status(500, "InternalError", "etcd leader changed");
  f.transport->push_json(200, {{"metadata", {{"name", "p"}, {"resourceVersion", "8"}}}});
  f.transport->push_error(ApiError::transport(ApiError::kTimeout, "no answer"));
  f.transport->push_json(200, {{"kind", "Status"}, {"status", "Success"}});
  auto client = f.client();
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"resourceVersion", "7"}}}};
  auto [replaced, waited] =
      run_with_clock(f, 1, [&] { return client.replace(resources::pods(), pod); });
  ASSERT_TRUE(replaced) << replaced.error().to_string();
  auto [removed, waited_too] =
      run_with_clock(f, 1, [&] { return client.remove(resources::pods(), "ns", "p"); });
  ASSERT_TRUE(removed) << removed.error().to_string();
  auto sent = f.transport->requests();
  ASSERT_EQ(sent.size(), 4u);
  // The retried PUT carries the same resourceVersion: a duplicate would get 409, never a blind
  // write.
  EXPECT_EQ(sent[1].request.method, "PUT");
  EXPECT_EQ(json::parse(sent[1].request.body)["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(sent[3].request.method, "DELETE");
}

TEST(Client, PostIsRetriedWhenTheConnectionNeverOpened) {
  Fixture f;
  f.transport->push_error(ApiError::transport(ApiError::kConnectFailed, "connection refused"));
  f.transport->push_json(201, {{"metadata", {{"name", "p"}}}});
  auto client = f.client();
  auto [result, waited] = run_with_clock(f, 1, [&] {
    return client.create(resources::pods(), "ns", {{"metadata", {{"name", "p"}}}});
  });
  ASSERT_TRUE(result);
  EXPECT_EQ(f.transport->request_count(), 2u);
}

TEST(Client, GivesUpAfterMaxAttempts) {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.transport->push_status(500, "InternalError", "boom");
  auto client = f.client();
  auto [result, waited] =
      run_with_clock(f, 4, [&] { return client.get(resources::pods(), "ns", "p"); });
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, 500);
  EXPECT_EQ(f.transport->request_count(), 5u);
}

TEST(Client, StopInterruptsABackoffWait) {
  Fixture f;
  f.transport->push_status(503, "ServiceUnavailable", "busy");
  auto client = f.client();
  auto future =
      std::async(std::launch::async, [&] { return client.get(resources::pods(), "ns", "p"); });
  ASSERT_TRUE(f.clock->wait_for_sleepers(1));
  client.stop();
  auto result = future.get();
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().is_cancelled());
}

TEST(Client, WriteFenceHoldsBackWritesButNotReads) {
  Fixture f;
  std::atomic<bool> open{false};
  ClientOptions options = f.options();
  options.write_fence = [&] { return open.load(); };
  Client client(f.transport, f.credentials, options);
  f.transport->push_json(200, {{"metadata", {{"name", "p"}}}});
  ASSERT_TRUE(client.get(resources::pods(), "ns", "p"));
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"resourceVersion", "7"}}}};
  auto created = client.create(resources::pods(), "ns", pod);
  ASSERT_FALSE(created);
  EXPECT_TRUE(created.error().is_fenced()) << created.error().to_string();
  EXPECT_FALSE(client.replace_status(resources::pods(), pod));
  EXPECT_FALSE(client.patch(resources::pods(), "ns", "p", PatchType::Merge, json::object()));
  EXPECT_FALSE(client.remove(resources::pods(), "ns", "p"));
  EXPECT_EQ(f.transport->request_count(), 1u);  // only the GET went out

  open = true;
  f.transport->push_json(201, pod);
  EXPECT_TRUE(client.create(resources::pods(), "ns", pod));
  EXPECT_EQ(f.transport->request_count(), 2u);
}

TEST(Client, WriteFenceIsAskedBeforeEveryRetry) {
  Fixture f;
  std::atomic<int> asked{0};
  ClientOptions options = f.options();
  // Open for the first attempt only: the leader loses its lease while the PUT is retried.
  options.write_fence = [&] { return asked.fetch_add(1) == 0; };
  Client client(f.transport, f.credentials, options);
  f.transport->push_status(503, "ServiceUnavailable", "busy");
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"resourceVersion", "7"}}}};
  auto [replaced, waited] =
      run_with_clock(f, 1, [&] { return client.replace(resources::pods(), pod); });
  ASSERT_FALSE(replaced);
  EXPECT_TRUE(replaced.error().is_fenced()) << replaced.error().to_string();
  EXPECT_EQ(f.transport->request_count(), 1u);
}

// Every attempt on the wire is reported (a retried GET twice, a broken connection with code 0),
// and so is the opening of a watch.
TEST(Client, ReportsEveryAttemptForMetrics) {
  Fixture f;
  std::vector<std::tuple<std::string, int, bool>> seen;
  ClientOptions options = f.options();
  options.on_request = [&](const RequestOutcome& r) {
    seen.emplace_back(std::string(r.method), r.code, r.watch);
    EXPECT_GE(r.duration.count(), 0);
  };
  Client client(f.transport, f.credentials, options);
  f.transport->push_status(503, "ServiceUnavailable", "try again");
  f.transport->push_json(200, json::object());
  auto got = run_with_clock(f, 1, [&] { return client.get(resources::pods(), "ns", "p"); });
  ASSERT_TRUE(std::get<0>(got));
  // Sent, then the connection broke: a POST is not retried (it may have been applied).
  f.transport->push_error(ApiError::transport(ApiError::kTransportError, "connection reset"));
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}};
  EXPECT_FALSE(client.create(resources::pods(), "ns", pod));
  f.transport->push_stream(StreamScript{});
  EXPECT_TRUE(client.watch(resources::pods(), "ns"));
  using Seen = std::tuple<std::string, int, bool>;
  EXPECT_EQ(seen, (std::vector<Seen>{Seen{"GET", 503, false}, Seen{"GET", 200, false},
                                     Seen{"POST", 0, false}, Seen{"GET", 200, true}}));
}

TEST(TokenBucket, BurstThenSteadyRate) {
  const auto start = std::chrono::steady_clock::time_point(1h);
  TokenBucket bucket({.qps = 20, .burst = 40}, start);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(bucket.reserve(start), 0ns) << i;
  EXPECT_EQ(bucket.reserve(start), 50ms);
  EXPECT_EQ(bucket.reserve(start), 100ms);  // queued behind the previous reservation
  // After 1 s, 20 tokens accrued but 2 were promised: 18 free, then waits again.
  const auto later = start + 1s;
  for (int i = 0; i < 18; ++i) EXPECT_EQ(bucket.reserve(later), 0ns) << i;
  EXPECT_EQ(bucket.reserve(later), 50ms);
  // Idle for long: refills to burst, not beyond.
  const auto much_later = later + 1h;
  for (int i = 0; i < 40; ++i) EXPECT_EQ(bucket.reserve(much_later), 0ns);
  EXPECT_GT(bucket.reserve(much_later), 0ns);
}

TEST(TokenBucket, DisabledWhenQpsIsZero) {
  TokenBucket bucket({.qps = 0, .burst = 1}, std::chrono::steady_clock::time_point());
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(bucket.reserve(std::chrono::steady_clock::time_point()), 0ns);
}

TEST(Client, RateLimitDelaysRequestsOnTheInjectedClock) {
  Fixture f;
  auto options = f.options();
  options.rate_limit = {.qps = 2, .burst = 2};
  Client client(f.transport, nullptr, options);
  for (int i = 0; i < 3; ++i) f.transport->push_json(200, json::object());
  ASSERT_TRUE(client.get(resources::nodes(), "", "a"));
  ASSERT_TRUE(client.get(resources::nodes(), "", "b"));
  auto start = f.clock->now();
  auto third =
      std::async(std::launch::async, [&] { return client.get(resources::nodes(), "", "c"); });
  ASSERT_TRUE(f.clock->wait_for_sleepers(1));
  EXPECT_EQ(f.transport->request_count(), 2u);  // held back
  f.clock->advance_to_next_deadline();
  ASSERT_TRUE(third.get());
  EXPECT_EQ(f.clock->now() - start, 500ms);
  EXPECT_EQ(f.transport->request_count(), 3u);
}

TEST(Client, ListAllFollowsContinueTokens) {
  Fixture f;
  f.transport->push_json(200, {{"kind", "PodList"},
                               {"metadata", {{"resourceVersion", "100"}, {"continue", "t1"}}},
                               {"items", {{{"metadata", {{"name", "a"}}}}}}});
  f.transport->push_json(200, {{"kind", "PodList"},
                               {"metadata", {{"resourceVersion", "100"}}},
                               {"items", {{{"metadata", {{"name", "b"}}}}}}});
  auto all = f.client().list_all(resources::pods(), "ns", {.limit = 1});
  ASSERT_TRUE(all) << all.error().to_string();
  EXPECT_EQ((*all)["items"].size(), 2u);
  EXPECT_EQ((*all)["metadata"]["resourceVersion"], "100");
  EXPECT_FALSE((*all)["metadata"].contains("continue"));
  auto sent = f.transport->requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].request.query_param("continue"), "t1");
  EXPECT_EQ(sent[1].request.query_param("limit"), "1");
}

TEST(Client, ListWithAnItemFilterDecodesOnlyWhatItKeepsOfEachItem) {
  Fixture f;
  const json list = {
      {"kind", "PodList"},
      {"apiVersion", "v1"},
      {"metadata", {{"resourceVersion", "100"}, {"continue", "t1"}}},
      {"items",
       {{{"metadata", {{"name", "a"}, {"managedFields", json::array({{{"manager", "m"}}})}}},
         {"spec", {{"nodeName", "n1"}, {"volumes", json::array()}}}}}}};
  f.transport->push_json(200, list);
  FieldFilter filter;
  filter.keep({"metadata", "name"}).keep({"spec", "nodeName"});
  auto page = f.client().list(resources::pods(), "ns", {.limit = 1}, &filter);
  ASSERT_TRUE(page) << page.error().to_string();
  json expected = list;
  expected["items"][0] = {{"metadata", {{"name", "a"}}}, {"spec", {{"nodeName", "n1"}}}};
  EXPECT_EQ(*page, expected);
  // A body that is not JSON is the same error with a filter as without one.
  const std::string broken = R"({"items":[{"metadata":{"name":}]})";
  f.transport->push_response(200, broken);
  f.transport->push_response(200, broken);
  auto filtered = f.client().list(resources::pods(), "ns", {}, &filter);
  auto whole = f.client().list(resources::pods(), "ns", {});
  ASSERT_FALSE(filtered);
  ASSERT_FALSE(whole);
  EXPECT_EQ(filtered.error().reason, ApiError::kDecodeError);
  EXPECT_EQ(filtered.error().message, whole.error().message);
}

TEST(Client, ListAllReturnsExpiredContinueAsGone) {
  Fixture f;
  f.transport->push_json(200, {{"metadata", {{"continue", "t1"}}}, {"items", json::array()}});
  f.transport->push_status(410, "Expired", "The provided continue parameter is too old");
  auto all = f.client().list_all(resources::pods(), "ns", {.limit = 1});
  ASSERT_FALSE(all);
  EXPECT_TRUE(all.error().is_gone());
}

TEST(Client, WatchYieldsEventsAcrossChunksAndEnds) {
  Fixture f;
  StreamScript script;
  script.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})"
                   "\n{\"type\":\"BOOK",
                   R"(MARK","object":{"kind":"Pod","metadata":{"resourceVersion":"6"}}})"
                   "\n"};
  f.transport->push_stream(script);
  auto watch =
      f.client().watch(resources::pods(), "ns", {.resource_version = "4", .timeout_seconds = 300});
  ASSERT_TRUE(watch) << watch.error().to_string();
  auto sent = f.transport->requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].stream);
  EXPECT_EQ(sent[0].timeout, 330s);  // timeoutSeconds + 30 s margin
  EXPECT_EQ(sent[0].request.header("Authorization"), "Bearer token-1");
  auto first = watch->next();
  ASSERT_TRUE(first && *first);
  EXPECT_EQ((*first)->type, WatchEventType::Added);
  auto second = watch->next();
  ASSERT_TRUE(second && *second);
  EXPECT_EQ((*second)->type, WatchEventType::Bookmark);
  EXPECT_EQ((*second)->resource_version(), "6");
  auto end = watch->next();
  ASSERT_TRUE(end);
  EXPECT_FALSE(*end);
}

TEST(Client, WatchGoneAsNonChunkedErrorEvent) {
  Fixture f;
  f.transport->push_response(
      200,
      R"json({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Gone","message":"too old resource version: 1 (9)"}})json");
  auto watch = f.client().watch(resources::pods(), "ns", {.resource_version = "1"});
  ASSERT_TRUE(watch);
  auto event = watch->next();
  ASSERT_TRUE(event && *event);
  EXPECT_EQ((*event)->type, WatchEventType::Error);
  EXPECT_TRUE((*event)->error->is_gone());
}

TEST(Client, WatchRejectedWithStatus) {
  Fixture f;
  f.transport->push_status(410, "Expired", "too old resource version");
  auto watch = f.client().watch(resources::pods(), "ns", {.resource_version = "1"});
  ASSERT_FALSE(watch);
  EXPECT_TRUE(watch.error().is_gone());
  EXPECT_EQ(watch.error().message, "too old resource version");
}

TEST(Client, WatchCancelFromAnotherThreadUnblocksNext) {
  Fixture f;
  auto feed = f.transport->push_live_stream();
  auto watch = f.client().watch(resources::pods(), "ns");
  ASSERT_TRUE(watch);
  EXPECT_EQ(f.transport->requests()[0].timeout, 3600s);
  feed->push(R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})"
             "\n");
  auto first = watch->next();
  ASSERT_TRUE(first && *first);
  auto blocked = std::async(std::launch::async, [&] { return watch->next(); });
  EXPECT_EQ(blocked.wait_for(20ms), std::future_status::timeout);  // genuinely waiting
  watch->cancel();
  auto result = blocked.get();
  ASSERT_FALSE(result);
  EXPECT_TRUE(result.error().is_cancelled());
  EXPECT_TRUE(feed->cancelled());
}

TEST(Client, WatchTransportFailureMidStream) {
  Fixture f;
  StreamScript script;
  script.chunks = {R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"1"}}})"
                   "\n"};
  script.error = ApiError::transport(ApiError::kTimeout, "no data for 330s");
  f.transport->push_stream(script);
  auto watch = f.client().watch(resources::pods(), "ns");
  ASSERT_TRUE(watch);
  ASSERT_TRUE(watch->next());
  auto failed = watch->next();
  ASSERT_FALSE(failed);
  EXPECT_TRUE(failed.error().is_timeout());
}

TEST(Client, TlsIdentityTravelsWithTheRequest) {
  Fixture f;
  auto identity = std::make_shared<const TlsClientIdentity>(TlsClientIdentity{"CERT", "KEY"});
  auto provider = std::make_shared<StaticCredentials>(Credentials{"", identity});
  Client client(f.transport, provider, f.options());
  f.transport->push_json(200, json::object());
  ASSERT_TRUE(client.get(resources::nodes(), "", "n"));
  auto sent = f.transport->requests();
  EXPECT_EQ(sent[0].request.header("Authorization"), "");
  ASSERT_TRUE(sent[0].request.tls_identity);
  EXPECT_EQ(sent[0].request.tls_identity->certificate_pem, "CERT");
}

TEST(Client, RemoveAcceptsStatusSuccessBody) {
  Fixture f;
  f.transport->push_json(200,
                         {{"kind", "Status"}, {"status", "Success"}, {"details", {{"uid", "u1"}}}});
  auto removed = f.client().remove(resources::pods(), "ns", "p",
                                   {.propagation_policy = PropagationPolicy::Background});
  ASSERT_TRUE(removed);
  EXPECT_EQ((*removed)["details"]["uid"], "u1");
  EXPECT_EQ(json::parse(f.transport->requests()[0].request.body)["propagationPolicy"],
            "Background");
}

}  // namespace
}  // namespace depl::kube
