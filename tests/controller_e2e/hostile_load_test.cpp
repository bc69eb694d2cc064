// The controller's endpoints under hostile load: idle connections and slow ("slowloris") clients
// against its progress, metrics and health ports, from loopback addresses other than the
// workers' (127.0.0.1), while two jobs run. Both jobs must succeed with no report lost (every
// acknowledged report in the status, no worker failed), every health probe must be answered 200
// within 1 s, and /metrics must answer throughout.
//
// In `make test` it attacks for 10 s with 300 idle connections per port (enough to pass each
// address's share and the server's cap); the figures in docs/benchmarks.md come from
//   DEPL_HOSTILE_SECONDS=60 DEPL_HOSTILE_IDLE=500 build/tests/controller_e2e_tests
//       --gtest_filter='HostileLoadE2e.*'    (one command line)
// Before the endpoints were asynchronous, 64 idle connections took each port down: reports were
// refused until both jobs failed, and /healthz answered 503 for 25 s.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "hostile_clients.hpp"
#include "http_post.hpp"
#include "process_fixture.hpp"

namespace depl::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text ? std::max(1, std::atoi(text)) : fallback;
}

class HostileLoadE2e : public ControllerProcessE2e {};

// The port after `key=:` in the controller's "caches synced" log line.
std::uint16_t port_in_log(const std::string& log, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(key + "=:([0-9]+)"))) return 0;
  return static_cast<std::uint16_t>(std::stoi(m[1]));
}

// The first sample of `metric` whose labels include each of `labels`, or -1.
double metric_value(const std::string& text, const std::string& metric,
                    const std::vector<std::string>& labels) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric + "{", 0) != 0 && line.rfind(metric + " ", 0) != 0) continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

double percentile(std::vector<long long> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return static_cast<double>(values[std::min(i, values.size() - 1)]);
}

