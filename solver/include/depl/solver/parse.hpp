// Reads a DependableTrainingJob manifest and a pools file into a validated Problem. This is the
// solver's one entry point for outside input: every rule of docs/depl-model.md is checked here,
// and each failure names the field path and the rule
// ("spec.models[1].lossProfile.decayPerEpoch: must be in (0,1), got 1.2"). Never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "depl/common/expected.hpp"
#include "depl/solver/problem.hpp"

namespace depl::solver {

// All the problems found in one input, section by section in the order of the schema
// (validation does not stop at the first one, so a user can fix everything in one go).
struct ValidationError {
  std::vector<std::string> messages;
  std::string joined() const;  // one message per line
};

// The size limits a job is read under. `Solver`: the solver's (limits.hpp), which a job must fit
// to be planned. `Stored`: only the bounds the DependableTrainingJob schema sets, which hold no
// maximum on these sizes, so that a job the API server stores is read even when it is past the
// solver's limits (the controller keeps it, and names the field that keeps it from a plan).
enum class JobLimits { Solver, Stored };

// The fields of `problem` past the solver's limits (limits.hpp), one message per field in the
// parser's words ("spec.datasets: must list at most 64 items, got 65", "pools[3].name: must be
// at most 63 characters, got 70"); empty when the solver admits it. A job read under `Stored`
// that reads under `Solver` too has none, and solve() refuses a problem that has any, so a
// caller that read a job under `Stored` asks this instead of parsing the job again.
std::vector<std::string> past_solver_limits(const Problem& problem);

// The job part of a Problem (everything but pools), from the manifest's YAML text.
// `source` names the file in messages ("job.yaml: ...") when not empty.
Expected<Problem, ValidationError> parse_job_yaml(std::string_view yaml,
                                                  std::string_view source = "");
// The same from an already-parsed object (the controller reads custom resources as JSON).
// `object` is the whole DependableTrainingJob (apiVersion, kind, metadata, spec).
Expected<Problem, ValidationError> parse_job_json(const nlohmann::json& object,
                                                  JobLimits limits = JobLimits::Solver);

// `pools: [...]` from a pools file's YAML text.
Expected<std::vector<Pool>, ValidationError> parse_pools_yaml(std::string_view yaml,
                                                              std::string_view source = "");
Expected<std::vector<Pool>, ValidationError> parse_pools_json(const nlohmann::json& object);

// Checks the cross-references between a job and pools (dataset locality and interPool naming
// pools that exist are warnings, not errors: pools come and go in a live cluster) and returns
// the combined Problem. Fails only on what makes the pair unusable (no pools at all).
Expected<Problem, ValidationError> combine(Problem job, std::vector<Pool> pools);

// The warnings combine() does not fail on, one message per dangling reference
// ("spec.datasets[0].locality[1]: no pool named \"x\" ..."), for the caller to log or print.
std::vector<std::string> cross_reference_warnings(const Problem& problem);

}  // namespace depl::solver
