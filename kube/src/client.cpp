#include "depl/kube/client.hpp"

#include <stop_token>

#include <spdlog/spdlog.h>

#include "depl/kube/request_builder.hpp"

namespace depl::kube {

using nlohmann::json;

struct Client::Shared {
  Shared(std::shared_ptr<Transport> t, std::shared_ptr<CredentialProvider> c, ClientOptions o)
      : transport(std::move(t)),
        credentials(std::move(c)),
        options(std::move(o)),
        clock(options.clock ? options.clock : std::make_shared<SystemClock>()),
        limiter(options.rate_limit, clock->now()),
        backoff(options.retry, options.random) {}

  std::shared_ptr<Transport> transport;
  std::shared_ptr<CredentialProvider> credentials;
  ClientOptions options;
  std::shared_ptr<Clock> clock;
  TokenBucket limiter;
  Backoff backoff;
  std::stop_source stop;

  // Waits `delay` on the injected clock; false when the client was stopped.
  bool wait(std::chrono::nanoseconds delay) {
    if (stop.stop_requested()) return false;
    if (delay <= std::chrono::nanoseconds(0)) return true;
    return clock->sleep_for(std::chrono::duration_cast<Clock::Duration>(delay), stop.get_token());
  }

  // Rate limit, then credentials and identity headers. Returns the error to give the caller.
  std::optional<ApiError> prepare(HttpRequest& request) {
    if (!wait(limiter.reserve(clock->now()))) {
      return ApiError::transport(ApiError::kCancelled, "the client was stopped");
    }
    if (!options.user_agent.empty()) request.set_header("User-Agent", options.user_agent);
    if (credentials) {
      auto current = credentials->credentials();
      if (!current) return current.error();
      if (!current->authorization.empty())
        request.set_header("Authorization", current->authorization);
      request.tls_identity = current->tls_identity;
    }
    return std::nullopt;
  }

