// The API server misbehaving while a job runs, with depl-controller as a child process: bursts of
// 409 on the job's status writes, 429 with Retry-After, 500s, dropped watches, a compacted
// history (the re-watch gets 410 and relists, which is checked), and then the API server, served
// over TLS with a bearer token, refusing connections for 30 s. Then the cluster under a job: a
// node going NotReady mid-phase, a node deleted mid-phase (the pod garbage collector removes its
// pods), a worker SIGKILLed partway through an epoch. Each ends with the invariants of every
// controller-process scenario (expect_job_invariants); the first also searches every log of the
// run for the job's progress token, the API token and any private key.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "depl/common/base64.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/kube/resource.hpp"
#include "process_fixture.hpp"

namespace depl::e2e {
namespace {

namespace resources = kube::resources;

int progress_epoch(const json& job) {
  return job.value("status", json::object()).value("progress", json::object()).value("epoch", 0);
}

// Whether a TCP connection to 127.0.0.1:port is accepted now.
bool accepts_connections(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has_condition(const json& pod, const std::string& type, const std::string& reason) {
  for (const auto& c : pod.value("status", json::object()).value("conditions", json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == "True" &&
        c.value("reason", "") == reason)
      return true;
  }
  return false;
}

int terminated_exit_code(const json& pod) {
  for (const auto& cs :
       pod.value("status", json::object()).value("containerStatuses", json::array()))
    return cs.value("state", json::object())
        .value("terminated", json::object())
        .value("exitCode", -1);
  return -1;
}

// The secrets of a kubeconfig's users: tokens, passwords and client keys (as written, base64,
// and decoded, with each line of a PEM key's body), none of which may reach a log.
std::vector<std::pair<std::string, std::string>> kubeconfig_secrets(const fs::path& kubeconfig) {
  std::vector<std::pair<std::string, std::string>> out;
  auto config = yaml_to_json(read_text(kubeconfig), kubeconfig.string());
  if (!config) {
    ADD_FAILURE() << config.error().message;
    return out;
  }
  for (const auto& entry : config->value("users", json::array())) {
    const json user = entry.value("user", json::object());
    for (const char* key : {"token", "password", "client-key-data"}) {
      if (!user.contains(key) || !user[key].is_string()) continue;
      const std::string value = user[key].get<std::string>();
      out.emplace_back(std::string("the kubeconfig's ") + key, value);
      if (std::string(key) != "client-key-data") continue;
      std::stringstream pem(base64_decode(value).value_or(""));
      for (std::string line; std::getline(pem, line);) {
        if (line.size() >= 32 && line.find("-----") == std::string::npos)
          out.emplace_back("a line of the kubeconfig's client key", line);
      }
    }
  }
  return out;
}

// The (phase, rank) report of the highest epoch acknowledged so far, from the complete lines of
// the acknowledgement file (a worker may be appending one right now).
int last_acked_epoch(const fs::path& acks, int phase, int rank) {
  const std::string text = read_text(acks);
  int epoch = 0;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const json a = json::parse(text.substr(start, end - start), nullptr, false);
    if (a.is_object() && a.value("phase", -1) == phase && a.value("rank", -1) == rank)
      epoch = std::max(epoch, a.value("epoch", 0));
  }
  return epoch;
}

class FaultsE2e : public ControllerProcessE2e {
 protected:
  // Fails the next `count` requests of the controller (by its User-Agent) that `also` accepts
  // with `code`, runs `meanwhile` (what makes the controller send them), waits until all of them
  // were answered so, and lets its requests through again. Returns whether the controller made
  // that many such requests within kWait.
  bool fail_controller_requests(const std::string& identity, int count, int code,
                                std::function<bool(const devcluster::RequestSummary&)> also,
                                const std::function<void()>& meanwhile = {}) {
    auto failed = std::make_shared<std::atomic<int>>(0);
    cluster_->fail_requests_where(
        [identity, count, failed, also](const devcluster::RequestSummary& r) {
          if (r.user_agent.find("identity=" + identity) == std::string::npos) return false;
          if (also && !also(r)) return false;
          return failed->fetch_add(1) < count;
        },
        code);
    if (meanwhile) meanwhile();
    const bool all = wait_until([&] { return failed->load() >= count; });
    cluster_->fail_requests_where({}, 0);
    return all;
  }

