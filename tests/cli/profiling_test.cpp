// kubectl-depl profile: switch-point and request validation, the YAML and plot on a hand-built
// result, and tiny real profiling runs on Fashion-MNIST (skipped when the data is not installed)
// of the reference worker and, as a command, of the PyTorch example, whose YAML reads back as a
// job's models and switching.
#include "depl/cli/profiling.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "depl/cli/pod_run_executor.hpp"
#include "depl/cli/profile_report.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/solver/parse.hpp"
#include "subprocess.hpp"
#include "svg_check.hpp"

namespace depl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

const std::string kDataDir = "/usr/share/datasets/fashion-mnist";
const std::string kBinary = std::string(DEPL_BINARY_DIR) + "/bin/kubectl-depl";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool have_fashion_mnist() {
  return fs::exists(fs::path(kDataDir) / "train-images-idx3-ubyte.gz") ||
         fs::exists(fs::path(kDataDir) / "train-images-idx3-ubyte");
}

// A job around the profile's models and switching, as a user pastes them.
json job_with(const json& profile, int samples) {
  json spec = {{"target", {{"loss", 0.9}, {"probability", 0.9}}},
               {"datasets", json::array({{{"name", "profile"}, {"samples", samples}}})},
               {"models", profile["models"]}};
  if (profile.contains("switching")) spec["switching"] = profile["switching"];
  return {{"apiVersion", "depl.dev/v1alpha1"},
          {"kind", "DependableTrainingJob"},
          {"metadata", {{"name", "profiled"}}},
          {"spec", spec}};
}

ProfileResult hand_built_result() {
  ProfileResult r;
  r.request.variants = {"full", "eighth"};
  r.request.runs = 2;
  r.request.epochs = 4;
  r.request.samples = 500;
  r.request.switches = {{"eighth", "full", 2}};
  for (const char* name : {"full", "eighth"}) {
    VariantProfile v;
    v.name = name;
    v.width = name == std::string("full") ? 1.0 : 0.125;
    v.compute_per_sample_gflop = 0.0016;
    v.parameter_bytes = 1077288;
    v.initial_losses = {2.5, 2.4};
    v.runs = {{1.5, 1.0, 0.8, 0.7}, {1.4, 1.1, 0.85, 0.72}};
    v.fit.profile = {2.45, 0.6, 0.5, 0.05, 500, 0};
    v.fit.squared_error = 0.01;
    r.variants.push_back(v);
  }
  SwitchProfile s;
  s.point = {"eighth", "full", 2};
  s.before = {1.0, 1.1};
  s.after = {1.02, 1.1};
  s.jump = {0.01, 0.014};
  r.switches.push_back(s);
  return r;
}

TEST(ProfileSwitchPoint, ParsesFromToAtEpoch) {
  auto p = parse_switch_point("eighth:full@4");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->from, "eighth");
  EXPECT_EQ(p->to, "full");
  EXPECT_EQ(p->epoch, 4);
}

TEST(ProfileSwitchPoint, RejectsMalformedText) {
  for (const char* bad : {"eighth-full@4", "eighth:full", "eighth:full@0", "eighth:full@x",
                          "eighth:full@4x", ":full@3", "full:full@3", "a@2:b"}) {
    auto p = parse_switch_point(bad);
    ASSERT_FALSE(p) << bad;
    EXPECT_THAT(p.error().message, HasSubstr("--switch")) << bad;
  }
}

TEST(ProfileRequestCheck, EveryProblemIsNamed) {
  ProfileRequest r;
  r.variants = {"full", "huge", "full"};
  r.runs = 0;
  r.epochs = 2;
  r.samples = 70000;
  r.noisy_samples = -1;
  r.noisy_label_share = 1;
  r.switches = {{"tiny", "full", 2}};
  auto ok = validate_profile_request(r);
  ASSERT_FALSE(ok);
  const std::string& m = ok.error().message;
  EXPECT_THAT(m, HasSubstr("--variants: \"huge\""));
  EXPECT_THAT(m, HasSubstr("\"full\" is listed twice"));
  EXPECT_THAT(m, HasSubstr("--runs"));
  EXPECT_THAT(m, HasSubstr("--epochs"));
  EXPECT_THAT(m, HasSubstr("--samples"));
  EXPECT_THAT(m, HasSubstr("--switch tiny:full@2"));
  EXPECT_THAT(m, HasSubstr("--noisy-samples"));
  EXPECT_THAT(m, HasSubstr("--noisy-label-share: must be in (0, 1), got 1"));
  EXPECT_TRUE(validate_profile_request(ProfileRequest{}));
}

