#include "depl/kube/testing/scripted_transport.hpp"

namespace depl::kube::testing {

using nlohmann::json;

void StreamFeed::push(std::string bytes) {
  {
    std::lock_guard lock(mutex_);
    chunks_.push_back(std::move(bytes));
  }
  changed_.notify_all();
}

void StreamFeed::end() {
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
  }
  changed_.notify_all();
}

void StreamFeed::fail(ApiError error) {
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
  }
  changed_.notify_all();
}

bool StreamFeed::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

// Reads from a StreamFeed; a static StreamScript is a feed filled up front.
class ScriptedStream : public ResponseStream {
 public:
  ScriptedStream(int status, Headers headers, std::shared_ptr<StreamFeed> feed)
      : status_(status), headers_(std::move(headers)), feed_(std::move(feed)) {}

  int status() const override { return status_; }
  const Headers& headers() const override { return headers_; }

  Expected<std::string, ApiError> read() override {
    std::unique_lock lock(feed_->mutex_);
    feed_->changed_.wait(lock, [&] {
      return feed_->cancelled_ || !feed_->chunks_.empty() || feed_->ended_ ||
             feed_->error_.has_value();
    });
    if (feed_->cancelled_) {
      return unexpected(ApiError::transport(ApiError::kCancelled, "the watch was cancelled"));
    }
    if (!feed_->chunks_.empty()) {
      std::string bytes = std::move(feed_->chunks_.front());
      feed_->chunks_.pop_front();
      return bytes;
    }
    if (feed_->error_) return unexpected(*feed_->error_);
    return std::string();
  }

  void cancel() override {
    {
      std::lock_guard lock(feed_->mutex_);
      feed_->cancelled_ = true;
    }
    feed_->changed_.notify_all();
  }

 private:
  int status_;
  Headers headers_;
  std::shared_ptr<StreamFeed> feed_;
};

json status_body(int code, std::string_view reason, std::string_view message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

void ScriptedTransport::push_response(int status, std::string body, Headers headers) {
  std::lock_guard lock(mutex_);
  queue_.emplace_back(HttpResponse{status, std::move(headers), std::move(body)});
}

void ScriptedTransport::push_json(int status, const json& body, Headers headers) {
  headers.emplace_back("Content-Type", "application/json");
  push_response(status, body.dump(), std::move(headers));
}

void ScriptedTransport::push_status(int code, std::string reason, std::string message,
                                    Headers headers) {
  push_json(code, status_body(code, reason, message), std::move(headers));
}

void ScriptedTransport::push_error(ApiError error) {
  std::lock_guard lock(mutex_);
  queue_.emplace_back(std::move(error));
}

void ScriptedTransport::push_stream(StreamScript script) {
  std::lock_guard lock(mutex_);
  queue_.emplace_back(std::move(script));
}

std::shared_ptr<StreamFeed> ScriptedTransport::push_live_stream(int status, Headers headers) {
  auto feed = std::make_shared<StreamFeed>();
  StreamScript head;
  head.status = status;
  head.headers = std::move(headers);
  std::lock_guard lock(mutex_);
  // A live stream is queued as its head; open_stream pairs it with the feed.
  queue_.emplace_back(feed);
  live_heads_.push_back(std::move(head));
  return feed;
}

void ScriptedTransport::set_handler(Handler handler) {
  std::lock_guard lock(mutex_);
  handler_ = std::move(handler);
}

std::vector<RecordedRequest> ScriptedTransport::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t ScriptedTransport::request_count() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

std::size_t ScriptedTransport::pending() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

bool ScriptedTransport::wait_for_requests(std::size_t count,
                                          std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return requested_.wait_for(lock, timeout, [&] { return requests_.size() >= count; });
}

std::optional<ScriptedTransport::Outcome> ScriptedTransport::next_outcome(
    const HttpRequest& request, std::chrono::milliseconds timeout, bool stream,
    StreamScript* live_head) {
  Handler handler;
  std::optional<Outcome> outcome;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(RecordedRequest{request, timeout, stream});
    if (!queue_.empty()) {
      outcome = std::move(queue_.front());
      queue_.pop_front();
      if (std::holds_alternative<std::shared_ptr<StreamFeed>>(*outcome)) {
        *live_head = std::move(live_heads_.front());
        live_heads_.pop_front();
      }
    } else {
      handler = handler_;
    }
  }
  requested_.notify_all();
  if (!outcome && handler) outcome = handler(request);
  return outcome;
}

static ApiError unscripted(const HttpRequest& request) {
  return ApiError::transport(
      ApiError::kTransportError,
      "scripted transport: no response scripted for " + request.method + " " + request.target());
}

Expected<HttpResponse, ApiError> ScriptedTransport::send(const HttpRequest& request,
                                                         std::chrono::milliseconds timeout) {
  StreamScript head;
  auto outcome = next_outcome(request, timeout, false, &head);
  if (!outcome) return unexpected(unscripted(request));
  if (auto* response = std::get_if<HttpResponse>(&*outcome)) return *response;
  if (auto* error = std::get_if<ApiError>(&*outcome)) return unexpected(*error);
  if (auto* script = std::get_if<StreamScript>(&*outcome)) {
    // A stream answered to send(): the whole body at once.
    HttpResponse response{script->status, script->headers, {}};
    for (const auto& chunk : script->chunks) response.body += chunk;
    if (script->error) return unexpected(*script->error);
    return response;
  }
  return unexpected(ApiError::transport(ApiError::kTransportError,
                                        "scripted transport: a live stream was scripted for a "
                                        "plain request " +
                                            request.method + " " + request.target()));
}

Expected<std::unique_ptr<ResponseStream>, ApiError> ScriptedTransport::open_stream(
    const HttpRequest& request, std::chrono::milliseconds idle_timeout) {
  StreamScript head;
  auto outcome = next_outcome(request, idle_timeout, true, &head);
  if (!outcome) return unexpected(unscripted(request));
  if (auto* error = std::get_if<ApiError>(&*outcome)) return unexpected(*error);
  if (auto* response = std::get_if<HttpResponse>(&*outcome)) {
    auto feed = std::make_shared<StreamFeed>();
    if (!response->body.empty()) feed->push(response->body);
    feed->end();
    return std::unique_ptr<ResponseStream>(
        std::make_unique<ScriptedStream>(response->status, response->headers, feed));
  }
  if (auto* script = std::get_if<StreamScript>(&*outcome)) {
    auto feed = std::make_shared<StreamFeed>();
    for (auto& chunk : script->chunks) feed->push(chunk);
    if (script->error) {
      feed->fail(*script->error);
    } else if (!script->hang) {
      feed->end();
    }
    return std::unique_ptr<ResponseStream>(
        std::make_unique<ScriptedStream>(script->status, script->headers, feed));
  }
  auto feed = std::get<std::shared_ptr<StreamFeed>>(*outcome);
  return std::unique_ptr<ResponseStream>(
      std::make_unique<ScriptedStream>(head.status, head.headers, feed));
}

}  // namespace depl::kube::testing
