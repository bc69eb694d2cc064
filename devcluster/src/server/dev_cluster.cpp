#include "depl/devcluster/dev_cluster.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "depl/common/base64.hpp"
#include "depl/common/pki.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/devcluster/rbac.hpp"
#include "server/api_handler.hpp"
#include "server/authentication.hpp"
#include "server/http_server.hpp"
#include "server/timer_thread.hpp"
#include "sim/kubelet.hpp"
#include "sim/node_pools.hpp"
#include "sim/node_termination.hpp"
#include "sim/pod_gc.hpp"
#include "sim/pod_group_crd.hpp"
#include "sim/scheduler.hpp"
#include "sim/time_format.hpp"

namespace depl::devcluster {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

RequestSummary summary_of(const HttpRequest& request) {
  const auto watch = request.query_param("watch");
  return RequestSummary{request.method, request.path, request.header("user-agent"),
                        parse_api_path(request.path).legacy_watch ||
                            (watch && (*watch == "1" || *watch == "true" || *watch == "True"))};
}

// Writes `text` to `path`, readable by its owner only from the moment the file exists.
Expected<void> write_private_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return error("cannot write " + path + ": " + std::strerror(errno));
  // An existing file keeps its mode through O_CREAT: set it before writing anything.
  const bool ok = ::fchmod(fd, 0600) == 0 &&
                  ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  ::close(fd);
  if (!ok) return error("cannot write " + path + ": " + std::strerror(saved));
  return {};
}

std::uint64_t random_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

Expected<std::string> make_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "depl-devcluster-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    return error("cannot create a temporary directory for the dev cluster");
  return pattern;
}

}  // namespace

struct DevCluster::Impl {
  DevClusterOptions options;
  std::string work_dir;
  bool remove_work_dir = false;
  std::string kubeconfig;
  std::string token;
  std::string ca_pem;
  std::unique_ptr<ApiStore> store;
  std::unique_ptr<ApiHandler> handler;
  std::unique_ptr<Kubelet> kubelet;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<PodGarbageCollector> pod_gc;
  std::unique_ptr<NodeTerminator> node_terminator;
  std::vector<NodePool> pools;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<TimerThread> timers;
  std::mutex mutex;
  bool stopped = false;

  Expected<void> write_kubeconfig(const std::string& path, const std::string& user_token) {
    json cluster = {{"server", url()}};
    if (!options.insecure_http) cluster["certificate-authority-data"] = base64_encode(ca_pem);
    json user = {{"token", user_token}};
    json config = {
        {"apiVersion", "v1"},
        {"kind", "Config"},
        {"clusters", json::array({{{"name", "depl-dev"}, {"cluster", cluster}}})},
        {"contexts",
         json::array(
             {{{"name", "depl-dev"},
               {"context",
                {{"cluster", "depl-dev"}, {"user", "depl-dev"}, {"namespace", "default"}}}}})},
        {"current-context", "depl-dev"},
        {"users", json::array({{{"name", "depl-dev"}, {"user", user}}})},
        {"preferences", json::object()}};
    std::error_code ec;
    if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
    return write_private_file(path, json_to_yaml(config));
  }

  // The ClusterRoles and bindings kube-apiserver creates at start-up.
  Expected<void> bootstrap_rbac() {
    WriteOptions write;
    write.field_manager = "kube-apiserver";
    for (const auto& object : bootstrap_rbac_objects()) {
      const std::string plural =
          object["kind"] == "ClusterRole" ? "clusterroles" : "clusterrolebindings";
      auto created = store->create(
          ResourceRef{"rbac.authorization.k8s.io", "v1", plural, "", "", ""}, object, write);
      if (!created.ok()) {
        return error("cannot create the bootstrap " + plural + ": " +
                     created.body.value("message", ""));
      }
    }
    return {};
  }

  std::string url() const {
    return std::string(options.insecure_http ? "http" : "https") +
           "://127.0.0.1:" + std::to_string(server ? server->port() : 0);
  }