  // Runs a one-worker job `name` on a new controller `identity` whose first two POSTs to a path
  // ending in `suffix` are answered `code`; returns the job once it has ended and the Event that
  // tells so has been seen. The controller sends Events after the status they tell of, from a
  // thread of its own, and is killed (SIGKILL) on return: returning at the status alone lost the
  // last Event whenever its sender was slower than the test (under load).
  json run_through_two_refused_posts(const std::string& identity, const std::string& name,
                                     const std::string& suffix, int code) {
    const std::uint16_t port = free_loopback_port();
    EXPECT_NE(port, 0);
    auto controller =
        spawn_controller(identity, {"--progress-addr", fmt::format("127.0.0.1:{}", port)});
    EXPECT_TRUE(controller->started());
    json job = patient_job(name, 0.1);
    job["spec"]["training"]["workers"]["min"] = 1;
    EXPECT_TRUE(fail_controller_requests(
        identity, 2, code,
        [suffix](const devcluster::RequestSummary& r) {
          return r.method == "POST" && r.path.ends_with(suffix);
        },
        [&] { create_job(job); }))
        << "the controller did not POST to ..." << suffix << " twice";
    json done = wait_job(
        name, [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
        "the job to finish");
    EXPECT_EQ(job_phase(done), "Succeeded") << done.value("status", json::object()).dump(1);
    EXPECT_TRUE(wait_until([&] { return has_event(name, "TargetReached"); }))
        << "the controller did not send the TargetReached Event";
    return done;
  }

  // Waits until the job has reported `more` epochs past the ones it had.
  json advance(const std::string& name, int more, const std::string& what) {
    const int from = progress_epoch(get_job(name));
    return wait_job(
        name, [&](const json& j) { return progress_epoch(j) >= from + more; },
        fmt::format("{} more epochs after {}", more, what));
  }
};

TEST_F(FaultsE2e, ApiServerFaultsAndAThirtySecondOutageLoseNothingAndTheJobCompletes) {
  // HTTPS with a bearer token, as a real API server: the controller connects with the
  // kubeconfig the cluster writes, and the log search below has the token to look for.
  ClusterSetup setup;
  setup.capture_log = true;
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools.yaml", setup));
  ASSERT_TRUE(cluster_->url().starts_with("https://")) << cluster_->url();
  ASSERT_GE(cluster_->bearer_token().size(), 16u);
  const std::uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  const std::string me = "faults-controller";
  auto controller = spawn_controller(me, {"--progress-addr", fmt::format("127.0.0.1:{}", port)});
  ASSERT_TRUE(controller->started());

  // About 30 epochs over two phases at 0.3 s each: it runs through every fault below, and the
  // outage starts while it still runs.
  json job = patient_job("faulty", 0.3);
  job["spec"]["target"]["loss"] = 0.35;
  create_job(job);
  advance("faulty", 2, "the start");

  // A burst of conflicts on the job's status writes: the controller re-reads and writes again.
  EXPECT_TRUE(fail_controller_requests(me, 5, 409, [](const devcluster::RequestSummary& r) {
    return r.method != "GET" && r.path.find("/dependabletrainingjobs/") != std::string::npos &&
           r.path.ends_with("/status");
  })) << "the controller wrote the job's status fewer than 5 times";
  advance("faulty", 2, "409 on status writes");

  // Throttled (429 with Retry-After), then server errors, on whatever it sends.
  EXPECT_TRUE(fail_controller_requests(me, 3, 429, {}));
  advance("faulty", 2, "429s");
  EXPECT_TRUE(fail_controller_requests(me, 3, 500, {}));
  advance("faulty", 2, "500s");

  // Watches end, and the history they would resume from is gone: 410, relist. A write nobody
  // watches first puts the compacted version past every version the controller's watches hold
  // (otherwise a watch that saw the very last write could resume without a 410). The controller
  // must list the jobs again (its job watch sees an event every epoch, so it resumes at once).
  struct Lists {
    std::mutex mutex;
    std::map<std::string, int> by_path;
  };
  auto lists = std::make_shared<Lists>();
  cluster_->observe_requests([lists, me](const devcluster::RequestSummary& r) {
    if (r.method != "GET" || r.watch || r.user_agent.find("identity=" + me) == std::string::npos)
      return;
    std::lock_guard lock(lists->mutex);
    ++lists->by_path[r.path];
  });
  auto job_lists = [lists] {
    std::lock_guard lock(lists->mutex);
    int n = 0;
    for (const auto& [path, count] : lists->by_path)
      n += path.ends_with("/dependabletrainingjobs") ? count : 0;
    return n;
  };
  const json marker = {{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"metadata", {{"name", "compaction-marker"}, {"namespace", "default"}}}};
  ASSERT_TRUE(cluster_->store().create({"", "v1", "configmaps", "default", "", ""}, marker).ok());
  cluster_->compact_history();
  cluster_->drop_watches();
  EXPECT_TRUE(wait_until([&] { return job_lists() > 0; }, std::chrono::seconds(20)))
      << "the controller did not list the jobs again after the history was compacted";
  EXPECT_TRUE(wait_for_log(*controller, "relisting\" resource=dependabletrainingjobs",
                           std::chrono::seconds(5)))
      << "no 410 on the jobs' re-watch";
  json before_outage = advance("faulty", 2, "dropped watches and 410");
  cluster_->observe_requests({});
  {
    std::lock_guard lock(lists->mutex);
    for (const auto& [path, count] : lists->by_path)
      RecordProperty("relists " + path, std::to_string(count));
  }
  const std::string phase_before = job_phase(before_outage);
  EXPECT_EQ(phase_before, "Running") << "the job ended before the outage: it tests less";

  // The API server refuses connections for 30 s. The workers go on training and reporting to
  // the controller, which cannot write a thing until the server is back.
  cluster_->make_unavailable(std::chrono::seconds(30));
  EXPECT_TRUE(
      wait_until([&] { return !accepts_connections(cluster_->port()); }, std::chrono::seconds(5)));
  EXPECT_TRUE(
      wait_until([&] { return accepts_connections(cluster_->port()); }, std::chrono::seconds(60)))
      << "the dev cluster did not come back";

  json done = wait_job(
      "faulty",
      [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish after the outage", std::chrono::seconds(120));
  EXPECT_EQ(job_phase(done), "Succeeded") << done.value("status", json::object()).dump(1);
  EXPECT_TRUE(controller->running()) << "the controller gave up during the outage:\n"
                                     << controller->log();

  // No log of the run carries a secret: the job's progress token (the workers get it in their
  // environment), the API server's bearer token and whatever else the kubeconfig the controller
  // read holds for its user, nor any private key. Logs: the controller's, the workers', this
  // process's (the dev cluster's), every *log* file in the run's directory.
  auto secrets = list(resources::secrets(), "depl.dev/job=faulty");
  ASSERT_EQ(secrets.size(), 1u);
  const json data = secrets[0].value("data", json::object());
  ASSERT_TRUE(data.contains("token") && data["token"].is_string()) << secrets[0].dump();
  const auto token = base64_decode(data["token"].get<std::string>()).value_or("");
  ASSERT_GE(token.size(), 16u) << "the progress token looks too short to search for";
  std::vector<std::pair<std::string, std::string>> needles = {
      {"the job's progress token", token},
      {"the API bearer token", cluster_->bearer_token()},
      {"a PEM private key", "PRIVATE KEY-----"}};
  for (auto& secret : kubeconfig_secrets(cluster_->kubeconfig_path())) needles.push_back(secret);
  for (auto& secret : kubeconfig_secrets(controller_kubeconfig())) needles.push_back(secret);
  ASSERT_GE(needles.size(), 4u) << "the kubeconfig holds no credential: TLS is not on";
  std::set<std::string> searched;
  for (const auto& entry : fs::recursive_directory_iterator(work_dir_)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".log") && file.find("log") == std::string::npos) continue;
    searched.insert(entry.path().parent_path() == work_dir_ ? file : "a worker's log");
    const std::string text = read_text(entry.path());
    for (const auto& [what, needle] : needles) {
      EXPECT_EQ(text.find(needle), std::string::npos) << entry.path() << " contains " << what;
    }
  }
  for (const std::string& log :
       {me + ".log", std::string("in-process.log"), std::string("a worker's log")})
    EXPECT_TRUE(searched.count(log)) << "no " << log << " under " << work_dir_ << ": not searched";
  // The captured log is the dev cluster's: it must have logged this run, or the search saw nothing.
  EXPECT_NE(read_text(in_process_log()).find("event=pod_started"), std::string::npos);

  expect_job_invariants("faulty");
}

// The progress-token Secret is written after the job has taken its turn at placement (the next
// job in line plans meanwhile). When that write fails the turn is given back and the job plans
// again: it runs once, with one Secret, and nothing is duplicated.
TEST_F(FaultsE2e, AFailedTokenSecretWriteGivesTheTurnBackAndTheJobRunsOnce) {
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools-two.yaml"));
  run_through_two_refused_posts("secret-controller", "tokenless", "/secrets", 500);
  EXPECT_EQ(list(resources::secrets(), "depl.dev/job=tokenless").size(), 1u);
  expect_job_invariants("tokenless");
}

// The job's first status write (its plan, its first phase started) succeeds and the creates of
// its pods that follow in the same reconcile are refused twice with 403 (as a ResourceQuota
// would): the Events of that status change (Planned, PhaseStarted) are still posted, once,
// although the reconcile ends in an error and the next one finds the status already written; the
// refusal is told by a FailedCreate Warning Event; the create is retried, without starting the
// round again, and the job completes.
TEST_F(FaultsE2e, ARefusedCreateAfterTheStatusWriteKeepsItsEventsAndIsToldAsFailedCreate) {
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools-two.yaml"));
  // Returns once the last Event (TargetReached) is seen, so every Event before it is too: one
  // thread sends them in order.
  run_through_two_refused_posts("events-controller", "eventful", "/pods", 403);
  std::map<std::string, int> reasons;
  std::vector<std::string> failed_creates;
  for (const auto& e : events_of("eventful")) {
    reasons[e.value("reason", "")] += e.value("count", 1);
    if (e.value("reason", "") == "FailedCreate") {
      EXPECT_EQ(e.value("type", ""), "Warning");
      failed_creates.push_back(e.value("message", ""));
    }
  }
  EXPECT_THAT(failed_creates,
              ::testing::Contains(
                  "Error creating Pod eventful-p0-w0: 403 Forbidden: injected failure (dev-cluster "
                  "fault injection)"))
      << json(failed_creates).dump();
  EXPECT_EQ(reasons["FailedCreate"], 2) << json(reasons).dump();
  EXPECT_EQ(reasons["Planned"], 1) << json(reasons).dump();
  // The round started before the refusals is not started again by the retries: one PhaseStarted
  // per phase, and each phase's round is its first.
  std::map<std::string, int> started;  // by phase ("phase N:")
  for (const auto& e : events_of("eventful")) {
    if (e.value("reason", "") == "PhaseStarted")
      started[e.value("message", "").substr(0, e.value("message", "").find(':'))] +=
          e.value("count", 1);
  }
  ASSERT_FALSE(started.empty());
  for (const auto& [phase, count] : started) EXPECT_EQ(count, 1) << phase;
  EXPECT_EQ(get_job("eventful")["status"]["progress"].value("round", 0), 1);
  EXPECT_EQ(reasons["TargetReached"], 1) << json(reasons).dump();
  expect_job_invariants("eventful");
}

TEST_F(FaultsE2e, NodeNotReadyMidPhaseIsReplannedOntoTheRemainingPool) {
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools-two.yaml"));
  const std::uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  auto controller = spawn_controller("notready-controller",
                                     {"--progress-addr", fmt::format("127.0.0.1:{}", port)});
  ASSERT_TRUE(controller->started());
  json job = patient_job("stranded", 0.2);
  job["spec"]["training"]["workers"]["min"] = 1;  // one node of two GPUs per pool
  create_job(job);
  job = advance("stranded", 2, "the start");
  ASSERT_EQ(job["status"]["progress"].value("pool", ""), "fast") << job["status"].dump(1);
  const int epoch_before = progress_epoch(job);

  auto lost = cluster_->set_node_ready("fast-0", false);
  ASSERT_TRUE(lost) << lost.error().message;
  wait_job(
      "stranded",
      [](const json& j) {
        return j.value("status", json::object())
                   .value("progress", json::object())
                   .value("pool", "") == "spare";
      },
      "the job to move to the spare pool");
  json done = wait_job(
      "stranded",
      [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish");
  EXPECT_EQ(job_phase(done), "Succeeded") << done.value("status", json::object()).dump(1);
  EXPECT_GT(progress_epoch(done), epoch_before);
  for (const auto& pod : pods_->created_for("stranded")) {
    if (pod["spec"].value("nodeSelector", json::object()).value("depl.dev/pool", "") != "spare")
      continue;
    // It continued from its checkpoint: nothing started over once the node was lost.
    EXPECT_NE(pod_env(pod, "DEPL_START_EPOCH"), json("0")) << pod["metadata"].dump();
  }
  // The pods on the lost node failed (the kubelet fails them); nothing else may go wrong.
  expect_job_invariants("stranded", /*pods_may_fail=*/true);
}

// The node under a running phase is deleted, as when its machine is gone for good: its worker
// processes die with it and nothing more is heard of them; the pod garbage collector fails the
// pods bound to it (DisruptionTarget, DeletionByPodGC) and deletes them, as Kubernetes' does.
TEST_F(FaultsE2e, NodeDeletedMidPhaseIsReplannedOntoTheRemainingPool) {
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools-two.yaml"));
  const std::uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  auto controller = spawn_controller("deleted-node-controller",
                                     {"--progress-addr", fmt::format("127.0.0.1:{}", port)});
  ASSERT_TRUE(controller->started());
  json job = patient_job("uprooted", 0.2);
  job["spec"]["training"]["workers"]["min"] = 1;  // one node of two GPUs per pool
  create_job(job);
  job = advance("uprooted", 2, "the start");
  ASSERT_EQ(job["status"]["progress"].value("pool", ""), "fast") << job["status"].dump(1);
  const int epoch_before = progress_epoch(job);
  std::set<std::string> on_node;  // uids of the pods running there
  for (const auto& pod : pods_of("uprooted")) {
    if (pod["spec"].value("nodeName", "") == "fast-0" && !pod_terminal(pod))
      on_node.insert(pod["metadata"].value("uid", ""));
  }
  ASSERT_FALSE(on_node.empty()) << "no pod of the job runs on fast-0";

  auto deleted = cluster_->delete_node("fast-0");
  ASSERT_TRUE(deleted) << deleted.error().message;
  wait_job(
      "uprooted",
      [](const json& j) {
        return j.value("status", json::object())
                   .value("progress", json::object())
                   .value("pool", "") == "spare";
      },
      "the job to move to the spare pool");
  json done = wait_job(
      "uprooted",
      [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish");
  EXPECT_EQ(job_phase(done), "Succeeded") << done.value("status", json::object()).dump(1);
  EXPECT_GT(progress_epoch(done), epoch_before);
  EXPECT_TRUE(has_event("uprooted", "Replanned"));
  for (const auto& pod : pods_->created_for("uprooted")) {
    if (pod["spec"].value("nodeSelector", json::object()).value("depl.dev/pool", "") != "spare")
      continue;
    // It continued from its checkpoint: nothing started over once the node was gone.
    EXPECT_NE(pod_env(pod, "DEPL_START_EPOCH"), json("0")) << pod["metadata"].dump();
  }
  // Each pod of the lost node went as the pod garbage collector ends them: Failed, with the
  // DisruptionTarget condition, then deleted (by it, or by the controller: either way gone).
  for (const auto& pod : pods_->deleted_for("uprooted")) {
    if (!on_node.erase(pod["metadata"].value("uid", ""))) continue;
    EXPECT_EQ(pod["status"].value("phase", ""), "Failed") << pod["status"].dump(1);
    EXPECT_TRUE(has_condition(pod, "DisruptionTarget", "DeletionByPodGC")) << pod["status"].dump(1);
  }
  EXPECT_TRUE(on_node.empty()) << on_node.size()
                               << " pod(s) of the deleted node were never deleted";
  // The pod garbage collector failed them: the controller counts that as a preemption, but a
  // worker's exit seen before the node left its cache is a failure; nothing else may go wrong.
  expect_job_invariants("uprooted", /*pods_may_fail=*/true);
}

// A worker's process is SIGKILLed partway through an epoch (DevCluster::kill_container, as a
// crash or the OOM killer would end it): its pod fails with exit code 137, the controller
// restarts the phase's workers from the last checkpoint, and the job completes with nothing
// lost. Which rank and how far into its epoch are drawn (DEPL_E2E_SEED=<n> replays a draw).
TEST_F(FaultsE2e, WorkerKilledMidEpochIsRestartedFromTheCheckpointAndTheJobCompletes) {
  const std::uint64_t seed = seed_from_env(20260615);  // rank 0, 63 ms in
  std::mt19937_64 rng(seed);
  RecordProperty("seed", std::to_string(seed));
  SCOPED_TRACE(fmt::format("seed {} (DEPL_E2E_SEED={} replays it)", seed, seed));
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools.yaml"));
  const std::uint16_t port = free_loopback_port();
  ASSERT_NE(port, 0);
  auto controller =
      spawn_controller("crash-controller", {"--progress-addr", fmt::format("127.0.0.1:{}", port)});
  ASSERT_TRUE(controller->started());
  constexpr double kEpochSeconds = 0.3;
  create_job(patient_job("crashed", kEpochSeconds));  // two ranks per phase

  const int rank = std::uniform_int_distribution<int>(0, 1)(rng);
  const int delay_ms = std::uniform_int_distribution<int>(0, 100)(rng);  // of a 300 ms epoch
  RecordProperty("killed", fmt::format("rank {} {} ms into an epoch", rank, delay_ms));
  const std::string name = fmt::format("crashed-p0-w{}", rank);
  // Once it has reported its second epoch, the worker sleeps through its next one.
  int acked = 0;
  ASSERT_TRUE(wait_until([&] {
    return (acked = last_acked_epoch(acks_file("crashed"), 0, rank)) >= 2;
  })) << name
      << " reported no two epochs";
  const json pod = client_->get(resources::pods(), "default", name).value_or(json::object());
  const std::string uid = pod.value("metadata", json::object()).value("uid", "");
  ASSERT_FALSE(uid.empty()) << name << " is gone before it could be killed";
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));  // the kill moment, drawn
  auto killed = cluster_->kill_container("default", name, "worker");
  ASSERT_TRUE(killed) << killed.error().message;

  // The kubelet reports the kill, the controller counts the failure.
  EXPECT_TRUE(wait_until([&] {
    for (const auto& e : events_of("crashed")) {
      if (e.value("reason", "") == "WorkerFailed" &&
          e.value("message", "").find(name + " failed (exit code 137)") != std::string::npos)
        return true;
    }
    return false;
  })) << "no WorkerFailed event for "
      << name << " with exit code 137";
  json done = wait_job(
      "crashed",
      [](const json& j) { return job_phase(j) == "Succeeded" || job_phase(j) == "Failed"; },
      "the job to finish");
  EXPECT_EQ(job_phase(done), "Succeeded") << done.value("status", json::object()).dump(1);

  // It died mid-epoch: the last epoch its log shows is the one acknowledged before the kill.
  const std::string log_dir = fmt::format("default_{}_{}", name, uid.substr(0, 8));
  const std::string log = read_text(work_dir_ / "pods" / log_dir / "worker-0.log");
  EXPECT_NE(log.find(fmt::format("{{\"epoch\":{},", acked)), std::string::npos) << log;
  EXPECT_EQ(log.find(fmt::format("{{\"epoch\":{},", acked + 1)), std::string::npos)
      << "the kill came after epoch " << acked + 1 << " was done, not partway through it:\n"
      << log;
  for (const auto& gone : pods_->deleted_for("crashed")) {
    if (gone["metadata"].value("uid", "") == uid) {
      EXPECT_EQ(terminated_exit_code(gone), 137) << gone["status"].dump(1);
    }
  }
  // Both ranks of the phase started again (synchronous ranks cannot go on without a peer), from
  // the checkpoint: where the job's progress stood, never from 0.
  for (int r = 0; r < 2; ++r) {
    const std::string rank_pod = fmt::format("crashed-p0-w{}", r);
    std::vector<std::string> starts;
    for (const auto& p : pods_->created_for("crashed")) {
      if (p["metadata"].value("name", "") == rank_pod)
        starts.push_back(pod_env(p, "DEPL_START_EPOCH").value_or(json("")).get<std::string>());
    }
    ASSERT_GE(starts.size(), 2u) << rank_pod << " was not recreated";
    EXPECT_EQ(starts[0], "0");
    EXPECT_NE(starts[1], "0") << rank_pod << " started over";
    // Rank 0 reports the job's progress: killed, its last report is where the phase resumes.
    if (rank == 0 && r == 0) {
      EXPECT_EQ(starts[1], std::to_string(acked));
    }
  }
  expect_job_invariants("crashed", /*pods_may_fail=*/true);
}

}  // namespace
}  // namespace depl::e2e
