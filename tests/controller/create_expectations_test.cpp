// CreateExpectations: a job's creates are awaited until an informer event shows each of them, a
// failed create is not awaited, other owners, kinds and names do not count, and expectations
// expire after their TTL on the injected clock; the round whose pods were refused is kept until
// cleared or the job goes.
#include "depl/controller/create_expectations.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace depl::controller {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json owned(const std::string& name, const std::string& owner, bool controller = true) {
  return {{"metadata",
           {{"namespace", "default"},
            {"name", name},
            {"ownerReferences", json::array({{{"uid", owner}, {"controller", controller}}})}}}};
}

kube::ObjectPtr ptr(json object) {
  return std::make_shared<const json>(std::move(object));
}

TEST(CreateExpectations, AJobWaitsUntilEachOfItsCreatesIsSeen) {
  FakeClock clock;
  CreateExpectations e(clock);
  EXPECT_FALSE(e.pending("u1"));
  e.expect("u1", "Service", "default", "job-p0");
  e.expect("u1", "Pod", "default", "job-p0-w0");
  e.expect("u1", "Pod", "default", "job-p0-w1");
  auto p = e.pending("u1");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->objects, 3u);
  EXPECT_EQ(p->expires_in, CreateExpectations::kDefaultTtl);

  // Not these: another owner, a non-controller owner, another kind, another namespace.
  e.observed("Pod", owned("job-p0-w0", "u2"));
  e.observed("Pod", owned("job-p0-w0", "u1", /*controller=*/false));
  e.observed("Service", owned("job-p0-w0", "u1"));
  json elsewhere = owned("job-p0-w0", "u1");
  elsewhere["metadata"]["namespace"] = "other";
  e.observed("Pod", elsewhere);
  e.observed("Pod", json::object());  // no metadata: ignored
  EXPECT_EQ(e.pending("u1")->objects, 3u);

  // Through the informer handlers: an add, an update and a delete each count as seen.
  auto pods = e.handlers("Pod");
  auto services = e.handlers("Service");
  pods.on_add(ptr(owned("job-p0-w0", "u1")));
  EXPECT_EQ(e.pending("u1")->objects, 2u);
  pods.on_update(nullptr, ptr(owned("job-p0-w1", "u1")));
  EXPECT_EQ(e.pending("u1")->objects, 1u);
  services.on_delete(ptr(owned("job-p0", "u1")));
  EXPECT_FALSE(e.pending("u1"));
}

// An object the caches hold counts as seen even if its event never reached the handlers (the
// reconciler asks its caches at each look), so a lost event cannot hold a job back for the TTL.
TEST(CreateExpectations, AnObjectTheCachesHoldCountsAsSeen) {
  FakeClock clock;
  CreateExpectations e(clock);
  e.expect("u1", "Service", "default", "job-p0");
  e.expect("u1", "Pod", "default", "job-p0-w0");
  std::vector<std::string> asked;
  bool pod_cached = false;
  auto in_cache = [&](const std::string& kind, const std::string& ns, const std::string& name) {
    asked.push_back(kind + "/" + ns + "/" + name);
    return kind == "Service" || pod_cached;
  };
  auto p = e.pending("u1", in_cache);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->objects, 1u);  // the Service is seen
  EXPECT_EQ(asked, (std::vector<std::string>{"Pod/default/job-p0-w0", "Service/default/job-p0"}));
  pod_cached = true;
  EXPECT_FALSE(e.pending("u1", in_cache));
  EXPECT_FALSE(e.pending("u1"));  // forgotten once seen
}

TEST(CreateExpectations, AFailedCreateIsNotAwaited) {
  FakeClock clock;
  CreateExpectations e(clock);
  e.expect("u1", "Pod", "default", "a");
  e.expect("u1", "Pod", "default", "b");
  e.forget("u1", "Pod", "default", "a");
  EXPECT_EQ(e.pending("u1")->objects, 1u);
  e.forget("u1", "Pod", "default", "b");
  EXPECT_FALSE(e.pending("u1"));
  e.forget("nobody", "Pod", "default", "b");  // nothing awaited: nothing happens
  EXPECT_FALSE(e.pending("nobody"));
}

TEST(CreateExpectations, ExpireAfterTheirTtlCountedFromTheLastCreate) {
  FakeClock clock;
  CreateExpectations e(clock, 10s);
  e.expect("u1", "Pod", "default", "a");
  clock.advance(6s);
  e.expect("u1", "Pod", "default", "b");  // the wait starts again
  clock.advance(6s);
  auto p = e.pending("u1");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->objects, 2u);
  EXPECT_EQ(p->expires_in, 4s);
  clock.advance(4s);
  EXPECT_FALSE(e.pending("u1"));
  // Expired means forgotten: a late event finds nothing, and a new create is awaited afresh.
  e.observed("Pod", owned("a", "u1"));
  e.expect("u1", "Pod", "default", "c");
  EXPECT_EQ(e.pending("u1")->objects, 1u);
}

TEST(CreateExpectations, KeepTheRoundWhosePodsWereRefusedUntilCleared) {
  FakeClock clock;
  CreateExpectations e(clock);
  EXPECT_FALSE(e.round_without_pods("u1"));
  e.set_round_without_pods("u1", JobView::Round{2, 1});
  auto kept = e.round_without_pods("u1");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->phase, 2);
  EXPECT_EQ(kept->round, 1);
  EXPECT_FALSE(e.round_without_pods("u2"));
  clock.advance(CreateExpectations::kDefaultTtl * 2);  // no expiry: it is cleared, not timed out
  EXPECT_TRUE(e.round_without_pods("u1"));
  e.set_round_without_pods("u1", std::nullopt);
  EXPECT_FALSE(e.round_without_pods("u1"));
}

TEST(CreateExpectations, ADeletedJobIsForgotten) {
  FakeClock clock;
  CreateExpectations e(clock);
  e.expect("u1", "Pod", "default", "a");
  e.expect("u2", "Pod", "default", "b");
  e.set_round_without_pods("u1", JobView::Round{0, 1});
  e.erase("u1");
  EXPECT_FALSE(e.pending("u1"));
  EXPECT_FALSE(e.round_without_pods("u1"));
  EXPECT_TRUE(e.pending("u2"));
}

}  // namespace
}  // namespace depl::controller
