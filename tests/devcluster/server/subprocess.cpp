#include "subprocess.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>

namespace depl::devcluster::testing {

namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

SpawnOptions options_for(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env) {
  SpawnOptions o;
  o.argv = argv;
  o.env.assign(env.begin(), env.end());
  o.stdout_to = Redirect::pipe();
  o.stderr_to = Redirect::to_stdout();
  o.own_process_group = true;
  return o;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdin_text, milliseconds timeout) {
  SpawnOptions o = options_for(argv, env);
  o.stdin_from = Redirect::pipe();
  CommandResult result;
  auto ran = depl::run_command(o, {.input = stdin_text, .timeout = timeout});
  if (!ran) {
    result.output = ran.error().message;
    return result;
  }
  result.output = std::move(ran->out);
  if (!ran->timed_out) result.exit_code = ran->status.exit_code;
  return result;
}

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env, bool separate_stderr) {
  SpawnOptions o = options_for(argv, env);
  if (separate_stderr) o.stderr_to = Redirect::inherit();
  auto child = depl::Subprocess::spawn(o);
  if (child) child_.emplace(std::move(*child));
}

bool Subprocess::fill(milliseconds timeout) {
  if (!child_ || child_->stdout_fd() < 0) return false;
  pollfd p{child_->stdout_fd(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return true;
  char buf[4096];
  const ssize_t n = ::read(child_->stdout_fd(), buf, sizeof(buf));
  if (n <= 0) return false;
  buffer_.append(buf, static_cast<size_t>(n));
  return true;
}

std::optional<std::string> Subprocess::read_line(milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::ceil<milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0 || !fill(left)) return std::nullopt;
  }
}

void Subprocess::signal(int sig) {
  if (child_) child_->signal(sig);
}

int Subprocess::wait(milliseconds timeout) {
  if (!child_) return -1;
  const auto deadline = steady_clock::now() + timeout;
  bool open = true;
  for (;;) {
    if (auto status = child_->try_wait()) return status->exit_code;
    const auto left = std::chrono::ceil<milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) {
      child_->kill();
      return -1;
    }
    // Draining stdout keeps a chatty child from blocking on a full pipe.
    if (open) {
      open = fill(std::min(left, milliseconds(20)));
    } else if (auto status = child_->wait_for(left)) {
      return status->exit_code;
    }
  }
}

}  // namespace depl::devcluster::testing
