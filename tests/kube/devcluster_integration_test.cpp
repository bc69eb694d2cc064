// The client and the runtime against a real API server: the embedded dev cluster over HTTPS with
// its generated CA and bearer token, reached through the kubeconfig it writes. The faults are the
// dev cluster's own: dropped watches, a compacted history (410 on resume), an outage, 429 and
// 409 answers. Nothing here knows about DepL.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/devcluster/dev_cluster.hpp"
#include "depl/kube/beast_transport.hpp"
#include "depl/kube/kubeconfig.hpp"
#include "depl/kube/resource.hpp"
#include "depl/kube/runtime/informer.hpp"

namespace depl::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Polls `condition` until it holds or 30 s pass (a deadline, not a synchronisation sleep: the
// state is read again every few milliseconds).
template <typename Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

json config_map(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"data", {{"value", value}}}};
}

// What the informer's handlers saw, by name.
struct Seen {
  std::mutex mutex;
  std::multiset<std::string> added, updated, deleted;

  ResourceEventHandlers handlers() {
    ResourceEventHandlers h;
    h.on_add = [this](const ObjectPtr& o) { record(added, o); };
    h.on_update = [this](const ObjectPtr&, const ObjectPtr& o) { record(updated, o); };
    h.on_delete = [this](const ObjectPtr& o) { record(deleted, o); };
    return h;
  }
  void record(std::multiset<std::string>& into, const ObjectPtr& o) {
    std::lock_guard lock(mutex);
    into.insert((*o)["metadata"]["name"].get<std::string>());
  }
  std::size_t count(const std::multiset<std::string>& of, const std::string& name) {
    std::lock_guard lock(mutex);
    return of.count(name);
  }
};

class KubeOnDevCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    devcluster::DevClusterOptions options;
    options.run_scheduler = false;
    options.run_kubelet = false;
    auto started = devcluster::DevCluster::start(options);
    ASSERT_TRUE(started) << started.error().message;
    cluster_ = std::move(*started);

    KubeconfigLoadOptions load;
    load.explicit_path = cluster_->kubeconfig_path();
    auto config = load_kubeconfig(load);
    ASSERT_TRUE(config) << config.error().message;
    auto connection = resolve_kubeconfig(*config);
    ASSERT_TRUE(connection) << connection.error().message;
    ASSERT_EQ(connection->server.rfind("https://", 0), 0u) << connection->server;
    ClientOptions client_options;
    client_options.random = std::make_shared<RandomSource>(7);
    client_options.retry.initial_backoff = 20ms;
    auto client = make_client(*connection, client_options);
    ASSERT_TRUE(client) << client.error().message;
    client_ = std::make_unique<Client>(std::move(*client));
  }

  void TearDown() override {
    runner_ = {};  // stops and joins the informer before the client goes away
    if (cluster_) cluster_->stop();
  }

  void start_informer() {
    WatcherOptions watch;
    watch.namespace_ = "default";
    informer_ = std::make_unique<Informer>(*client_, resources::config_maps(), watch, clock_,
                                           random_);
    informer_->add_handlers(seen_.handlers());
    runner_ = std::jthread([this](std::stop_token stop) { informer_->run(stop); });
    ASSERT_TRUE(informer_->store().wait_synced_for(30s));
  }

  void create(const std::string& name) {
    auto created = client_->create(resources::config_maps(), "default", config_map(name, "1"));
    ASSERT_TRUE(created) << name << ": " << created.error().to_string();
  }

  std::size_t cached() { return informer_->store().list().size(); }

  std::unique_ptr<devcluster::DevCluster> cluster_;
  std::unique_ptr<Client> client_;
  SystemClock clock_;
  RandomSource random_{42};
  Seen seen_;
  std::unique_ptr<Informer> informer_;
  std::jthread runner_;
};