TEST(ProfileReport, YamlReadsBackAsAJobsModelsAndSwitching) {
  const ProfileResult r = hand_built_result();
  const std::string yaml = profile_to_yaml(r, "kubectl-depl profile --runs 2");
  EXPECT_THAT(yaml, HasSubstr("kubectl-depl profile --runs 2"));
  auto doc = yaml_to_json(yaml);
  ASSERT_TRUE(doc) << doc.error().message;
  auto problem = solver::parse_job_json(job_with(*doc, 500));
  ASSERT_TRUE(problem) << problem.error().joined();
  ASSERT_EQ(problem->models.size(), 2u);
  EXPECT_EQ(problem->models[1].name, "eighth");
  EXPECT_DOUBLE_EQ(problem->models[0].loss.floor_loss, 0.6);
  EXPECT_DOUBLE_EQ(problem->models[0].loss.reference_samples, 500);
  EXPECT_DOUBLE_EQ(problem->models[0].parameter_bytes, 1077288);
  ASSERT_EQ(problem->switching.size(), 1u);
  EXPECT_DOUBLE_EQ(problem->switching[0].jump_mean, 0.01);
  EXPECT_DOUBLE_EQ(problem->switching[0].jump_stddev, 0.014);
}

TEST(ProfileReport, DataExponentComesFromTheTwoFloors) {
  VariantProfile v = hand_built_result().variants[0];  // floor 0.6 at 500 samples
  set_data_exponent(v, 500, 2000, 0.5);
  EXPECT_NEAR(v.fit.profile.data_exponent, std::log(1.2) / std::log(4.0), 1e-12);
  // The model's floor at 2000 samples is then the one measured there.
  EXPECT_NEAR(0.6 * std::pow(500.0 / 2000.0, v.fit.profile.data_exponent), 0.5, 1e-12);
  EXPECT_EQ(v.exponent_samples, 2000);
  set_data_exponent(v, 500, 2000, 0.7);  // a higher floor on more data is noise: no credit
  EXPECT_EQ(v.fit.profile.data_exponent, 0);
  const std::string yaml = profile_to_yaml(hand_built_result(), "kubectl-depl profile");
  EXPECT_THAT(yaml, HasSubstr("dataExponent is 0"));
}

// labelNoiseFloor from runs with a noisy shard: 500 clean samples plus 500 with 30% wrong
// labels (150 of 1,000: W / N = 0.15, E = 850). Runs drawn from the model with beta 0.9 give
// it back, and the YAML states it with the runs' final loss.
TEST(ProfileReport, LabelNoiseFloorComesFromTheNoisyRuns) {
  ProfileResult r = hand_built_result();
  r.request.noisy_samples = 500;
  VariantProfile& v = r.variants[0];
  solver::ModelVariant noisy;
  noisy.loss = v.fit.profile;
  noisy.loss.label_noise_floor = 0.9;
  std::vector<double> run;
  solver::LossState s{v.fit.profile.initial_loss, 0};
  for (int t = 0; t < 4; ++t) {
    s = solver::epoch_step(noisy, 850, 0.15, s);
    run.push_back(s.mean);
  }
  set_label_noise_floor(v, 500, 500, 0.3, {run, run});
  EXPECT_DOUBLE_EQ(v.noisy_share, 0.15);
  EXPECT_NEAR(v.fit.profile.label_noise_floor, 0.9, 1e-9);
  EXPECT_DOUBLE_EQ(v.noisy_final_loss, run.back());
  const std::string yaml = profile_to_yaml(r, "kubectl-depl profile --noisy-samples 500");
  EXPECT_THAT(yaml, HasSubstr("with 15.0% of the labels wrong"));
  auto doc = yaml_to_json(yaml);
  ASSERT_TRUE(doc) << doc.error().message;
  auto problem = solver::parse_job_json(job_with(*doc, 500));
  ASSERT_TRUE(problem) << problem.error().joined();
  EXPECT_NEAR(problem->models[0].loss.label_noise_floor, 0.9, 1e-5);
  EXPECT_EQ(problem->models[1].loss.label_noise_floor, 0);
}

