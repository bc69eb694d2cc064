// A Transport for tests: records every request as a value and answers from a script (queued
// responses, transport errors, streams given as chunk lists or fed live from the test), or from
// a handler function. No sockets, no sleeps; a live stream blocks its reader on a condition
// variable until the test feeds it, ends it, or the stream is cancelled.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/kube/http.hpp"

namespace depl::kube::testing {

// The feeding end of a scripted stream. Thread-safe.
class StreamFeed {
 public:
  void push(std::string bytes);
  void end();                 // the body ends normally
  void fail(ApiError error);  // the reader gets this error after the bytes already pushed
  bool cancelled() const;     // the reader called cancel()

 private:
  friend class ScriptedStream;
  mutable std::mutex mutex_{};
  std::condition_variable changed_{};
  std::deque<std::string> chunks_{};
  bool ended_ = false;
  bool cancelled_ = false;
  std::optional<ApiError> error_{};
};

struct StreamScript {
  int status = 200;
  Headers headers{};
  std::vector<std::string> chunks{};  // delivered one read() each
  // After the chunks: end normally (nullopt), fail with this error, or (hang = true) block
  // until cancelled, like a silent connection.
  std::optional<ApiError> error{};
  bool hang = false;
};

struct RecordedRequest {
  HttpRequest request{};
  std::chrono::milliseconds timeout{0};  // send timeout or stream idle timeout
  bool stream = false;                   // open_stream rather than send
};

class ScriptedTransport : public Transport {
 public:
  using Outcome = std::variant<HttpResponse, ApiError, StreamScript, std::shared_ptr<StreamFeed>>;
  using Handler = std::function<std::optional<Outcome>(const HttpRequest&)>;

  // Queued outcomes are consumed in order by send() and open_stream() alike.
  void push_response(int status, std::string body, Headers headers = {});
  void push_json(int status, const nlohmann::json& body, Headers headers = {});
  // A Status body with this code/reason/message (what the API server sends for errors).
  void push_status(int code, std::string reason, std::string message, Headers headers = {});
  void push_error(ApiError error);  // a transport failure (code 0)
  void push_stream(StreamScript script);
  // A stream the test feeds while the reader consumes it.
  std::shared_ptr<StreamFeed> push_live_stream(int status = 200, Headers headers = {});
  // Consulted when the queue is empty; returning nullopt means "no answer" (an error).
  void set_handler(Handler handler);

  std::vector<RecordedRequest> requests() const;
  std::size_t request_count() const;
  std::size_t pending() const;  // queued outcomes not consumed yet
  // Blocks until at least `count` requests were made or `timeout` passes; true if reached.
  bool wait_for_requests(std::size_t count, std::chrono::milliseconds timeout) const;

  Expected<HttpResponse, ApiError> send(const HttpRequest& request,
                                        std::chrono::milliseconds timeout) override;
  Expected<std::unique_ptr<ResponseStream>, ApiError> open_stream(
      const HttpRequest& request, std::chrono::milliseconds idle_timeout) override;

 private:
  std::optional<Outcome> next_outcome(const HttpRequest& request, std::chrono::milliseconds timeout,
                                      bool stream, StreamScript* live_head);

  mutable std::mutex mutex_{};
  mutable std::condition_variable requested_{};
  std::deque<Outcome> queue_{};
  std::deque<StreamScript> live_heads_{};  // status/headers of queued live streams, in order
  Handler handler_{};
  std::vector<RecordedRequest> requests_{};
};

// A Status JSON body, as the API server sends with errors.
nlohmann::json status_body(int code, std::string_view reason, std::string_view message);

}  // namespace depl::kube::testing
