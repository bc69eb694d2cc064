// Informer throughput and footprint: watch events decoded and applied to the store per
// second on one core, and resident memory per cached object. The watch body is served by the
// scripted transport, so the measured path is the real one (WatchStream decoding -> Watcher
// state machine -> Informer -> Store with the default label/owner/node indexes), minus sockets;
// with --http it comes over a local socket through the Beast transport instead, each event in a
// chunk of its own as kube-apiserver sends them.
//
//   depl-informer-bench [--objects N] [--updates M] [--shape small|worker] [--keep-fields]
//                       [--prefilter] [--http]
//
// --shape worker: ~3 KB pods like an operator's training workers (env, volumes, conditions, with
// managedFields, which the watcher drops while decoding). --keep-fields: the cache keeps only
// what a GPU-accounting cache reads (a transform); --prefilter: the watcher decodes only that
// (WatcherOptions::prefilter), the transform still runs.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/beast_transport.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/field_filter.hpp"
#include "depl/kube/runtime/informer.hpp"
#include "depl/kube/runtime/store.hpp"
#include "depl/kube/testing/scripted_transport.hpp"
#include "depl/kube/watch_event.hpp"

namespace {

using nlohmann::json;
using namespace depl;
using namespace depl::kube;

// A small Pod as a controller's cache sees it: labels, an owner, a node, a phase.
json small_pod(int index, int version) {
  return {{"apiVersion", "v1"},
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
}

// A training worker as the API server sends it: the small pod's metadata plus managedFields, a
// container with its contract environment, volumes, and a running status.
json worker_pod(int index, int version) {
  json pod = small_pod(index, version);
  const std::string job = fmt::format("job-{}", index % 500);
  json& meta = pod["metadata"];
  meta["creationTimestamp"] = "2026-11-22T05:00:00Z";
  meta["labels"]["depl.dev/phase"] = "0";
  meta["labels"]["depl.dev/rank"] = std::to_string(index % 8);
  meta["annotations"] = {{"depl.dev/plan", "phase 0 of 1"}};
  meta["managedFields"] = json::array(
      {{{"manager", "depl-controller"},
        {"operation", "Update"},
        {"apiVersion", "v1"},
        {"fieldsType", "FieldsV1"},
        {"fieldsV1",
         {{"f:metadata",
           {{"f:labels", {{"f:app", json::object()}, {"f:depl.dev/job", json::object()}}}}},
          {"f:spec", {{"f:containers", {{"k:{\"name\":\"worker\"}", {{".", json::object()}}}}}}}}}},
       {{"manager", "kubelet"},
        {"operation", "Update"},
        {"apiVersion", "v1"},
        {"subresource", "status"},
        {"fieldsType", "FieldsV1"},
        {"fieldsV1", {{"f:status", {{"f:phase", json::object()}, {"f:podIP", json::object()}}}}}}});
  json env = json::array();
  for (const char* name : {"DEPL_JOB", "DEPL_NAMESPACE", "DEPL_PHASE", "DEPL_MODEL", "DEPL_EPOCHS",
                           "DEPL_START_EPOCH", "DEPL_DATASETS", "DEPL_CHECKPOINT_DIR", "WORLD_SIZE",
                           "RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    env.push_back({{"name", name}, {"value", fmt::format("{}-value-{}", name, index % 97)}});
  }
  env.push_back({{"name", "DEPL_PROGRESS_URL"},
                 {"value", fmt::format("http://depl-controller.depl-system.svc:8081/v1/namespaces/"
                                       "team-{}/jobs/{}/progress",
                                       index % 20, job)}});
  env.push_back(
      {{"name", "DEPL_PROGRESS_TOKEN"},
       {"valueFrom", {{"secretKeyRef", {{"name", job + "-progress-token"}, {"key", "token"}}}}}});
  env.push_back({{"name", "DEPL_LOSS_PROFILE"},
                 {"value", R"({"initialLoss":2.3,"floorLoss":0.1,"decayPerEpoch":0.5})"}});
  pod["spec"] = {
      {"nodeName", fmt::format("node-{}", index % 200)},
      {"restartPolicy", "Never"},
      {"hostname", fmt::format("worker-{}", index)},
      {"subdomain", job + "-p0"},
      {"nodeSelector", {{"depl.dev/pool", "a100"}}},
      {"tolerations", json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}})},
      {"containers",
       json::array(
           {{{"name", "worker"},
             {"image", "registry.example.com/trainer:1.4"},
             {"command", json::array({"python", "-m", "trainer"})},
             {"env", std::move(env)},
             {"resources",
              {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", "1"}}},
               {"limits", {{"nvidia.com/gpu", "1"}}}}},
             {"volumeMounts", json::array({{{"name", "data"}, {"mountPath", "/data"}},
                                           {{"name", "ckpt"}, {"mountPath", "/ckpt"}}})}}})},
      {"volumes",
       json::array(
           {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "datasets"}}}},
            {{"name", "ckpt"}, {"persistentVolumeClaim", {{"claimName", "checkpoints"}}}}})}};
  json conditions = json::array();
  for (const char* type : {"PodScheduled", "Initialized", "ContainersReady", "Ready"}) {
    conditions.push_back(
        {{"type", type}, {"status", "True"}, {"lastTransitionTime", "2026-11-22T05:00:01Z"}});
  }
  pod["status"] = {
      {"phase", "Running"},
      {"conditions", std::move(conditions)},
      {"hostIP", "10.1.0.7"},
      {"podIP", fmt::format("10.2.{}.{}", index % 250, index % 200)},
      {"startTime", "2026-11-22T05:00:01Z"},
      {"qosClass", "Burstable"},
      {"containerStatuses",
       json::array({{{"name", "worker"},
                     {"ready", true},
                     {"restartCount", 0},
                     {"image", "registry.example.com/trainer:1.4"},
                     {"containerID", fmt::format("containerd://{:064}", index)},
                     {"state", {{"running", {{"startedAt", "2026-11-22T05:00:02Z"}}}}}}})}};
  return pod;
}

