#include "server/api_handler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <set>

#include "depl/common/json_dump.hpp"
#include "depl/devcluster/table.hpp"
#include "server/api_path.hpp"
#include "server/auth_api.hpp"
#include "server/discovery.hpp"
#include "server/openapi.hpp"
#include "server/protobuf_decoding.hpp"
#include "server/request_attributes.hpp"

namespace depl::devcluster {

namespace {

using json = nlohmann::json;

HttpResponse json_response(int code, const json& body) {
  return HttpResponse{code, "application/json", body.dump(), {}};
}

HttpResponse status_response(int code, const std::string& reason, const std::string& message) {
  return json_response(code, status_body(code, reason, message));
}

bool truthy(const std::optional<std::string>& v) {
  return v && (*v == "1" || *v == "true" || *v == "True");
}

template <typename Int>
std::optional<Int> parse_int(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  Int value{};
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
  return value;
}

// True when the Accept header asks for meta.k8s.io Table (kubectl get).
bool wants_table(const HttpRequest& request) {
  const std::string accept = request.header("accept");
  size_t start = 0;
  while (start <= accept.size()) {
    size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    const std::string media = accept.substr(start, end - start);
    if (media.find("as=Table") != std::string::npos &&
        media.find("g=meta.k8s.io") != std::string::npos) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

std::string include_object(const HttpRequest& request) {
  auto v = request.query_param("includeObject");
  return v && !v->empty() ? *v : "Metadata";
}

ListOptions list_options(const HttpRequest& request) {
  ListOptions o;
  o.label_selector = request.query_param("labelSelector").value_or("");
  o.field_selector = request.query_param("fieldSelector").value_or("");
  o.limit = parse_int<std::int64_t>(request.query_param("limit")).value_or(0);
  o.continue_token = request.query_param("continue").value_or("");
  o.resource_version = request.query_param("resourceVersion").value_or("");
  o.resource_version_match = request.query_param("resourceVersionMatch").value_or("");
  return o;
}

WriteOptions write_options(const HttpRequest& request) {
  WriteOptions o;
  o.dry_run = request.query_param("dryRun").value_or("") == "All";
  o.field_manager = request.query_param("fieldManager").value_or("");
  o.field_validation = request.query_param("fieldValidation").value_or("");
  o.force = truthy(request.query_param("force"));
  o.user_agent = request.header("user-agent");
  // The answer is only serialized (respond()): no copy of the stored object for it.
  o.shared_answer = true;
  return o;
}

// DeleteOptions come in the body (kubectl, client-go) or as query parameters.
Expected<DeleteOptions, HttpResponse> delete_options(const HttpRequest& request) {
  DeleteOptions o;
  o.user_agent = request.header("user-agent");
  if (!request.body.empty()) {
    json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return unexpected(status_response(400, "BadRequest",
                                        "the DeleteOptions request body is not a JSON object"));
    }
    if (body.contains("propagationPolicy") && body["propagationPolicy"].is_string()) {
      o.propagation_policy = body["propagationPolicy"].get<std::string>();
    }
    if (body.contains("orphanDependents") && body["orphanDependents"].is_boolean() &&
        o.propagation_policy.empty()) {
      o.propagation_policy = body["orphanDependents"].get<bool>() ? "Orphan" : "Background";
    }
    if (body.contains("gracePeriodSeconds") && body["gracePeriodSeconds"].is_number_integer()) {
      o.grace_period_seconds = body["gracePeriodSeconds"].get<std::int64_t>();
    }
    if (body.contains("preconditions") && body["preconditions"].is_object()) {
      const auto& pre = body["preconditions"];
      if (pre.contains("uid") && pre["uid"].is_string()) {
        o.precondition_uid = pre["uid"].get<std::string>();
      }
      if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string()) {
        o.precondition_resource_version = pre["resourceVersion"].get<std::string>();
      }
    }
    if (body.contains("dryRun") && body["dryRun"].is_array()) {
      for (const auto& d : body["dryRun"]) o.dry_run = o.dry_run || d == "All";
    }
  }
  if (auto p = request.query_param("propagationPolicy")) o.propagation_policy = *p;
  if (auto g = parse_int<std::int64_t>(request.query_param("gracePeriodSeconds"))) {
    o.grace_period_seconds = *g;
  }
  if (request.query_param("dryRun").value_or("") == "All") o.dry_run = true;
  return o;
}

// The object a POST or PUT sends: JSON, or a Kubernetes protobuf envelope.
Expected<json, HttpResponse> decode_body(const HttpRequest& request) {
  const std::string content_type = request.header("content-type");
  if (content_type.find("protobuf") != std::string::npos) {
    auto decoded = decode_protobuf_object(request.body);
    if (!decoded) {
      return unexpected(status_response(
          400, "BadRequest",
          "the protobuf request body could not be decoded: " + decoded.error().message));
    }
    return std::move(*decoded);
  }
  if (content_type.find("cbor") != std::string::npos) {
    return unexpected(status_response(415, "UnsupportedMediaType",
                                      "the body of the request was in an unknown format - "
                                      "accepted media types include: application/json, "
                                      "application/yaml, application/vnd.kubernetes.protobuf"));
  }
  json body = json::parse(request.body, nullptr, false);
  if (body.is_discarded()) {
    return unexpected(status_response(400, "BadRequest", "the request body is not valid JSON"));
  }
  return body;
}

// A JSON text's members that appear twice in their object ("metadata.name",
// "spec.containers[0].image"), as kube-apiserver's strict decoder names them.
std::vector<std::string> duplicate_members(const std::string& text) {
  struct Frame {
    bool array = false;
    std::string path;
    std::set<std::string> keys;
    std::string key;
    std::size_t index = 0;
  };
  std::vector<Frame> stack;
  std::vector<std::string> duplicates;
  auto child_path = [&]() -> std::string {
    if (stack.empty()) return "";
    const Frame& top = stack.back();
    if (top.array) return top.path + "[" + std::to_string(top.index) + "]";
    return top.path.empty() ? top.key : top.path + "." + top.key;
  };
  auto advance = [&] {
    if (!stack.empty() && stack.back().array) ++stack.back().index;
  };
  json::parser_callback_t callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        Frame frame;
        frame.array = event == json::parse_event_t::array_start;
        frame.path = child_path();
        stack.push_back(std::move(frame));
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        advance();
        break;
      case json::parse_event_t::key:
        if (!stack.empty() && parsed.is_string()) {
          Frame& top = stack.back();
          top.key = parsed.get<std::string>();
          if (!top.keys.insert(top.key).second) duplicates.push_back(child_path());
        }
        break;
      case json::parse_event_t::value:
        advance();
        break;
    }
    return true;
  };
  const json parsed = json::parse(text, callback, false);
  (void)parsed;  // only the duplicates are wanted
  return duplicates;
}

