// Self-pipe signal handling: the handler writes the signal number to a pipe; a thread reads it
// and requests stop. request_stop() is not async-signal-safe, so it never runs in the handler.
#include "depl/kube/runtime/termination_signals.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <cerrno>
#include <csignal>

#include <spdlog/spdlog.h>

namespace depl::kube {

namespace {

int g_pipe[2] = {-1, -1};
std::atomic<int> g_signals_seen{0};
std::atomic<int> g_first_signal{0};
std::atomic<bool> g_exit_on_second{true};
std::atomic<bool> g_installed{false};
struct sigaction g_previous_term;
struct sigaction g_previous_int;

void on_signal(int signal_number) {
  const int seen = g_signals_seen.fetch_add(1) + 1;
  if (seen == 1) g_first_signal.store(signal_number);
  if (seen > 1 && g_exit_on_second.load()) _exit(1);
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  // Nothing useful can be done if the pipe is full; the first byte already asked for stop.
  [[maybe_unused]] const auto written = write(g_pipe[1], &byte, 1);
}

}  // namespace

TerminationSignals::TerminationSignals(std::stop_source stop, bool exit_on_second_signal) {
  const bool was_installed = g_installed.exchange(true);
  assert(!was_installed && "only one TerminationSignals may exist at a time");
  (void)was_installed;
  g_signals_seen = 0;
  g_first_signal = 0;
  g_exit_on_second = exit_on_second_signal;
  if (pipe2(g_pipe, O_CLOEXEC) != 0) {
    spdlog::error("msg=\"cannot create the signal pipe; SIGTERM will not drain cleanly\"");
    return;
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &g_previous_term);
  sigaction(SIGINT, &action, &g_previous_int);

  const int read_end = g_pipe[0];
  thread_ = std::jthread([read_end, stop]() mutable {
    unsigned char byte = 0;
    while (true) {
      const auto got = read(read_end, &byte, 1);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0 || byte == 0) return;  // closed, or the destructor's wake-up byte
      spdlog::info("msg=\"termination signal received, shutting down\" signal={}",
                   static_cast<int>(byte));
      stop.request_stop();
    }
  });
}

TerminationSignals::~TerminationSignals() {
  if (g_pipe[1] >= 0) {
    sigaction(SIGTERM, &g_previous_term, nullptr);
    sigaction(SIGINT, &g_previous_int, nullptr);
    const unsigned char wake = 0;
    [[maybe_unused]] const auto written = write(g_pipe[1], &wake, 1);
    if (thread_.joinable()) thread_.join();
    close(g_pipe[0]);
    close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
  }
  g_installed = false;
}

int TerminationSignals::received() const {
  return g_first_signal.load();
}

}  // namespace depl::kube
