// The HTTP request and response values the API layer works with, free of Beast so that routing,
// discovery and the resource handlers can be written and tested without sockets.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace depl::devcluster {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query string
  std::string path;    // percent-decoded path without the query string
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::map<std::string, std::string> headers;              // names lower-cased
  std::string body;

  // The header's value, or "" when absent. `name` must be lower case.
  std::string header(std::string_view name) const;
  // The last value of a query parameter (Kubernetes takes the last one), if present.
  std::optional<std::string> query_param(std::string_view name) const;

  // Splits `target` into `path` and `query`, percent-decoding both.
  void parse_target();
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// The sending side of a chunked response (watches, followed logs). Thread-safe: producers on any
// thread write chunks; the server sends them in order. Once the client has gone or `finish` was
// called, writes are dropped and `closed()` is true.
class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;
  virtual void write(std::string chunk) = 0;
  virtual void finish() = 0;
  virtual bool closed() const = 0;
  // `callback` runs once when the stream ends for any reason (client gone, finish, server
  // stopping, dropped by fault injection); runs at once if it has already ended.
  virtual void on_close(std::function<void()> callback) = 0;
};

struct StreamingResponse {
  int status = 200;
  std::string content_type = "application/json";
  // Called once the response header has been sent.
  std::function<void(std::shared_ptr<ChunkWriter>)> start;
};

using HandlerResult = std::variant<HttpResponse, StreamingResponse>;
using RequestHandler = std::function<HandlerResult(HttpRequest&)>;

// Percent-decodes `text` ('+' stays '+' in paths; `plus_is_space` for query strings).
std::string percent_decode(std::string_view text, bool plus_is_space);

}  // namespace depl::devcluster
