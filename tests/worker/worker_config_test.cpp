#include "depl/worker/worker_config.hpp"

#include <map>

#include <gtest/gtest.h>

namespace depl::worker {
namespace {

using Env = std::map<std::string, std::string>;

EnvironmentLookup lookup(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

Env operator_env() {
  return {{"DEPL_JOB", "fmnist"},
          {"DEPL_NAMESPACE", "ml"},
          {"DEPL_PHASE", "1"},
          {"DEPL_MODEL", "half"},
          {"DEPL_EPOCHS", "4"},
          {"DEPL_START_EPOCH", "6"},
          {"DEPL_DATASETS", "shard0,shard3"},
          {"DEPL_CHECKPOINT_DIR", "/ckpt/fmnist"},
          {"DEPL_PROGRESS_URL", "http://127.0.0.1:8081/v1/namespaces/ml/jobs/fmnist/progress"},
          {"DEPL_PROGRESS_TOKEN", "tok"},
          {"DEPL_LOSS_PROFILE", R"({"initialLoss":2.3,"floorLoss":0.3})"},
          {"WORLD_SIZE", "2"},
          {"RANK", "1"},
          {"MASTER_ADDR", "fmnist-p1-w0.fmnist-p1.ml.svc"},
          {"MASTER_PORT", "29512"}};
}

Expected<ParsedCommandLine> parse(std::vector<const char*> args, const Env& env) {
  args.insert(args.begin(), "depl-reference-worker");
  return parse_worker_command_line(static_cast<int>(args.size()), args.data(), lookup(env));
}

TEST(WorkerConfig, StandaloneFlags) {
  auto parsed = parse({"--variant", "quarter", "--epochs", "3", "--datasets", "shard1, shard2",
                       "--seed", "42", "--world-size", "2", "--rank", "1", "--master-port", "4000",
                       "--batch-size", "64", "--lr", "0.1"},
                      {});
  ASSERT_TRUE(parsed) << parsed.error().message;
  const WorkerConfig& c = parsed->config;
  EXPECT_EQ(c.variant.name, "quarter");
  EXPECT_EQ(c.variant.hidden_units(), 64);
  EXPECT_EQ(c.epochs, 3);
  EXPECT_EQ(c.datasets, (std::vector<std::string>{"shard1", "shard2"}));
  EXPECT_EQ(c.seed, 42u);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.master_port, 4000);
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_FLOAT_EQ(c.learning_rate, 0.1f);
  EXPECT_FALSE(c.operator_context);
}

TEST(WorkerConfig, WidthFlagAndBadFlags) {
  auto width = parse({"--width", "0.125"}, {});
  ASSERT_TRUE(width);
  EXPECT_EQ(width->config.variant.name, "eighth");
  auto bad_variant = parse({"--variant", "huge"}, {});
  ASSERT_FALSE(bad_variant);
  EXPECT_NE(bad_variant.error().message.find("--model"), std::string::npos);
  // --model is the standalone contract's name for it (docs/worker-contract.md section 6).
  auto model = parse({"--model", "half"}, {});
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->config.variant.name, "half");
  auto bad_rank = parse({"--world-size", "2", "--rank", "2"}, {});
  ASSERT_FALSE(bad_rank);
  EXPECT_NE(bad_rank.error().message.find("rank"), std::string::npos);
  EXPECT_FALSE(parse({"--no-such-flag"}, {}));
  auto help = parse({"--help"}, {});
  ASSERT_TRUE(help);
  EXPECT_NE(help->help.find("--checkpoint-dir"), std::string::npos);
}

TEST(WorkerConfig, OperatorContractOverridesFlags) {
  auto parsed = parse({"--variant", "full", "--epochs", "99"}, operator_env());
  ASSERT_TRUE(parsed) << parsed.error().message;
  const WorkerConfig& c = parsed->config;
  ASSERT_TRUE(c.operator_context);
  EXPECT_EQ(c.operator_context->job, "fmnist");
  EXPECT_EQ(c.operator_context->ns, "ml");
  EXPECT_EQ(c.operator_context->phase, 1);
  EXPECT_EQ(c.operator_context->progress_token, "tok");
  EXPECT_EQ(c.variant.name, "half");
  EXPECT_EQ(c.epochs, 4);
  EXPECT_EQ(c.start_epoch, 6);
  EXPECT_EQ(c.datasets, (std::vector<std::string>{"shard0", "shard3"}));
  EXPECT_EQ(c.checkpoint_dir, "/ckpt/fmnist");
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.master_addr, "fmnist-p1-w0.fmnist-p1.ml.svc");
  EXPECT_EQ(c.master_port, 29512);
  EXPECT_EQ(c.operator_context->progress_retry, std::chrono::seconds(300));  // the default
}

