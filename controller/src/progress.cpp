#include "depl/controller/progress.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "depl/common/json_fields.hpp"
#include "depl/common/kubernetes_names.hpp"
#include "depl/common/time.hpp"
#include "depl/controller/interruption_rate.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/trainer_progress.hpp"

namespace depl::controller {

using nlohmann::json;

namespace {

// Messages can quote the request (a job name from the path) or the stored status, neither of
// which need be valid UTF-8; dump() would throw on it, so invalid bytes become U+FFFD.
HttpReply reply(int status, json body) {
  std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return {status, "application/json", std::move(text), {}};
}

HttpReply error_reply(int status, const std::string& message) {
  return reply(status, json{{"error", message}});
}

// A refusal by one of the rate limits. Retry-After (RFC 9110 §10.2.3, delay-seconds) says when
// the limit's bucket has a token again, rounded up so a worker that waits it out is let in, and
// at least 1: "0" would invite an immediate retry that is refused again.
HttpReply too_many(const std::string& message, Clock::Duration wait) {
  HttpReply out = error_reply(429, message);
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(wait).count();
  out.headers.emplace_back("Retry-After", std::to_string(std::max<decltype(seconds)>(1, seconds)));
  return out;
}

Expected<int> int_field(const json& body, const char* key, int minimum) {
  auto it = body.find(key);
  if (it == body.end()) return error(fmt::format("{}: required", key));
  if (!it->is_number_integer() &&
      !(it->is_number_float() && std::floor(it->get<double>()) == it->get<double>())) {
    return error(fmt::format("{}: must be an integer >= {}, got {}", key, minimum, it->dump()));
  }
  const double v = it->get<double>();
  if (v < minimum || v > 1e9) {
    return error(fmt::format("{}: must be an integer >= {}, got {}", key, minimum, it->dump()));
  }
  return static_cast<int>(v);
}

}  // namespace

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

Expected<ProgressReport> parse_progress_report(const std::string& body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return error("body: must be JSON like {\"phase\":0,\"rank\":0,\"epoch\":1,\"loss\":0.5}");
  if (!parsed.is_object()) return error("body: must be a JSON object");
  ProgressReport r;
  auto phase = int_field(parsed, "phase", 0);
  if (!phase) return unexpected(phase.error());
  auto rank = int_field(parsed, "rank", 0);
  if (!rank) return unexpected(rank.error());
  auto epoch = int_field(parsed, "epoch", 1);
  if (!epoch) return unexpected(epoch.error());
  auto loss = parsed.find("loss");
  if (loss == parsed.end()) return error("loss: required");
  if (!loss->is_number() || !std::isfinite(loss->get<double>()) || loss->get<double>() < 0) {
    return error(fmt::format("loss: must be a finite number >= 0, got {}", loss->dump()));
  }
  r.phase = *phase;
  r.rank = *rank;
  r.epoch = *epoch;
  r.loss = loss->get<double>();
  return r;
}

ProgressOutcome apply_progress(json& job, const ProgressReport& report,
                               std::chrono::system_clock::time_point now) {
  ProgressOutcome out;
  // The status is the controller's, but a user may have edited it: read it without trusting it.
  JobStatus status = decode_status(json_member(job, "status"));
  // A job whose workers were just admitted may still read Queued: a report proves they run.
  if (status.phase != phases::kRunning && status.phase != phases::kQueued) {
    out.action = "checkpointAndExit";
    out.message = fmt::format("the job is {}, not Running",
                              status.phase.empty() ? "not started" : status.phase);
    return out;
  }
  ProgressRecord& progress = status.progress;
  if (!status.plan || static_cast<std::size_t>(progress.phase) >= status.plan->phases.size()) {
    // An unreadable or edited status (no plan, or a running phase past its end) records nothing.
    out.action = "checkpointAndExit";
    out.message = "the job's status has no readable plan for its running phase";
    return out;
  }
  if (report.phase != progress.phase) {
    out.action = "checkpointAndExit";
    out.message =
        fmt::format("phase {} is not the running phase ({})", report.phase, progress.phase);
    return out;
  }
  const int workers = status.plan->phases[static_cast<std::size_t>(progress.phase)].workers;
  if (report.rank >= workers) {
    out.http_status = 400;
    out.message =
        fmt::format("rank: must be below the phase's {} workers, got {}", workers, report.rank);
    return out;
  }
  const int stop_after = progress.stop_after_epoch;
  if (stop_after > 0 && report.epoch > stop_after) {
    // A worker that missed its stop (e.g. the plan was cut while it ran) trained too far;
    // its report is not recorded and it is told to stop.
    out.action = "checkpointAndExit";
    out.message =
        fmt::format("epoch {} is past the phase's last epoch {}", report.epoch, stop_after);
    return out;
  }
  if (report.rank == 0 && report.epoch > progress.epoch) {
    progress.epoch = report.epoch;
    progress.loss = report.loss;
    progress.history.push_back({report.epoch, report.phase, report.loss});
    if (progress.history.size() > kMaxHistory) {
      progress.history.erase(progress.history.begin(),
                             progress.history.end() - static_cast<long>(kMaxHistory));
    }
    // The epoch's checkpoint is written: a preemption from here on loses only what follows it.
    const std::string& pool = status.plan->phases[static_cast<std::size_t>(progress.phase)].pool;
    if (!progress.checkpointed_at.empty()) {
      add_training_time(status, pool, workers * seconds_since(progress.checkpointed_at, now));
    }
    progress.checkpointed_at = format_rfc3339(now);
    job["status"] = encode_status(status);
    out.status_changed = true;
  }
  const bool stop = stop_after > 0 && report.epoch >= stop_after;
  out.action = stop ? "checkpointAndExit" : "continue";
  if (stop) out.message = fmt::format("phase {} ends at epoch {}", report.phase, stop_after);
  return out;
}

ProgressEndpoint::ProgressEndpoint(
    JobAccess& access, Clock& clock,
    std::function<void(const std::string&, const std::string&)> on_recorded,
    ProgressEndpointOptions options)
    : access_(access),
      clock_(clock),
      on_recorded_(std::move(on_recorded)),
      options_(options),
      job_reports_({.per_second = options.reports_per_second,
                    .burst = options.burst,
                    .max_keys = options.max_tracked,
                    .sweep_every = options.sweep_every}),
      failed_auth_({.per_second = options.failed_auth_per_second,
                    .burst = options.failed_auth_burst,
                    .max_keys = options.max_tracked,
                    .sweep_every = options.sweep_every}) {}

std::optional<HttpReply> ProgressEndpoint::authenticate(const HttpRequestView& request,
                                                        const std::string& ns,
                                                        const std::string& name) {
  auto auth = request.headers.find("authorization");
  const std::string prefix = "Bearer ";
  const bool has_token = auth != request.headers.end() && auth->second.rfind(prefix, 0) == 0;
  const std::string presented_hash =
      has_token ? sha256_hex(std::string_view(auth->second).substr(prefix.size())) : "";
  // The job's own workers: their token matches the record the cache shows (every running job's),
  // which costs nothing to look up, so no limit applies to them, whoever shares their address.
  const auto cached = access_.cached_token(ns, name);
  if (has_token && cached && !cached->sha256.empty() &&
      constant_time_equal(presented_hash, cached->sha256)) {
    return std::nullopt;
  }
  // Anything else spends from its address's budget of failed authentications first, so the API
  // reads a stranger can cause are bounded; one that authenticates after all gets it back.
  if (const auto now = clock_.now(); !failed_auth_.allow(request.peer, now)) {
    return too_many("too many failed authentications from this address; retry later",
                    failed_auth_.wait(request.peer, now));
  }
  if (!has_token) {
    return error_reply(401, "missing bearer token (Authorization: Bearer $DEPL_PROGRESS_TOKEN)");
  }
  // A record in the cache never changes: a token that does not match it is wrong. Without one
  // (a job the cache does not show yet), the API server has the last word.
  Expected<ProgressTokenRecord, AccessError> record =
      cached ? Expected<ProgressTokenRecord, AccessError>(*cached) : access_.token(ns, name);
  if (!record) {
    return error_reply(record.error().transient ? 503 : 404,
                       fmt::format("job {}/{}: {}", ns, name, record.error().message));
  }
  // An edited status could record an empty hash; it admits nobody.
  if (record->sha256.empty()) {
    return error_reply(404,
                       fmt::format("job {}/{}: its status records no progress token", ns, name));
  }
  if (!constant_time_equal(presented_hash, record->sha256)) {
    return error_reply(401, "wrong progress token for this job");
  }
  failed_auth_.refund(request.peer);
  return std::nullopt;
}

std::map<int, std::uint64_t> ProgressEndpoint::answered() const {
  std::lock_guard lock(mutex_);
  return answered_;
}

HttpReply ProgressEndpoint::handle(const HttpRequestView& request) {
  HttpReply out = [&]() -> HttpReply {
    // /v1/namespaces/<ns>/jobs/<name>/progress, or Kubeflow Trainer's
    // /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status
    const std::size_t question = request.target.find('?');
    std::string path = request.target.substr(0, question);
    const std::string query =
        question == std::string::npos ? std::string() : request.target.substr(question + 1);
    std::vector<std::string> parts;
    std::size_t start = 1;
    while (start <= path.size()) {
      std::size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      parts.push_back(path.substr(start, end - start));
      start = end + 1;
    }
    const bool trainer = parts.size() == 8 && parts[0] == "apis" &&
                         parts[1] == "trainer.kubeflow.org" && parts[2] == "v1alpha1" &&
                         parts[3] == "namespaces" && parts[5] == "trainjobs" &&
                         parts[7] == "status";
    if (trainer) parts = {"v1", "namespaces", parts[4], "jobs", parts[6], "progress"};
    if (parts.size() != 6 || parts[0] != "v1" || parts[1] != "namespaces" || parts[3] != "jobs" ||
        parts[5] != "progress" || parts[2].empty() || parts[4].empty()) {
      return error_reply(404,
                         "not found: use POST /v1/namespaces/<namespace>/jobs/<name>/progress");
    }
    if (request.method != "POST") return error_reply(405, "method not allowed: use POST");
    const std::string& ns = parts[2];
    const std::string& name = parts[4];
    // Names Kubernetes could not have given a job are refused before anything is looked up.
    if (ns.size() > 63 || !has_dns1123_label_form(ns) || !is_dns1123_subdomain(name)) {
      return error_reply(404,
                         fmt::format("no job {}/{}: a namespace is a DNS-1123 label and a job's "
                                     "name a DNS-1123 subdomain",
                                     ns, name));
    }
    // The job's own budget is spent only by its authenticated workers.
    if (auto refused = authenticate(request, ns, name)) return *refused;
    const std::string job_key = ns + "/" + name;
    if (const auto now = clock_.now(); !job_reports_.allow(job_key, now)) {
      return too_many("too many progress reports for this job", job_reports_.wait(job_key, now));
    }
    Expected<ProgressReport> report = error("no report");
    if (trainer) {
      auto parsed = parse_trainer_report(request.body, query);
      if (!parsed) return error_reply(400, parsed.error().message);
      // Progress without a completed epoch and its loss records nothing.
      if (!*parsed) return reply(200, json{{"action", "continue"}});
      report = **parsed;
    } else {
      report = parse_progress_report(request.body);
    }
    if (!report) return error_reply(400, report.error().message);

    for (int attempt = 0; attempt <= options_.conflict_retries; ++attempt) {
      auto job = access_.get_job(ns, name);
      if (!job) {
        return error_reply(job.error().transient ? 503 : 404,
                           fmt::format("job {}/{}: {}", ns, name, job.error().message));
      }
      ProgressOutcome outcome = apply_progress(*job, *report, clock_.wall_now());
      if (outcome.http_status != 200) return error_reply(outcome.http_status, outcome.message);
      if (outcome.status_changed) {
        auto written = access_.write_status(*job);
        if (!written)
          return error_reply(503, "could not record the report: " + written.error().message);
        if (!*written) continue;  // conflict: re-read and apply again
        if (on_recorded_) on_recorded_(ns, name);
      }
      json body = {{"action", outcome.action}};
      if (!outcome.message.empty()) body["message"] = outcome.message;
      return reply(200, body);
    }
    return error_reply(503, "the job's status kept changing; retry the report");
  }();
  std::lock_guard lock(mutex_);
  answered_[out.status] += 1;
  return out;
}

}  // namespace depl::controller
