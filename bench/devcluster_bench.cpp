// depl-devcluster-bench (issue 4): 10,000 pods, 50 HTTP watchers, sustained status writes; reports
// watch events delivered per second (summed over watchers) and the process's resident memory.
// A report, not a timed test. Usage: depl-devcluster-bench [pods] [watchers] [seconds]
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "depl/devcluster/dev_cluster.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using json = nlohmann::json;
using depl::devcluster::ResourceRef;

namespace {

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// Reads one watch stream and counts the newline-terminated events until `stop`.
void watch_and_count(std::uint16_t port, const std::string& rv, std::atomic<bool>& stop,
                     std::atomic<long>& events, std::atomic<int>& ready) {
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{http::verb::get, "/api/v1/pods?watch=1&resourceVersion=" + rv,
                                      11};
  req.set(http::field::host, "127.0.0.1");
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(stream, buffer, parser);
  ++ready;
  std::size_t scanned = 0;
  while (!stop) {
    stream.expires_after(std::chrono::seconds(2));
    beast::error_code ec;
    http::read_some(stream, buffer, parser, ec);
    std::string& body = parser.get().body();
    long n = 0;
    for (std::size_t i = scanned; i < body.size(); ++i) n += body[i] == '\n';
    events += n;
    body.clear();  // keep memory flat; only counts matter
    scanned = 0;
    if (ec) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int pods = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int watchers = argc > 2 ? std::atoi(argv[2]) : 50;
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 10;
  depl::devcluster::DevClusterOptions options;
  options.run_kubelet = false;  // the API server alone: pods stay Pending and unbound
  options.run_scheduler = false;
  auto cluster = depl::devcluster::DevCluster::start(options);
  if (!cluster) {
    std::fprintf(stderr, "error: %s\n", cluster.error().message.c_str());
    return 1;
  }
  auto& store = (*cluster)->store();
  for (int i = 0; i < pods; ++i) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "p" + std::to_string(i)}, {"labels", {{"app", "bench"}}}}},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "sim"}}}}}}};
    store.create(ResourceRef{"", "v1", "pods", "default", "", ""}, pod);
  }
  const std::string rv = store.resource_version();
  std::atomic<bool> stop{false};
  std::atomic<long> events{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < watchers; ++w) {
    threads.emplace_back(watch_and_count, (*cluster)->port(), rv, std::ref(stop), std::ref(events),
                         std::ref(ready));
  }
  while (ready < watchers) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  long writes = 0;
  while (std::chrono::steady_clock::now() < end) {
    const int i = static_cast<int>(writes % pods);
    json status = {
        {"status", {{"phase", "Pending"}, {"message", "tick " + std::to_string(writes)}}}};
    store.patch(ResourceRef{"", "v1", "pods", "default", "p" + std::to_string(i), "status"},
                depl::devcluster::PatchType::Merge, status.dump());
    ++writes;
  }
  const double write_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long delivered_at_end = events.load();
  const long expected = writes * watchers;
  // Let the watchers drain what was written (bounded).
  const auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (events < expected && std::chrono::steady_clock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long rss = rss_kib();
  stop = true;
  (*cluster)->drop_watches();
  for (auto& t : threads) t.join();
  std::printf("pods=%d watchers=%d writes=%ld write_seconds=%.2f writes_per_s=%.0f\n", pods,
              watchers, writes, write_seconds, writes / write_seconds);
  std::printf("events_delivered=%ld of %ld in %.2f s: %.0f events/s (during writes: %.0f/s)\n",
              events.load(), expected, total_seconds, events.load() / total_seconds,
              delivered_at_end / write_seconds);
  std::printf("rss_mib=%.1f\n", rss / 1024.0);
  return 0;
}
