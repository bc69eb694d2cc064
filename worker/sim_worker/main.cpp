// depl-sim-worker: a worker that follows the operator's contract (docs/worker-contract.md) but
// trains nothing. Each epoch it draws the loss from the profile the plan assumed
// (DEPL_LOSS_PROFILE: l = f + (l - f) * rho + N(0, sigma^2), plus the switch jump when the phase
// starts on another variant; it reports l + N(0, nu^2)), sleeps --epoch-seconds, reports
// progress and obeys the answer.
// The demo and the end-to-end tests use it as a stand-in for a real trainer. Like every worker it
// retries a report for DEPL_PROGRESS_RETRY_SECONDS (default 300) and then exits 75, which the
// controller does not count as a failure of the phase. On SIGTERM (a pod
// deleted, a node reclaimed) it stops within the epoch it is in, checkpoints how much of that
// epoch it had done, and exits 143; a run resumed from that checkpoint does only the rest.
//
// Test-only knobs (tests/controller_e2e, docs/e2e-tests.md):
//  - DEPL_SIM_FAIL_AT_EPOCH=N makes the worker exit 1 right after reporting epoch N, unless it
//    resumed from a checkpoint at epoch N or later: a pod fails once, and its replacement
//    resumes from the checkpoint and runs on.
//  - DEPL_SIM_ACK_FILE=PATH appends one JSON line per acknowledged report ({"phase", "rank",
//    "epoch", "loss", "action"}) to PATH, so a test can check that no acknowledged report is
//    lost.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <spdlog/spdlog.h>
#include <thread>

#include "depl/worker/progress_client.hpp"

namespace {

using nlohmann::json;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// Reads a required integer variable; exits 2 with a message naming it when missing or bad.
int env_int(const char* name, int minimum) {
  auto v = env(name);
  if (!v) {
    fmt::print(stderr, "depl-sim-worker: {} is not set (run by the operator, or set it)\n", name);
    std::exit(2);
  }
  try {
    std::size_t used = 0;
    const int value = std::stoi(*v, &used);
    if (used == v->size() && value >= minimum) return value;
  } catch (...) {
  }
  fmt::print(stderr, "depl-sim-worker: {} must be an integer >= {}, got \"{}\"\n", name, minimum, *v);
  std::exit(2);
}

double number(const json& profile, const char* key, double fallback) {
  auto it = profile.find(key);
  return it != profile.end() && it->is_number() ? it->get<double>() : fallback;
}

struct Checkpoint {
  int epoch = 0;
  double loss = 0;
  std::string model;
  double partial_seconds = 0;  // of epoch + 1, done when the worker was told to stop
};

constexpr int kExitTerminated = 143;  // 128 + SIGTERM

std::atomic<bool> g_terminate{false};
extern "C" void on_sigterm(int) { g_terminate.store(true, std::memory_order_relaxed); }

// Sleeps `seconds` of simulated training unless told to stop first; returns the time slept.
double train_for(double seconds) {
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  while (!g_terminate.load(std::memory_order_relaxed)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) break;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        end - now, std::chrono::milliseconds(10)));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::optional<Checkpoint> read_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  json j = json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("epoch") || !j.contains("loss")) {
    spdlog::warn("event=checkpoint_unreadable file={}", file.string());
    return std::nullopt;
  }
  return Checkpoint{j.value("epoch", 0), j.value("loss", 0.0), j.value("model", ""),
                    j.value("partialSeconds", 0.0)};
}

void write_checkpoint(const std::filesystem::path& file, const Checkpoint& c) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << json{{"epoch", c.epoch},
                {"loss", c.loss},
                {"model", c.model},
                {"partialSeconds", c.partial_seconds}}
               .dump();
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) spdlog::warn("event=checkpoint_write_failed file={} error=\"{}\"", file.string(), ec.message());
}

