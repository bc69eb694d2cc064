// kubectl-depl run as a subprocess, as a user or a script would: exit codes (0 feasible,
// 2 bad input, 3 infeasible), the JSON document's shape and key names, errors on stderr naming
// the field, the --plot SVG, simulate's JSON, and figures that equal the evaluator's on the
// plan the JSON describes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "depl/common/yaml_json.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/parse.hpp"
#include "subprocess.hpp"
#include "svg_check.hpp"

namespace depl::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProcessResult;

const std::string kBinary = DEPL_BINARY_DIR "/bin/kubectl-depl";
const std::string kQuickstart = DEPL_SOURCE_DIR "/examples/quickstart";

// A job the solver can plan (two variants, a listed switch) and pools for it.
constexpr const char* kJob = R"(apiVersion: depl.dev/v1alpha1
kind: DependableTrainingJob
metadata:
  name: cli-test
spec:
  target:
    loss: 0.32
    probability: 0.9
  datasets:
    - name: imagenet-subset
      samples: 10000
      quality: 0.8
      sizeBytes: 1G
  models:
    - name: resnet50
      image: registry.example/resnet50:1
      computePerSampleGflop: 2.0
      parameterBytes: 4M
      lossProfile:
        initialLoss: 2.0
        floorLoss: 0.2
        decayPerEpoch: 0.5
        noiseStddev: 0.01
        referenceSamples: 8000
    - name: resnet50-int8
      image: registry.example/resnet50-int8:1
      computePerSampleGflop: 0.5
      parameterBytes: 1M
      lossProfile:
        initialLoss: 2.0
        floorLoss: 0.4
        decayPerEpoch: 0.6
        noiseStddev: 0.02
        referenceSamples: 8000
  switching:
    - from: resnet50-int8
      to: resnet50
      lossJump:
        mean: 0.05
        stddev: 0.03
      overheadSeconds: 10
  training:
    batchSize: 100
    maxEpochs: 40
)";

constexpr const char* kPools = R"(pools:
  - name: a100-pool
    gpuType: NVIDIA-A100-SXM4-80GB
    gpus: 8
    gpuGflops: 1000
    pricePerGpuHour: 3.6
    bandwidthBytesPerSecond: 1G
    storageBandwidthBytesPerSecond: 100M
    startupSeconds: 5
  - name: t4-pool
    gpuType: NVIDIA-T4
    gpus: 4
    gpuGflops: 100
    pricePerGpuHour: 0.36
    bandwidthBytesPerSecond: 100M
    storageBandwidthBytesPerSecond: 50M
)";