TEST_F(HostileLoadE2e, IdleAndSlowClientsOnEveryPortStarveNoProbeAndLoseNoReport) {
  const auto seconds = std::chrono::seconds(env_int("DEPL_HOSTILE_SECONDS", 10));
  const int idle_per_port = env_int("DEPL_HOSTILE_IDLE", 300);
  const int slow_per_port = env_int("DEPL_HOSTILE_SLOW", 10);
  // The attackers' sockets are this process's descriptors: raise its soft limit to the hard one
  // (the controller and the pods, started after, inherit it).
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  const rlim_t needed = static_cast<rlim_t>(3 * (idle_per_port + slow_per_port)) + 1024;
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < needed) {
    GTEST_SKIP() << "the open-file limit (" << files.rlim_cur << ") is below the " << needed
                 << " descriptors the attack needs";
  }
  ASSERT_NO_FATAL_FAILURE(start_recorded_cluster("pools.yaml"));
  const std::uint16_t progress_port = free_loopback_port();
  ASSERT_NE(progress_port, 0);
  auto controller = spawn_controller(
      "hostile-controller", {"--progress-addr", fmt::format("127.0.0.1:{}", progress_port)});
  ASSERT_TRUE(wait_for_log(*controller, "caches synced"));
  const std::uint16_t metrics_port = port_in_log(controller->log(), "metrics");
  const std::uint16_t health_port = port_in_log(controller->log(), "health");
  ASSERT_NE(metrics_port, 0) << controller->log();
  ASSERT_NE(health_port, 0) << controller->log();

  // Eight addresses: each holds more than its share (32 connections per address and port), and
  // together they fill the server's cap (256 per port).
  HostileOptions attack;
  attack.ports = {progress_port, metrics_port, health_port};
  attack.idle = 3 * idle_per_port;
  attack.slow = 3 * slow_per_port;
  attack.addresses = 8;
  const auto attack_started = Clock::now();
  HostileClients hostile(attack);

  // Probes as a kubelet and a Prometheus would send them, from 127.0.0.1.
  std::mutex mutex;
  std::vector<long long> health_ms;
  std::vector<std::string> bad_probes;
  int metrics_answered = 0, metrics_asked = 0;
  std::atomic<bool> probing{true};
  std::thread prober([&] {
    for (int i = 0; probing; ++i) {
      const char* target = i % 2 == 0 ? "/healthz" : "/readyz";
      const ProbeResult r = probe(health_port, target);
      std::optional<ProbeResult> m;
      if (i % 5 == 0) m = probe(metrics_port, "/metrics");
      std::lock_guard lock(mutex);
      health_ms.push_back(r.took.count());
      if (r.status != 200 || r.took >= 1s) {
        bad_probes.push_back(
            fmt::format("{} at {:.1f} s: status {} after {} ms", target,
                        std::chrono::duration<double>(Clock::now() - attack_started).count(),
                        r.status, r.took.count()));
      }
      if (m) {
        ++metrics_asked;
        if (m->status == 200) ++metrics_answered;
      }
      std::this_thread::sleep_for(200ms);
    }
  });

  // Two jobs of about 20 epochs each, paced to run through the attack.
  const double epoch_seconds = std::chrono::duration<double>(seconds).count() / 20;
  create_job(patient_job("besieged-a", epoch_seconds));
  create_job(patient_job("besieged-b", epoch_seconds));
  const auto finished = [](const json& j) {
    return job_phase(j) == "Succeeded" || job_phase(j) == "Failed";
  };
  const auto budget = std::chrono::duration_cast<std::chrono::seconds>(seconds * 3) + kWait;
  const json a = wait_job("besieged-a", finished, "besieged-a finished", budget);
  const json b = wait_job("besieged-b", finished, "besieged-b finished", budget);
  while (Clock::now() - attack_started < seconds) std::this_thread::sleep_for(100ms);
  const double attacked_seconds =
      std::chrono::duration<double>(Clock::now() - attack_started).count();
  const HostileCounts counts = hostile.counts();
  probing = false;
  prober.join();
  hostile.stop();

  EXPECT_EQ(job_phase(a), "Succeeded") << a["status"].dump(1);
  EXPECT_EQ(job_phase(b), "Succeeded") << b["status"].dump(1);
  EXPECT_THAT(bad_probes, ::testing::IsEmpty());
  EXPECT_GT(health_ms.size(), 10u);
  EXPECT_EQ(metrics_answered, metrics_asked);
  EXPECT_GE(counts.connects, static_cast<std::uint64_t>(attack.idle + attack.slow));
  // The attackers were held off: refused past their share, closed at the request deadline or to
  // make room. Without that every one of them would still be open.
  EXPECT_GT(counts.closed_by_server, 0u);

  const HttpAnswer metrics = http_get(fmt::format("http://127.0.0.1:{}/metrics", metrics_port));
  std::string endpoint_figures;
  for (const char* endpoint : {"progress", "metrics", "health"}) {
    const std::string e = fmt::format(R"(endpoint="{}")", endpoint);
    endpoint_figures += fmt::format(
        " {}: accepted {:.0f}, refused per address {:.0f}, refused busy {:.0f}, closed at the "
        "deadline {:.0f}, evicted {:.0f};",
        endpoint, metric_value(metrics.body, "depl_endpoint_connections_total", {e}),
        metric_value(metrics.body, "depl_endpoint_refused_total", {e, R"(reason="per_address")"}),
        metric_value(metrics.body, "depl_endpoint_refused_total", {e, R"(reason="busy")"}),
        metric_value(metrics.body, "depl_endpoint_closed_total", {e, R"(reason="deadline")"}),
        metric_value(metrics.body, "depl_endpoint_closed_total", {e, R"(reason="evicted")"}));
  }
  const std::string summary = fmt::format(
      "hostile load: {:.1f} s, {} idle + {} slow connections on 3 ports from {} + {} addresses; "
      "attackers connected {} times ({} refused at connect), closed by the controller {} times, "
      "{} bytes dribbled; health probes {} (p50 {:.0f} ms, p99 {:.0f} ms, max {:.0f} ms), all "
      "200: {}; /metrics {}/{}; jobs a {} ({} epochs), b {} ({} epochs);{}",
      attacked_seconds, attack.idle, attack.slow, attack.addresses, attack.slow_addresses,
      counts.connects, counts.connect_failures, counts.closed_by_server, counts.bytes_dribbled,
      health_ms.size(), percentile(health_ms, 0.5), percentile(health_ms, 0.99),
      percentile(health_ms, 1.0), bad_probes.empty(), metrics_answered, metrics_asked, job_phase(a),
      a["status"]["progress"].value("epoch", 0), job_phase(b),
      b["status"]["progress"].value("epoch", 0), endpoint_figures);
  std::printf("%s\n", summary.c_str());
  RecordProperty("summary", summary);
  expect_job_invariants("besieged-a");
  expect_job_invariants("besieged-b");
}

}  // namespace
}  // namespace depl::e2e