bool worker_shape = false;

std::string event_line(const char* type, int index, int version) {
  json pod = worker_shape ? worker_pod(index, version) : small_pod(index, version);
  return json{{"type", type}, {"object", std::move(pod)}}.dump() + "\n";
}

// What a cache that accounts GPUs per node and finds its owners' pods reads of a pod.
FieldFilter accounting_fields() {
  FieldFilter f;
  for (const char* key :
       {"name", "namespace", "resourceVersion", "uid", "ownerReferences", "labels"})
    f.keep({"metadata", key});
  f.keep({"spec", "nodeName"});
  f.keep({"spec", "containers", "name"});
  f.keep({"spec", "containers", "resources"});
  f.keep({"status", "phase"});
  return f;
}

namespace asio = boost::asio;
namespace http = boost::beast::http;

// A plain-HTTP server on 127.0.0.1 for --http: answers the list with `list` and the watch with
// the events from `make_event(i)`, i < count, each in a chunk of its own, written 256 KiB at a
// time (so the client finds many events per socket read, as it does when it falls behind), then
// keeps the watch open until the client goes.
class LocalApiServer {
 public:
  LocalApiServer(std::string list, int count, std::function<std::string(int)> make_event)
      : list_(std::move(list)), count_(count), make_event_(std::move(make_event)) {
    asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    thread_ = std::thread([this] { serve(); });
  }
  ~LocalApiServer() {
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    if (int fd = socket_fd_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    thread_.join();
  }
  std::string url() const {
    return fmt::format("http://127.0.0.1:{}", acceptor_.local_endpoint().port());
  }

 private:
  void serve() {
    boost::system::error_code ec;
    asio::ip::tcp::socket socket(ioc_);
    acceptor_.accept(socket, ec);
    if (ec) return;
    socket_fd_.store(socket.native_handle());
    boost::beast::flat_buffer buffer;
    while (true) {
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) return;
      if (request.target().find("watch=") == boost::beast::string_view::npos) {
        http::response<http::string_body> response(http::status::ok, 11);
        response.set(http::field::content_type, "application/json");
        response.body() = list_;
        response.prepare_payload();
        http::write(socket, response, ec);
        if (ec) return;
        continue;
      }
      std::string out =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (int i = 0; i < count_; ++i) {
        const std::string event = make_event_(i);
        out += fmt::format("{:x}\r\n", event.size());
        out += event;
        out += "\r\n";
        if (out.size() >= 256 * 1024 || i + 1 == count_) {
          asio::write(socket, asio::buffer(out), ec);
          if (ec) return;
          out.clear();
        }
      }
      char byte;
      socket.read_some(asio::buffer(&byte, 1), ec);  // until the client closes
      return;
    }
  }

