// The solver's limits: the schema states them without enforcing them, the parser rejects one past
// each of them, naming the field (the CLI exits 2 on such an error), and reads a stored job past
// them all the same under JobLimits::Stored (the controller keeps such a job and does not plan it).
#include "depl/solver/limits.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "depl/common/yaml_json.hpp"
#include "depl/solver/parse.hpp"
#include "depl/solver/solve.hpp"

namespace depl::solver {
namespace {

using nlohmann::json;

json crd_spec() {
  std::ifstream in(std::string(DEPL_SOURCE_DIR) + "/crds/depl.dev_dependabletrainingjobs.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto crd = yaml_to_json(text.str());
  EXPECT_TRUE(crd.has_value());
  return (
      *crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
}

// The schema states each limit in the field's description and enforces none of them: an
// enforced bound would make the API server refuse every update of a job stored past it (a
// finalizer's removal included), so the controller checks them instead.
TEST(Limits, TheSchemaStatesTheSolversLimitsWithoutEnforcingThem) {
  const json spec = crd_spec();
  const json& dataset = spec["datasets"]["items"]["properties"];
  const json& model = spec["models"]["items"]["properties"];
  const json& switching = spec["switching"]["items"]["properties"];
  const json& training = spec["training"]["properties"];
  const json& workers = training["workers"]["properties"];
  const std::vector<std::pair<std::string, std::pair<const json*, std::size_t>>> fields = {
      {"spec.datasets", {&spec["datasets"], limits::kDatasets}},
      {"spec.datasets[].name", {&dataset["name"], limits::kNameLength}},
      {"spec.datasets[].locality", {&dataset["locality"], limits::kLocality}},
      {"spec.models", {&spec["models"], limits::kModels}},
      {"spec.models[].name", {&model["name"], limits::kNameLength}},
      {"spec.models[].image", {&model["image"], limits::kImageLength}},
      {"spec.models[].gpusPerWorker", {&model["gpusPerWorker"], limits::kGpusPerWorker}},
      {"spec.switching", {&spec["switching"], limits::kSwitches}},
      {"spec.switching[].from", {&switching["from"], limits::kNameLength}},
      {"spec.switching[].to", {&switching["to"], limits::kNameLength}},
      {"spec.training.batchSize", {&training["batchSize"], limits::kBatchSize}},
      {"spec.training.maxEpochs", {&training["maxEpochs"], limits::kMaxEpochs}},
      {"spec.training.maxSwitches", {&training["maxSwitches"], limits::kMaxSwitches}},
      {"spec.training.workers.min", {&workers["min"], limits::kWorkers}},
      {"spec.training.workers.max", {&workers["max"], limits::kWorkers}},
  };
  for (const auto& [path, field] : fields) {
    const json& schema = *field.first;
    ASSERT_TRUE(schema.is_object()) << path;
    for (const char* bound : {"maxItems", "maxLength", "maximum"}) {
      EXPECT_FALSE(schema.contains(bound)) << path << " enforces " << bound;
    }
    EXPECT_FALSE(schema.contains("items") && schema["items"].contains("maxLength")) << path;
    const std::string description = schema.value("description", "");
    EXPECT_NE(description.find("at most " + std::to_string(field.second)), std::string::npos)
        << path << ": " << description;
  }
}

json job(std::size_t datasets, std::size_t models) {
  json spec;
  spec["target"] = {{"loss", 0.5}};
  for (std::size_t d = 0; d < datasets; ++d) {
    spec["datasets"].push_back({{"name", "d" + std::to_string(d)}, {"samples", 1000}});
  }
  for (std::size_t m = 0; m < models; ++m) {
    spec["models"].push_back({{"name", "m" + std::to_string(m)},
                              {"image", "img"},
                              {"computePerSampleGflop", 1},
                              {"parameterBytes", 1000},
                              {"lossProfile",
                               {{"initialLoss", 2},
                                {"floorLoss", 0.1},
                                {"decayPerEpoch", 0.9},
                                {"noiseStddev", 0.01}}}});
  }
  return {{"apiVersion", "depl.dev/v1alpha1"},
          {"kind", "DependableTrainingJob"},
          {"metadata", {{"name", "j"}}},
          {"spec", spec}};
}

std::string errors(const json& object, JobLimits limits = JobLimits::Solver) {
  auto r = parse_job_json(object, limits);
  return r ? std::string() : r.error().joined();
}

TEST(Limits, TheParserRejectsOnePastEachNamingTheField) {
  EXPECT_EQ(errors(job(limits::kDatasets, limits::kModels)), "");
  EXPECT_NE(errors(job(limits::kDatasets + 1, 1)).find("spec.datasets: must list at most 64"),
            std::string::npos);
  EXPECT_NE(errors(job(1, limits::kModels + 1)).find("spec.models: must list at most 12"),
            std::string::npos);

  json long_name = job(1, 1);
  long_name["spec"]["datasets"][0]["name"] = std::string(limits::kNameLength + 1, 'a');
  EXPECT_NE(errors(long_name).find("spec.datasets[0].name: must be at most 63 characters"),
            std::string::npos);

  json local = job(1, 1);
  for (std::size_t i = 0; i <= limits::kLocality; ++i) {
    local["spec"]["datasets"][0]["locality"].push_back("p" + std::to_string(i));
  }
  EXPECT_NE(errors(local).find("spec.datasets[0].locality: must list at most 32"),
            std::string::npos);

  json image = job(1, 1);
  image["spec"]["models"][0]["image"] = std::string(limits::kImageLength + 1, 'i');
  EXPECT_NE(errors(image).find("spec.models[0].image: must be at most 512"), std::string::npos);

  json training = job(1, 1);
  training["spec"]["training"] = {{"maxEpochs", limits::kMaxEpochs + 1},
                                  {"maxSwitches", limits::kMaxSwitches + 1},
                                  {"batchSize", limits::kBatchSize + 1},
                                  {"workers", {{"min", 1}, {"max", limits::kWorkers + 1}}}};
  training["spec"]["models"][0]["gpusPerWorker"] = limits::kGpusPerWorker + 1;
  const std::string e = errors(training);
  for (const char* field :
       {"spec.training.maxEpochs: must be in [1,1000]",
        "spec.training.maxSwitches: must be in [0,4]",
        "spec.training.batchSize:", "spec.training.workers.max: must be in [1,64]",
        "spec.models[0].gpusPerWorker: must be in [1,16]"}) {
    EXPECT_NE(e.find(field), std::string::npos) << field << " in\n" << e;
  }

  json switches = job(1, 2);
  for (std::size_t i = 0; i <= limits::kSwitches; ++i) {
    switches["spec"]["switching"].push_back({{"from", "m0"}, {"to", "m1"}});
  }
  EXPECT_NE(errors(switches).find("spec.switching: must list at most 132"), std::string::npos);
}

// What the API server may store past the solver's limits is still read, and the fields the
// schema always bounded stay bounded.
TEST(Limits, AStoredJobPastTheSolversLimitsIsReadAll) {
  json big = job(limits::kDatasets + 1, limits::kModels + 1);
  big["spec"]["datasets"][0]["name"] = std::string(limits::kNameLength + 1, 'a');
  big["spec"]["models"][0]["image"] = std::string(limits::kImageLength + 1, 'i');
  big["spec"]["models"][0]["gpusPerWorker"] = limits::kGpusPerWorker + 1;
  big["spec"]["training"] = {{"maxEpochs", 5000},
                             {"maxSwitches", limits::kMaxSwitches + 1},
                             {"batchSize", limits::kBatchSize + 1},
                             {"workers", {{"min", 1}, {"max", limits::kWorkers + 1}}}};
  EXPECT_NE(errors(big), "");
  EXPECT_EQ(errors(big, JobLimits::Stored), "");
  auto problem = parse_job_json(big, JobLimits::Stored);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->datasets.size(), limits::kDatasets + 1);
  EXPECT_EQ(problem->training.max_epochs, 5000);

  json past = job(1, 1);
  past["spec"]["training"] = {{"maxEpochs", limits::kStoredMaxEpochs + 1},
                              {"maxSwitches", limits::kStoredMaxSwitches + 1}};
  const std::string e = errors(past, JobLimits::Stored);
  EXPECT_NE(e.find("spec.training.maxEpochs: must be in [1,100000]"), std::string::npos) << e;
  EXPECT_NE(e.find("spec.training.maxSwitches: must be in [0,1000]"), std::string::npos) << e;
}

// A job read under Stored is checked against the solver's limits without a second parse: the
// same fields, in the parser's words, and none for a job the solver admits.
TEST(Limits, AStoredJobIsCheckedWithoutParsingItAgain) {
  auto within = parse_job_json(job(limits::kDatasets, limits::kModels), JobLimits::Stored);
  ASSERT_TRUE(within.has_value());
  EXPECT_TRUE(past_solver_limits(*within).empty());

  json big = job(limits::kDatasets + 1, limits::kModels + 1);
  big["spec"]["datasets"][1]["name"] = std::string(limits::kNameLength + 1, 'a');
  for (std::size_t i = 0; i <= limits::kLocality; ++i) {
    big["spec"]["datasets"][2]["locality"].push_back(std::string(limits::kNameLength + 1, 'p'));
  }
  big["spec"]["models"][3]["image"] = std::string(limits::kImageLength + 1, 'i');
  big["spec"]["models"][4]["gpusPerWorker"] = limits::kGpusPerWorker + 1;
  big["spec"]["training"] = {{"maxEpochs", 5000},
                             {"maxSwitches", limits::kMaxSwitches + 1},
                             {"batchSize", limits::kBatchSize + 1},
                             {"workers", {{"min", 65}, {"max", 70}}}};
  auto problem = parse_job_json(big, JobLimits::Stored);
  ASSERT_TRUE(problem.has_value());
  const std::vector<std::string> past = past_solver_limits(*problem);
  const std::vector<std::string> expected = {
      "spec.datasets: must list at most 64 items, got 65",
      "spec.datasets[1].name: must be at most 63 characters, got 64",
      "spec.datasets[2].locality: must list at most 32 items, got 33",
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_LT(i, past.size());
    EXPECT_EQ(past[i], expected[i]);
  }
  // Every item of the long locality list is named, then the models and the training fields.
  const std::string all = fmt::format("{}", fmt::join(past, "\n"));
  for (const char* message : {"spec.datasets[2].locality[32]: must be at most 63 characters",
                              "spec.models: must list at most 12 items, got 13",
                              "spec.models[3].image: must be at most 512 characters, got 513",
                              "spec.models[4].gpusPerWorker: must be in [1,16], got 17",
                              "spec.training.batchSize: must be in [1,1048576], got 1048577",
                              "spec.training.maxEpochs: must be in [1,1000], got 5000",
                              "spec.training.maxSwitches: must be in [0,4], got 5",
                              "spec.training.workers.min: must be in [1,64], got 65",
                              "spec.training.workers.max: must be in [1,64], got 70"}) {
    EXPECT_NE(all.find(message), std::string::npos) << message << " in\n" << all;
  }
  // The parser under the solver's limits names the same fields in the same words.
  auto refused = parse_job_json(big);
  ASSERT_FALSE(refused.has_value());
  for (const auto& message : refused.error().messages) {
    EXPECT_NE(std::find(past.begin(), past.end(), message), past.end()) << message;
  }
}

// The solver's budget promises an answer only within the limits: solve() refuses a problem past
// them (whoever built it) instead of running on without a bound.
TEST(Limits, SolveRefusesAProblemPastTheLimits) {
  auto problem = parse_job_json(job(2, 1), JobLimits::Stored);
  ASSERT_TRUE(problem.has_value());
  Pool pool;
  pool.name = "p";
  pool.gpu_type = "t";
  pool.gpus = 4;
  pool.gpu_gflops = 1000;
  pool.price_per_gpu_hour = 1;
  pool.bandwidth = 1e9;
  pool.storage_bandwidth = 1e9;
  problem->pools.push_back(pool);
  EXPECT_TRUE(solve(*problem).has_value());

  problem->training.max_epochs = limits::kMaxEpochs + 1;
  auto refused = solve(*problem);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("spec.training.maxEpochs: must be in [1,1000], got 1001"),
            std::string::npos)
      << refused.error().message;

  problem->training.max_epochs = limits::kMaxEpochs;
  for (std::size_t k = 1; k <= limits::kPools; ++k) {
    pool.name = "p" + std::to_string(k);
    problem->pools.push_back(pool);
  }
  refused = solve(*problem);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("pools: must list at most 64 items, got 65"),
            std::string::npos)
      << refused.error().message;
}

TEST(Limits, PoolsFiles) {
  json pools;
  for (std::size_t k = 0; k <= limits::kPools; ++k) {
    pools["pools"].push_back({{"name", "p" + std::to_string(k)},
                              {"gpuType", "t"},
                              {"gpus", 1},
                              {"gpuGflops", 1},
                              {"pricePerGpuHour", 1},
                              {"bandwidthBytesPerSecond", 1},
                              {"storageBandwidthBytesPerSecond", 1}});
  }
  auto r = parse_pools_json(pools);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().joined().find("pools: must list at most 64"), std::string::npos);
  pools["pools"].erase(pools["pools"].size() - 1);
  EXPECT_TRUE(parse_pools_json(pools).has_value());
}

}  // namespace
}  // namespace depl::solver
