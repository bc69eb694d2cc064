// Informer throughput and footprint (issue 3): watch events decoded and applied to the store per
// second on one core, and resident memory per cached object. The watch body is served by the
// scripted transport, so the measured path is the real one (WatchStream decoding -> Watcher
// state machine -> Informer -> Store with the default label/owner/node indexes), minus sockets.
//
//   depl-informer-bench [--objects N] [--updates M]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/informer.hpp"
#include "depl/kube/runtime/store.hpp"
#include "depl/kube/testing/scripted_transport.hpp"
#include "depl/kube/watch_event.hpp"

namespace {

using nlohmann::json;
using namespace depl;
using namespace depl::kube;

// A small Pod as a controller's cache sees it: labels, an owner, a node, a phase.
std::string event_line(const char* type, int index, int version) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", fmt::format("worker-{}", index)},
        {"namespace", fmt::format("team-{}", index % 20)},
        {"uid", fmt::format("6f1c2d9e-0000-4000-8000-{}", 100000000000 + index)},
        {"resourceVersion", std::to_string(version)},
        {"labels", {{"app", "trainer"}, {"depl.dev/job", fmt::format("job-{}", index % 500)}}},
        {"ownerReferences", json::array({{{"apiVersion", "depl.dev/v1alpha1"},
                                          {"kind", "DependableTrainingJob"},
                                          {"name", fmt::format("job-{}", index % 500)},
                                          {"uid", fmt::format("job-uid-{}", index % 500)},
                                          {"controller", true}}})}}},
      {"spec", {{"nodeName", fmt::format("node-{}", index % 200)}}},
      {"status", {{"phase", "Running"}}}};
  return json{{"type", type}, {"object", std::move(pod)}}.dump() + "\n";
}

// CPU time of the calling thread: on a machine shared with other work, wall time measures the
// contention; thread CPU time measures the code (it includes the page faults it causes).
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Splits the body into ~64 KiB chunks cut at arbitrary byte positions, as a socket would.
std::vector<std::string> chunked(const std::string& body) {
  std::vector<std::string> chunks;
  constexpr std::size_t kChunk = 65521;  // prime: boundaries land mid-line
  for (std::size_t at = 0; at < body.size(); at += kChunk)
    chunks.push_back(body.substr(at, kChunk));
  return chunks;
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 100000;
  int updates = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--objects")
      objects = std::atoi(argv[i + 1]);
    else if (flag == "--updates")
      updates = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s (use --objects N --updates M)\n", flag.c_str());
      return 2;
    }
  }
  if (objects <= 0 || updates < 0) {
    std::fprintf(stderr, "--objects must be > 0 and --updates >= 0\n");
    return 2;
  }

  // 1. Memory: a fresh store filled one object at a time (each event generated, decoded and
  //    applied, its temporaries freed), so the RSS delta is what the cache itself holds.
  std::size_t object_json_bytes = 0;
  long rss_delta_kib = 0;
  {
    Store store;
    const long rss_before = resident_kib();
    for (int i = 0; i < objects; ++i) {
      const std::string line = event_line("ADDED", i, 1000 + i);
      object_json_bytes += line.size();
      auto event = parse_watch_event(line.substr(0, line.size() - 1));
      store.apply(std::make_shared<const json>(std::move(event->object)));
    }
    rss_delta_kib = resident_kib() - rss_before;
  }

  // 2. Throughput: one watch body with every ADDED then every MODIFIED event, cut into chunks
  //    at arbitrary byte positions, read through the real Watcher and applied by the Informer.
  std::string body;
  body.reserve(object_json_bytes * (1 + static_cast<std::size_t>(updates) / objects + 1));
  for (int i = 0; i < objects; ++i) body += event_line("ADDED", i, 1000 + i);
  for (int i = 0; i < updates; ++i) body += event_line("MODIFIED", i % objects, 2000000 + i);

  auto transport = std::make_shared<testing::ScriptedTransport>();
  auto clock = std::make_shared<FakeClock>();
  transport->push_json(200, {{"kind", "PodList"},
                             {"apiVersion", "v1"},
                             {"metadata", {{"resourceVersion", "1"}}},
                             {"items", json::array()}});
  testing::StreamScript stream;
  stream.chunks = chunked(body);
  stream.hang = true;
  transport->push_stream(std::move(stream));
  body.clear();
  body.shrink_to_fit();

  ClientOptions options;
  options.clock = clock;
  options.rate_limit = {0, 0};
  options.retry.max_attempts = 1;
  Client client(transport, nullptr, options);
  RandomSource random(1);
  WatcherOptions watcher_options;
  watcher_options.page_size = 0;
  Watcher watcher(client, resources::pods(), watcher_options, *clock, random);
  Informer informer(client, resources::pods(), watcher_options, *clock, random);
  std::stop_source stop;

  // InitStarted, InitDone: the empty list; the watch opens on the next call.
  for (int i = 0; i < 2; ++i) informer.apply(*watcher.next(stop.get_token()));

  const auto wall_start = std::chrono::steady_clock::now();
  const double add_start = thread_cpu_seconds();
  for (int i = 0; i < objects; ++i) informer.apply(*watcher.next(stop.get_token()));
  const double add_end = thread_cpu_seconds();
  for (int i = 0; i < updates; ++i) informer.apply(*watcher.next(stop.get_token()));
  const double update_end = thread_cpu_seconds();
  const double wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  if (informer.store().size() != static_cast<std::size_t>(objects)) {
    std::fprintf(stderr, "store holds %zu objects, expected %d\n", informer.store().size(),
                 objects);
    return 1;
  }
  const double add_seconds = add_end - add_start;
  const double update_seconds = update_end - add_end;
  const double total_seconds = add_seconds + update_seconds;
  std::printf("objects=%d updates=%d avg_event_bytes=%.0f\n", objects, updates,
              static_cast<double>(object_json_bytes) / objects);
  std::printf("(rates per second of this thread's CPU time; wall time for everything %.3f s)\n",
              wall_seconds);
  std::printf("added_per_second=%.0f (%.3f s)\n", objects / add_seconds, add_seconds);
  if (updates > 0) {
    std::printf("updated_per_second=%.0f (%.3f s)\n", updates / update_seconds, update_seconds);
  }
  std::printf("events_per_second=%.0f (all %d events on one thread)\n",
              (objects + updates) / total_seconds, objects + updates);
  std::printf("rss_delta_kib=%ld bytes_per_cached_object=%.0f\n", rss_delta_kib,
              rss_delta_kib * 1024.0 / objects);
  return 0;
}
