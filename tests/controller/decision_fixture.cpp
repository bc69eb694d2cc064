#include "decision_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "depl/common/yaml_json.hpp"

namespace depl::controller::fixture {

using nlohmann::json;

json quickstart_job() {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/examples/quickstart/job.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = yaml_to_json(text.str());
  EXPECT_TRUE(parsed.has_value()) << "examples/quickstart/job.yaml";
  json job = parsed ? *parsed : json::object();
  job["metadata"]["namespace"] = "default";
  job["metadata"]["uid"] = "uid-quickstart";
  job["metadata"]["generation"] = 1;
  return job;
}

json gpu_node(const std::string& name, const std::string& pool, int gpus, double gflops,
              double price_per_gpu_hour) {
  return json{{"metadata",
               {{"name", name},
                {"labels", {{"depl.dev/pool", pool}, {"nvidia.com/gpu.product", pool}}},
                {"annotations",
                 {{"depl.dev/gpu-gflops", fmt::format("{}", gflops)},
                  {"depl.dev/price-per-gpu-hour", fmt::format("{}", price_per_gpu_hour)},
                  {"depl.dev/bandwidth", "12.5G"},
                  {"depl.dev/storage-bandwidth", "1G"}}}}},
              {"status",
               {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

SharedObjects shared(std::vector<json> objects) {
  SharedObjects out;
  for (auto& o : objects) out.push_back(std::make_shared<const json>(std::move(o)));
  return out;
}

JobView job_view(json job, std::vector<json> nodes) {
  JobView v;
  v.job = std::move(job);
  v.nodes = shared(std::move(nodes));
  v.new_token_secret = "quickstart-progress-a1b2c3d4";
  v.now = kNow;
  return v;
}

DecideOptions options() {
  DecideOptions o;
  o.progress_url = "http://127.0.0.1:9999";
  o.seconds_now = [] { return 0.0; };
  return o;
}

void pods_run(json& object) {
  if (object["kind"] == "Pod") object["status"]["phase"] = "Running";
}

void apply(JobView& v, const Decision& d, const AsCreated& as_created) {
  if (d.status) v.job["status"] = *d.status;
  if (d.ensure_token_secret) {
    v.job["status"]["progressToken"] = {{"secret", v.new_token_secret}, {"sha256", "3f7a"}};
  }
  for (json o : d.create) {
    o["metadata"]["uid"] = "uid-" + o["metadata"]["name"].get<std::string>();
    as_created(o);
    (o["kind"] == "Pod" ? v.owned_pods : v.owned_services).push_back(std::move(o));
  }
  for (const auto& r : d.remove) {
    auto& list = r.kind == "Pod" ? v.owned_pods : v.owned_services;
    std::erase_if(list, [&](const json& o) { return o["metadata"]["name"] == r.name; });
  }
}

bool has_event(const Decision& d, const std::string& reason) {
  return std::any_of(d.events.begin(), d.events.end(),
                     [&](const auto& e) { return e.reason == reason; });
}

std::string condition_field(const json& status, const std::string& type, const std::string& field) {
  for (const auto& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) return c.value(field, "");
  }
  return "";
}

}  // namespace depl::controller::fixture
