// Fuzz target: a pools file (`pools: [...]`), as YAML through parse_pools_yaml and, when the
// input is JSON, through parse_pools_json; valid pools are combined with a fixed job and
// cross-checked. Bad input must come back as messages; good pools must obey the file's rules.
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "depl/solver/parse.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

constexpr std::string_view kJob = R"(apiVersion: depl.dev/v1alpha1
kind: DependableTrainingJob
metadata: {name: fuzz}
spec:
  target: {loss: 0.5}
  datasets:
    - {name: curated, samples: 1000, sizeBytes: 1Gi, locality: [a100, t4]}
  models:
    - name: full
      image: example/full:1
      computePerSampleGflop: 10
      parameterBytes: 100M
      lossProfile: {initialLoss: 2, floorLoss: 0.2, decayPerEpoch: 0.8, noiseStddev: 0.01}
)";

const solver::Problem& fixed_job() {
  static const solver::Problem job = [] {
    auto parsed = solver::parse_job_yaml(kJob);
    check(parsed.has_value(), "the fixed job parses");
    return *parsed;
  }();
  return job;
}

void check_errors(const solver::ValidationError& error, std::string_view source) {
  check(!error.messages.empty(), "a failed parse has at least one message");
  for (const auto& message : error.messages) {
    check(!message.empty(), "no message is empty");
    if (!source.empty()) check(message.rfind(source, 0) == 0, "every message names the source");
  }
}

void check_pools(const std::vector<solver::Pool>& pools) {
  std::set<std::string> names;
  for (const auto& pool : pools) {
    check(!pool.name.empty() && pool.name.size() <= 63, "pool name is a DNS label");
    check(names.insert(pool.name).second, "pool names unique");
    check(pool.gpus >= 0, "gpus >= 0");
    check(std::isfinite(pool.gpu_gflops) && pool.gpu_gflops > 0, "gpuGflops > 0");
    check(std::isfinite(pool.price_per_gpu_hour) && pool.price_per_gpu_hour >= 0,
          "pricePerGpuHour >= 0");
    check(std::isfinite(pool.bandwidth) && pool.bandwidth > 0, "bandwidth > 0");
    check(std::isfinite(pool.storage_bandwidth) && pool.storage_bandwidth > 0,
          "storage bandwidth > 0");
    check(std::isfinite(pool.startup_seconds) && pool.startup_seconds >= 0, "startupSeconds >= 0");
    for (const auto& [source, bandwidth] : pool.inter_pool) {
      (void)source;
      check(std::isfinite(bandwidth) && bandwidth > 0, "interPool bandwidth > 0");
    }
  }
}

void use(std::vector<solver::Pool> pools) {
  check_pools(pools);
  auto combined = solver::combine(fixed_job(), std::move(pools));
  if (combined) {
    (void)solver::cross_reference_warnings(*combined);
  } else {
    check_errors(combined.error(), "");
  }
}

}  // namespace

int pools(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  constexpr std::string_view kSource = "pools.yaml";
  if (auto parsed = solver::parse_pools_yaml(text, kSource)) {
    use(std::move(*parsed));
  } else {
    check_errors(parsed.error(), kSource);
  }
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_discarded()) {
    if (auto parsed = solver::parse_pools_json(object)) {
      use(std::move(*parsed));
    } else {
      check_errors(parsed.error(), "");
    }
  }
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(pools)
