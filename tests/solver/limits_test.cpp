// The solver's limits: the schema states them without enforcing them, the parser rejects one past
// each of them, naming the field (the CLI exits 2 on such an error), and reads a stored job past
// them all the same under JobLimits::Stored (the controller keeps such a job and does not plan it).
#include "depl/solver/limits.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "depl/common/yaml_json.hpp"
#include "depl/solver/parse.hpp"

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