TEST(WorkerConfig, TheProgressRetryDeadlineIsTheJobsToChoose) {
  Env env = operator_env();
  env["DEPL_PROGRESS_RETRY_SECONDS"] = "900";
  auto parsed = parse({}, env);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.operator_context->progress_retry, std::chrono::seconds(900));
}

TEST(WorkerConfig, EachMissingContractVariableIsNamed) {
  for (const char* name :
       {"DEPL_NAMESPACE", "DEPL_PHASE", "DEPL_MODEL", "DEPL_EPOCHS", "DEPL_START_EPOCH",
        "DEPL_DATASETS", "DEPL_CHECKPOINT_DIR", "DEPL_PROGRESS_URL", "DEPL_PROGRESS_TOKEN", "RANK",
        "MASTER_ADDR", "MASTER_PORT"}) {
    Env env = operator_env();
    env.erase(name);
    auto parsed = parse({}, env);
    ASSERT_FALSE(parsed) << name;
    EXPECT_EQ(parsed.error().message.rfind(name, 0), 0u) << parsed.error().message;
  }
}

TEST(WorkerConfig, MalformedContractValuesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"DEPL_EPOCHS", "four"},
      {"DEPL_START_EPOCH", "-1"},
      {"DEPL_PHASE", "1.5"},
      {"WORLD_SIZE", "0"},
      {"RANK", "2"},
      {"MASTER_PORT", "70000"},
      {"DEPL_MODEL", "gigantic"},
      {"DEPL_LOSS_PROFILE", "{"},
      {"DEPL_DATASETS", " , "},
      {"DEPL_SEED", "x"},
      {"DEPL_BATCH_SIZE", "0"},
      {"DEPL_LR", "-1"},
      {"DEPL_WIDTH", "2"},
      {"DEPL_PROGRESS_RETRY_SECONDS", "5m"}};
  for (const auto& [name, value] : cases) {
    Env env = operator_env();
    env[name] = value;
    auto parsed = parse({}, env);
    ASSERT_FALSE(parsed) << name << "=" << value;
    EXPECT_EQ(parsed.error().message.rfind(name, 0), 0u) << parsed.error().message;
  }
}

TEST(WorkerConfig, SingleWorkerNeedsNoDistributedVariables) {
  Env env = operator_env();
  env.erase("WORLD_SIZE");
  env.erase("RANK");
  env.erase("MASTER_ADDR");
  env.erase("MASTER_PORT");
  auto parsed = parse({}, env);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.world_size, 1);
  EXPECT_EQ(parsed->config.rank, 0);
}

TEST(WorkerConfig, AJobModelNameWithAWidth) {
  Env env = operator_env();
  env["DEPL_MODEL"] = "mlp-compact";
  env["DEPL_WIDTH"] = "0.25";
  env["DEPL_SHARDS"] = "12";
  env["DEPL_LABEL_NOISE"] = "shard3=0.2";
  env["DEPL_SEED"] = "17";
  auto parsed = parse({}, env);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->config.variant.name, "mlp-compact");
  EXPECT_EQ(parsed->config.variant.hidden_units(), 64);
  EXPECT_EQ(parsed->config.shards, "12");
  EXPECT_EQ(parsed->config.label_noise, "shard3=0.2");
  EXPECT_EQ(parsed->config.seed, 17u);
}

}  // namespace
}  // namespace depl::worker
