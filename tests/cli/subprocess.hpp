// Runs a program as a child process for the CLI tests and collects its exit code, stdout and
// stderr. A child still running after the timeout is killed and reported as such.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "depl/common/subprocess.hpp"

namespace depl::cli::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or the timeout
  bool timed_out = false;
  std::string out;
  std::string err;  // or why the program could not start
};

inline ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  SpawnOptions options;
  options.argv = {program};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.stdout_to = Redirect::pipe();
  options.stderr_to = Redirect::pipe();
  ProcessResult result;
  auto ran = run_command(options, {.timeout = timeout});
  if (!ran) {
    result.err = ran.error().message;
    return result;
  }
  result.timed_out = ran->timed_out;
  result.out = std::move(ran->out);
  result.err = std::move(ran->err);
  if (!ran->timed_out && ran->status.signal == 0) result.exit_code = ran->status.exit_code;
  return result;
}

}  // namespace depl::cli::testing