// What a POST or PUT sends: a JSON object (and the members it repeats), or a Kubernetes protobuf
// envelope.
struct DecodedBody {
  json object;
  std::vector<std::string> duplicates;
};

Expected<DecodedBody, HttpResponse> decode_write_body(const HttpRequest& request) {
  auto object = decode_body(request);
  if (!object) return unexpected(object.error());
  const std::string content_type = request.header("content-type");
  const bool json_text = content_type.find("protobuf") == std::string::npos;
  return DecodedBody{std::move(*object),
                     json_text ? duplicate_members(request.body) : std::vector<std::string>()};
}

json version_document(const std::string& git_version) {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", git_version},
          {"gitCommit", "0000000000000000000000000000000000000000"},
          {"gitTreeState", "clean"},
          {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "go1.23.0"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

// The per-watch glue between a store subscription and a chunked HTTP response.
struct WatchBridge;

}  // namespace

// The resources whose HTTP watches lag (ApiHandler::hold_watch_events), and the open watch
// streams, so that a release sends what was kept at once.
struct WatchHold {
  std::atomic<bool> any{false};  // read on every event: the common case takes no lock
  std::mutex mutex;
  std::set<std::string> plurals;
  std::vector<std::weak_ptr<WatchBridge>> bridges;

  bool holds(const std::string& plural) {
    if (!any.load(std::memory_order_acquire)) return false;
    std::lock_guard lock(mutex);
    return plurals.count(plural) > 0;
  }
};

namespace {

struct WatchBridge : std::enable_shared_from_this<WatchBridge> {
  std::shared_ptr<WatchSubscription> subscription;
  std::shared_ptr<ChunkWriter> writer;
  std::mutex mutex;  // keeps events in order when notifiers race
  bool table = false;
  std::string include;
  ResourceType type;
  ApiStore* store = nullptr;
  std::shared_ptr<WatchHold> hold;

  std::string encode(const WatchEvent& event) const {
    if (table && event.object &&
        (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED")) {
      json line = {
          {"type", event.type},
          {"object", to_table(type, *event.object, std::chrono::system_clock::now(), include)}};
      return line.dump() + "\n";
    }
    // Written around the stored object rather than through to_json(), which copies it: this runs
    // for every event of every HTTP watch.
    std::string line = R"({"type":)";
    append_json(line, json(event.type));
    line += R"(,"object":)";
    if (event.object) {
      append_json(line, *event.object);
    } else {
      line += "{}";
    }
    line += "}\n";
    return line;
  }

  void pump() {
    std::lock_guard lock(mutex);
    if (!writer) return;  // not started yet: its start pumps
    // A lagging watch keeps its events (and its end) in the subscription until released.
    if (hold && hold->holds(type.plural)) return;
    const bool was_closed = subscription->closed();
    auto events = subscription->drain();
    std::string out;
    for (const auto& e : events) out += encode(e);
    if (!out.empty()) writer->write(std::move(out));
    if (was_closed) writer->finish();
  }
};

}  // namespace

ApiHandler::ApiHandler(ApiStore& store, ApiHandlerOptions options)
    : store_(store),
      options_(std::move(options)),
      authenticator_(store, options_.admin_token, options_.anonymous_is_admin),
      authorizer_(store),
      hold_(std::make_shared<WatchHold>()) {
  if (options_.bookmark_interval.count() > 0) {
    // Periodic bookmarks keep long watches resumable (client-go asks for them).
    auto tick = std::make_shared<std::function<void()>>();
    *tick = [this, weak = std::weak_ptr<std::function<void()>>(tick)] {
      store_.send_bookmarks();
      if (auto again = weak.lock()) timers_.schedule_after(options_.bookmark_interval, *again);
    };
    bookmark_tick_ = tick;
    timers_.schedule_after(options_.bookmark_interval, *tick);
  }
}

ApiHandler::~ApiHandler() = default;

Expected<std::string> ApiHandler::service_account_token(const std::string& ns,
                                                        const std::string& name,
                                                        std::chrono::seconds lifetime) {
  auto account = store_.get(ResourceRef{"", "v1", "serviceaccounts", ns, name, ""});
  if (!account.ok()) return error(account.answer().value("message", "no such service account"));
  const std::string uid = account.answer().value("/metadata/uid"_json_pointer, std::string());
  return authenticator_.issue_token(ns, name, uid, lifetime).first;
}

void ApiHandler::set_server_address(std::string address) {
  std::lock_guard lock(mutex_);
  server_address_ = std::move(address);
}

void ApiHandler::set_log_source(PodLogSource* source) {
  std::lock_guard lock(mutex_);
  log_source_ = source;
}

void ApiHandler::hold_watch_events(const std::string& plural) {
  std::lock_guard lock(hold_->mutex);
  hold_->plurals.insert(plural);
  hold_->any.store(true, std::memory_order_release);
}

void ApiHandler::release_watch_events() {
  std::vector<std::shared_ptr<WatchBridge>> open;
  {
    std::lock_guard lock(hold_->mutex);
    hold_->plurals.clear();
    hold_->any.store(false, std::memory_order_release);
    for (const auto& weak : hold_->bridges) {
      if (auto bridge = weak.lock()) open.push_back(std::move(bridge));
    }
  }
  for (const auto& bridge : open) {
    bridge->pump();
  }
}

void ApiHandler::fail_next_requests(int count, int code) {
  std::lock_guard lock(mutex_);
  fail_count_ = count;
  fail_code_ = code;
}

void ApiHandler::fail_requests_where(std::function<bool(const HttpRequest&)> match, int code) {
  std::lock_guard lock(mutex_);
  fail_match_ = std::move(match);
  fail_match_code_ = code;
}

void ApiHandler::observe_requests(std::function<void(const HttpRequest&)> observe) {
  std::lock_guard lock(mutex_);
  observe_ = std::move(observe);
}

void ApiHandler::answer_unavailable_for(std::chrono::milliseconds duration) {
  std::lock_guard lock(mutex_);
  unavailable_until_ = std::chrono::steady_clock::now() + duration;
}

json ApiHandler::cached_openapi_index() {
  const auto generation = store_.registry_generation();
  std::lock_guard lock(mutex_);
  if (generation != openapi_generation_) {
    openapi_index_ = openapi_v3_index(store_.resource_types());
    openapi_generation_ = generation;
  }
  return openapi_index_;
}

HandlerResult ApiHandler::handle(HttpRequest& request) {
  {
    std::lock_guard lock(mutex_);
    if (std::chrono::steady_clock::now() < unavailable_until_) {
      auto r = status_response(503, "ServiceUnavailable",
                               "the server is currently unable to handle the request");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
  }
  const ApiPath path = parse_api_path(request.path);
  // Every request, discovery and health checks included, is authenticated and then authorized,
  // as kube-apiserver's filters do before any handler runs.
  auto authenticated = authenticator_.authenticate(request);
  if (!authenticated) return json_response(authenticated.error().code, authenticated.error().body);
  auto user = impersonate(request, *authenticated, authorizer_);
  if (!user) return json_response(user.error().code, user.error().body);
  {
    const RequestAttributes attributes = request_attributes(request, path, *user);
    if (!authorizer_.authorize(attributes).allowed) {
      const ApiResult refused = forbidden(attributes);
      return json_response(refused.code, refused.body);
    }
  }
  const bool read = request.method == "GET" || request.method == "HEAD";
  if (path.kind != ApiPath::Kind::Resource && path.kind != ApiPath::Kind::NotFound && !read) {
    return status_response(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource");
  }
  switch (path.kind) {
    case ApiPath::Kind::Version:
      return json_response(200, version_document(options_.git_version));
    case ApiPath::Kind::Health:
      return HttpResponse{200, "text/plain; charset=utf-8", "ok", {}};
    case ApiPath::Kind::CoreVersions: {
      std::lock_guard lock(mutex_);
      return json_response(200, core_versions_document(server_address_));
    }
    case ApiPath::Kind::GroupList:
      return json_response(200, group_list_document(store_.resource_types()));
    case ApiPath::Kind::Group: {
      if (auto doc = group_document(store_.resource_types(), path.ref.group)) {
        return json_response(200, *doc);
      }
      break;
    }
    case ApiPath::Kind::ResourceList: {
      if (path.ref.group.empty() && request.path.rfind("/apis", 0) == 0) break;
      if (auto doc =
              resource_list_document(store_.resource_types(), path.ref.group, path.ref.version)) {
        return json_response(200, *doc);
      }
      break;
    }
    case ApiPath::Kind::OpenApiV3Index:
      return json_response(200, cached_openapi_index());
    case ApiPath::Kind::OpenApiV3Document: {
      if (auto doc = openapi_v3_document(store_.resource_types(), path.openapi_path)) {
        return json_response(200, *doc);
      }
      break;
    }
    case ApiPath::Kind::OpenApiV2:
      // Only OpenAPI v3 is served; kubectl uses v2 only when v3 fails.
      return status_response(404, "NotFound", "OpenAPI v2 is not served; use /openapi/v3");
    case ApiPath::Kind::Resource: {
      {
        std::lock_guard lock(mutex_);
        if (observe_) observe_(request);
        const bool matched = fail_match_ && fail_match_(request);
        if (fail_count_ > 0 || matched) {
          if (!matched) --fail_count_;
          const int code = matched ? fail_match_code_ : fail_code_;
          // Status.reason as kube-apiserver gives it for each code.
          const std::string reason = code == 400   ? "BadRequest"
                                     : code == 401 ? "Unauthorized"
                                     : code == 403 ? "Forbidden"
                                     : code == 404 ? "NotFound"
                                     : code == 409 ? "Conflict"
                                     : code == 410 ? "Expired"
                                     : code == 422 ? "Invalid"
                                     : code == 429 ? "TooManyRequests"
                                     : code == 500 ? "InternalError"
                                     : code == 503 ? "ServiceUnavailable"
                                     : code == 504 ? "Timeout"
                                                   : "Unknown";
          auto r = status_response(code, reason, "injected failure (dev-cluster fault injection)");
          if (code == 429 || code == 503) r.headers.emplace_back("Retry-After", "1");
          return r;
        }
      }
      return handle_resource(request, path, *user);
    }
    case ApiPath::Kind::NotFound:
      break;
  }
  return status_response(404, "NotFound", "the server could not find the requested resource");
}

HttpResponse ApiHandler::respond(const ApiResult& result, const HttpRequest& request,
                                 const ResourceType* table_type) {
  HttpResponse response;
  response.status = result.code;
  const json& answer = result.answer();
  if (table_type && result.ok() && wants_table(request) && answer.is_object() &&
      answer.value("kind", "") != "Status") {
    response.body =
        to_table(*table_type, answer, std::chrono::system_clock::now(), include_object(request))
            .dump();
  } else {
    response.body = dump_json(answer);
  }
  for (const auto& w : result.warnings) {
    std::string escaped;
    for (char c : w) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      escaped.push_back(c);
    }
    response.headers.emplace_back("Warning", "299 - \"" + escaped + "\"");
  }
  return response;
}

HandlerResult ApiHandler::handle_resource(HttpRequest& request, const ApiPath& path,
                                          const UserInfo& user) {
  const ResourceRef& ref = path.ref;
  const auto type = store_.find_type(ref.group, ref.version, ref.plural);
  const auto not_found_response = [] {
    return status_response(404, "NotFound", "the server could not find the requested resource");
  };
  if (!type) return not_found_response();
  if ((type->namespaced && ref.ns.empty() && !ref.name.empty() && !path.legacy_watch) ||
      (!type->namespaced && !ref.ns.empty())) {
    return not_found_response();
  }
  if (is_auth_resource(ref)) {
    if (request.method != "POST") {
      return status_response(405, "MethodNotAllowed",
                             "the server does not allow this method on the requested resource");
    }
    auto body = decode_body(request);
    if (!body) return body.error();
    return respond(
        answer_auth_request(ref, std::move(*body), user, store_, authorizer_, authenticator_),
        request, nullptr);
  }
  if (!type->persisted) {
    return status_response(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource");
  }
  if (!ref.subresource.empty()) {
    const bool pods = ref.group.empty() && ref.plural == "pods";
    const bool log = ref.subresource == "log" && pods;
    const bool binding = ref.subresource == "binding" && pods;
    const bool status = ref.subresource == "status" && type->has_status_subresource;
    if (!log && !binding && !status) return not_found_response();
    if (log) {
      if (request.method != "GET") {
        return status_response(405, "MethodNotAllowed", "pods/log only supports GET");
      }
      return handle_log(request, ref);
    }
    if (binding && request.method != "POST") {
      return status_response(405, "MethodNotAllowed", "pods/binding only supports POST");
    }
  }
  const std::string& method = request.method;
  if (method == "GET" || method == "HEAD") {
    if (path.legacy_watch || truthy(request.query_param("watch"))) {
      return handle_watch(request, *type, ref);
    }
    if (!ref.name.empty()) return respond(store_.get(ref), request, &*type);
    return respond(store_.list(ref, list_options(request)), request, &*type);
  }
  if (method == "POST") {
    // POST creates in a collection; the one named target that takes it is pods/<name>/binding.
    if (!ref.name.empty() && ref.subresource != "binding") {
      return status_response(405, "MethodNotAllowed",
                             "POST is only allowed on a collection, not on a named object");
    }
    auto body = decode_write_body(request);
    if (!body) return body.error();
    WriteOptions options = write_options(request);
    options.duplicate_fields = std::move(body->duplicates);
    return respond(store_.create(ref, std::move(body->object), options), request, nullptr);
  }
  if (method == "PUT") {
    if (ref.name.empty()) return status_response(405, "MethodNotAllowed", "PUT needs a name");
    auto body = decode_write_body(request);
    if (!body) return body.error();
    WriteOptions options = write_options(request);
    options.duplicate_fields = std::move(body->duplicates);
    return respond(store_.update(ref, std::move(body->object), options), request, nullptr);
  }
  if (method == "PATCH") {
    if (ref.name.empty()) return status_response(405, "MethodNotAllowed", "PATCH needs a name");
    std::string content_type = request.header("content-type");
    const auto semicolon = content_type.find(';');
    if (semicolon != std::string::npos) content_type.resize(semicolon);
    const auto patch_type = patch_type_from_content_type(content_type);
    if (!patch_type) {
      return status_response(415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted media "
                             "types include: application/json-patch+json, "
                             "application/merge-patch+json, application/apply-patch+yaml, "
                             "application/strategic-merge-patch+json");
    }
    return respond(store_.patch(ref, *patch_type, request.body, write_options(request)), request,
                   nullptr);
  }
  if (method == "DELETE") {
    auto options = delete_options(request);
    if (!options) return options.error();
    if (ref.name.empty()) {
      return respond(store_.remove_collection(ref, list_options(request), *options), request,
                     nullptr);
    }
    return respond(store_.remove(ref, *options), request, nullptr);
  }
  return status_response(405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource");
}

HandlerResult ApiHandler::handle_watch(HttpRequest& request, const ResourceType& type,
                                       const ResourceRef& ref) {
  WatchOptions options;
  options.label_selector = request.query_param("labelSelector").value_or("");
  options.field_selector = request.query_param("fieldSelector").value_or("");
  options.resource_version = request.query_param("resourceVersion").value_or("");
  options.allow_bookmarks = truthy(request.query_param("allowWatchBookmarks"));
  options.send_initial_events = truthy(request.query_param("sendInitialEvents"));
  ResourceRef collection = ref;
  if (!ref.name.empty()) {
    // A watch on one object is a watch on its collection restricted to its name.
    collection.name.clear();
    const std::string by_name = "metadata.name=" + ref.name;
    options.field_selector =
        options.field_selector.empty() ? by_name : options.field_selector + "," + by_name;
  }
  auto subscription = store_.watch(collection, options);
  if (!subscription) return respond(subscription.error(), request, nullptr);

  auto bridge = std::make_shared<WatchBridge>();
  bridge->subscription = std::move(*subscription);
  bridge->table = wants_table(request);
  bridge->include = include_object(request);
  bridge->type = type;
  bridge->store = &store_;
  bridge->hold = hold_;
  {
    std::lock_guard lock(hold_->mutex);
    std::erase_if(hold_->bridges, [](const auto& b) { return b.expired(); });
    hold_->bridges.push_back(bridge);
  }
  const auto timeout = parse_int<long>(request.query_param("timeoutSeconds"));

  StreamingResponse response;
  response.content_type = "application/json";
  response.start = [this, bridge, timeout](std::shared_ptr<ChunkWriter> writer) {
    {
      std::lock_guard lock(bridge->mutex);  // release_watch_events() may pump meanwhile
      bridge->writer = writer;
    }
    std::weak_ptr<WatchBridge> weak = bridge;
    bridge->subscription->set_notifier([weak] {
      if (auto b = weak.lock()) b->pump();
    });
    TimerThread::Id timer = 0;
    if (timeout && *timeout > 0) {
      timer = timers_.schedule_after(std::chrono::seconds(*timeout), [weak] {
        if (auto b = weak.lock()) {
          b->subscription->close();  // the notifier then finishes the stream
          b->pump();
        }
      });
    }
    // The writer owns the bridge from here on: when the client goes, everything is released.
    writer->on_close([this, bridge, timer] {
      bridge->subscription->close();
      if (timer) timers_.cancel(timer);
    });
    bridge->pump();  // the initial events were queued before the notifier was set
  };
  return response;
}

HandlerResult ApiHandler::handle_log(HttpRequest& request, const ResourceRef& ref) {
  ApiResult pod = store_.get(ResourceRef{"", ref.version, "pods", ref.ns, ref.name, ""});
  if (!pod.ok()) return respond(pod, request, nullptr);
  PodLogSource* source;
  {
    std::lock_guard lock(mutex_);
    source = log_source_;
  }
  if (!source) {
    return status_response(400, "BadRequest", "no kubelet is running: logs are unavailable");
  }
  PodLogQuery query;
  query.container = request.query_param("container").value_or("");
  query.follow = truthy(request.query_param("follow"));
  query.previous = truthy(request.query_param("previous"));
  query.tail_lines = parse_int<long>(request.query_param("tailLines"));
  query.limit_bytes = parse_int<long>(request.query_param("limitBytes"));
  if (query.follow) {
    StreamingResponse response;
    response.content_type = "text/plain";
    // Errors (a bad container name) must be answered before the 200 header goes out.
    PodLogQuery probe = query;
    probe.follow = false;
    auto check = source->read_log(pod.body, probe);
    if (!check) return respond(check.error(), request, nullptr);
    response.start = [source, body = pod.body, query](std::shared_ptr<ChunkWriter> writer) {
      source->follow_log(body, query, std::move(writer));
    };
    return response;
  }
  auto text = source->read_log(pod.body, query);
  if (!text) return respond(text.error(), request, nullptr);
  return HttpResponse{200, "text/plain", std::move(*text), {}};
}

}  // namespace depl::devcluster
