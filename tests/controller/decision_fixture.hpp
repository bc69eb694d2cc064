// What the decision tests share: the quickstart job as the API server holds it, nodes of GPU
// pools as pool discovery reads them, a cluster view for decide() and the executor's side of a
// decision applied back to that view.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/controller/job_decision.hpp"

namespace depl::controller::fixture {

// The views' clock: 2027-01-15T08:00:00Z.
inline const std::chrono::system_clock::time_point kNow =
    std::chrono::system_clock::from_time_t(1'800'000'000);
inline const std::string kNowText = "2027-01-15T08:00:00Z";

// examples/quickstart/job.yaml in namespace "default", uid "uid-quickstart", generation 1.
nlohmann::json quickstart_job();

// A Ready node of GPU pool `pool` with its discovery annotations.
nlohmann::json gpu_node(const std::string& name, const std::string& pool, int gpus, double gflops,
                        double price_per_gpu_hour);

SharedObjects shared(std::vector<nlohmann::json> objects);

// `job` seen at kNow on `nodes`, with the name decide() gives a token Secret it asks for.
JobView job_view(nlohmann::json job, std::vector<nlohmann::json> nodes);

DecideOptions options();

// How the cluster treats an object the executor created, before the next decision sees it.
using AsCreated = std::function<void(nlohmann::json& object)>;
// Pods run at once.
void pods_run(nlohmann::json& object);

// Applies a decision to the view as the executor would: the status written, the token Secret
// made, created objects given a uid and passed through `as_created`, removed ones gone.
void apply(JobView& v, const Decision& d, const AsCreated& as_created = pods_run);

bool has_event(const Decision& d, const std::string& reason);

// The condition `type`'s `field` ("reason", "message"), "" when the status has no such condition.
std::string condition_field(const nlohmann::json& status, const std::string& type,
                            const std::string& field);

}  // namespace depl::controller::fixture