TEST(ProfileReport, FittedCurveIsTheModelsEpochStep) {
  const ProfileResult r = hand_built_result();
  const auto curve = fitted_curve(r.variants[0], 4);
  ASSERT_EQ(curve.size(), 5u);
  double mean = 2.45, variance = 0;
  for (int t = 1; t <= 4; ++t) {
    mean = 0.6 + (mean - 0.6) * 0.5;  // E = N_ref: rho = r
    variance = 0.25 * variance + 0.05 * 0.05;
    EXPECT_NEAR(curve[static_cast<std::size_t>(t)].mean, mean, 1e-12);
    EXPECT_NEAR(curve[static_cast<std::size_t>(t)].variance, variance, 1e-12);
  }
}

TEST(ProfileReport, PlotDrawsEveryRunAndEveryFit) {
  auto svg = profile_plot_svg(hand_built_result());
  ASSERT_TRUE(svg) << svg.error().message;
  const auto xml = testing::check_xml(*svg);
  ASSERT_TRUE(xml.ok) << xml.error;
  int runs = 0, fits = 0, jumps = 0;
  for (const auto& e : xml.elements) {
    auto it = e.attributes.find("class");
    if (it == e.attributes.end()) continue;
    runs += it->second == "measured-run";
    fits += it->second == "fitted-mean";
    jumps += it->second == "switch-jump";
  }
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(fits, 2);
  EXPECT_EQ(jumps, 1);
  EXPECT_FALSE(profile_plot_svg(ProfileResult{}));
}

TEST(ProfileRuns, EveryRunIsNamedAndSwitchesHaveTwoSteps) {
  ProfileRequest r;
  r.variants = {"full", "eighth"};
  r.runs = 2;
  r.exponent_samples = 4000;
  r.switches = {{"eighth", "full", 4}};
  const auto runs = profile_runs(r);
  ASSERT_EQ(runs.size(), 10u);  // 2 variants x 2 sizes x 2 runs, 1 switch x 2 runs
  EXPECT_EQ(runs[0].name, "full-n2000-s1");
  EXPECT_EQ(runs[0].label, "full run 1/2");
  EXPECT_EQ(runs[5].name, "full-n4000-s2");
  EXPECT_EQ(runs[9].name, "sw0-eighth-full-e4-s2");
  EXPECT_EQ(runs[9].label, "switch eighth:full@4 run 2/2");
  ASSERT_EQ(runs[9].steps.size(), 2u);
  EXPECT_TRUE(runs[9].uses_checkpoint());
  EXPECT_FALSE(runs[0].uses_checkpoint());
  r.noisy_samples = 1000;
  r.noisy_label_share = 0.25;
  const auto noisy = profile_runs(r);
  ASSERT_EQ(noisy.size(), 14u);  // and 2 variants x 2 runs with the noisy shard
  EXPECT_EQ(noisy[9].name, "full-n2000-noisy1000-s2");
  EXPECT_EQ(noisy[9].label, "full run 2/2 with 1000 noisy samples");
  const auto noisy_args = worker_arguments(noisy[9], 0, "");
  EXPECT_THAT(noisy_args,
              ::testing::Contains(R"({"shards":[{"name":"profile","samples":2000},)"
                                  R"({"labelNoise":0.25,"name":"noisy","samples":1000}]})"));
  EXPECT_THAT(noisy_args, ::testing::Contains("profile,noisy"));
  const auto args = worker_arguments(runs[9], 1, "/ckpt/x");
  EXPECT_THAT(args, ::testing::ElementsAre("--data-dir", r.data_dir, "--model", "full", "--epochs",
                                           "0", "--start-epoch", "4", "--shards",
                                           R"({"shards":[{"name":"profile","samples":2000}]})",
                                           "--datasets", "profile", "--seed", "2", "--test-samples",
                                           "10000", "--eval-initial", "--init-from", "/ckpt/x"));
}