  Expected<void> create_nodes() {
    std::vector<NodePool> pools;
    if (!options.pools_yaml.empty()) {
      auto doc = yaml_to_json(options.pools_yaml, "pools");
      if (!doc) return unexpected(doc.error());
      auto parsed = parse_node_pools(*doc);
      if (!parsed) return unexpected(parsed.error());
      pools = std::move(*parsed);
    } else if (!options.pools_file.empty()) {
      auto parsed = read_node_pools_file(options.pools_file);
      if (!parsed) return unexpected(parsed.error());
      pools = std::move(*parsed);
    }
    for (auto& node : node_objects(pools, rfc3339_now())) {
      if (auto registered = register_node(*store, node); !registered) return registered;
    }
    this->pools = std::move(pools);
    return {};
  }

  void stop() {
    std::unique_lock lock(mutex);
    if (stopped) return;
    stopped = true;
    lock.unlock();
    timers.reset();
    if (server) server->stop();
    if (handler) handler->set_log_source(nullptr);
    node_terminator.reset();
    kubelet.reset();
    pod_gc.reset();
    scheduler.reset();
    if (store) store->close_all_watches();
    server.reset();
    handler.reset();
    if (remove_work_dir) {
      std::error_code ec;
      fs::remove_all(work_dir, ec);
    }
  }
};

DevCluster::DevCluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DevCluster::~DevCluster() {
  stop();
}

Expected<std::unique_ptr<DevCluster>> DevCluster::start(DevClusterOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  auto& o = impl->options;
  if (o.work_dir.empty()) {
    auto dir = make_temp_dir();
    if (!dir) return unexpected(dir.error());
    impl->work_dir = *dir;
    impl->remove_work_dir = true;
  } else {
    impl->work_dir = o.work_dir;
    std::error_code ec;
    fs::create_directories(impl->work_dir, ec);
    if (ec) return error("cannot create the work directory " + o.work_dir + ": " + ec.message());
  }
  impl->kubeconfig = o.kubeconfig_path.empty() ? (fs::path(impl->work_dir) / "kubeconfig").string()
                                               : o.kubeconfig_path;

  StoreOptions store_options;
  store_options.history_window = o.watch_history_window;
  store_options.graceful_pod_deletion = o.run_kubelet;
  store_options.seed = o.seed ? *o.seed : random_seed();
  store_options.kueue_pod_webhook = o.kueue_pod_webhook;
  store_options.workload_scheduling = o.workload_scheduling;
  impl->store = std::make_unique<ApiStore>(store_options);
  if (auto nodes = impl->create_nodes(); !nodes) return unexpected(nodes.error());
  if (auto rbac = impl->bootstrap_rbac(); !rbac) return unexpected(rbac.error());

  HttpServerOptions server_options;
  server_options.port = o.port;
  server_options.threads = o.server_threads;
  ApiHandlerOptions handler_options;
  handler_options.bookmark_interval = o.bookmark_interval;
  impl->token = random_hex_token(32);
  handler_options.admin_token = impl->token;
  handler_options.anonymous_is_admin = o.insecure_http;
  if (!o.insecure_http) {
    auto ca = pki::generate_ca("depl-devcluster-ca");
    if (!ca) return error("cannot generate the dev cluster CA: " + ca.error().message);
    auto serving = pki::issue_certificate(*ca, pki::localhost_server_spec());
    if (!serving) {
      return error("cannot generate the serving certificate: " + serving.error().message);
    }
    impl->ca_pem = ca->certificate_pem;
    server_options.tls_cert_pem = serving->certificate_pem;
    server_options.tls_key_pem = serving->private_key_pem;
  }
  impl->handler = std::make_unique<ApiHandler>(*impl->store, handler_options);
  if (o.run_kubelet) {
    KubeletOptions kubelet_options;
    kubelet_options.image_map = o.image_map;
    kubelet_options.simulated_run_time = o.simulated_pod_duration;
    kubelet_options.restart_backoff = o.restart_backoff;
    kubelet_options.work_dir = (fs::path(impl->work_dir) / "pods").string();
    impl->kubelet = std::make_unique<Kubelet>(*impl->store, kubelet_options);
    impl->handler->set_log_source(impl->kubelet.get());
    impl->pod_gc =
        std::make_unique<PodGarbageCollector>(*impl->store, PodGcOptions{o.orphan_pod_quarantine});
    impl->node_terminator = std::make_unique<NodeTerminator>(*impl->store, impl->pools);
  }
  if (o.coscheduling) {
    if (auto installed = install_pod_group_crd(*impl->store); !installed) {
      return unexpected(installed.error());
    }
  }
  if (o.run_scheduler) {
    impl->scheduler =
        std::make_unique<Scheduler>(*impl->store, SchedulerOptions{
                                                      .coscheduling = o.coscheduling,
                                                      .workload_scheduling = o.workload_scheduling,
                                                  });
  }
  ApiHandler* handler = impl->handler.get();
  auto server = HttpServer::start(
      server_options, [handler](HttpRequest& request) { return handler->handle(request); });
  if (!server) return unexpected(server.error());
  impl->server = std::move(*server);
  impl->handler->set_server_address("127.0.0.1:" + std::to_string(impl->server->port()));
  impl->timers = std::make_unique<TimerThread>();
  if (auto written = impl->write_kubeconfig(impl->kubeconfig, impl->token); !written) {
    return unexpected(written.error());
  }
  spdlog::info("event=devcluster_started url={} kubeconfig={}", impl->url(), impl->kubeconfig);
  return std::unique_ptr<DevCluster>(new DevCluster(std::move(impl)));
}

