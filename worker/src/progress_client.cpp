#include "depl/worker/progress_client.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace depl::worker {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

struct Url {
  std::string host;
  std::string port;
  std::string target;
};

Expected<Url> parse_url(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    return error(
        fmt::format("DEPL_PROGRESS_URL '{}': https is not supported by the reference "
                    "worker; the controller's progress endpoint speaks plain http",
                    url));
  }
  if (url.rfind(scheme, 0) != 0) {
    return error(fmt::format("DEPL_PROGRESS_URL '{}': want http://host[:port]/path", url));
  }
  const std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  Url out;
  out.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (authority.empty()) return error(fmt::format("DEPL_PROGRESS_URL '{}': no host", url));
  std::string host = authority;
  out.port = "80";
  if (authority.front() == '[') {  // [v6-address]:port
    const auto close = authority.find(']');
    if (close == std::string::npos)
      return error(fmt::format("DEPL_PROGRESS_URL '{}': bad IPv6 host", url));
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':')
      out.port = authority.substr(close + 2);
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
  }
  int port = 0;
  auto [p, ec] = std::from_chars(out.port.data(), out.port.data() + out.port.size(), port);
  if (ec != std::errc() || p != out.port.data() + out.port.size() || port <= 0 || port > 65535) {
    return error(fmt::format("DEPL_PROGRESS_URL '{}': port '{}' is not a number in 1..65535", url,
                             out.port));
  }
  out.host = host;
  return out;
}

}  // namespace

std::string progress_request_body(const ProgressReport& r) {
  return nlohmann::json{{"phase", r.phase}, {"rank", r.rank}, {"epoch", r.epoch}, {"loss", r.loss}}
      .dump();
}

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::chrono::seconds::rep seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc::result_out_of_range) return std::chrono::seconds::max();
  if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return std::chrono::seconds(seconds);
}

Expected<ProgressAction> parse_progress_response(std::string_view body) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    return error(fmt::format("progress response is not JSON: {}", e.what()));
  }
  if (!doc.is_object() || !doc.contains("action") || !doc["action"].is_string()) {
    return error("progress response has no string field \"action\"");
  }
  const std::string action = doc["action"].get<std::string>();
  if (action == "continue") return ProgressAction::Continue;
  if (action == "checkpointAndExit") return ProgressAction::CheckpointAndExit;
  return error(
      fmt::format("progress response action '{}' is not continue or checkpointAndExit", action));
}

struct ProgressClient::Impl {
  ProgressClientOptions options;
  Url url;
  asio::io_context io;

  // One attempt. Each step runs asynchronously under the stream's expiry, so a silent server
  // costs at most the timeout. `retry_after` is set from a 429's or 503's Retry-After.
  Expected<ProgressAction, ProgressError> attempt(
      const std::string& body, std::optional<std::chrono::seconds>& retry_after) {
    retry_after.reset();
    auto transient = [](std::string m) {
      return unexpected(ProgressError{std::move(m), false, std::nullopt});
    };
    beast::tcp_stream stream(io);
    std::optional<error_code> done;
    auto run = [&] {
      io.restart();
      io.run();
      return done.value_or(asio::error::operation_aborted);
    };

    error_code ec;
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(url.host, url.port, ec);
    if (ec) return transient(fmt::format("cannot resolve {}: {}", url.host, ec.message()));
    stream.expires_after(options.timeout);
    done.reset();
    stream.async_connect(endpoints, [&](error_code e, const tcp::endpoint&) { done = e; });
    if ((ec = run()))
      return transient(
          fmt::format("cannot connect to {}:{}: {}", url.host, url.port, ec.message()));

    http::request<http::string_body> request{http::verb::post, url.target, 11};
    request.set(http::field::host, url.host + ":" + url.port);
    request.set(http::field::user_agent, "depl-reference-worker");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::authorization, "Bearer " + options.token);
    request.keep_alive(false);
    request.body() = body;
    request.prepare_payload();
    stream.expires_after(options.timeout);
    done.reset();
    http::async_write(stream, request, [&](error_code e, std::size_t) { done = e; });
    if ((ec = run())) return transient(fmt::format("sending the report failed: {}", ec.message()));

    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    stream.expires_after(options.timeout);
    done.reset();
    http::async_read(stream, buffer, parser, [&](error_code e, std::size_t) { done = e; });
    if ((ec = run())) return transient(fmt::format("reading the answer failed: {}", ec.message()));
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);

    const auto& response = parser.get();
    const unsigned status = response.result_int();
    // 5xx and 429 (the endpoint rate-limits reports per job) pass; other answers are final.
    if (status >= 500 || status == 429) {
      if (status == 429 || status == 503) {
        const auto value = response[http::field::retry_after];
        retry_after = parse_retry_after(std::string_view(value.data(), value.size()));
      }
      return transient(
          fmt::format("the endpoint answered HTTP {}: {}", status, response.body().substr(0, 200)));
    }
    if (status >= 300) {
      std::string hint;
      if (status == 401 || status == 403) hint = " (is DEPL_PROGRESS_TOKEN the job's token?)";
      if (status == 404) hint = " (does the job still exist? is DEPL_PROGRESS_URL right?)";
      return unexpected(ProgressError{fmt::format("the endpoint rejected the report: HTTP {}{}: {}",
                                                  status, hint, response.body().substr(0, 200)),
                                      true, std::nullopt});
    }
    auto action = parse_progress_response(response.body());
    if (!action) return unexpected(ProgressError{action.error().message, true, std::nullopt});
    return *action;
  }
};

