// Fuzz target: the progress endpoint's request handling (ProgressEndpoint::handle: route, method,
// rate limit, bearer token, report body, applying the report to the job's status), without
// sockets. The input is a request in a plain-text form:
//   <METHOD> <target>\n<name>: <value>\n...\n\n<body>
// Two test-only headers steer the fake API server behind the endpoint: `x-fuzz-status: <JSON>`
// replaces the stored job's status (a user with edit rights can write anything there) and
// `x-fuzz-conflicts: <digit>` makes that many status writes conflict. The job ns/j exists with
// token "s3cret"; ns/down answers as an unreachable API server; anything else is missing.
// The request is handled three times against a burst of two, so the rate limit answers too.
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/controller/http_server.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/progress.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

using controller::AccessError;
using controller::HttpReply;
using controller::HttpRequestView;
using nlohmann::json;

json running_status() {
  controller::PlanRecord plan;
  plan.datasets = {"a"};
  plan.phases = {{"small", 3, "t4", 2}, {"full", 4, "a100", 1}};
  controller::ProgressRecord progress;
  progress.phase = 0;
  progress.epoch = 1;
  progress.stop_after_epoch = 3;
  return json{{"phase", "Running"},
              {"plan", controller::to_json(plan)},
              {"progress", controller::to_json(progress)}};
}

// A test double for the API server behind the endpoint (token and job lookups only).
class FakeAccess final : public controller::JobAccess {
 public:
  json job;
  int conflicts = 0;

  Expected<json, AccessError> get_job(const std::string& ns, const std::string& name) override {
    if (auto missing = lookup(ns, name)) return unexpected(*missing);
    return job;
  }
  Expected<bool> write_status(const json& written) override {
    if (conflicts > 0) {
      --conflicts;
      return false;
    }
    job = written;
    return true;
  }
  std::optional<controller::ProgressTokenRecord> cached_token(const std::string& ns,
                                                              const std::string& name) override {
    if (lookup(ns, name)) return std::nullopt;
    return record();
  }
  Expected<controller::ProgressTokenRecord, AccessError> token(const std::string& ns,
                                                               const std::string& name) override {
    if (auto missing = lookup(ns, name)) return unexpected(*missing);
    return record();
  }

 private:
  static controller::ProgressTokenRecord record() {
    return {"j-progress-fuzz", controller::sha256_hex("s3cret")};
  }
  static std::optional<AccessError> lookup(const std::string& ns, const std::string& name) {
    if (ns == "ns" && name == "down") return AccessError{"connection refused", true};
    if (ns != "ns" || name != "j") return AccessError{"not found"};
    return std::nullopt;
  }
};

std::string_view take_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

HttpRequestView parse_request(std::string_view text) {
  HttpRequestView request;
  std::string_view first = take_line(text);
  const std::size_t space = first.find(' ');
  request.method = std::string(first.substr(0, space));
  if (space != std::string_view::npos) {
    std::string_view target = first.substr(space + 1);
    if (const std::size_t version = target.rfind(" HTTP/"); version != std::string_view::npos)
      target = target.substr(0, version);
    request.target = std::string(target);
  }
  while (!text.empty()) {
    std::string_view line = take_line(text);
    if (line.empty()) break;
    const std::size_t colon = line.find(':');
    std::string name(line.substr(0, colon));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    request.headers[name] = std::string(value);
  }
  request.body = std::string(text);
  request.peer = "192.0.2.1";
  return request;
}

void check_reply(const HttpReply& reply) {
  static const std::set<int> kStatuses{200, 400, 401, 404, 405, 429, 503};
  check(kStatuses.count(reply.status) == 1, "the reply's status is one the endpoint documents");
  check(reply.content_type == "application/json", "the reply is JSON");
  const json body = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  check(body.is_object(), "the reply's body is a JSON object");
  if (reply.status == 200) {
    const auto action = body.find("action");
    check(action != body.end() && action->is_string(), "a 200 carries an action");
    check(*action == "continue" || *action == "checkpointAndExit", "the action is known");
  } else {
    const auto error = body.find("error");
    check(error != body.end() && error->is_string() && !error->get<std::string>().empty(),
          "an error reply says what is wrong");
  }
  if (reply.status == 429) {
    // Retry-After: whole seconds, at least 1.
    bool has_retry_after = false;
    for (const auto& [name, value] : reply.headers) {
      if (name != "Retry-After") continue;
      has_retry_after = !value.empty() &&
                        value.find_first_not_of("0123456789") == std::string::npos &&
                        value != "0" && value.front() != '0';
    }
    check(has_retry_after, "a 429 carries Retry-After in whole seconds, at least 1");
  }
}

}  // namespace

int progress_endpoint(const std::uint8_t* data, std::size_t size) {
  HttpRequestView request = parse_request(as_text(data, size));
  // The HttpServer answers 413 before a larger body reaches the handler.
  if (request.body.size() > controller::HttpServerOptions{}.max_body_bytes) return 0;

  FakeAccess access;
  access.job = json{{"apiVersion", "depl.dev/v1alpha1"},
                    {"kind", "DependableTrainingJob"},
                    {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"resourceVersion", "5"}}},
                    {"status", running_status()}};
  if (auto status = request.headers.find("x-fuzz-status"); status != request.headers.end()) {
    json parsed = json::parse(status->second, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) access.job["status"] = std::move(parsed);
  }
  if (auto conflicts = request.headers.find("x-fuzz-conflicts");
      conflicts != request.headers.end() && !conflicts->second.empty() &&
      conflicts->second[0] >= '0' && conflicts->second[0] <= '9') {
    access.conflicts = conflicts->second[0] - '0';
  }

  FakeClock clock;
  int recorded = 0;
  controller::ProgressEndpointOptions options;
  options.burst = 2;
  options.reports_per_second = 1;
  controller::ProgressEndpoint endpoint(
      access, clock, [&](const std::string&, const std::string&) { ++recorded; }, options);
  for (int i = 0; i < 3; ++i) check_reply(endpoint.handle(request));
  std::uint64_t answered = 0;
  for (const auto& [status, count] : endpoint.answered()) answered += count;
  check(answered == 3, "every request is counted once");
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(progress_endpoint)