std::string DevCluster::url() const {
  return impl_->url();
}
std::uint16_t DevCluster::port() const {
  return impl_->server ? impl_->server->port() : 0;
}
std::string DevCluster::kubeconfig_path() const {
  return impl_->kubeconfig;
}
std::string DevCluster::bearer_token() const {
  return impl_->token;
}
std::string DevCluster::ca_certificate_pem() const {
  return impl_->ca_pem;
}
ApiStore& DevCluster::store() {
  return *impl_->store;
}

Expected<std::string> DevCluster::service_account_token(const std::string& ns,
                                                        const std::string& name,
                                                        std::chrono::seconds lifetime) {
  if (!impl_->handler) return error("the dev cluster is stopped");
  return impl_->handler->service_account_token(ns, name, lifetime);
}

Expected<void> DevCluster::write_service_account_kubeconfig(const std::string& ns,
                                                            const std::string& name,
                                                            const std::string& path) {
  auto token = service_account_token(ns, name);
  if (!token) return unexpected(token.error());
  return impl_->write_kubeconfig(path, *token);
}
void DevCluster::stop() {
  impl_->stop();
}

void DevCluster::drop_watches() {
  impl_->store->close_client_watches();
  if (impl_->server) impl_->server->drop_streams();
}

void DevCluster::compact_history() {
  impl_->store->compact();
}

void DevCluster::hold_watch_events(const std::string& plural) {
  if (impl_->handler) impl_->handler->hold_watch_events(plural);
}

void DevCluster::release_watch_events() {
  if (impl_->handler) impl_->handler->release_watch_events();
}

void DevCluster::fail_next_requests(int count, int code) {
  if (impl_->handler) impl_->handler->fail_next_requests(count, code);
}

void DevCluster::fail_requests_where(std::function<bool(const RequestSummary&)> match, int code) {
  if (!impl_->handler) return;
  if (!match) {
    impl_->handler->fail_requests_where(nullptr, code);
    return;
  }
  impl_->handler->fail_requests_where(
      [match = std::move(match)](const HttpRequest& request) { return match(summary_of(request)); },
      code);
}

void DevCluster::observe_requests(std::function<void(const RequestSummary&)> observe) {
  if (!impl_->handler) return;
  if (!observe) {
    impl_->handler->observe_requests(nullptr);
    return;
  }
  impl_->handler->observe_requests(
      [observe = std::move(observe)](const HttpRequest& request) { observe(summary_of(request)); });
}

void DevCluster::make_unavailable(std::chrono::milliseconds duration, Outage how) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->stopped) return;
  if (how == Outage::ServiceUnavailable) {
    impl_->handler->answer_unavailable_for(duration);
    return;
  }
  impl_->server->refuse_connections();
  Impl* impl = impl_.get();
  impl_->timers->schedule_after(duration, [impl] {
    std::lock_guard lock(impl->mutex);
    if (impl->stopped || !impl->server) return;
    if (auto resumed = impl->server->resume(); !resumed) {
      spdlog::error("event=devcluster_resume_failed error=\"{}\"", resumed.error().message);
    }
  });
}

