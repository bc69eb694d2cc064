#include "depl/solver/parse.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "depl/common/yaml_json.hpp"

namespace depl::solver {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string read_text(const std::string& relative) {
  std::ifstream file(std::string(DEPL_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

json quickstart_job() {
  static const json job = *yaml_to_json(read_text("examples/quickstart/job.yaml"));
  return job;
}
json quickstart_pools() {
  static const json pools = *yaml_to_json(read_text("examples/quickstart/pools.yaml"));
  return pools;
}

std::vector<std::string> job_errors(const json& job) {
  auto parsed = parse_job_json(job);
  return parsed ? std::vector<std::string>{} : parsed.error().messages;
}
std::vector<std::string> pool_errors(const json& pools) {
  auto parsed = parse_pools_json(pools);
  return parsed ? std::vector<std::string>{} : parsed.error().messages;
}

// The quickstart with one value replaced (or removed when `value` is nullopt).
json with(json document, const std::string& pointer, std::optional<json> value) {
  const json::json_pointer at(pointer);
  if (value) {
    document[at] = *value;
  } else {
    document[at.parent_pointer()].erase(at.back());
  }
  return document;
}

// ---- the examples parse -----------------------------------------------------------------------

TEST(ParseJob, QuickstartParsesWithDefaultsAndQuantities) {
  auto job = parse_job_yaml(read_text("examples/quickstart/job.yaml"), "job.yaml");
  ASSERT_TRUE(job.has_value()) << job.error().joined();
  EXPECT_DOUBLE_EQ(job->target.loss, 0.45);
  EXPECT_DOUBLE_EQ(job->target.probability, 0.9);
  ASSERT_TRUE(job->target.deadline_seconds.has_value());
  EXPECT_FALSE(job->target.budget.has_value());
  EXPECT_EQ(job->target.guarantee, Guarantee::Gaussian);
  ASSERT_EQ(job->datasets.size(), 3u);
  EXPECT_DOUBLE_EQ(job->datasets[0].size_bytes, 20.0 * 1024 * 1024 * 1024);
  EXPECT_THAT(job->datasets[2].locality, ElementsAre("a100"));
  ASSERT_EQ(job->models.size(), 3u);
  EXPECT_DOUBLE_EQ(job->models[0].parameter_bytes, 344e6);
  EXPECT_EQ(job->models[0].gpus_per_worker, 1);
  // referenceSamples defaults to E over all datasets: 200000 + 0.6*150000 + 0.9*100000.
  for (const auto& model : job->models) EXPECT_DOUBLE_EQ(model.loss.reference_samples, 380000);
  ASSERT_EQ(job->switching.size(), 2u);
  EXPECT_EQ(job->switching[0].from, "small");
  EXPECT_DOUBLE_EQ(job->switching[0].jump_stddev, 0.02);
  EXPECT_TRUE(job->pools.empty());
}

TEST(ParsePools, QuickstartParsesWithGpusFromNodes) {
  auto pools = parse_pools_yaml(read_text("examples/quickstart/pools.yaml"), "pools.yaml");
  ASSERT_TRUE(pools.has_value()) << pools.error().joined();
  ASSERT_EQ(pools->size(), 2u);
  EXPECT_EQ((*pools)[0].gpus, 16);
  EXPECT_EQ((*pools)[0].nodes, 2);
  EXPECT_EQ((*pools)[0].gpus_per_node, 8);
  EXPECT_DOUBLE_EQ((*pools)[0].bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ((*pools)[0].startup_seconds, 120);
  EXPECT_DOUBLE_EQ((*pools)[1].inter_pool.at("a100"), 1.25e9);
}

TEST(Combine, QuickstartCombinesWithoutWarnings) {
  auto job = parse_job_json(quickstart_job());
  auto pools = parse_pools_json(quickstart_pools());
  ASSERT_TRUE(job && pools);
  auto problem = combine(*job, *pools);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->pools.size(), 2u);
  EXPECT_TRUE(cross_reference_warnings(*problem).empty());
}

TEST(ParseJob, DefaultsOfAMinimalJob) {
  const char* yaml = R"(
apiVersion: depl.dev/v1alpha1
kind: DependableTrainingJob
spec:
  target: {loss: 0.5}
  datasets: [{name: d, samples: 1000}]
  models:
    - name: m
      image: img
      computePerSampleGflop: 1
      parameterBytes: 0
      lossProfile: {initialLoss: 2, floorLoss: 0.1, decayPerEpoch: 0.9, noiseStddev: 0}
)";
  auto job = parse_job_yaml(yaml);
  ASSERT_TRUE(job.has_value()) << job.error().joined();
  EXPECT_DOUBLE_EQ(job->target.probability, 0.9);
  EXPECT_EQ(job->target.guarantee, Guarantee::Gaussian);
  EXPECT_DOUBLE_EQ(job->datasets[0].quality, 1);
  EXPECT_DOUBLE_EQ(job->datasets[0].label_noise, 0);
  EXPECT_DOUBLE_EQ(job->models[0].loss.label_noise_floor, 0);
  EXPECT_DOUBLE_EQ(job->datasets[0].size_bytes, 0);
  EXPECT_TRUE(job->datasets[0].locality.empty());
  EXPECT_EQ(job->models[0].gpus_per_worker, 1);
  EXPECT_DOUBLE_EQ(job->models[0].checkpoint_bytes, 0);  // twice parameterBytes
  EXPECT_DOUBLE_EQ(job->models[0].loss.reference_samples, 1000);
  EXPECT_DOUBLE_EQ(job->models[0].loss.data_exponent, 0);
  EXPECT_TRUE(job->switching.empty());
  EXPECT_EQ(job->training.batch_size, 256);
  EXPECT_EQ(job->training.max_epochs, 200);
  EXPECT_EQ(job->training.max_switches, 2);
  EXPECT_EQ(job->training.min_workers, 1);
  EXPECT_EQ(job->training.max_workers, 8);
}

TEST(ParseJob, ExplicitValuesOverrideDefaults) {
  json job = quickstart_job();
  job["spec"]["target"]["guarantee"] = "DistributionFree";
  job["spec"]["target"]["budget"] = 12.5;
  job["spec"]["models"][0]["gpusPerWorker"] = 2.0;  // a whole float is an integer
  job["spec"]["models"][0]["lossProfile"]["referenceSamples"] = 1e5;
  job["spec"]["training"]["workers"] = {{"min", 2}, {"max", 4}};
  auto parsed = parse_job_json(job);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().joined();
  EXPECT_EQ(parsed->target.guarantee, Guarantee::DistributionFree);
  EXPECT_DOUBLE_EQ(*parsed->target.budget, 12.5);
  EXPECT_EQ(parsed->models[0].gpus_per_worker, 2);
  EXPECT_DOUBLE_EQ(parsed->models[0].loss.reference_samples, 1e5);
  EXPECT_EQ(parsed->training.min_workers, 2);
  EXPECT_EQ(parsed->training.max_workers, 4);
}

// A dataset's wrong labels count no effective samples: referenceSamples defaults to E over
// all datasets, q (1 - labelNoise) n summed.
TEST(ParseJob, LabelNoiseAndItsFloorAreRead) {
  json job = quickstart_job();
  job["spec"]["datasets"][1]["labelNoise"] = 0.25;
  job["spec"]["models"][0]["lossProfile"]["labelNoiseFloor"] = 1.2;
  job["spec"]["models"][0]["lossProfile"].erase("referenceSamples");
  auto parsed = parse_job_json(job);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().joined();
  EXPECT_DOUBLE_EQ(parsed->datasets[1].label_noise, 0.25);
  EXPECT_DOUBLE_EQ(parsed->datasets[0].label_noise, 0);
  EXPECT_DOUBLE_EQ(parsed->models[0].loss.label_noise_floor, 1.2);
  EXPECT_DOUBLE_EQ(parsed->models[1].loss.label_noise_floor, 0);
  EXPECT_DOUBLE_EQ(parsed->models[0].loss.reference_samples,
                   200000 + 0.6 * 0.75 * 150000 + 0.9 * 100000);
}

TEST(ParseJob, QuantityStringsAndPlainNumbersAreBothAccepted) {
  json job = quickstart_job();
  job["spec"]["datasets"][0]["sizeBytes"] = "1.25G";
  job["spec"]["datasets"][1]["sizeBytes"] = 1024;
  job["spec"]["models"][0]["parameterBytes"] = "1Mi";
  job["spec"]["models"][1]["checkpointBytes"] = "3Mi";
  auto parsed = parse_job_json(job);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().joined();
  EXPECT_DOUBLE_EQ(parsed->datasets[0].size_bytes, 1.25e9);
  EXPECT_DOUBLE_EQ(parsed->datasets[1].size_bytes, 1024);
  EXPECT_DOUBLE_EQ(parsed->models[0].parameter_bytes, 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(parsed->models[0].checkpoint_bytes, 2 * 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(parsed->models[1].checkpoint_bytes, 3 * 1024.0 * 1024);
}

TEST(ParseJob, OperatorOnlyFieldsAreAcceptedAndIgnored) {
  json job = quickstart_job();
  job["spec"]["suspend"] = true;
  job["spec"]["checkpoint"] = {{"path", "s3://bucket/ckpt"}, {"everyEpochs", 1}};
  job["spec"]["podTemplate"] = {{"tolerations", json::array({{{"key", "gpu"}}})},
                                {"nodeSelector", {{"zone", "a"}}},
                                {"serviceAccountName", "trainer"}};
  job["spec"]["backoffLimit"] = 3;
  job["spec"]["replan"] = {{"everyEpochs", 5}};
  job["spec"]["ttlSecondsAfterFinished"] = 600;
  job["spec"]["datasets"][0]["source"] = {{"s3", "s3://bucket/curated"}};
  job["spec"]["models"][0]["resources"] = {{"limits", {{"memory", "32Gi"}}}};
  job["spec"]["models"][0]["env"] = json::array({{{"name", "X"}, {"value", "1"}}});
  job["metadata"]["labels"] = {{"team", "ml"}};
  job["status"] = {{"phase", "Running"}};
  EXPECT_THAT(job_errors(job), ElementsAre());
}

// ---- one rule, one message ------------------------------------------------------------------

struct RuleCase {
  const char* name;
  const char* pointer;
  std::optional<json> value;  // nullopt: remove the field
  const char* message;        // expected message (exact)
};

void PrintTo(const RuleCase& c, std::ostream* out) {
  *out << c.name;
}

class JobRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(JobRule, GivesTheFieldPathAndTheRule) {
  const RuleCase& c = GetParam();
  EXPECT_THAT(job_errors(with(quickstart_job(), c.pointer, c.value)), ElementsAre(c.message));
}

const double kInf = std::numeric_limits<double>::infinity();

INSTANTIATE_TEST_SUITE_P(
    Rules, JobRule,
    ::testing::Values(
        RuleCase{"ApiVersion", "/apiVersion", json("v1"),
                 "apiVersion: must be depl.dev/v1alpha1, got \"v1\""},
        RuleCase{"ApiVersionMissing", "/apiVersion", std::nullopt, "apiVersion: is required"},
        RuleCase{"Kind", "/kind", json("Job"), "kind: must be DependableTrainingJob, got \"Job\""},
        RuleCase{"MetadataShape", "/metadata", json::array(),
                 "metadata: must be a mapping, got a list"},
        RuleCase{"StatusShape", "/status", json(3), "status: must be a mapping, got 3"},
        RuleCase{"SpecMissing", "/spec", std::nullopt, "spec: is required"},
        RuleCase{"SpecShape", "/spec", json::array({1}), "spec: must be a mapping, got a list"},
        RuleCase{"TargetMissing", "/spec/target", std::nullopt, "spec.target: is required"},
        RuleCase{"LossPositive", "/spec/target/loss", json(0),
                 "spec.target.loss: must be > 0, got 0"},
        RuleCase{"LossRequired", "/spec/target/loss", std::nullopt,
                 "spec.target.loss: is required"},
        RuleCase{"LossIsANumber", "/spec/target/loss", json("low"),
                 "spec.target.loss: must be a number, got \"low\""},
        RuleCase{"LossFinite", "/spec/target/loss", json(kInf),
                 "spec.target.loss: must be a finite number, got .inf"},
        RuleCase{"ProbabilityLow", "/spec/target/probability", json(0.4),
                 "spec.target.probability: must be in [0.5,1), got 0.4"},
        RuleCase{"ProbabilityOne", "/spec/target/probability", json(1),
                 "spec.target.probability: must be in [0.5,1), got 1"},
        RuleCase{"ProbabilityBool", "/spec/target/probability", json(true),
                 "spec.target.probability: must be a number, got true"},
        RuleCase{"Deadline", "/spec/target/deadlineSeconds", json(0),
                 "spec.target.deadlineSeconds: must be > 0, got 0"},
        RuleCase{"Budget", "/spec/target/budget", json(-5),
                 "spec.target.budget: must be > 0, got -5"},
        RuleCase{"Guarantee", "/spec/target/guarantee", json("Chebyshev"),
                 "spec.target.guarantee: must be Gaussian or DistributionFree, got \"Chebyshev\""},
        RuleCase{"GuaranteeTypo", "/spec/target/guarantee", json("gaussian"),
                 "spec.target.guarantee: must be Gaussian or DistributionFree, got \"gaussian\" "
                 "(did you mean \"Gaussian\"?)"},
        RuleCase{"DatasetsEmpty", "/spec/datasets", json::array(),
                 "spec.datasets: must list at least one dataset"},
        RuleCase{"DatasetsShape", "/spec/datasets", json::object(),
                 "spec.datasets: must be a list, got a mapping"},
        RuleCase{"DatasetShape", "/spec/datasets/1", json("web"),
                 "spec.datasets[1]: must be a mapping, got \"web\""},
        RuleCase{"DatasetName", "/spec/datasets/0/name", std::nullopt,
                 "spec.datasets[0].name: is required"},
        RuleCase{"DatasetNameEmpty", "/spec/datasets/0/name", json(""),
                 "spec.datasets[0].name: must not be empty"},
        RuleCase{"DatasetDuplicate", "/spec/datasets/2/name", json("curated"),
                 "spec.datasets[2].name: duplicate name \"curated\" (first at spec.datasets[0])"},
        RuleCase{"SamplesPositive", "/spec/datasets/0/samples", json(0),
                 "spec.datasets[0].samples: must be > 0, got 0"},
        RuleCase{"SamplesInteger", "/spec/datasets/0/samples", json(2.5),
                 "spec.datasets[0].samples: must be an integer, got 2.5"},
        RuleCase{"SamplesNotAQuantity", "/spec/datasets/0/samples", json("1.2M"),
                 "spec.datasets[0].samples: must be an integer, got \"1.2M\""},
        RuleCase{"QualityZero", "/spec/datasets/1/quality", json(0),
                 "spec.datasets[1].quality: must be in (0,1], got 0"},
        RuleCase{"QualityAboveOne", "/spec/datasets/1/quality", json(1.5),
                 "spec.datasets[1].quality: must be in (0,1], got 1.5"},
        RuleCase{"SizeNegative", "/spec/datasets/0/sizeBytes", json("-1Gi"),
                 "spec.datasets[0].sizeBytes: must be >= 0, got \"-1Gi\""},
        RuleCase{"SizeBadQuantity", "/spec/datasets/0/sizeBytes", json("10GB"),
                 "spec.datasets[0].sizeBytes: must be a quantity, got \"10GB\" (unknown suffix "
                 "\"GB\"; use Ki Mi Gi Ti Pi Ei or n u m k M G T P E)"},
        RuleCase{"SizeShape", "/spec/datasets/0/sizeBytes", json::array(),
                 "spec.datasets[0].sizeBytes: must be a number or a quantity such as 10Gi, got "
                 "a list"},
        RuleCase{"LocalityShape", "/spec/datasets/2/locality", json("a100"),
                 "spec.datasets[2].locality: must be a list, got \"a100\""},
        RuleCase{"LocalityItems", "/spec/datasets/2/locality", json::array({1}),
                 "spec.datasets[2].locality[0]: must be a string, got 1"},
        RuleCase{"ModelsEmpty", "/spec/models", json::array(),
                 "spec.models: must list at least one model variant"},
        RuleCase{"ModelDuplicate", "/spec/models/3", quickstart_job()["spec"]["models"][0],
                 "spec.models[3].name: duplicate name \"full\" (first at spec.models[0])"},
        RuleCase{"ModelsBrokenNoEcho", "/spec/models/1", json(5),
                 "spec.models[1]: must be a mapping, got 5"},
        RuleCase{"ImageRequired", "/spec/models/0/image", std::nullopt,
                 "spec.models[0].image: is required"},
        RuleCase{"ImageEmpty", "/spec/models/0/image", json(""),
                 "spec.models[0].image: must not be empty"},
        RuleCase{"ImageString", "/spec/models/0/image", json(7),
                 "spec.models[0].image: must be a string, got 7"},
        RuleCase{"ComputePositive", "/spec/models/0/computePerSampleGflop", json(0),
                 "spec.models[0].computePerSampleGflop: must be > 0, got 0"},
        RuleCase{"ParameterBytesNegative", "/spec/models/0/parameterBytes", json(-1),
                 "spec.models[0].parameterBytes: must be >= 0, got -1"},
        RuleCase{"ParameterBytesRequired", "/spec/models/0/parameterBytes", std::nullopt,
                 "spec.models[0].parameterBytes: is required"},
        RuleCase{"GpusPerWorker", "/spec/models/0/gpusPerWorker", json(0),
                 "spec.models[0].gpusPerWorker: must be in [1,16], got 0"},
        RuleCase{"GpusPerWorkerInteger", "/spec/models/0/gpusPerWorker", json(1.5),
                 "spec.models[0].gpusPerWorker: must be an integer, got 1.5"},
        RuleCase{"LossProfileRequired", "/spec/models/1/lossProfile", std::nullopt,
                 "spec.models[1].lossProfile: is required"},
        RuleCase{"InitialLoss", "/spec/models/0/lossProfile/initialLoss", json(0),
                 "spec.models[0].lossProfile.initialLoss: must be > 0, got 0"},
        RuleCase{"FloorBelowInitial", "/spec/models/0/lossProfile/floorLoss", json(3),
                 "spec.models[0].lossProfile.floorLoss: must be < initialLoss (2.3), got 3"},
        RuleCase{"FloorEqualInitial", "/spec/models/0/lossProfile/floorLoss", json(2.3),
                 "spec.models[0].lossProfile.floorLoss: must be < initialLoss (2.3), got 2.3"},
        RuleCase{"FloorNegative", "/spec/models/0/lossProfile/floorLoss", json(-0.1),
                 "spec.models[0].lossProfile.floorLoss: must be >= 0, got -0.1"},
        RuleCase{"DecayAboveOne", "/spec/models/1/lossProfile/decayPerEpoch", json(1.2),
                 "spec.models[1].lossProfile.decayPerEpoch: must be in (0,1), got 1.2"},
        RuleCase{"DecayZero", "/spec/models/1/lossProfile/decayPerEpoch", json(0),
                 "spec.models[1].lossProfile.decayPerEpoch: must be in (0,1), got 0"},
        RuleCase{"Noise", "/spec/models/2/lossProfile/noiseStddev", json(-0.01),
                 "spec.models[2].lossProfile.noiseStddev: must be >= 0, got -0.01"},
        RuleCase{"NoiseRequired", "/spec/models/2/lossProfile/noiseStddev", std::nullopt,
                 "spec.models[2].lossProfile.noiseStddev: is required"},
        RuleCase{"ValidationNoise", "/spec/models/1/lossProfile/validationNoiseStddev",
                 json(-0.02),
                 "spec.models[1].lossProfile.validationNoiseStddev: must be >= 0, got -0.02"},
        RuleCase{"InitialLossSpread", "/spec/models/0/lossProfile/initialLossStddev", json(-0.5),
                 "spec.models[0].lossProfile.initialLossStddev: must be >= 0, got -0.5"},
        RuleCase{"ReferenceSamples", "/spec/models/0/lossProfile/referenceSamples", json(0),
                 "spec.models[0].lossProfile.referenceSamples: must be > 0, got 0"},
        RuleCase{"DataExponent", "/spec/models/0/lossProfile/dataExponent", json(-1),
                 "spec.models[0].lossProfile.dataExponent: must be >= 0, got -1"},
        RuleCase{"LabelNoiseFloor", "/spec/models/1/lossProfile/labelNoiseFloor", json(-0.5),
                 "spec.models[1].lossProfile.labelNoiseFloor: must be >= 0, got -0.5"},
        RuleCase{"LabelNoiseOne", "/spec/datasets/1/labelNoise", json(1),
                 "spec.datasets[1].labelNoise: must be in [0,1), got 1"},
        RuleCase{"LabelNoiseNegative", "/spec/datasets/0/labelNoise", json(-0.1),
                 "spec.datasets[0].labelNoise: must be in [0,1), got -0.1"},
        RuleCase{"LabelNoiseString", "/spec/datasets/0/labelNoise", json("high"),
                 "spec.datasets[0].labelNoise: must be a number, got \"high\""},
        RuleCase{"SwitchingShape", "/spec/switching", json(1),
                 "spec.switching: must be a list, got 1"},
        RuleCase{"SwitchFromUnknown", "/spec/switching/0/from", json("smal"),
                 "spec.switching[0].from: no model named \"smal\", did you mean \"small\"?"},
        RuleCase{"SwitchToUnknown", "/spec/switching/0/to", json("xyz"),
                 "spec.switching[0].to: no model named \"xyz\" (models: full, medium, small)"},
        RuleCase{"SwitchFromRequired", "/spec/switching/1/from", std::nullopt,
                 "spec.switching[1].from: is required"},
        RuleCase{"SwitchToItself", "/spec/switching/0/to", json("small"),
                 "spec.switching[0].to: must name a different model than from (\"small\")"},
        RuleCase{"SwitchDuplicate", "/spec/switching/1/from", json("small"),
                 "spec.switching[1]: duplicate switch \"small\" -> \"full\" (first at "
                 "spec.switching[0])"},
        RuleCase{"JumpStddev", "/spec/switching/0/lossJump/stddev", json(-1),
                 "spec.switching[0].lossJump.stddev: must be >= 0, got -1"},
        RuleCase{"JumpMeanFinite", "/spec/switching/0/lossJump/mean", json(-kInf),
                 "spec.switching[0].lossJump.mean: must be a finite number, got -.inf"},
        RuleCase{"JumpShape", "/spec/switching/0/lossJump", json::array(),
                 "spec.switching[0].lossJump: must be a mapping, got a list"},
        RuleCase{"Overhead", "/spec/switching/1/overheadSeconds", json(-1),
                 "spec.switching[1].overheadSeconds: must be >= 0, got -1"},
        RuleCase{"TrainingShape", "/spec/training", json("fast"),
                 "spec.training: must be a mapping, got \"fast\""},
        RuleCase{"BatchSize", "/spec/training/batchSize", json(0),
                 "spec.training.batchSize: must be in [1,1048576], got 0"},
        RuleCase{"BatchSizeHuge", "/spec/training/batchSize", json(1e12),
                 "spec.training.batchSize: must be in [1,1048576], got 1000000000000"},
        RuleCase{"MaxEpochs", "/spec/training/maxEpochs", json(0),
                 "spec.training.maxEpochs: must be in [1,1000], got 0"},
        RuleCase{"MaxSwitches", "/spec/training/maxSwitches", json(-1),
                 "spec.training.maxSwitches: must be in [0,4], got -1"},
        RuleCase{"WorkersMin", "/spec/training/workers/min", json(0),
                 "spec.training.workers.min: must be in [1,64], got 0"},
        RuleCase{"WorkersMaxBelowMin", "/spec/training/workers/max", json(0.0),
                 "spec.training.workers.max: must be in [1,64], got 0"},
        RuleCase{"WorkersInteger", "/spec/training/workers/max", json(2.5),
                 "spec.training.workers.max: must be an integer, got 2.5"},
        RuleCase{"WorkersMinAboveDefaultMax", "/spec/training/workers", json{{"min", 10}},
                 "spec.training.workers.max: must be >= min (10), got 8 (the default)"},
        RuleCase{"WorkersMinAboveMax", "/spec/training/workers", json{{"min", 4}, {"max", 2}},
                 "spec.training.workers.max: must be >= min (4), got 2"},
        RuleCase{"UnknownSpecField", "/spec/priority", json(1), "spec.priority: unknown field"},
        RuleCase{"UnknownTopLevel", "/specs", json::object(),
                 "specs: unknown field, did you mean \"spec\"?"},
        RuleCase{"UnknownWithHint", "/spec/training/batchsize", json(64),
                 "spec.training.batchsize: unknown field, did you mean \"batchSize\"?"},
        RuleCase{"UnknownTruncated", "/spec/models/0/lossProfile/decay", json(0.5),
                 "spec.models[0].lossProfile.decay: unknown field, did you mean "
                 "\"decayPerEpoch\"?"},
        RuleCase{"UnknownInDataset", "/spec/datasets/0/qualty", json(0.5),
                 "spec.datasets[0].qualty: unknown field, did you mean \"quality\"?"}),
    [](const ::testing::TestParamInfo<RuleCase>& info) { return std::string(info.param.name); });

TEST(ParseJob, MisspelledSectionIsUnknownAndTheRealOneMissing) {
  json job = quickstart_job();
  job["spec"]["models"][0]["lossProfil"] = job["spec"]["models"][0]["lossProfile"];
  job["spec"]["models"][0].erase("lossProfile");
  EXPECT_THAT(job_errors(job),
              ElementsAre("spec.models[0].lossProfil: unknown field, did you mean \"lossProfile\"?",
                          "spec.models[0].lossProfile: is required"));
}

TEST(ParseJob, CollectsEveryErrorNotJustTheFirst) {
  json job = quickstart_job();
  job["kind"] = "Pod";
  job["spec"]["target"]["probability"] = 2;
  job["spec"]["datasets"][1]["quality"] = -1;
  job["spec"]["models"][1]["lossProfile"]["decayPerEpoch"] = 1.2;
  job["spec"]["training"]["maxEpochs"] = 0;
  const auto errors = job_errors(job);
  EXPECT_THAT(errors, ElementsAre("kind: must be DependableTrainingJob, got \"Pod\"",
                                  "spec.target.probability: must be in [0.5,1), got 2",
                                  "spec.datasets[1].quality: must be in (0,1], got -1",
                                  "spec.models[1].lossProfile.decayPerEpoch: must be in (0,1), "
                                  "got 1.2",
                                  "spec.training.maxEpochs: must be in [1,1000], got 0"));
  auto parsed = parse_job_json(job);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().joined(), fmt::format("{}", fmt::join(errors, "\n")));
}

TEST(ParseJob, SourceNamePrefixesEveryMessage) {
  std::string yaml = read_text("examples/quickstart/job.yaml");
  yaml.replace(yaml.find("loss: 0.45"), 10, "loss: -1  ");
  yaml.replace(yaml.find("probability: 0.9"), 16, "probability: 5  ");
  auto parsed = parse_job_yaml(yaml, "job.yaml");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_THAT(parsed.error().messages,
              ElementsAre("job.yaml: spec.target.loss: must be > 0, got -1",
                          "job.yaml: spec.target.probability: must be in [0.5,1), got 5"));
}

TEST(ParseJob, NonFiniteYamlNumbersAreRejected) {
  std::string yaml = read_text("examples/quickstart/job.yaml");
  yaml.replace(yaml.find("loss: 0.45"), 10, "loss: .nan");
  auto parsed = parse_job_yaml(yaml);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_THAT(parsed.error().messages,
              ElementsAre("spec.target.loss: must be a finite number, got .nan"));
}

TEST(ParseJob, YamlSyntaxErrorHasThePosition) {
  auto parsed = parse_job_yaml("apiVersion: depl.dev/v1alpha1\nspec: [1, 2\nkind: x\n", "job.yaml");
  ASSERT_FALSE(parsed.has_value());
  ASSERT_EQ(parsed.error().messages.size(), 1u);
  EXPECT_THAT(parsed.error().messages[0], StartsWith("job.yaml:3:"));
}

TEST(ParseJob, EmptyDocumentIsAClearError) {
  for (const char* text : {"", "# nothing\n", "---\n"}) {
    auto parsed = parse_job_yaml(text, "job.yaml");
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_THAT(parsed.error().messages,
                ElementsAre("job.yaml: the document is empty, expected a DependableTrainingJob "
                            "manifest"));
  }
}

TEST(ParseJob, WrongDocumentShapesAreClearErrors) {
  EXPECT_THAT(parse_job_yaml("[]").error().messages,
              ElementsAre("must be a DependableTrainingJob manifest (a mapping), got a list"));
  EXPECT_THAT(parse_job_yaml("42").error().messages,
              ElementsAre("must be a DependableTrainingJob manifest (a mapping), got 42"));
  EXPECT_THAT(parse_job_yaml("just text").error().messages,
              ElementsAre("must be a DependableTrainingJob manifest (a mapping), got \"just "
                          "text\""));
  EXPECT_THAT(parse_job_yaml("{}").error().messages,
              ElementsAre("apiVersion: is required", "kind: is required", "spec: is required"));
}

TEST(ParseJob, GarbageNeverCrashes) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 200; ++round) {
    std::string junk(static_cast<std::size_t>(1 + round), '\0');
    for (auto& c : junk) c = static_cast<char>(byte(rng));
    EXPECT_NO_THROW({
      auto job = parse_job_yaml(junk, "junk");
      auto pools = parse_pools_yaml(junk, "junk");
      EXPECT_FALSE(job.has_value());
      EXPECT_FALSE(pools.has_value());
    });
  }
}

TEST(ParseJob, MutatedQuickstartNeverCrashes) {
  // Flip, drop and duplicate characters of the real example: mostly near-valid YAML that walks
  // into the field readers with odd types.
  const std::string original = read_text("examples/quickstart/job.yaml");
  std::mt19937 rng(7);
  const std::string replacements = "-:[]{}&*!|>'\"#?, \n0.9e~x";
  for (int round = 0; round < 300; ++round) {
    std::string text = original;
    for (int edit = 0; edit < 3; ++edit) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(rng);
      const char c =
          replacements[std::uniform_int_distribution<std::size_t>(0, replacements.size() - 1)(rng)];
      text[at] = c;
    }
    EXPECT_NO_THROW({
      auto job = parse_job_yaml(text, "job.yaml");
      if (!job) {
        EXPECT_FALSE(job.error().messages.empty());
      }
    });
  }
}

TEST(ParsePools, MutatedQuickstartNeverCrashes) {
  const std::string original = read_text("examples/quickstart/pools.yaml");
  std::mt19937 rng(11);
  const std::string replacements = "-:[]{}&*!|>'\"#?, \n0.9e~xGi";
  for (int round = 0; round < 300; ++round) {
    std::string text = original;
    for (int edit = 0; edit < 3; ++edit) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(rng);
      text[at] =
          replacements[std::uniform_int_distribution<std::size_t>(0, replacements.size() - 1)(rng)];
    }
    EXPECT_NO_THROW({
      auto pools = parse_pools_yaml(text, "pools.yaml");
      if (!pools) {
        EXPECT_FALSE(pools.error().messages.empty());
      }
    });
  }
}

