// Watch decoding throughput: small Pod watch events per second through the real
// WatchDecoder on one core, fed in 16 KiB chunks that split events anywhere, as a socket would.
// Target >= 50,000 objects/s. Applying events to the informer store is measured by
// depl-informer-bench; `decode_events` below is the hook both share in spirit: bytes in, events
// out.
//
//   depl-kube-bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "depl/kube/testing/scripted_transport.hpp"
#include "depl/kube/watch_event.hpp"
#include "depl/kube/watch_stream.hpp"

namespace {

using nlohmann::json;

std::string pod_event(int index) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", fmt::format("worker-{}", index)},
                {"namespace", "team-a"},
                {"uid", fmt::format("6f1c2d9e-0000-4000-8000-{:012}", index)},
                {"resourceVersion", std::to_string(1000 + index)},
                {"labels", {{"app", "trainer"}, {"depl.dev/job", "job-1"}}}}},
              {"spec", {{"nodeName", fmt::format("node-{}", index % 50)}}},
              {"status", {{"phase", "Running"}}}};
  return json{{"type", index % 3 == 0 ? "ADDED" : "MODIFIED"}, {"object", std::move(pod)}}.dump() +
         "\n";
}

std::string make_body(int events) {
  std::string body;
  for (int i = 0; i < events; ++i) body += pod_event(i);
  return body;
}

// Bytes in, events out: the decode half of the watch path.
std::size_t decode_events(std::string_view body, std::size_t chunk) {
  depl::kube::WatchDecoder decoder;
  std::size_t events = 0;
  for (std::size_t at = 0; at < body.size(); at += chunk) {
    decoder.feed(body.substr(at, chunk));
    while (auto event = decoder.next()) events += event->has_value() ? 1 : 0;
  }
  decoder.finish();
  while (auto event = decoder.next()) events += event->has_value() ? 1 : 0;
  return events;
}

void BM_WatchDecoder(benchmark::State& state) {
  const int events = 10'000;
  const std::string body = make_body(events);
  for (auto _ : state) {
    auto decoded = decode_events(body, static_cast<std::size_t>(state.range(0)));
    if (decoded != static_cast<std::size_t>(events)) state.SkipWithError("lost events");
    benchmark::DoNotOptimize(decoded);
  }
  state.SetItemsProcessed(state.iterations() * events);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
  state.counters["bytes_per_event"] = static_cast<double>(body.size()) / events;
}
BENCHMARK(BM_WatchDecoder)->Arg(16 * 1024)->Arg(1500)->Unit(benchmark::kMillisecond);

// The same through WatchStream::next() over the scripted transport's stream (no sockets).
void BM_WatchStream(benchmark::State& state) {
  const int events = 10'000;
  const std::string body = make_body(events);
  std::vector<std::string> chunks;
  for (std::size_t at = 0; at < body.size(); at += 16 * 1024)
    chunks.push_back(body.substr(at, 16 * 1024));
  for (auto _ : state) {
    depl::kube::testing::ScriptedTransport transport;
    transport.push_stream({.chunks = chunks});
    depl::kube::HttpRequest request;
    auto stream = transport.open_stream(request, std::chrono::seconds(1));
    depl::kube::WatchStream watch(std::move(*stream));
    std::size_t decoded = 0;
    while (true) {
      auto event = watch.next();
      if (!event || !*event) break;
      ++decoded;
    }
    if (decoded != static_cast<std::size_t>(events)) state.SkipWithError("lost events");
  }
  state.SetItemsProcessed(state.iterations() * events);
}
BENCHMARK(BM_WatchStream)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