class KubectlDepl : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kBinary)) << kBinary << " not built";
    std::string pattern = (fs::temp_directory_path() / "kubectl-depl-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    job_ = write("job.yaml", kJob);
    pools_ = write("pools.yaml", kPools);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  std::string with_replaced(const std::string& from, const std::string& to) {
    std::string job = kJob;
    const auto at = job.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    job.replace(at, from.size(), to);
    return write("edited-job.yaml", job);
  }

  // A job of `datasets` datasets and `models` variants with every switch listed, maxEpochs 1000,
  // maxSwitches 4 and up to 64 workers: at the solver's limits with (64, 12).
  std::string write_wide_job(std::size_t datasets, std::size_t models,
                             std::size_t name_length = 0) {
    std::string y =
        "apiVersion: depl.dev/v1alpha1\nkind: DependableTrainingJob\nmetadata:\n  name: wide\n"
        "spec:\n  target:\n    loss: 0.6\n    probability: 0.9\n  datasets:\n";
    for (std::size_t d = 0; d < datasets; ++d) {
      std::string name = "data-" + std::to_string(d);
      if (d == 0 && name_length > name.size()) name += std::string(name_length - name.size(), 'x');
      y += "    - name: " + name + "\n      samples: " + std::to_string(20000 + 1000 * d) +
           "\n      quality: 0.8\n      sizeBytes: 2G\n";
    }
    y += "  models:\n";
    for (std::size_t m = 0; m < models; ++m) {
      const double ratio = 1.0 - 0.9 * static_cast<double>(m) / static_cast<double>(models - 1);
      y += "    - name: m" + std::to_string(m) + "\n      image: registry.example/m" +
           std::to_string(m) + ":1\n      computePerSampleGflop: " + std::to_string(30 * ratio) +
           "\n      parameterBytes: 100M\n      lossProfile:\n        initialLoss: 2.2\n" +
           "        floorLoss: " + std::to_string(0.2 + 0.4 * (1 - ratio)) +
           "\n        decayPerEpoch: " + std::to_string(0.95 - 0.08 * (1 - ratio)) +
           "\n        noiseStddev: 0.01\n        referenceSamples: 500000\n";
    }
    y += "  switching:\n";
    for (std::size_t a = 0; a < models; ++a) {
      for (std::size_t b = 0; b < models; ++b) {
        if (a == b) continue;
        y += "    - from: m" + std::to_string(a) + "\n      to: m" + std::to_string(b) +
             "\n      lossJump:\n        mean: 0.01\n        stddev: 0.005\n"
             "      overheadSeconds: 60\n";
      }
    }
    y += "  training:\n    batchSize: 256\n    maxEpochs: 1000\n    maxSwitches: 4\n"
         "    workers:\n      min: 1\n      max: 64\n";
    return write("wide-job.yaml", y);
  }
  // `count` pools of 1,024 A100s.
  std::string write_many_pools(std::size_t count) {
    std::string y = "pools:\n";
    for (std::size_t k = 0; k < count; ++k) {
      y += "  - name: pool-" + std::to_string(k) +
           "\n    gpuType: NVIDIA-A100-SXM4-80GB\n    gpus: 1024\n    gpuGflops: " +
           std::to_string(100000 + 5000 * k) +
           "\n    pricePerGpuHour: " + std::to_string(2 + 0.1 * static_cast<double>(k)) +
           "\n    bandwidthBytesPerSecond: 10G\n    storageBandwidthBytesPerSecond: 1G\n"
           "    startupSeconds: 30\n";
    }
    return write("many-pools.yaml", y);
  }

  static ProcessResult run(const std::vector<std::string>& args) {
    return testing::run_process(kBinary, args);
  }
  static nlohmann::json parse_json(const ProcessResult& r) {
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON:\n" << r.out;
    return j;
  }

  fs::path dir_;
  std::string job_;
  std::string pools_;
};

// The JSON document's required keys and their types.
void expect_plan_shape(const nlohmann::json& j) {
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j.contains("feasible"));
  EXPECT_TRUE(j["feasible"].is_boolean());
  ASSERT_TRUE(j.contains("datasets"));
  ASSERT_TRUE(j["datasets"].is_array());
  for (const auto& d : j["datasets"]) EXPECT_TRUE(d.is_string());
  ASSERT_TRUE(j.contains("phases"));
  ASSERT_TRUE(j["phases"].is_array());
  for (const auto& ph : j["phases"]) {
    EXPECT_TRUE(ph.at("model").is_string());
    EXPECT_TRUE(ph.at("epochs").is_number_integer());
    EXPECT_TRUE(ph.at("pool").is_string());
    EXPECT_TRUE(ph.at("workers").is_number_integer());
  }
  ASSERT_TRUE(j.contains("predicted"));
  for (const char* key : {"cost", "durationSeconds", "lossMean", "lossStddev", "probability"}) {
    EXPECT_TRUE(j["predicted"].contains(key) && j["predicted"][key].is_number()) << key;
  }
  if (!j["feasible"].get<bool>()) {
    ASSERT_TRUE(j.contains("reason"));
    EXPECT_TRUE(j["reason"].is_string());
    EXPECT_FALSE(j["reason"].get<std::string>().empty());
  } else {
    EXPECT_FALSE(j.contains("reason"));
  }
}