// Appends one line with a single write(2) on an O_APPEND descriptor: lines of concurrent
// workers never interleave.
void append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    spdlog::warn("event=ack_file_unwritable file={}", path);
    return;
  }
  const std::string text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    spdlog::warn("event=ack_file_short_write file={}", path);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"depl-sim-worker: draws losses from DEPL_LOSS_PROFILE and reports them like a "
               "real worker (see docs/worker-contract.md)"};
  double epoch_seconds = 0.1;
  std::uint64_t seed = 0;
  app.add_option("--epoch-seconds", epoch_seconds, "wall time of one simulated epoch")
      ->check(CLI::Range(0.0, 3600.0))
      ->envname("DEPL_SIM_EPOCH_SECONDS");
  app.add_option("--seed", seed, "random seed (default: from the job, phase, rank and start epoch)");
  CLI11_PARSE(app, argc, argv);
  {
    struct sigaction action {};
    action.sa_handler = on_sigterm;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
  }

  const std::string job = env("DEPL_JOB").value_or("standalone");
  const std::string model = env("DEPL_MODEL").value_or("model");
  const int phase = env_int("DEPL_PHASE", 0);
  const int rank = env_int("RANK", 0);
  const int epochs = env_int("DEPL_EPOCHS", 1);
  const int start_epoch = env_int("DEPL_START_EPOCH", 0);
  const int fail_at_epoch =
      env("DEPL_SIM_FAIL_AT_EPOCH") ? env_int("DEPL_SIM_FAIL_AT_EPOCH", 1) : 0;
  const std::string profile_text = env("DEPL_LOSS_PROFILE").value_or("");
  json profile = json::parse(profile_text, nullptr, false);
  if (!profile.is_object()) {
    fmt::print(stderr, "depl-sim-worker: DEPL_LOSS_PROFILE must be a JSON object, got \"{}\"\n",
               profile_text);
    return 2;
  }
  const double l0 = number(profile, "initialLoss", 1.0);
  const double floor0 = number(profile, "floorLoss", 0.0);
  const double decay = number(profile, "decayPerEpoch", 0.9);
  const double sigma = number(profile, "noiseStddev", 0.0);
  const double nu = number(profile, "validationNoiseStddev", 0.0);
  const double spread0 = number(profile, "initialLossStddev", 0.0);
  const double reference = number(profile, "referenceSamples", 1.0);
  const double alpha = number(profile, "dataExponent", 0.0);
  const double beta = number(profile, "labelNoiseFloor", 0.0);
  const double effective = number(profile, "effectiveSamples", reference);
  const double wrong_share = number(profile, "wrongLabelShare", 0.0);
  const double rho = std::pow(decay, effective / reference);
  const double floor = floor0 * std::pow(reference / effective, alpha) + beta * wrong_share;

  if (seed == 0) {
    seed = std::hash<std::string>{}(fmt::format("{}/{}/{}/{}", job, phase, rank, start_epoch));
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1.0);

  const std::filesystem::path checkpoint_file =
      std::filesystem::path(env("DEPL_CHECKPOINT_DIR").value_or(".")) / "sim-checkpoint.json";
  double loss = l0;
  if (spread0 > 0) loss += spread0 * noise(rng);
  int resumed_epoch = 0;
  double done_of_next_epoch = 0;  // seconds of the next epoch trained before a stop
  if (auto c = read_checkpoint(checkpoint_file)) {
    resumed_epoch = c->epoch;
    loss = c->loss;
    if (c->model == model && c->epoch == start_epoch) done_of_next_epoch = c->partial_seconds;
    if (!c->model.empty() && c->model != model) {
      const json jump = profile.value("switchJump", json::object());
      loss += number(jump, "mean", 0.0) + number(jump, "stddev", 0.0) * noise(rng);
      spdlog::info("event=switch from={} to={} loss={:.6g}", c->model, model, loss);
    }
    spdlog::info("event=resume checkpoint_epoch={} start_epoch={}", c->epoch, start_epoch);
  }

  auto retry_for =
      depl::worker::parse_progress_retry(env("DEPL_PROGRESS_RETRY_SECONDS").value_or(""));
  if (!retry_for) {
    fmt::print(stderr, "depl-sim-worker: {}\n", retry_for.error().message);
    return 2;
  }
  const std::string ack_file = env("DEPL_SIM_ACK_FILE").value_or("");

  std::optional<depl::worker::ProgressClient> progress;
  if (auto url = env("DEPL_PROGRESS_URL")) {
    depl::worker::ProgressClientOptions options;
    options.url = *url;
    options.token = env("DEPL_PROGRESS_TOKEN").value_or("");
    options.retry_for = *retry_for;
    auto client = depl::worker::ProgressClient::create(options);
    if (!client) {
      fmt::print(stderr, "depl-sim-worker: DEPL_PROGRESS_URL: {}\n", client.error().message);
      return 2;
    }
    progress.emplace(std::move(*client));
  }

  // DEPL_EPOCHS is the plan when the pod started. With a progress endpoint the controller has the
  // last word: "continue" past the planned end means the plan grew, "checkpointAndExit" ends it.
  const int planned_end = start_epoch + epochs;
  for (int epoch = start_epoch + 1; progress || epoch <= planned_end; ++epoch) {
    const double left = std::max(0.0, epoch_seconds - done_of_next_epoch);
    const double slept = train_for(left);
    if (g_terminate.load(std::memory_order_relaxed)) {
      // Told to stop: keep what this epoch had done, so the next pod does only the rest.
      const double done = std::min(epoch_seconds, done_of_next_epoch + slept);
      if (rank == 0) write_checkpoint(checkpoint_file, {epoch - 1, loss, model, done});
      spdlog::info("event=terminated epoch={} partial_seconds={:.3f} exit_code={}", epoch - 1,
                   done, kExitTerminated);
      return kExitTerminated;
    }
    done_of_next_epoch = 0;
    loss = floor + (loss - floor) * rho + sigma * noise(rng);
    loss = std::max(loss, 0.0);
    // The loss reported is the trajectory's plus this epoch's own transient error, which the
    // checkpoint does not carry on.
    const double reported = nu > 0 ? std::max(loss + nu * noise(rng), 0.0) : loss;
    if (rank == 0) write_checkpoint(checkpoint_file, {epoch, loss, model});
    fmt::print("{}\n", json{{"epoch", epoch}, {"loss", reported}, {"variant", model}}.dump());
    std::fflush(stdout);
    if (!progress) continue;
    auto answer = progress->post({phase, rank, epoch, reported});
    if (answer && !ack_file.empty()) {
      const bool stop_now = *answer == depl::worker::ProgressAction::CheckpointAndExit;
      append_line(ack_file, json{{"phase", phase},
                                 {"rank", rank},
                                 {"epoch", epoch},
                                 {"loss", loss},
                                 {"action", stop_now ? "checkpointAndExit" : "continue"}}
                                .dump());
    }
    if (!answer) {
      fmt::print(stderr, "depl-sim-worker: progress report for epoch {} failed: {}\n", epoch,
                 answer.error().message);
      return answer.error().rejected ? 3 : depl::worker::kExitProgressUnreachable;
    }
    if (epoch == fail_at_epoch && resumed_epoch < fail_at_epoch) {
      fmt::print(stderr,
                 "depl-sim-worker: simulated failure after epoch {} (DEPL_SIM_FAIL_AT_EPOCH)\n",
                 epoch);
      return 1;
    }
    if (*answer == depl::worker::ProgressAction::CheckpointAndExit) {
      spdlog::info("event=checkpoint_and_exit epoch={}", epoch);
      return 0;
    }
  }
  return 0;
}
