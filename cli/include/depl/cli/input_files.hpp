// Reading the CLI's input files: a DependableTrainingJob manifest and a pools file, parsed and
// validated by the solver's parser into one Problem. Every problem found comes back as one
// message per line, naming the file and the field, for the CLI to print on stderr (exit 2).
#pragma once

#include <string>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/solver/problem.hpp"

namespace depl::cli {

// The whole file; "PATH: cannot read: <reason>" when it is missing or unreadable.
Expected<std::string> read_text_file(const std::string& path);

// Job and pools files -> a validated Problem; on failure every message found in both files.
// Dangling cross-references (a dataset local to a pool that is not in the pools file) do not
// fail: they are appended to `warnings` when given.
Expected<solver::Problem, std::vector<std::string>> load_problem(
    const std::string& job_path, const std::string& pools_path,
    std::vector<std::string>* warnings = nullptr);

}  // namespace depl::cli
