#include "depl/cli/input_files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "depl/common/yaml_json.hpp"
#include "depl/controller/worker_spec_validation.hpp"
#include "depl/solver/parse.hpp"

namespace depl::cli {

Expected<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return depl::error(fmt::format("{}: cannot read: is a directory", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return depl::error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return depl::error(fmt::format("{}: cannot read: I/O error", path));
  return text.str();
}

Expected<solver::Problem, std::vector<std::string>> load_problem(
    const std::string& job_path, const std::string& pools_path,
    std::vector<std::string>* warnings) {
  std::vector<std::string> errors;
  auto job_text = read_text_file(job_path);
  auto pools_text = read_text_file(pools_path);
  if (!job_text) errors.push_back(job_text.error().message);
  if (!pools_text) errors.push_back(pools_text.error().message);
  if (!errors.empty()) return depl::unexpected(std::move(errors));

  // Parse both files before giving up, so one run reports everything wrong in either.
  auto job = solver::parse_job_yaml(*job_text, job_path);
  auto pools = solver::parse_pools_yaml(*pools_text, pools_path);
  if (!job) errors.insert(errors.end(), job.error().messages.begin(), job.error().messages.end());
  if (!pools) {
    errors.insert(errors.end(), pools.error().messages.begin(), pools.error().messages.end());
  }
  // The fields the operator copies into worker Pods (images, resources, env, podTemplate,
  // volumes), checked as the controller checks them, so a plan is never shown for a job the
  // controller would refuse as InvalidSpec.
  if (auto document = yaml_to_json(*job_text); document && document->is_object()) {
    for (const auto& problem : controller::validate_worker_fields(*document)) {
      errors.push_back(fmt::format("{}: {}", job_path, problem));
    }
  }
  if (!errors.empty()) return depl::unexpected(std::move(errors));

  auto problem = solver::combine(std::move(*job), std::move(*pools));
  if (!problem) return depl::unexpected(std::move(problem).error().messages);
  if (warnings != nullptr) {
    for (auto& w : solver::cross_reference_warnings(*problem)) warnings->push_back(std::move(w));
  }
  return std::move(*problem);
}

}  // namespace depl::cli