TEST(ProfileRuns, EpochLinesSkipTheLogAroundThem) {
  auto lines = parse_epoch_lines(
      "2026-11-23T13:00:00.000 info event=start\n"
      R"({"epoch":0,"loss":2.3,"accuracy":0.1,"variant":"full","seconds":0})" "\n"
      R"({"epoch":1,"loss":1.5,"accuracy":0.5,"variant":"full","seconds":0.25})" "\r\n"
      "2026-11-23T13:00:01.000 info event=done\n");
  ASSERT_TRUE(lines) << lines.error().message;
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1].epoch, 1);
  EXPECT_DOUBLE_EQ((*lines)[1].loss, 1.5);
  EXPECT_DOUBLE_EQ((*lines)[1].seconds, 0.25);
  auto bad = parse_epoch_lines("{\"epoch\": \"one\"}\n");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("unexpected line"));
}

// A real cluster: the switch's pods share a PersistentVolumeClaim, under this profile's session.
TEST(ProfilePods, SwitchPodsMountTheClaimAndShareTheCheckpoint) {
  ProfileRequest r;
  r.variants = {"eighth"};
  r.runs = 1;
  r.switches = {{"eighth", "full", 4}};
  const auto runs = profile_runs(r);
  PodRunOptions o;
  o.namespace_ = "ml";
  o.session = "depl-profile-abc123";
  o.checkpoint_claim = "profile-checkpoints";
  const json plain = profile_pod(runs[0], 0, o);
  EXPECT_EQ(plain["metadata"]["name"], "depl-profile-eighth-n2000-s1");
  EXPECT_EQ(plain["metadata"]["namespace"], "ml");
  EXPECT_EQ(plain["metadata"]["labels"]["depl.dev/profile-session"], "depl-profile-abc123");
  EXPECT_EQ(plain["spec"]["restartPolicy"], "Never");
  EXPECT_FALSE(plain["spec"].contains("volumes"));
  const json train = profile_pod(runs[1], 0, o);
  const json convert = profile_pod(runs[1], 1, o);
  EXPECT_EQ(train["metadata"]["name"], "depl-profile-sw0-eighth-full-e4-s1-1");
  EXPECT_EQ(convert["metadata"]["name"], "depl-profile-sw0-eighth-full-e4-s1-2");
  EXPECT_EQ(train["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "profile-checkpoints");
  EXPECT_EQ(convert["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], "/depl-profile");
  const auto train_args = train["spec"]["containers"][0]["args"].get<std::vector<std::string>>();
  const auto convert_args =
      convert["spec"]["containers"][0]["args"].get<std::vector<std::string>>();
  EXPECT_THAT(train_args, ::testing::Contains("/depl-profile/depl-profile-abc123/"
                                              "sw0-eighth-full-e4-s1"));
  EXPECT_EQ(train_args.back(), convert_args.back());
  EXPECT_EQ(convert_args[convert_args.size() - 2], "--init-from");
}

class ProfileReferenceWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_fashion_mnist()) GTEST_SKIP() << kDataDir << " is not installed (make deps)";
    work_ = fs::temp_directory_path() / ("depl-profile-test-" + std::to_string(getpid()));
    fs::create_directories(work_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(work_, ec);
  }
  fs::path work_;
};

TEST_F(ProfileReferenceWorker, TinyRunFitsProfilesThatReadBackIntoAJob) {
  ProfileRequest r;
  r.variants = {"quarter", "eighth"};
  r.runs = 2;
  r.epochs = 3;
  r.samples = 300;
  r.validation_samples = 1000;
  r.switches = {{"quarter", "eighth", 2}};
  r.exponent_samples = 600;
  r.noisy_samples = 300;
  r.work_dir = work_.string();
  std::vector<std::string> seen;
  auto result = run_profile(r, [&](int done, int total, const std::string& what) {
    EXPECT_EQ(total, 14);  // 2 variants x 3 data sets x 2 runs, 1 switch x 2 runs
    EXPECT_EQ(done, static_cast<int>(seen.size()) + 1);
    seen.push_back(what);
  });
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(seen.size(), 14u);
  EXPECT_EQ(seen[8], "quarter run 1/2 with 300 noisy samples");
  EXPECT_EQ(seen.front(), "quarter run 1/2");
  EXPECT_EQ(seen[4], "quarter run 1/2 on 600 samples");
  EXPECT_EQ(seen.back(), "switch quarter:eighth@2 run 2/2");
  ASSERT_EQ(result->variants.size(), 2u);
  for (const VariantProfile& v : result->variants) {
    ASSERT_EQ(v.runs.size(), 2u);
    ASSERT_EQ(v.runs[0].size(), 3u);
    EXPECT_NE(v.runs[0], v.runs[1]) << "seeds differ, so the runs must";
    const solver::LossProfile& p = v.fit.profile;
    EXPECT_LT(p.floor_loss, p.initial_loss) << v.name;
    EXPECT_GE(p.floor_loss, 0) << v.name;
    EXPECT_GT(p.decay_per_epoch, 0) << v.name;
    EXPECT_LT(p.decay_per_epoch, 1) << v.name;
    EXPECT_GE(p.noise_stddev, 0) << v.name;
    EXPECT_DOUBLE_EQ(p.reference_samples, 300);
    EXPECT_EQ(v.exponent_samples, 600);
    EXPECT_GE(v.exponent_floor, 0);  // 3 epochs on a few hundred samples may fit floor 0
    EXPECT_GE(p.data_exponent, 0);
    EXPECT_TRUE(std::isfinite(p.data_exponent));
    EXPECT_DOUBLE_EQ(v.noisy_share, 90.0 / 600.0);  // round(0.3 x 300) wrong of 600
    EXPECT_GE(p.label_noise_floor, 0);
    EXPECT_TRUE(std::isfinite(p.label_noise_floor));
  }
  // A smaller variant has fewer parameters and less compute per sample.
  EXPECT_LT(result->variants[1].parameter_bytes, result->variants[0].parameter_bytes);
  ASSERT_EQ(result->switches.size(), 1u);
  EXPECT_EQ(result->switches[0].before.size(), 2u);
  EXPECT_TRUE(std::isfinite(result->switches[0].jump.mean));

  auto doc = yaml_to_json(profile_to_yaml(*result, "kubectl-depl profile"));
  ASSERT_TRUE(doc) << doc.error().message;
  auto problem = solver::parse_job_json(job_with(*doc, 300));
  ASSERT_TRUE(problem) << problem.error().joined();
  EXPECT_EQ(problem->models.size(), 2u);
  EXPECT_NEAR(problem->models[0].loss.decay_per_epoch,
              result->variants[0].fit.profile.decay_per_epoch, 1e-5);
  EXPECT_EQ(problem->switching.size(), 1u);

  // Seeded: the same request measures the same losses.
  auto again = run_profile(r);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->variants[0].runs, result->variants[0].runs);
}

TEST_F(ProfileReferenceWorker, BinaryWritesYamlAndPlot) {
  const std::string yaml = (work_ / "profile.yaml").string();
  const std::string plot = (work_ / "profile.svg").string();
  auto got = testing::run_process(
      kBinary, {"profile", "--variants", "eighth", "--runs", "2", "--epochs", "3", "--samples",
                "300", "--validation-samples", "500", "-o", yaml, "--plot", plot});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_TRUE(got.out.empty()) << got.out;                // -o: nothing on stdout
  EXPECT_THAT(got.err, HasSubstr("2/2 eighth run 2/2"));  // the progress line
  auto doc = yaml_to_json(read_text(yaml));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ((*doc)["models"][0]["name"], "eighth");
  EXPECT_TRUE(testing::check_xml(read_text(plot)).ok);
}

// examples/fashion-mnist/job.yaml says its profiles come from `kubectl-depl profile` with the
// defaults: measuring the two small variants again gives the same figures (up to the last
// digits, which vector units may change), and the job plans.
TEST_F(ProfileReferenceWorker, ExampleJobCarriesWhatTheCommandMeasures) {
  const std::string example = std::string(DEPL_SOURCE_DIR) + "/examples/fashion-mnist/job.yaml";
  auto job = yaml_to_json(read_text(example), example);
  ASSERT_TRUE(job) << job.error().message;
  // Six real trainings: about 7 s in a Release build, over a minute under ASan.
  auto got = testing::run_process(kBinary, {"profile", "--variants", "quarter,eighth"},
                                  std::chrono::minutes(5));
  ASSERT_EQ(got.exit_code, 0) << got.err;
  auto measured = yaml_to_json(got.out);
  ASSERT_TRUE(measured) << measured.error().message;
  for (const json& m : (*measured)["models"]) {
    const json* in_example = nullptr;
    for (const json& e : (*job)["spec"]["models"]) {
      if (e["name"] == m["name"]) in_example = &e;
    }
    ASSERT_NE(in_example, nullptr) << m["name"];
    const json& a = m["lossProfile"];
    const json& b = (*in_example)["lossProfile"];
    EXPECT_NEAR(a["initialLoss"].get<double>(), b["initialLoss"].get<double>(), 0.01);
    EXPECT_NEAR(a["floorLoss"].get<double>(), b["floorLoss"].get<double>(), 0.02);
    EXPECT_NEAR(a["decayPerEpoch"].get<double>(), b["decayPerEpoch"].get<double>(), 0.05);
    EXPECT_NEAR(a["noiseStddev"].get<double>(), b["noiseStddev"].get<double>(), 0.02);
    EXPECT_NEAR(a["validationNoiseStddev"].get<double>(), b["validationNoiseStddev"].get<double>(),
                0.02);
    EXPECT_NEAR(a["initialLossStddev"].get<double>(), b["initialLossStddev"].get<double>(), 0.02);
    EXPECT_EQ(a["referenceSamples"], b["referenceSamples"]);
    EXPECT_EQ(m["parameterBytes"], (*in_example)["parameterBytes"]);
  }
  auto plan = testing::run_process(
      kBinary, {"plan", "-f", example, "--pools",
                std::string(DEPL_SOURCE_DIR) + "/examples/quickstart/pools.yaml", "-o", "json"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err << plan.out;
}

TEST(ProfileRequestCheck, AnotherWorkersVariantsNeedOnlyBeLabels) {
  ProfileRequest r;
  r.known_variants.clear();
  r.worker = "/usr/bin/python3 train.py";
  r.variants = {"wide", "narrow-2"};
  r.switches = {{"narrow-2", "wide", 3}};
  EXPECT_TRUE(validate_profile_request(r));
  r.variants = {"Wide_1"};
  auto ok = validate_profile_request(r);
  ASSERT_FALSE(ok);
  EXPECT_THAT(ok.error().message,
              HasSubstr("--variants: \"Wide_1\": a variant's name must be a DNS-1123 label"));
  // The reference worker's names are known: another is refused before any run.
  ProfileRequest reference;
  reference.variants = {"wide"};
  auto refused = validate_profile_request(reference);
  ASSERT_FALSE(refused);
  EXPECT_THAT(
      refused.error().message,
      HasSubstr("not a variant of depl-reference-worker (known: full, half, quarter, eighth)"));
}

TEST(ProfileRuns, EpochLinesCarryTheModelsCostWhenStated) {
  auto lines = parse_epoch_lines(
      R"({"epoch":1,"loss":0.5,"seconds":0.2,"computePerSampleGflop":0.004,"parameterBytes":45096})"
      "\n"
      R"({"epoch":2,"loss":0.4})");
  ASSERT_TRUE(lines) << lines.error().message;
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_DOUBLE_EQ(lines->at(0).compute_per_sample_gflop.value_or(0), 0.004);
  EXPECT_DOUBLE_EQ(lines->at(0).parameter_bytes.value_or(0), 45096);
  EXPECT_FALSE(lines->at(1).compute_per_sample_gflop);
}

TEST(ProfileCommand, AWorkerCommandThatFailsOrPrintsNothingIsAnError) {
  if (!have_fashion_mnist()) GTEST_SKIP() << kDataDir << " is not installed (make deps)";
  auto failing = testing::run_process(
      kBinary, {"profile", "--worker", "/bin/false", "--variants", "wide", "--runs", "1"});
  EXPECT_EQ(failing.exit_code, 1);
  EXPECT_THAT(failing.err,
              HasSubstr("wide run 1/1: training wide: `/bin/false` failed with exit code 1"));
  auto silent = testing::run_process(
      kBinary, {"profile", "--worker", "/bin/true", "--variants", "wide", "--runs", "1"});
  EXPECT_EQ(silent.exit_code, 1);
  EXPECT_THAT(silent.err, HasSubstr("exited 0 without printing an epoch line"));
  auto missing = testing::run_process(
      kBinary, {"profile", "--worker", "/nonexistent/worker", "--variants", "wide", "--runs", "1"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("cannot start /nonexistent/worker"));
  auto both = testing::run_process(kBinary, {"profile", "--worker", "/bin/true", "--in-cluster"});
  EXPECT_EQ(both.exit_code, 2);
}

// The PyTorch reference job, driven through the standalone contract as a local command: the
// same YAML a job needs, with the example's image and the model costs its lines state.
TEST_F(ProfileReferenceWorker, ProfilesThePytorchExampleAsACommand) {
  if (testing::run_process("/usr/bin/python3", {"-c", "import torch"}).exit_code != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no torch (make deps)";
  }
  const std::string worker =
      "/usr/bin/python3 " + std::string(DEPL_SOURCE_DIR) + "/examples/pytorch/train.py";
  const fs::path out = work_ / "pytorch.yaml";
  auto got = testing::run_process(
      kBinary,
      {"profile", "--worker", worker, "--image", "depl.dev/pytorch-fashion-mnist:0.1", "--variants",
       "quarter,eighth", "--runs", "2", "--epochs", "3", "--samples", "300", "--validation-samples",
       "300", "--switch", "eighth:quarter@2", "-o", out.string()},
      std::chrono::seconds(300));
  ASSERT_EQ(got.exit_code, 0) << got.err;
  const std::string yaml = read_text(out.string());
  EXPECT_THAT(yaml, HasSubstr("# " + worker + " on Fashion-MNIST"));
  auto doc = yaml_to_json(yaml, "profile");
  ASSERT_TRUE(doc) << doc.error().message;
  const json& models = (*doc)["models"];
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0]["image"], "depl.dev/pytorch-fashion-mnist:0.1");
  // Compute and size from the worker's own lines: the quarter-width CNN costs more than eighth.
  EXPECT_GT(models[0]["computePerSampleGflop"].get<double>(),
            models[1]["computePerSampleGflop"].get<double>());
  EXPECT_GT(models[0]["parameterBytes"].get<double>(), models[1]["parameterBytes"].get<double>());
  ASSERT_EQ((*doc)["switching"].size(), 1u);
  auto problem = solver::parse_job_json(job_with(*doc, 300));
  ASSERT_TRUE(problem) << problem.error().joined();
  EXPECT_EQ(problem->models.size(), 2u);
}

TEST(ProfileCommand, BadFlagsAreBadInput) {
  auto epochs = testing::run_process(kBinary, {"profile", "--epochs", "2"});
  EXPECT_EQ(epochs.exit_code, 2);
  EXPECT_THAT(epochs.err, HasSubstr("--epochs"));
  auto variant = testing::run_process(kBinary, {"profile", "--variants", "full,huge"});
  EXPECT_EQ(variant.exit_code, 2);
  EXPECT_THAT(variant.err, HasSubstr("\"huge\""));
  auto sw = testing::run_process(kBinary, {"profile", "--switch", "full-eighth"});
  EXPECT_EQ(sw.exit_code, 2);
  EXPECT_THAT(sw.err, HasSubstr("FROM:TO@EPOCH"));
  auto data = testing::run_process(kBinary, {"profile", "--data-dir", "/nonexistent/fmnist"});
  EXPECT_EQ(data.exit_code, 2);
  EXPECT_THAT(data.err, HasSubstr("--data-dir /nonexistent/fmnist: no such directory"));
  // The cluster's flags mean nothing without --in-cluster: say so rather than ignore them.
  auto cluster = testing::run_process(kBinary, {"profile", "--parallel", "2"});
  EXPECT_EQ(cluster.exit_code, 2);
  EXPECT_THAT(cluster.out + cluster.err, HasSubstr("--parallel requires --in-cluster"));
}

}  // namespace
}  // namespace depl::cli
