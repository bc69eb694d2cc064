// Turns HTTP requests into ApiStore operations and their results into HTTP responses: routing,
// query parameters, content negotiation (JSON or meta.k8s.io/v1 Table), watch streams,
// discovery and OpenAPI documents, pod logs, authentication and RBAC authorization of every
// request, the review resources and service account tokens, and the request-level fault injection
// (fail the next N requests, answer 503 for a while).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_store.hpp"
#include "depl/devcluster/rbac.hpp"
#include "server/api_path.hpp"
#include "server/authentication.hpp"
#include "server/http_types.hpp"
#include "server/timer_thread.hpp"

namespace depl::devcluster {

// What `kubectl logs` asks for (pods/<name>/log query parameters).
struct PodLogQuery {
  std::string container;  // "" = the only container
  bool follow = false;
  bool previous = false;
  std::optional<long> tail_lines;
  std::optional<long> limit_bytes;
};

// Where container output comes from (the kubelet). `pod` is the stored Pod object.
class PodLogSource {
 public:
  virtual ~PodLogSource() = default;
  // The captured output, or an error result (400 for a bad container name).
  virtual Expected<std::string, ApiResult> read_log(const nlohmann::json& pod,
                                                    const PodLogQuery& query) = 0;
  // Streams the output so far and then new output until the container stops or `out` closes.
  virtual void follow_log(const nlohmann::json& pod, const PodLogQuery& query,
                          std::shared_ptr<ChunkWriter> out) = 0;
};

struct ApiHandlerOptions {
  // The admin's bearer token (group system:masters). Must not be empty.
  std::string admin_token;
  // A request without credentials acts as the admin (plain-HTTP clusters) instead of as
  // system:anonymous.
  bool anonymous_is_admin = false;
  std::chrono::milliseconds bookmark_interval = std::chrono::seconds(60);
  std::string git_version = "v1.32.0-depl";
};

struct WatchHold;  // api_handler.cpp

class ApiHandler {
 public:
  ApiHandler(ApiStore& store, ApiHandlerOptions options);
  ~ApiHandler();  // ends open watches
  ApiHandler(const ApiHandler&) = delete;
  ApiHandler& operator=(const ApiHandler&) = delete;

  HandlerResult handle(HttpRequest& request);

  // A token of service account `ns`/`name` (which must exist), as TokenRequest issues them.
  Expected<std::string> service_account_token(const std::string& ns, const std::string& name,
                                              std::chrono::seconds lifetime);

  // "127.0.0.1:PORT", advertised in /api.
  void set_server_address(std::string address);
  void set_log_source(PodLogSource* source);

  // Fault injection: the next `count` resource requests (not discovery, OpenAPI or health)
  // answer `code` (409, 429 with Retry-After: 1, 500, ...) without touching the store.
  void fail_next_requests(int count, int code);
  // Every resource request for which `match` is true answers `code` like fail_next_requests,
  // until called again with an empty `match`.
  void fail_requests_where(std::function<bool(const HttpRequest&)> match, int code);
  // Every request answers 503 (Retry-After: 1) until `duration` has passed.
  void answer_unavailable_for(std::chrono::milliseconds duration);
  // `observe` sees every resource request as it arrives, before any injected failure; empty:
  // none. Runs on the server's threads, under the handler's lock.
  void observe_requests(std::function<void(const HttpRequest&)> observe);
  // The HTTP watches of resource `plural` ("pods") lag: their events are kept, in order, until
  // release_watch_events(), which sends what was kept and ends the lag of every resource.
  void hold_watch_events(const std::string& plural);
  void release_watch_events();

 private:
  HandlerResult handle_resource(HttpRequest& request, const ApiPath& path, const UserInfo& user);
  HandlerResult handle_watch(HttpRequest& request, const ResourceType& type,
                             const ResourceRef& ref);
  HandlerResult handle_log(HttpRequest& request, const ResourceRef& ref);
  HttpResponse respond(const ApiResult& result, const HttpRequest& request,
                       const ResourceType* table_type);
  nlohmann::json cached_openapi_index();

  ApiStore& store_;
  ApiHandlerOptions options_;
  Authenticator authenticator_;
  RbacAuthorizer authorizer_;
  std::mutex mutex_;
  std::string server_address_ = "127.0.0.1:0";
  PodLogSource* log_source_ = nullptr;
  int fail_count_ = 0;
  int fail_code_ = 500;
  std::function<bool(const HttpRequest&)> fail_match_;
  std::function<void(const HttpRequest&)> observe_;
  int fail_match_code_ = 500;
  std::chrono::steady_clock::time_point unavailable_until_{};
  std::uint64_t openapi_generation_ = ~0ull;
  nlohmann::json openapi_index_;
  std::shared_ptr<std::function<void()>> bookmark_tick_;
  // The lagging watches (hold_watch_events); shared with every watch stream.
  std::shared_ptr<WatchHold> hold_;
  // Last member: destroyed first, so no timer callback runs while other members go away.
  TimerThread timers_;
};

}  // namespace depl::devcluster