Expected<void> DevCluster::set_node_ready(const std::string& node, bool ready) {
  auto current = impl_->store->get(ResourceRef{"", "v1", "nodes", "", node, ""});
  if (!current.ok()) return error("node " + node + " not found");
  const std::string now = rfc3339_now();
  json conditions = json::array();
  const json& status = current.body.contains("status") ? current.body["status"] : json();
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (const auto& c : status["conditions"]) {
      if (c.value("type", "") != "Ready") conditions.push_back(c);
    }
  }
  conditions.push_back(ready ? json{{"type", "Ready"},
                                    {"status", "True"},
                                    {"reason", "KubeletReady"},
                                    {"message", "kubelet is posting ready status"},
                                    {"lastHeartbeatTime", now},
                                    {"lastTransitionTime", now}}
                             : json{{"type", "Ready"},
                                    {"status", "Unknown"},
                                    {"reason", "NodeStatusUnknown"},
                                    {"message", "Kubelet stopped posting node status."},
                                    {"lastHeartbeatTime", now},
                                    {"lastTransitionTime", now}});
  WriteOptions write;
  write.field_manager = "depl-node-controller";
  auto patched =
      impl_->store->patch(ResourceRef{"", "v1", "nodes", "", node, "status"}, PatchType::Merge,
                          json{{"status", {{"conditions", conditions}}}}.dump(), write);
  if (!patched.ok()) return error("cannot update node " + node + ": " + patched.body.dump());
  // The node controller's taints: nothing new lands on an unreachable node.
  json taints = json::array();
  const json& spec = current.body.contains("spec") ? current.body["spec"] : json();
  if (spec.is_object() && spec.contains("taints") && spec["taints"].is_array()) {
    for (const auto& t : spec["taints"]) {
      if (t.value("key", "") != "node.kubernetes.io/unreachable") taints.push_back(t);
    }
  }
  if (!ready) {
    taints.push_back({{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoSchedule"}});
    taints.push_back(
        {{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoExecute"}, {"timeAdded", now}});
  }
  auto tainted = impl_->store->patch(ResourceRef{"", "v1", "nodes", "", node, ""}, PatchType::Merge,
                                     json{{"spec", {{"taints", taints}}}}.dump(), write);
  if (!tainted.ok()) return error("cannot taint node " + node + ": " + tainted.body.dump());
  return {};
}

Expected<void> DevCluster::delete_node(const std::string& node) {
  auto removed =
      impl_->store->remove(ResourceRef{"", "v1", "nodes", "", node, ""}, DeleteOptions{});
  if (!removed.ok()) return error("cannot delete node " + node + ": " + removed.body.dump());
  return {};
}

Expected<void> DevCluster::reclaim_node(const std::string& node, ReclaimOptions options) {
  if (!impl_->node_terminator) return error("the dev cluster runs no kubelet");
  auto current = impl_->store->get(ResourceRef{"", "v1", "nodes", "", node, ""});
  if (!current.ok()) return error("node " + node + " not found");
  const json& finalizers = current.answer()["metadata"].value("finalizers", json::array());
  if (std::find(finalizers.begin(), finalizers.end(), kTerminationFinalizer) == finalizers.end()) {
    return error("node " + node + " is not spot capacity (no " +
                 std::string(kTerminationFinalizer) + " finalizer): use delete_node");
  }
  impl_->node_terminator->set_reclaim(node, {options.notice, options.replacement_after});
  DeleteOptions remove;
  remove.user_agent = "depl-devcluster/reclaim";
  auto removed = impl_->store->remove(ResourceRef{"", "v1", "nodes", "", node, ""}, remove);
  if (!removed.ok()) return error("cannot reclaim node " + node + ": " + removed.body.dump());
  return {};
}

int DevCluster::container_pid(const std::string& ns, const std::string& pod,
                              const std::string& container) {
  return impl_->kubelet ? impl_->kubelet->container_pid(ns, pod, container) : 0;
}

Expected<void> DevCluster::kill_container(const std::string& ns, const std::string& pod,
                                          const std::string& container) {
  if (!impl_->kubelet) return error("the dev cluster runs no kubelet");
  return impl_->kubelet->kill_container(ns, pod, container);
}

}  // namespace depl::devcluster
