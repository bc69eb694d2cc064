// The solver's limits and the schema's agree: every maxItems, maxLength and maximum the CRD sets
// on a field the solver reads is the constant of limits.hpp, and the parser rejects one past
// each of them, naming the field (the CLI exits 2 on such an error; the API server rejects the
// object before the controller sees it).
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

TEST(Limits, TheSchemaSaysWhatTheSolverAdmits) {
  const json spec = crd_spec();
  const json& dataset = spec["datasets"]["items"]["properties"];
  const json& model = spec["models"]["items"]["properties"];
  const json& training = spec["training"]["properties"];
  EXPECT_EQ(spec["datasets"]["maxItems"], limits::kDatasets);
  EXPECT_EQ(dataset["name"]["maxLength"], limits::kNameLength);
  EXPECT_EQ(dataset["locality"]["maxItems"], limits::kLocality);
  EXPECT_EQ(dataset["locality"]["items"]["maxLength"], limits::kNameLength);
  EXPECT_EQ(spec["models"]["maxItems"], limits::kModels);
  EXPECT_EQ(model["name"]["maxLength"], limits::kNameLength);
  EXPECT_EQ(model["image"]["maxLength"], limits::kImageLength);
  EXPECT_EQ(model["gpusPerWorker"]["maximum"], limits::kGpusPerWorker);
  EXPECT_EQ(spec["switching"]["maxItems"], limits::kSwitches);
  EXPECT_EQ(spec["switching"]["items"]["properties"]["from"]["maxLength"], limits::kNameLength);
  EXPECT_EQ(spec["switching"]["items"]["properties"]["to"]["maxLength"], limits::kNameLength);
  EXPECT_EQ(training["batchSize"]["maximum"], limits::kBatchSize);
  EXPECT_EQ(training["maxEpochs"]["maximum"], limits::kMaxEpochs);
  EXPECT_EQ(training["maxSwitches"]["maximum"], limits::kMaxSwitches);
  EXPECT_EQ(training["workers"]["properties"]["min"]["maximum"], limits::kWorkers);
  EXPECT_EQ(training["workers"]["properties"]["max"]["maximum"], limits::kWorkers);
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

std::string errors(const json& object) {
  auto r = parse_job_json(object);
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