// Re-reads the job and pools, rebuilds the plan from the JSON's names and evaluates it: the
// JSON's figures must be the evaluator's.
void expect_json_matches_evaluator(const std::string& job_path, const std::string& pools_path,
                                   const nlohmann::json& j) {
  std::ifstream job_in(job_path);
  std::ifstream pools_in(pools_path);
  const std::string job_text((std::istreambuf_iterator<char>(job_in)), {});
  const std::string pools_text((std::istreambuf_iterator<char>(pools_in)), {});
  auto job = solver::parse_job_yaml(job_text);
  auto pools = solver::parse_pools_yaml(pools_text);
  ASSERT_TRUE(job && pools);
  auto problem = solver::combine(*job, *pools);
  ASSERT_TRUE(problem);
  solver::Plan plan;
  for (const auto& name : j.at("datasets")) {
    const int d = problem->dataset_index(name.get<std::string>());
    ASSERT_GE(d, 0) << name;
    plan.datasets.push_back(static_cast<std::size_t>(d));
  }
  std::sort(plan.datasets.begin(), plan.datasets.end());
  for (const auto& ph : j.at("phases")) {
    const int m = problem->model_index(ph.at("model").get<std::string>());
    const int k = problem->pool_index(ph.at("pool").get<std::string>());
    ASSERT_GE(m, 0);
    ASSERT_GE(k, 0);
    plan.phases.push_back({static_cast<std::size_t>(m), ph.at("epochs").get<int>(),
                           static_cast<std::size_t>(k), ph.at("workers").get<int>()});
  }
  const solver::Figures f = solver::evaluate(*problem, plan);
  const auto& p = j.at("predicted");
  auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
  };
  EXPECT_PRED2(near, p.at("cost").get<double>(), f.cost);
  EXPECT_PRED2(near, p.at("durationSeconds").get<double>(), f.duration_seconds);
  EXPECT_PRED2(near, p.at("lossMean").get<double>(), f.loss_mean);
  EXPECT_PRED2(near, p.at("lossStddev").get<double>(), f.loss_stddev);
  EXPECT_PRED2(near, p.at("probability").get<double>(), f.probability);
  EXPECT_EQ(j.at("feasible").get<bool>(), f.feasible);
  if (f.feasible) {
    EXPECT_TRUE(meets_guarantee(problem->target, f.loss_mean, f.loss_stddev * f.loss_stddev));
  }
}

