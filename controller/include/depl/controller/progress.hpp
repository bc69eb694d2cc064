// The progress endpoint workers report to after every epoch:
//   POST /v1/namespaces/<ns>/jobs/<name>/progress
//   Authorization: Bearer <the job's token>       body {"phase","rank","epoch","loss"}
// answered with {"action": "continue" | "checkpointAndExit", ...}. A report is acknowledged
// (200) only after it is in the job's status, so an acknowledged report is never lost.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/controller/http_server.hpp"
#include "depl/controller/keyed_rate_limiter.hpp"
#include "depl/controller/progress_token.hpp"

namespace depl::controller {

struct ProgressReport {
  int phase = 0;
  int rank = 0;
  int epoch = 0;  // global epoch number just completed (DEPL_START_EPOCH + epochs this run)
  double loss = 0;
};

// Parses and checks a report body; the error names the field ("epoch: must be an integer >= 1").
Expected<ProgressReport> parse_progress_report(const std::string& body);

struct ProgressOutcome {
  int http_status = 200;
  std::string action;           // continue | checkpointAndExit (when http_status == 200)
  std::string message;          // for errors, and why a worker is told to stop
  bool status_changed = false;  // the job's status was updated (write it back)
};

// Applies a report to the job object in place (its status.progress), received at `now`. Pure.
// Reports of rank 0 record the loss and the time of the checkpoint the epoch wrote
// (progress.checkpointedAt), and credit the phase's workers with the time they trained since the
// last one on a pool with interruptions (interruption_rate.hpp); reports for an epoch already
// recorded change nothing (retries and restarted workers re-send); reports from a phase that is
// no longer running are told to stop.
ProgressOutcome apply_progress(nlohmann::json& job, const ProgressReport& report,
                               std::chrono::system_clock::time_point now);

// What the endpoint needs from the cluster; implemented over the API client in production.
// Why a job or its token could not be read. Missing (404: the worker stops) or the API server
// could not be asked (503: the worker retries; a hiccup must not end a healthy worker).
struct AccessError {
  std::string message;
  bool transient = false;
};

class JobAccess {
 public:
  virtual ~JobAccess() = default;
  // The job as the API server has it now (not the cache: reports must build on the latest).
  virtual Expected<nlohmann::json, AccessError> get_job(const std::string& ns,
                                                        const std::string& name) = 0;
  // Writes the job's status with its resourceVersion as precondition; false on a conflict.
  virtual Expected<bool> write_status(const nlohmann::json& job) = 0;
  // The job's progress-token record (progress_token.hpp) as the controller's cache shows it,
  // without asking the API server: nothing when the cache has no such job or it records none.
  virtual std::optional<ProgressTokenRecord> cached_token(const std::string& ns,
                                                          const std::string& name) = 0;
  // The same from the API server, which may have recorded the token a moment before the cache
  // shows it; an error when the job is missing (or records no token) or cannot be read.
  virtual Expected<ProgressTokenRecord, AccessError> token(const std::string& ns,
                                                           const std::string& name) = 0;
};

// Every limit of the endpoint. docs/operations.md ("Security") quotes these defaults. A request
// over a rate limit is answered 429 with Retry-After: the whole seconds until the limit lets the
// next one in (at least 1).
struct ProgressEndpointOptions {
  int conflict_retries = 5;
  // Authenticated reports, per job. Checked only after the token, so a stranger cannot spend a
  // job's budget and make its workers drop reports.
  double reports_per_second = 20;
  double burst = 40;
  // Requests that fail authentication (no token, a wrong one, a job without a token, a lookup
  // that failed), per peer address: each may cost an API read (a job the cache does not show).
  // A peer over this limit is answered 429 before any such read; a report whose token matches
  // the job's record in the cache is let in all the same, so a stranger behind the same address
  // (SNAT) cannot lock the job's workers out.
  double failed_auth_per_second = 1;
  double failed_auth_burst = 10;
  // Bounds the buckets held for each limit (jobs, peers); refilled ones are dropped every sweep.
  std::size_t max_tracked = 10000;
  std::chrono::seconds sweep_every{60};
};

class ProgressEndpoint {
 public:
  // `on_recorded(ns, name)` runs after a report changed a job's status (to enqueue a reconcile).
  ProgressEndpoint(JobAccess& access, Clock& clock,
                   std::function<void(const std::string&, const std::string&)> on_recorded,
                   ProgressEndpointOptions options = {});

  HttpReply handle(const HttpRequestView& request);

  // Counts of answered reports by HTTP status, for metrics.
  std::map<int, std::uint64_t> answered() const;

  // Rate-limit buckets held now (per job, per peer address): bounded, for tests and metrics.
  std::size_t job_buckets() const { return job_reports_.size(); }
  std::size_t peer_buckets() const { return failed_auth_.size(); }

 private:
  // Checks the request's bearer token against the job's; the refusal to answer when it fails.
  std::optional<HttpReply> authenticate(const HttpRequestView& request, const std::string& ns,
                                        const std::string& name);

  JobAccess& access_;
  Clock& clock_;
  std::function<void(const std::string&, const std::string&)> on_recorded_;
  ProgressEndpointOptions options_;
  KeyedRateLimiter job_reports_;  // keyed by "<ns>/<name>"
  KeyedRateLimiter failed_auth_;  // keyed by the peer address
  mutable std::mutex mutex_;      // guards answered_
  std::map<int, std::uint64_t> answered_;
};

// Compares two secrets in time that depends only on their lengths.
bool constant_time_equal(const std::string& a, const std::string& b);

}  // namespace depl::controller
