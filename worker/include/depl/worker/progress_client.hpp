// The worker's side of the operator's progress protocol: after each epoch rank 0 POSTs
// {"phase","rank","epoch","loss"} to DEPL_PROGRESS_URL with "Authorization: Bearer <token>" and
// the controller answers {"action": "continue" | "checkpointAndExit"}. A small blocking HTTP/1.1
// client (Beast stays inside the .cpp); connection errors, timeouts, 5xx and 429 are retried
// with exponential backoff, any other 4xx is final.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "depl/common/expected.hpp"

namespace depl::worker {

enum class ProgressAction { Continue, CheckpointAndExit };

struct ProgressReport {
  int phase = 0;
  int rank = 0;
  int epoch = 0;
  double loss = 0.0;
};

struct ProgressError {
  std::string message;
  bool rejected = false;  // the endpoint refused the report (4xx): retrying cannot help
};

struct ProgressClientOptions {
  std::string url;    // http://host[:port]/path
  std::string token;  // sent as a bearer token
  int attempts = 5;
  std::chrono::milliseconds first_backoff{200};                 // doubles after each failed attempt
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // per attempt
  // Waits between attempts; injectable so tests of the retry path need not sleep.
  std::function<void(std::chrono::milliseconds)> sleep;
};

// The request body for a report (exactly the four fields of the contract).
std::string progress_request_body(const ProgressReport& report);

// Reads the controller's answer; anything but a JSON object with a known "action" is an error.
Expected<ProgressAction> parse_progress_response(std::string_view body);

class ProgressClient {
 public:
  // Fails on a URL that is not http://host[:port]/path.
  static Expected<ProgressClient> create(ProgressClientOptions options);
  ProgressClient(ProgressClient&&) noexcept;
  ProgressClient& operator=(ProgressClient&&) noexcept;
  ~ProgressClient();

  Expected<ProgressAction, ProgressError> post(const ProgressReport& report);

 private:
  struct Impl;
  explicit ProgressClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::worker