TEST_F(KubectlDepl, PlanJsonHasTheDocumentedShapeAndExitsZero) {
  const ProcessResult r = run({"plan", "-f", job_, "--pools", pools_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  expect_plan_shape(j);
  EXPECT_EQ(j["feasible"], true);
  EXPECT_FALSE(j["phases"].empty());
  EXPECT_EQ(j["algorithm"], "depl");
  EXPECT_GE(j["predicted"]["probability"].get<double>(), 0.9);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(KubectlDepl, PlanJsonFiguresEqualTheEvaluatorOnThePlan) {
  for (const char* algorithm : {"depl", "exp", "full"}) {
    SCOPED_TRACE(algorithm);
    const ProcessResult r =
        run({"plan", "-f", job_, "--pools", pools_, "-o", "json", "--algorithm", algorithm});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
    const nlohmann::json j = parse_json(r);
    expect_plan_shape(j);
    EXPECT_EQ(j["algorithm"], algorithm);
    if (!j["phases"].empty()) expect_json_matches_evaluator(job_, pools_, j);
  }
}

TEST_F(KubectlDepl, QuickstartPlansAndMatchesTheEvaluator) {
  const std::string job = kQuickstart + "/job.yaml";
  const std::string pools = kQuickstart + "/pools.yaml";
  ASSERT_TRUE(fs::exists(job) && fs::exists(pools));
  const ProcessResult r = run({"plan", "-f", job, "--pools", pools, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  expect_plan_shape(j);
  expect_json_matches_evaluator(job, pools, j);
}

TEST_F(KubectlDepl, TableIsForPeople) {
  const ProcessResult r = run({"plan", "-f", job_, "--pools", pools_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("MODEL"));
  EXPECT_THAT(r.out, HasSubstr("POOL"));
  EXPECT_THAT(r.out, HasSubstr("P(target)"));
  EXPECT_THAT(r.out, HasSubstr("Duration"));
  EXPECT_THAT(r.out, Not(HasSubstr("{")));
}

TEST_F(KubectlDepl, YamlIsTheSameDocumentAsJson) {
  const ProcessResult json_run = run({"plan", "-f", job_, "--pools", pools_, "-o", "json"});
  const ProcessResult yaml_run = run({"plan", "-f", job_, "--pools", pools_, "-o", "yaml"});
  ASSERT_EQ(yaml_run.exit_code, 0) << yaml_run.err;
  nlohmann::json from_json = parse_json(json_run);
  auto from_yaml = yaml_to_json(yaml_run.out);
  ASSERT_TRUE(from_yaml) << from_yaml.error().message;
  // Solve time differs between runs; everything else must be identical.
  from_json["stats"].erase("solveSeconds");
  (*from_yaml)["stats"].erase("solveSeconds");
  EXPECT_EQ(*from_yaml, from_json);
}

TEST_F(KubectlDepl, InfeasibleExitsThreeAndStillPrintsThePlanDocument) {
  const std::string job =
      with_replaced("    probability: 0.9\n", "    probability: 0.9\n    deadlineSeconds: 5\n");
  const ProcessResult r = run({"plan", "-f", job, "--pools", pools_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const nlohmann::json j = parse_json(r);
  expect_plan_shape(j);
  EXPECT_EQ(j["feasible"], false);
  EXPECT_THAT(j["reason"].get<std::string>(), HasSubstr("deadline"));

  const ProcessResult table = run({"plan", "-f", job, "--pools", pools_});
  EXPECT_EQ(table.exit_code, 3);
  EXPECT_THAT(table.out, HasSubstr("INFEASIBLE"));
  EXPECT_THAT(table.out, HasSubstr("Reason:"));
}

TEST_F(KubectlDepl, BadFieldIsNamedOnStderrWithExitTwo) {
  const std::string job = with_replaced("decayPerEpoch: 0.5", "decayPerEpoch: 1.2");
  const ProcessResult r = run({"plan", "-f", job, "--pools", pools_, "-o", "json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.models[0].lossProfile.decayPerEpoch"));
  EXPECT_THAT(r.err, HasSubstr("1.2"));
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(KubectlDepl, EveryBadFieldGetsItsOwnLine) {
  std::string job = kJob;
  job.replace(job.find("samples: 10000"), 14, "samples: -5");
  job.replace(job.find("noiseStddev: 0.02"), 17, "noiseStddev: -1");
  const ProcessResult r = run({"plan", "-f", write("two-errors.yaml", job), "--pools", pools_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.datasets[0].samples"));
  EXPECT_THAT(r.err, HasSubstr("spec.models[1].lossProfile.noiseStddev"));
  EXPECT_GE(std::count(r.err.begin(), r.err.end(), '\n'), 2);
}

// The fields the operator copies into worker Pods are checked as the controller checks them:
// `plan` refuses what the controller would refuse as InvalidSpec, naming the same fields.
TEST_F(KubectlDepl, WorkerFieldsTheControllerRefusesAreBadInput) {
  const std::string job = with_replaced(
      "      image: registry.example/resnet50-int8:1\n",
      "      image: registry.example/resnet50-int8:1\n"
      "      resources:\n        limits:\n          memory: lots\n"
      "      env:\n        - name: 1BAD\n          value: x\n");
  const ProcessResult r = run({"plan", "-f", job, "--pools", pools_, "-o", "json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("spec.models[1].resources.limits.memory"));
  EXPECT_THAT(r.err, HasSubstr("spec.models[1].env[0].name"));
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(KubectlDepl, DanglingLocalityIsAWarningNotAnError) {
  const std::string job =
      with_replaced("      sizeBytes: 1G\n", "      sizeBytes: 1G\n      locality: [h100-pool]\n");
  const ProcessResult r = run({"plan", "-f", job, "--pools", pools_, "-o", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: "));
  EXPECT_THAT(r.err, HasSubstr("h100-pool"));
  expect_plan_shape(parse_json(r));
}

TEST_F(KubectlDepl, MissingFileIsBadInput) {
  const std::string missing = (dir_ / "no-such-job.yaml").string();
  const ProcessResult r = run({"plan", "-f", missing, "--pools", pools_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(missing));
  EXPECT_THAT(r.err, HasSubstr("No such file"));
  EXPECT_TRUE(r.out.empty());
}

TEST_F(KubectlDepl, BadFlagsAreBadInput) {
  EXPECT_EQ(run({"plan", "-f", job_}).exit_code, 2);  // --pools missing
  ProcessResult r = run({"plan", "-f", job_, "--pools", pools_, "-o", "xml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("-o"));
  r = run({"plan", "-f", job_, "--pools", pools_, "--algorithm", "greedy"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--algorithm"));
  r = run({"plan", "-f", job_, "--pools", pools_, "--eta", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--eta"));
  EXPECT_EQ(run({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(run({}).exit_code, 2);
}

TEST_F(KubectlDepl, PlanCarriesItsCertificate) {
  const ProcessResult r = run({"plan", "-f", job_, "--pools", pools_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = parse_json(r);
  const nlohmann::json& p = j.at("predicted");
  ASSERT_TRUE(p.contains("lowerBound")) << p.dump();
  EXPECT_LE(p.at("lowerBound").get<double>(), p.at("cost").get<double>());
  EXPECT_GT(p.at("lowerBound").get<double>(), 0);
  EXPECT_NEAR(p.at("gap").get<double>(),
              1 - p.at("lowerBound").get<double>() / p.at("cost").get<double>(), 1e-9);
  EXPECT_EQ(j.at("budgetLimited"), false);
  EXPECT_FALSE(j.contains("budgetStop"));
  const ProcessResult table = run({"plan", "-f", job_, "--pools", pools_});
  EXPECT_THAT(table.out, HasSubstr("Certified: no plan costs less than"));
}

TEST_F(KubectlDepl, ABudgetThatRunsOutIsSaidAndTheBestPlanStillPrinted) {
  // A tiny memory budget cuts every graph search; the one-phase plans remain.
  const ProcessResult r =
      run({"plan", "-f", job_, "--pools", pools_, "-o", "json", "--memory-budget", "1Ki"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j.at("budgetLimited"), true);
  EXPECT_EQ(j.at("budgetStop"), "memory");
  const ProcessResult table =
      run({"plan", "-f", job_, "--pools", pools_, "--memory-budget", "1Ki"});
  EXPECT_THAT(table.out, HasSubstr("Budget-limited"));
}

TEST_F(KubectlDepl, BudgetFlagsAreChecked) {
  ProcessResult r = run({"plan", "-f", job_, "--pools", pools_, "--time-budget", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--time-budget"));
  r = run({"plan", "-f", job_, "--pools", pools_, "--memory-budget", "lots"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--memory-budget"));
  // Past what a millisecond count or a size_t holds: refused, not converted.
  r = run({"plan", "-f", job_, "--pools", pools_, "--time-budget", "1e300"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--time-budget: must be a number of seconds in [0, 1000000]"));
  r = run({"plan", "-f", job_, "--pools", pools_, "--memory-budget", "1e30"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--memory-budget: must be in [0, 1Ei]"));
  // 0 means no limit.
  r = run({"plan", "-f", job_, "--pools", pools_, "--time-budget", "0", "--memory-budget", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(KubectlDepl, InputsPastTheSolversLimitsAreBadInputNamingTheField) {
  const std::string job =
      with_replaced("    maxEpochs: 40\n", "    maxEpochs: 1001\n    maxSwitches: 5\n");
  const ProcessResult r = run({"plan", "-f", job, "--pools", pools_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.training.maxEpochs: must be in [1,1000], got 1001"));
  EXPECT_THAT(r.err, HasSubstr("spec.training.maxSwitches: must be in [0,4], got 5"));
  EXPECT_TRUE(r.out.empty());
}

// The largest job the solver admits takes seconds to plan: a 1 ms time budget cuts it, and the
// output says so (with the reason, since no plan was found that early).
TEST_F(KubectlDepl, ATimeBudgetCutsTheSolveAndTheOutputSaysSo) {
  const std::string job = write_wide_job(64, 12);
  const std::string pools = write_many_pools(16);
  ProcessResult r =
      run({"plan", "-f", job, "--pools", pools, "-o", "json", "--time-budget", "0.001"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j.at("budgetLimited"), true);
  EXPECT_EQ(j.at("budgetStop"), "time");
  if (!j.at("feasible").get<bool>()) {
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(j.at("infeasibility").at("binding"), "solveBudget");
    EXPECT_THAT(j.at("reason").get<std::string>(), HasSubstr("time budget (1 ms)"));
  }
  r = run({"plan", "-f", job, "--pools", pools, "--time-budget", "0.001"});
  EXPECT_THAT(r.out, HasSubstr("Budget-limited: the solve stopped early (time)"));
  // simulate takes the same flags.
  r = run({"simulate", "-f", job, "--pools", pools, "-o", "json", "--runs", "100", "--time-budget",
           "0.001"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
  EXPECT_EQ(parse_json(r).at("plan").at("budgetLimited"), true);
  r = run({"simulate", "-f", job_, "--pools", pools_, "--memory-budget", "-1Mi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--memory-budget"));
}

// OPT's plan is its own certificate; the baselines carry none; YAML says what JSON says.
TEST_F(KubectlDepl, TheCertificateInEveryFormatAndForEachAlgorithm) {
  ProcessResult r =
      run({"plan", "-f", job_, "--pools", pools_, "-o", "json", "--algorithm", "opt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  EXPECT_EQ(j.at("predicted").at("lowerBound"), j.at("predicted").at("cost"));
  EXPECT_EQ(j.at("predicted").at("gap"), 0.0);
  EXPECT_EQ(j.at("predicted").at("lowerBoundComplete"), true);
  const double opt_cost = j.at("predicted").at("cost").get<double>();

  r = run({"plan", "-f", job_, "--pools", pools_, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = parse_json(r);
  // DepL's bound is a bound on every plan, OPT's included.
  EXPECT_LE(j.at("predicted").at("lowerBound").get<double>(), opt_cost);
  EXPECT_EQ(j.at("predicted").at("lowerBoundComplete"), true);

  r = run({"plan", "-f", job_, "--pools", pools_, "-o", "yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("lowerBound: "));
  EXPECT_THAT(r.out, HasSubstr("budgetLimited: false"));

  r = run({"plan", "-f", job_, "--pools", pools_, "-o", "json", "--algorithm", "full"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(parse_json(r).at("predicted").contains("lowerBound"));
}

// At the solver's limits a job is read (and planned within the budget); one past any of them is
// bad input naming the field.
TEST_F(KubectlDepl, TheSolversLimitsAreTheCLIsLimits) {
  ProcessResult r = run({"plan", "-f", write_wide_job(64, 12, 63), "--pools", write_many_pools(64),
                         "--time-budget", "0.001", "-o", "json"});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
  EXPECT_EQ(parse_json(r).at("budgetLimited"), true);

  r = run({"plan", "-f", write_wide_job(65, 13, 64), "--pools", write_many_pools(65)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.datasets: must list at most 64 items, got 65"));
  EXPECT_THAT(r.err, HasSubstr("spec.models: must list at most 12 items, got 13"));
  EXPECT_THAT(r.err, HasSubstr("pools: must list at most 64 items, got 65"));
  EXPECT_TRUE(r.out.empty());

  r = run({"plan", "-f", write_wide_job(3, 2, 64), "--pools", pools_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.datasets[0].name: must be at most 63 characters, got 64"));
}

TEST_F(KubectlDepl, PlotWritesAWellFormedSvgWithTheTargetLine) {
  const std::string svg_path = (dir_ / "loss.svg").string();
  const ProcessResult r = run({"plan", "-f", job_, "--pools", pools_, "--plot", svg_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(svg_path);
  const std::string svg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  const auto xml = testing::check_xml(svg);
  ASSERT_TRUE(xml.ok) << xml.error;
  int targets = 0;
  for (const auto& e : xml.elements) {
    auto it = e.attributes.find("class");
    if (it != e.attributes.end() && it->second == "target") ++targets;
  }
  EXPECT_EQ(targets, 1);
  EXPECT_THAT(svg, HasSubstr("target loss 0.32"));
}

TEST_F(KubectlDepl, PlotToAnUnwritablePathFails) {
  const ProcessResult r =
      run({"plan", "-f", job_, "--pools", pools_, "--plot", (dir_ / "no/such/dir.svg").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--plot"));
}

TEST_F(KubectlDepl, SimulateJsonKeysAndReplayableSeed) {
  const std::vector<std::string> args{"simulate", "-f",     job_, "--pools", pools_, "--runs",
                                      "20000",    "--seed", "5",  "-o",      "json"};
  const ProcessResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = parse_json(r);
  for (const char* key : {"predictedProbability", "empiricalProbability", "interval", "runs",
                          "reached", "seed", "noise", "plan"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["runs"], 20000);
  EXPECT_EQ(j["seed"], 5);
  EXPECT_EQ(j["noise"], "gaussian");
  ASSERT_EQ(j["interval"].size(), 2u);
  const double lo = j["interval"][0].get<double>();
  const double hi = j["interval"][1].get<double>();
  const double empirical = j["empiricalProbability"].get<double>();
  EXPECT_LE(lo, empirical);
  EXPECT_LE(empirical, hi);
  EXPECT_DOUBLE_EQ(empirical, j["reached"].get<double>() / 20000);
  expect_plan_shape(j["plan"]);
  EXPECT_EQ(j["predictedProbability"], j["plan"]["predicted"]["probability"]);
  // Gaussian noise: the simulation agrees with the prediction to a few standard errors.
  const double p = j["predictedProbability"].get<double>();
  EXPECT_NEAR(empirical, p, 4 * std::sqrt(p * (1 - p) / 20000) + 1e-9);

  nlohmann::json again = parse_json(run(args));
  j["plan"]["stats"].erase("solveSeconds");
  again["plan"]["stats"].erase("solveSeconds");
  EXPECT_EQ(again, j);
}

TEST_F(KubectlDepl, SimulateTableAndStudentT) {
  const ProcessResult r =
      run({"simulate", "-f", job_, "--pools", pools_, "--runs", "2000", "--noise", "student-t"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("student-t noise"));
  EXPECT_THAT(r.out, HasSubstr("Simulated"));
}

// EXP plans for the mean only, so its plan reaches the target about half the time: simulate
// shows it (and exits 3, since the guarantee is not met).
TEST_F(KubectlDepl, SimulatingExpsPlanShowsItMissesTheGuarantee) {
  const ProcessResult r =
      run({"simulate", "-f", kQuickstart + "/job.yaml", "--pools", kQuickstart + "/pools.yaml",
           "--algorithm", "exp", "--runs", "20000", "-o", "json"});
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const nlohmann::json j = parse_json(r);
  EXPECT_EQ(j["plan"]["feasible"], false);
  ASSERT_FALSE(j["plan"]["phases"].empty());
  const double p = j["predictedProbability"].get<double>();
  EXPECT_LT(p, 0.9);
  EXPECT_NEAR(j["empiricalProbability"].get<double>(), p, 4 * std::sqrt(p * (1 - p) / 20000));
  EXPECT_LT(j["interval"][1].get<double>(), 0.9);
}

TEST_F(KubectlDepl, SimulateExitCodes) {
  const std::string infeasible =
      with_replaced("    probability: 0.9\n", "    probability: 0.9\n    budget: 0.0001\n");
  ProcessResult r = run({"simulate", "-f", infeasible, "--pools", pools_, "-o", "json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(parse_json(r)["plan"]["feasible"], false);
  EXPECT_THAT(r.err, HasSubstr("infeasible"));
  r = run({"simulate", "-f", job_, "--pools", pools_, "--noise", "cauchy"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--noise"));
  r = run({"simulate", "-f", job_, "--pools", pools_, "--runs", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--runs"));
  r = run({"simulate", "-f", (dir_ / "missing.yaml").string(), "--pools", pools_});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace depl::cli