  void note_status(int status) {
    // The 401 still goes back to the caller; the provider refreshes for the next request.
    if (status == 401 && credentials) credentials->on_unauthorized();
  }
};

Client::Client(std::shared_ptr<Transport> transport,
               std::shared_ptr<CredentialProvider> credentials, ClientOptions options)
    : shared_(std::make_shared<Shared>(std::move(transport), std::move(credentials),
                                       std::move(options))) {}

const std::string& Client::default_namespace() const {
  return shared_->options.default_namespace;
}

void Client::stop() {
  shared_->stop.request_stop();
}

Expected<HttpResponse, ApiError> Client::send(HttpRequest request) {
  Shared& s = *shared_;
  const int max_attempts = std::max(1, s.options.retry.max_attempts);
  for (int attempt = 1;; ++attempt) {
    HttpRequest attempt_request = request;
    if (auto failed = s.prepare(attempt_request)) return unexpected(std::move(*failed));
    // Asked after the rate limiter's wait, as close to sending as possible.
    if (s.options.write_fence && request.method != "GET" && request.method != "HEAD" &&
        !s.options.write_fence()) {
      return unexpected(ApiError::transport(
          ApiError::kFenced, request.method + " " + request.path +
                                 " not sent: this client may not write now (not the leader)"));
    }
    const auto sent_at = std::chrono::steady_clock::now();
    auto result = s.transport->send(attempt_request, s.options.request_timeout);
    if (s.options.on_request) {
      s.options.on_request({request.method, result ? result->status : 0,
                            std::chrono::steady_clock::now() - sent_at, false});
    }
    ApiError failure;
    if (result) {
      s.note_status(result->status);
      if (result->status != 429 && result->status < 500) return result;
      failure =
          ApiError::from_response(result->status, result->body, result->header("Retry-After"));
    } else {
      failure = result.error();
    }
    const bool retry =
        attempt < max_attempts && is_retryable(request.method, failure) &&
        (!failure.retry_after || *failure.retry_after <= s.options.retry.max_retry_after);
    if (!retry) {
      if (result) return result;
      return unexpected(std::move(failure));
    }
    const auto delay = s.backoff.delay(attempt, failure);
    spdlog::warn("kube request retry method={} path={} attempt={} delay_ms={} error=\"{}\"",
                 request.method, request.path, attempt, delay.count(), failure.to_string());
    if (!s.wait(delay)) {
      return unexpected(ApiError::transport(ApiError::kCancelled, "the client was stopped"));
    }
  }
}

Expected<json, ApiError> Client::send_json(HttpRequest request, bool decode,
                                           const FieldFilter* filter) {
  auto response = send(std::move(request));
  if (!response) return unexpected(std::move(response).error());
  if (response->status < 200 || response->status >= 300) {
    return unexpected(
        ApiError::from_response(response->status, response->body, response->header("Retry-After")));
  }
  if (response->body.empty() || !decode) return json();
  json parsed;
  if (filter != nullptr) {
    auto filtered = parse_filtered(response->body, *filter);
    parsed = filtered ? std::move(*filtered) : json(json::value_t::discarded);
  } else {
    parsed = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  }
  if (parsed.is_discarded()) {
    return unexpected(ApiError::transport(
        ApiError::kDecodeError, "the server's " + std::to_string(response->status) +
                                    " response is not JSON: " + response->body.substr(0, 120)));
  }
  return parsed;
}

namespace {
template <typename Build>
Expected<json, ApiError> run(Client& client, Build&& built, bool decode = true) {
  if (!built) return unexpected(std::move(built).error());
  return client.send_json(std::move(*built), decode);
}
}  // namespace

Expected<json, ApiError> Client::get(const ResourceType& type, std::string_view ns,
                                     std::string_view name, const GetOptions& options) {
  return run(*this, requests::get(type, ns, name, options));
}

Expected<json, ApiError> Client::list(const ResourceType& type, std::string_view ns,
                                      const ListOptions& options, const FieldFilter* item_filter) {
  auto built = requests::list(type, ns, options);
  if (!built) return unexpected(std::move(built).error());
  if (item_filter == nullptr) return send_json(std::move(*built));
  FieldFilter list_filter;
  list_filter.keep({"apiVersion"}).keep({"kind"}).keep({"metadata"});
  list_filter.keep({"items"}, *item_filter);
  return send_json(std::move(*built), true, &list_filter);
}

Expected<json, ApiError> Client::list_all(const ResourceType& type, std::string_view ns,
                                          ListOptions options) {
  json merged;
  while (true) {
    auto page = list(type, ns, options);
    if (!page) return page;
    std::string next;
    if (page->contains("metadata") && (*page)["metadata"].is_object()) {
      next = (*page)["metadata"].value("continue", "");
    }
    if (merged.is_null()) {
      merged = std::move(*page);
      if (!merged.contains("items") || !merged["items"].is_array()) merged["items"] = json::array();
    } else if (page->contains("items") && (*page)["items"].is_array()) {
      for (auto& item : (*page)["items"]) merged["items"].push_back(std::move(item));
    }
    if (next.empty()) break;
    if (next == options.continue_token) {
      return unexpected(ApiError::transport(
          ApiError::kDecodeError,
          "list " + type.resource + ": the server returned the same continue token twice"));
    }
    options.continue_token = next;
    // The list's resourceVersion stays the one of the first page; the token encodes it.
    options.resource_version.clear();
    options.resource_version_match.clear();
  }
  if (merged.contains("metadata") && merged["metadata"].is_object()) {
    merged["metadata"].erase("continue");
    merged["metadata"].erase("remainingItemCount");
  }
  return merged;
}

Expected<json, ApiError> Client::create(const ResourceType& type, std::string_view ns,
                                        const json& object, const WriteOptions& options) {
  return run(*this, requests::create(type, ns, object, options), options.return_object);
}

Expected<json, ApiError> Client::replace(const ResourceType& type, const json& object,
                                         const WriteOptions& options) {
  return run(*this, requests::replace(type, object, options), options.return_object);
}

Expected<json, ApiError> Client::replace_status(const ResourceType& type, const json& object,
                                                const WriteOptions& options) {
  return run(*this, requests::replace_status(type, object, options), options.return_object);
}

Expected<json, ApiError> Client::remove(const ResourceType& type, std::string_view ns,
                                        std::string_view name, const DeleteOptions& options) {
  return run(*this, requests::remove(type, ns, name, options));
}

Expected<json, ApiError> Client::patch(const ResourceType& type, std::string_view ns,
                                       std::string_view name, PatchType patch_type,
                                       const json& patch, const PatchOptions& options) {
  return run(*this, requests::patch(type, ns, name, patch_type, patch, options));
}

Expected<WatchStream, ApiError> Client::watch(const ResourceType& type, std::string_view ns,
                                              const WatchOptions& options) {
  auto built = requests::watch(type, ns, options);
  if (!built) return unexpected(std::move(built).error());
  Shared& s = *shared_;
  HttpRequest request = std::move(*built);
  if (auto failed = s.prepare(request)) return unexpected(std::move(*failed));
  const auto idle = options.timeout_seconds ? std::chrono::seconds(*options.timeout_seconds) +
                                                  s.options.watch_idle_margin
                                            : s.options.watch_default_idle_timeout;
  const auto sent_at = std::chrono::steady_clock::now();
  auto stream = s.transport->open_stream(
      request, std::chrono::duration_cast<std::chrono::milliseconds>(idle));
  if (s.options.on_request) {
    s.options.on_request({request.method, stream ? (*stream)->status() : 0,
                          std::chrono::steady_clock::now() - sent_at, true});
  }
  if (!stream) return unexpected(std::move(stream).error());
  const int status = (*stream)->status();
  s.note_status(status);
  if (status != 200) {
    // Read the (small) error body to build the ApiError, bounded against a misbehaving server.
    std::string body;
    constexpr std::size_t kMaxErrorBody = 64 * 1024;
    while (body.size() < kMaxErrorBody) {
      auto bytes = (*stream)->read();
      if (!bytes || bytes->empty()) break;
      body += *bytes;
    }
    return unexpected(
        ApiError::from_response(status, body, find_header((*stream)->headers(), "Retry-After")));
  }
  return WatchStream(std::move(*stream));
}

}  // namespace depl::kube
