// The Kubernetes API client: typed-by-GVR verbs over any Transport, objects as nlohmann::json,
// every outcome an Expected<..., ApiError>. Adds credentials, rate limiting and retries around
// the transport; the requests themselves come from request_builder.hpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/api_error.hpp"
#include "depl/kube/credentials.hpp"
#include "depl/kube/field_filter.hpp"
#include "depl/kube/http.hpp"
#include "depl/kube/options.hpp"
#include "depl/kube/rate_limiter.hpp"
#include "depl/kube/resource.hpp"
#include "depl/kube/retry_policy.hpp"
#include "depl/kube/watch_stream.hpp"

namespace depl::kube {

// One request attempt that went on the wire, for metrics (ClientOptions::on_request).
struct RequestOutcome {
  std::string_view method;  // HTTP method: GET, POST, PUT, PATCH, DELETE
  int code = 0;             // HTTP status; 0 when no response came (connection, timeout)
  std::chrono::nanoseconds duration{};
  bool watch = false;  // the opening of a watch (its duration is until the response head)
};

struct ClientOptions {
  RateLimit rate_limit{};  // QPS 20, burst 40
  RetryPolicy retry{};
  std::chrono::milliseconds request_timeout{30'000};
  // A watch with timeoutSeconds T fails when no byte arrives for T + margin (a silently dropped
  // connection must not hang it). Without timeoutSeconds the idle timeout is the default below.
  std::chrono::seconds watch_idle_margin{30};
  std::chrono::seconds watch_default_idle_timeout{3600};
  std::string user_agent = "depl-operator/0.1";
  std::string default_namespace = "default";
  // Time source for rate limiting and backoff sleeps; null = SystemClock.
  std::shared_ptr<Clock> clock{};
  // Jitter of retry backoff; null = seeded from std::random_device.
  std::shared_ptr<RandomSource> random{};
  // When set, a request that may change something (any method but GET and HEAD) is sent only
  // while this returns true, asked right before each attempt goes on the wire; otherwise it
  // fails with ApiError reason kFenced and never reaches the server. Leader election fences a
  // replica's writes with it (LeaderElector::holds_lease), so a replica that cannot be sure of
  // its lease stops writing even while a request of its own is stuck in a retry loop.
  std::function<bool()> write_fence{};
  // Called on the requesting thread after every attempt that was sent (each retry counts), and
  // when a watch opens: a controller's request metrics.
  std::function<void(const RequestOutcome&)> on_request{};
};

// Thread-safe; copies share the same transport, limiter and credentials.
class Client {
 public:
  // `credentials` may be null (no authentication, e.g. a plain-HTTP dev cluster).
  Client(std::shared_ptr<Transport> transport, std::shared_ptr<CredentialProvider> credentials,
         ClientOptions options = {});

  const std::string& default_namespace() const;
  // Makes every current and future rate-limit or backoff wait of this client (and its copies)
  // end at once with ApiError Cancelled; used on shutdown. Requests already on the wire finish.
  void stop();

  Expected<nlohmann::json, ApiError> get(const ResourceType& type, std::string_view ns,
                                         std::string_view name, const GetOptions& options = {});
  // The List object: items, metadata.resourceVersion, metadata.continue (when paging). With
  // `item_filter`, each item is decoded with only what it keeps (field_filter.hpp); the List's
  // own members are kept whole.
  Expected<nlohmann::json, ApiError> list(const ResourceType& type, std::string_view ns,
                                          const ListOptions& options = {},
                                          const FieldFilter* item_filter = nullptr);
  // All pages of a list (following `continue` with options.limit per page) merged into one
  // List object. A 410 on an expired continue token is returned as the error.
  Expected<nlohmann::json, ApiError> list_all(const ResourceType& type, std::string_view ns,
                                              ListOptions options = {});
  Expected<nlohmann::json, ApiError> create(const ResourceType& type, std::string_view ns,
                                            const nlohmann::json& object,
                                            const WriteOptions& options = {});
  // PUT; name/namespace/resourceVersion from the object's metadata.
  Expected<nlohmann::json, ApiError> replace(const ResourceType& type, const nlohmann::json& object,
                                             const WriteOptions& options = {});
  Expected<nlohmann::json, ApiError> replace_status(const ResourceType& type,
                                                    const nlohmann::json& object,
                                                    const WriteOptions& options = {});
  // DELETE. Returns the body: the object (still present with deletionTimestamp when it has
  // finalizers, or as it was) or a Status{status: Success}. 200 and 202 are both success.
  Expected<nlohmann::json, ApiError> remove(const ResourceType& type, std::string_view ns,
                                            std::string_view name,
                                            const DeleteOptions& options = {});
  Expected<nlohmann::json, ApiError> patch(const ResourceType& type, std::string_view ns,
                                           std::string_view name, PatchType patch_type,
                                           const nlohmann::json& patch,
                                           const PatchOptions& options = {});
  // Opens a watch; returns once the response head arrived. A non-200 answer is the error.
  // Rate-limited and authenticated but not retried: the watcher reconnects with its own
  // backoff and decides between resuming and relisting.
  Expected<WatchStream, ApiError> watch(const ResourceType& type, std::string_view ns,
                                        const WatchOptions& options = {});

  // Any request through credentials, rate limiting and retries; non-2xx responses are
  // returned as responses, not errors (e.g. /version, /healthz, discovery).
  Expected<HttpResponse, ApiError> send(HttpRequest request);
  // Sends and converts: 2xx body parsed as JSON (null when `decode` is false, unparsed; with
  // `filter`, only what it keeps), otherwise ApiError from the Status body.
  Expected<nlohmann::json, ApiError> send_json(HttpRequest request, bool decode = true,
                                               const FieldFilter* filter = nullptr);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_{};
};

}  // namespace depl::kube
