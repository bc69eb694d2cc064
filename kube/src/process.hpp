// Runs a helper program to completion and captures its output (exec credential plugins).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "depl/common/expected.hpp"

namespace depl::kube::detail {

struct ProcessResult {
  int exit_code = 0;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

// Spawns `argv[0]` (looked up on PATH when it has no '/') with this process's environment plus
// `extra_env` (overriding same-named variables). stdin is inherited when `inherit_stdin`, else
// /dev/null. Fails only when the program cannot be started.
Expected<ProcessResult> run_process(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& extra_env, bool inherit_stdin);

}  // namespace depl::kube::detail
