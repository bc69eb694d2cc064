#include "depl/controller/client_job_access.hpp"

#include "depl/controller/job_resource.hpp"

namespace depl::controller {

using nlohmann::json;

ClientJobAccess::ClientJobAccess(kube::Client& client, const kube::Store& jobs,
                                 std::string field_manager)
    : client_(client), jobs_(jobs), field_manager_(std::move(field_manager)) {}

Expected<json, AccessError> ClientJobAccess::get_job(const std::string& ns,
                                                     const std::string& name) {
  auto job = client_.get(job_resource(), ns, name);
  if (!job) {
    if (job.error().is_not_found()) return unexpected(AccessError{"not found", false});
    return unexpected(AccessError{"reading the job: " + job.error().message, true});
  }
  return *job;
}

Expected<bool> ClientJobAccess::write_status(const json& job) {
  kube::WriteOptions write;
  write.field_manager = field_manager_;
  write.return_object = false;  // the next report reads the job again
  auto written = client_.replace_status(job_resource(), job, write);
  if (written) return true;
  if (written.error().is_conflict()) return false;
  return error(written.error().message);
}

std::optional<ProgressTokenRecord> ClientJobAccess::cached_token(const std::string& ns,
                                                                 const std::string& name) {
  auto job = jobs_.get({ns, name});
  if (!job) return std::nullopt;
  return progress_token_of(*job);
}

Expected<ProgressTokenRecord, AccessError> ClientJobAccess::token(const std::string& ns,
                                                                  const std::string& name) {
  auto job = get_job(ns, name);
  if (!job) return unexpected(job.error());
  auto record = progress_token_of(*job);
  if (!record) {
    return unexpected(
        AccessError{"no progress token (the job has no workers yet, or is unknown)", false});
  }
  return *record;
}

}  // namespace depl::controller