  std::string list_;
  int count_;
  std::function<std::string(int)> make_event_;
  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_{ioc_};
  std::atomic<int> socket_fd_{-1};
  std::thread thread_;
};

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
  bool keep_fields = false;
  bool prefilter = false;
  bool over_http = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--objects" && has_value) {
      objects = std::atoi(argv[++i]);
    } else if (flag == "--updates" && has_value) {
      updates = std::atoi(argv[++i]);
    } else if (flag == "--shape" && has_value &&
               (argv[i + 1] == std::string("small") || argv[i + 1] == std::string("worker"))) {
      worker_shape = argv[++i] == std::string("worker");
    } else if (flag == "--keep-fields") {
      keep_fields = true;
    } else if (flag == "--prefilter") {
      prefilter = true;
    } else if (flag == "--http") {
      over_http = true;
    } else {
      std::fprintf(stderr,
                   "unknown flag %s (use --objects N --updates M --shape small|worker "
                   "--keep-fields --prefilter --http)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (objects <= 0 || updates < 0) {
    std::fprintf(stderr, "--objects must be > 0 and --updates >= 0\n");
    return 2;
  }

  const FieldFilter kept = accounting_fields();
  const FieldFilter kept_event = watch_event_filter(kept);
  ObjectTransform transform;
  if (keep_fields) transform = [&kept](json& object) { object = kept.apply(object); };

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
      auto event = parse_watch_event(line.substr(0, line.size() - 1), /*drop_managed_fields=*/true,
                                     prefilter ? &kept_event : nullptr);
      if (transform) transform(event->object);
      store.apply(std::make_shared<const json>(std::move(event->object)));
    }
    rss_delta_kib = resident_kib() - rss_before;
  }

  // 2. Throughput: one watch body with every ADDED then every MODIFIED event, read through the
  //    real Watcher and applied by the Informer: from the scripted transport in chunks cut at
  //    arbitrary byte positions, or (--http) over a socket, a chunk per event.
  const json list = {{"kind", "PodList"},
                     {"apiVersion", "v1"},
                     {"metadata", {{"resourceVersion", "1"}}},
                     {"items", json::array()}};
  auto nth_event = [objects](int i) {
    return i < objects ? event_line("ADDED", i, 1000 + i)
                       : event_line("MODIFIED", (i - objects) % objects, 2000000 + i - objects);
  };
  std::shared_ptr<Transport> transport;
  std::optional<LocalApiServer> server;
  if (over_http) {
    server.emplace(list.dump(), objects + updates, nth_event);
    auto beast = BeastTransport::create({.server = server->url()});
    if (!beast) {
      std::fprintf(stderr, "%s\n", beast.error().message.c_str());
      return 1;
    }
    transport = *beast;
  } else {
    std::string body;
    body.reserve(object_json_bytes * (1 + static_cast<std::size_t>(updates) / objects + 1));
    for (int i = 0; i < objects + updates; ++i) body += nth_event(i);
    auto scripted = std::make_shared<testing::ScriptedTransport>();
    scripted->push_json(200, list);
    testing::StreamScript stream;
    stream.chunks = chunked(body);
    stream.hang = true;
    scripted->push_stream(std::move(stream));
    transport = scripted;
  }
  auto clock = std::make_shared<FakeClock>();

  ClientOptions options;
  options.clock = clock;
  options.rate_limit = {0, 0};
  options.retry.max_attempts = 1;
  Client client(transport, nullptr, options);
  RandomSource random(1);
  WatcherOptions watcher_options;
  watcher_options.page_size = 0;
  watcher_options.drop_managed_fields = true;
  if (prefilter) watcher_options.prefilter = kept;
  Watcher watcher(client, resources::pods(), watcher_options, *clock, random);
  Informer informer(client, resources::pods(), watcher_options, *clock, random);
  if (transform) informer.set_transform(transform);
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
  std::printf(
      "objects=%d updates=%d shape=%s avg_event_bytes=%.0f keep_fields=%d prefilter=%d "
      "http=%d\n",
      objects, updates, worker_shape ? "worker" : "small",
      static_cast<double>(object_json_bytes) / objects, keep_fields, prefilter, over_http);
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