std::chrono::milliseconds wait_before_retry(std::chrono::milliseconds backoff,
                                            std::optional<std::chrono::seconds> retry_after) {
  if (!retry_after) return backoff;
  return std::max(backoff, std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::min(*retry_after, kMaxRetryAfter)));
}

ProgressClient::ProgressClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProgressClient::ProgressClient(ProgressClient&&) noexcept = default;
ProgressClient& ProgressClient::operator=(ProgressClient&&) noexcept = default;
ProgressClient::~ProgressClient() = default;

Expected<ProgressClient> ProgressClient::create(ProgressClientOptions options) {
  auto url = parse_url(options.url);
  if (!url) return unexpected(url.error());
  if (options.retry_for.count() < 0) return error("progress client: retry_for must be >= 0");
  if (!options.sleep) {
    options.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  }
  if (!options.now) options.now = [] { return std::chrono::steady_clock::now(); };
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->url = *url;
  return ProgressClient(std::move(impl));
}

Expected<std::chrono::milliseconds> parse_progress_retry(const std::string& text) {
  if (text.empty()) return std::chrono::milliseconds(kDefaultProgressRetry);
  long long seconds = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
      seconds > 7 * 24 * 3600) {
    return error(fmt::format(
        "DEPL_PROGRESS_RETRY_SECONDS: want whole seconds in [0, 604800], got '{}'", text));
  }
  return std::chrono::milliseconds(std::chrono::seconds(seconds));
}

Expected<ProgressAction, ProgressError> ProgressClient::post(const ProgressReport& report) {
  const std::string body = progress_request_body(report);
  const auto& o = impl_->options;
  const auto deadline = o.now() + o.retry_for;
  auto backoff = o.first_backoff;
  for (int attempt = 1;; ++attempt) {
    std::optional<std::chrono::seconds> retry_after;
    auto result = impl_->attempt(body, retry_after);
    const auto now = o.now();
    if (result || result.error().rejected || now >= deadline) {
      if (!result) {
        return unexpected(
            ProgressError{fmt::format("progress POST to {} failed after {} attempt(s): {}", o.url,
                                      attempt, result.error().message),
                          result.error().rejected, retry_after});
      }
      return result;
    }
    // The last attempt is made at the deadline, not after it.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const auto wait = std::min(wait_before_retry(backoff, retry_after), left);
    spdlog::warn("event=progress_retry attempt={} backoff_ms={} retry_after_s={} error=\"{}\"",
                 attempt, wait.count(), retry_after ? std::to_string(retry_after->count()) : "-",
                 result.error().message);
    o.sleep(wait);
    backoff = std::min(backoff * 2, o.max_backoff);
  }
}

}  // namespace depl::worker