TEST(ParseJob, ParsesTheControllersJsonForm) {
  // What the controller gets from the API server: JSON with integers as numbers.
  const json job = json::parse(quickstart_job().dump());
  auto parsed = parse_job_json(job);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().joined();
  EXPECT_EQ(parsed->models.size(), 3u);
}

// ---- pools ------------------------------------------------------------------------------------

class PoolRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(PoolRule, GivesTheFieldPathAndTheRule) {
  const RuleCase& c = GetParam();
  EXPECT_THAT(pool_errors(with(quickstart_pools(), c.pointer, c.value)), ElementsAre(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, PoolRule,
    ::testing::Values(
        RuleCase{"PoolsRequired", "/pools", std::nullopt, "pools: is required"},
        RuleCase{"PoolsShape", "/pools", json(3), "pools: must be a list, got 3"},
        RuleCase{"PoolShape", "/pools/0", json::array(), "pools[0]: must be a mapping, got a list"},
        RuleCase{"NameRequired", "/pools/0/name", std::nullopt, "pools[0].name: is required"},
        RuleCase{"NameDnsLabel", "/pools/0/name", json("A100_pool"),
                 "pools[0].name: must be a DNS label (lowercase letters, digits and '-', starting "
                 "and ending with a letter or digit, at most 63 characters), got \"A100_pool\""},
        RuleCase{"NameDuplicate", "/pools/1/name", json("a100"),
                 "pools[1].name: duplicate name \"a100\" (first at pools[0])"},
        RuleCase{"GpuType", "/pools/0/gpuType", std::nullopt, "pools[0].gpuType: is required"},
        RuleCase{"GpusNegative", "/pools/0/gpus", json(-1), "pools[0].gpus: must be >= 0, got -1"},
        RuleCase{"GpusBeyondNodes", "/pools/0/gpus", json(20),
                 "pools[0].gpus: must be <= nodes * gpusPerNode (16), got 20"},
        RuleCase{"GpusNeedShape", "/pools/0/nodes", std::nullopt,
                 "pools[0].gpus: is required (or give both nodes and gpusPerNode)"},
        RuleCase{"Nodes", "/pools/0/nodes", json(0), "pools[0].nodes: must be >= 1, got 0"},
        RuleCase{"GpusPerNode", "/pools/1/gpusPerNode", json(1.5),
                 "pools[1].gpusPerNode: must be an integer, got 1.5"},
        RuleCase{"Gflops", "/pools/0/gpuGflops", json(0), "pools[0].gpuGflops: must be > 0, got 0"},
        RuleCase{"Price", "/pools/0/pricePerGpuHour", json(-1),
                 "pools[0].pricePerGpuHour: must be >= 0, got -1"},
        RuleCase{"PriceRequired", "/pools/1/pricePerGpuHour", std::nullopt,
                 "pools[1].pricePerGpuHour: is required"},
        RuleCase{"Bandwidth", "/pools/0/bandwidthBytesPerSecond", json("0"),
                 "pools[0].bandwidthBytesPerSecond: must be > 0, got \"0\""},
        RuleCase{"StorageBandwidth", "/pools/1/storageBandwidthBytesPerSecond", json(-5),
                 "pools[1].storageBandwidthBytesPerSecond: must be > 0, got -5"},
        RuleCase{"Startup", "/pools/0/startupSeconds", json(-1),
                 "pools[0].startupSeconds: must be >= 0, got -1"},
        RuleCase{"CapacityType", "/pools/0/capacityType", json("Preemptible"),
                 "pools[0].capacityType: must be OnDemand or Spot, got \"Preemptible\""},
        RuleCase{"CapacityTypeHint", "/pools/0/capacityType", json("spot"),
                 "pools[0].capacityType: must be OnDemand or Spot, got \"spot\" (did you mean "
                 "\"Spot\"?)"},
        RuleCase{"InterruptionsPerHour", "/pools/1/interruptionsPerHour", json(-0.5),
                 "pools[1].interruptionsPerHour: must be >= 0, got -0.5"},
        RuleCase{"InterPoolShape", "/pools/1/interPool", json::array({"a100"}),
                 "pools[1].interPool: must be a mapping, got a list"},
        RuleCase{"InterPoolBandwidth", "/pools/1/interPool/a100", json(0),
                 "pools[1].interPool.a100: must be > 0, got 0"},
        RuleCase{"InterPoolQuantity", "/pools/1/interPool/a100", json("fast"),
                 "pools[1].interPool.a100: must be a quantity such as 10Gi or 1.5G, got \"fast\""},
        RuleCase{"UnknownField", "/pools/0/gpuFlops", json(1),
                 "pools[0].gpuFlops: unknown field, did you mean \"gpuGflops\"?"},
        RuleCase{"UnknownTopLevel", "/pool", json::array(),
                 "pool: unknown field, did you mean \"pools\"?"}),
    [](const ::testing::TestParamInfo<RuleCase>& info) { return std::string(info.param.name); });

TEST(ParsePools, GpusWithoutNodesAndExplicitGpusWin) {
  auto pools = parse_pools_yaml(R"(
pools:
  - {name: p1, gpuType: x, gpus: 3, gpuGflops: 1, pricePerGpuHour: 0,
     bandwidthBytesPerSecond: 1G, storageBandwidthBytesPerSecond: 1G}
  - {name: p2, gpuType: x, gpus: 0, nodes: 2, gpusPerNode: 4, gpuGflops: 1, pricePerGpuHour: 1,
     bandwidthBytesPerSecond: 1, storageBandwidthBytesPerSecond: 1}
)");
  ASSERT_TRUE(pools.has_value()) << pools.error().joined();
  EXPECT_EQ((*pools)[0].gpus, 3);
  EXPECT_EQ((*pools)[0].nodes, 0);
  EXPECT_EQ((*pools)[1].gpus, 0);  // all busy: explicit gpus is what is free
  EXPECT_DOUBLE_EQ((*pools)[0].startup_seconds, 0);
  EXPECT_TRUE((*pools)[0].inter_pool.empty());
  EXPECT_EQ((*pools)[0].capacity_type, CapacityType::OnDemand);
  EXPECT_DOUBLE_EQ((*pools)[0].interruptions_per_hour, 0);
}

// A spot pool is interrupted at the documented default rate unless it says its own.
TEST(ParsePools, CapacityTypeAndInterruptionRate) {
  auto pools = parse_pools_yaml(R"(
pools:
  - {name: s1, gpuType: x, gpus: 4, gpuGflops: 1, pricePerGpuHour: 0.3, capacityType: Spot,
     bandwidthBytesPerSecond: 1G, storageBandwidthBytesPerSecond: 1G}
  - {name: s2, gpuType: x, gpus: 4, gpuGflops: 1, pricePerGpuHour: 0.3, capacityType: Spot,
     interruptionsPerHour: 0.8, bandwidthBytesPerSecond: 1G, storageBandwidthBytesPerSecond: 1G}
  - {name: od, gpuType: x, gpus: 4, gpuGflops: 1, pricePerGpuHour: 1, capacityType: OnDemand,
     interruptionsPerHour: 0.01, bandwidthBytesPerSecond: 1G, storageBandwidthBytesPerSecond: 1G}
)");
  ASSERT_TRUE(pools.has_value()) << pools.error().joined();
  EXPECT_EQ((*pools)[0].capacity_type, CapacityType::Spot);
  EXPECT_DOUBLE_EQ((*pools)[0].interruptions_per_hour, kDefaultSpotInterruptionsPerHour);
  EXPECT_DOUBLE_EQ((*pools)[1].interruptions_per_hour, 0.8);
  EXPECT_EQ((*pools)[2].capacity_type, CapacityType::OnDemand);
  EXPECT_DOUBLE_EQ((*pools)[2].interruptions_per_hour, 0.01);
}

TEST(ParsePools, EmptyListParsesButCannotBeCombined) {
  auto pools = parse_pools_yaml("pools: []\n");
  ASSERT_TRUE(pools.has_value());
  EXPECT_TRUE(pools->empty());
  auto job = parse_job_json(quickstart_job());
  ASSERT_TRUE(job.has_value());
  auto problem = combine(*job, *pools);
  ASSERT_FALSE(problem.has_value());
  EXPECT_THAT(problem.error().messages, ElementsAre(HasSubstr("no node pools")));
}

TEST(ParsePools, DocumentErrorsNameTheSource) {
  EXPECT_THAT(
      parse_pools_yaml("", "pools.yaml").error().messages,
      ElementsAre("pools.yaml: the document is empty, expected a pools file (pools: [...])"));
  EXPECT_THAT(parse_pools_yaml("- a100\n", "pools.yaml").error().messages,
              ElementsAre("pools.yaml: must be a pools file (a mapping with a pools: list), got a "
                          "list"));
  EXPECT_THAT(parse_pools_yaml("pools: [\n", "pools.yaml").error().messages,
              ElementsAre(StartsWith("pools.yaml:2:")));
}

TEST(Combine, DanglingReferencesAreWarningsNotErrors) {
  json job = quickstart_job();
  job["spec"]["datasets"][0]["locality"] = json::array({"h100"});
  json pools = quickstart_pools();
  pools["pools"][1]["interPool"]["v100"] = "1G";
  pools["pools"][1]["interPool"]["t4"] = "1G";
  auto problem = combine(*parse_job_json(job), *parse_pools_json(pools));
  ASSERT_TRUE(problem.has_value());
  EXPECT_THAT(cross_reference_warnings(*problem),
              ElementsAre(AllOf(StartsWith("spec.datasets[0].locality[0]: no pool named \"h100\"")),
                          StartsWith("pools[1].interPool.t4: a pool's link to itself"),
                          "pools[1].interPool.v100: no pool named \"v100\""));
}

TEST(ValidationError, JoinedPutsOneMessagePerLine) {
  EXPECT_EQ((ValidationError{{"a: x", "b: y"}}).joined(), "a: x\nb: y");
  EXPECT_EQ((ValidationError{{}}).joined(), "");
}

}  // namespace
}  // namespace depl::solver
