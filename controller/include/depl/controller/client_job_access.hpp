// The progress endpoint's access to jobs through the API client (progress.hpp's JobAccess):
// jobs read straight from the API server, so a report builds on the latest status, status written
// with the job's resourceVersion as precondition, and progress-token records (progress_token.hpp)
// from the jobs cache, or from the API server when the cache has none yet. Thread-safe as the
// client and the store are.
#pragma once

#include "depl/controller/progress.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/store.hpp"

namespace depl::controller {

class ClientJobAccess final : public JobAccess {
 public:
  // `jobs` caches the DependableTrainingJobs; both must outlive this object.
  ClientJobAccess(kube::Client& client, const kube::Store& jobs,
                  std::string field_manager = "depl-controller");

  Expected<nlohmann::json, AccessError> get_job(const std::string& ns,
                                                const std::string& name) override;
  Expected<bool> write_status(const nlohmann::json& job) override;
  std::optional<ProgressTokenRecord> cached_token(const std::string& ns,
                                                  const std::string& name) override;
  Expected<ProgressTokenRecord, AccessError> token(const std::string& ns,
                                                   const std::string& name) override;

 private:
  kube::Client& client_;
  const kube::Store& jobs_;
  std::string field_manager_;
};

}  // namespace depl::controller