TEST_F(KubeOnDevCluster, InformerFollowsCreatesUpdatesAndDeletes) {
  for (int i = 0; i < 3; ++i) create("before-" + std::to_string(i));
  start_informer();
  EXPECT_EQ(cached(), 3u);  // the initial list
  for (int i = 0; i < 20; ++i) create("cm-" + std::to_string(i));
  ASSERT_TRUE(eventually([&] { return cached() == 23; })) << cached();

  auto current = client_->get(resources::config_maps(), "default", "cm-4");
  ASSERT_TRUE(current);
  (*current)["data"]["value"] = "2";
  ASSERT_TRUE(client_->replace(resources::config_maps(), *current));
  ASSERT_TRUE(client_->remove(resources::config_maps(), "default", "cm-5"));

  ASSERT_TRUE(eventually([&] { return seen_.count(seen_.deleted, "cm-5") == 1; }));
  ASSERT_TRUE(eventually([&] { return seen_.count(seen_.updated, "cm-4") == 1; }));
  auto cached_cm4 = informer_->store().get(ObjectKey{"default", "cm-4"});
  ASSERT_TRUE(cached_cm4);
  EXPECT_EQ((*cached_cm4)["data"]["value"], "2");
  EXPECT_EQ(seen_.count(seen_.added, "cm-0"), 1u);
  EXPECT_FALSE(informer_->store().get(ObjectKey{"default", "cm-5"}));
}

TEST_F(KubeOnDevCluster, InformerRewatchesAfterDroppedWatchesWithoutDuplicates) {
  start_informer();
  for (int i = 0; i < 5; ++i) create("a-" + std::to_string(i));
  ASSERT_TRUE(eventually([&] { return cached() == 5; }));
  for (int round = 0; round < 3; ++round) {
    cluster_->drop_watches();
    create("b-" + std::to_string(round));
  }
  ASSERT_TRUE(eventually([&] { return cached() == 8; })) << cached();
  // Resuming from the last resourceVersion replays nothing twice.
  for (const char* name : {"a-0", "a-4", "b-0", "b-2"}) {
    EXPECT_EQ(seen_.count(seen_.added, name), 1u) << name;
  }
}

TEST_F(KubeOnDevCluster, RelistAfterOutageAndCompactionDeliversTheDeletesItMissed) {
  for (int i = 0; i < 6; ++i) create("cm-" + std::to_string(i));
  start_informer();
  ASSERT_EQ(cached(), 6u);

  // While the informer cannot reach the server, objects change behind its back and the history
  // it would resume from is forgotten: its watch resumes with 410 Gone and it must relist.
  cluster_->make_unavailable(2s, devcluster::DevCluster::Outage::Refuse);
  for (const char* name : {"cm-1", "cm-3"}) {
    ASSERT_TRUE(cluster_->store().remove({"", "v1", "configmaps", "default", name, ""}).ok());
  }
  ASSERT_TRUE(cluster_->store()
                  .create({"", "v1", "configmaps", "default", "", ""}, config_map("late", "1"))
                  .ok());
  cluster_->compact_history();

  ASSERT_TRUE(eventually([&] {
    return seen_.count(seen_.deleted, "cm-1") == 1 && seen_.count(seen_.deleted, "cm-3") == 1 &&
           seen_.count(seen_.added, "late") == 1;
  }));
  EXPECT_EQ(cached(), 5u);
  EXPECT_EQ(seen_.count(seen_.deleted, "cm-0"), 0u) << "a relist deletes only what vanished";
  // And the informer watches again after the relist.
  create("after");
  ASSERT_TRUE(eventually([&] { return seen_.count(seen_.added, "after") == 1; }));
}

TEST_F(KubeOnDevCluster, ClientRetriesTooManyRequestsAndReportsConflicts) {
  create("cm");
  // 429 with Retry-After: a GET is retried and succeeds.
  cluster_->fail_next_requests(2, 429);
  auto got = client_->get(resources::config_maps(), "default", "cm");
  ASSERT_TRUE(got) << got.error().to_string();

  // A stale resourceVersion is a conflict the caller sees (never retried into a lost update).
  json stale = *got;
  (*got)["data"]["value"] = "2";
  ASSERT_TRUE(client_->replace(resources::config_maps(), *got));
  stale["data"]["value"] = "3";
  auto conflict = client_->replace(resources::config_maps(), stale);
  ASSERT_FALSE(conflict);
  EXPECT_TRUE(conflict.error().is_conflict()) << conflict.error().to_string();
  auto now = client_->get(resources::config_maps(), "default", "cm");
  ASSERT_TRUE(now);
  EXPECT_EQ((*now)["data"]["value"], "2");

  // A create refused with 500 is not retried (it may have been applied): the error comes back.
  cluster_->fail_next_requests(1, 500);
  auto refused = client_->create(resources::config_maps(), "default", config_map("other", "1"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, 500) << refused.error().to_string();
}

}  // namespace
}  // namespace depl::kube
