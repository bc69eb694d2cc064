// The depl-reference-worker binary itself: exit codes and where its output goes.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "depl/common/subprocess.hpp"
#include "test_support.hpp"

namespace depl::worker {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout, and stderr where `stderr_to` sends it there
};

// Runs the binary with `arguments`; `env` is added to the test's environment.
Outcome run(const std::vector<std::string>& arguments, Redirect stderr_to,
            std::vector<std::pair<std::string, std::string>> env = {}) {
  SpawnOptions options;
  options.argv = {std::string(DEPL_BINARY_DIR) + "/bin/depl-reference-worker"};
  options.argv.insert(options.argv.end(), arguments.begin(), arguments.end());
  options.env = std::move(env);
  options.stdout_to = Redirect::pipe();
  options.stderr_to = std::move(stderr_to);
  Outcome outcome;
  auto ran = run_command(options);
  if (!ran) {
    outcome.output = ran.error().message;
    return outcome;
  }
  outcome.output = std::move(ran->out);
  if (ran->status.signal == 0) outcome.exit_code = ran->status.exit_code;
  return outcome;
}

TEST(CommandLine, HelpExitsZero) {
  const Outcome o = run({"--help"}, Redirect::inherit());
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.output.find("--init-from"), std::string::npos);
}

TEST(CommandLine, AnIncompleteContractExitsTwoNamingTheVariable) {
  const Outcome o = run({}, Redirect::to_stdout(), {{"DEPL_JOB", "j"}});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.output.find("DEPL_NAMESPACE is not set"), std::string::npos) << o.output;
}

TEST(CommandLine, BadFlagsExitTwo) {
  const Outcome o = run({"--model", "enormous"}, Redirect::to_stdout());
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.output.find("--model"), std::string::npos) << o.output;
}

TEST(CommandLine, StdoutCarriesOnlyTheEpochLines) {
  DEPL_REQUIRE_FASHION_MNIST();
  testing::TempDir dir;
  const Outcome o = run({"--shards", "300", "--datasets", "shard0", "--epochs", "2", "--variant",
                         "eighth", "--test-samples", "100", "--checkpoint-dir", dir.file("ckpt")},
                        Redirect::null());
  ASSERT_EQ(o.exit_code, 0) << o.output;
  std::istringstream lines(o.output);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const auto json = nlohmann::json::parse(line);  // throws (and fails the test) on a log line
    EXPECT_EQ(json["epoch"], ++count);
    EXPECT_EQ(json["variant"], "eighth");
  }
  EXPECT_EQ(count, 2);
  // A rerun finds the finished checkpoint and has nothing left to do.
  const Outcome again =
      run({"--shards", "300", "--datasets", "shard0", "--epochs", "2", "--variant", "eighth",
           "--test-samples", "100", "--checkpoint-dir", dir.file("ckpt")},
          Redirect::null());
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.output, "");
}

TEST(CommandLine, AMissingDataDirectoryExitsOne) {
  const Outcome o = run({"--data-dir", "/nonexistent/fashion"}, Redirect::to_stdout());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.output.find("dataset-fashion-mnist"), std::string::npos) << o.output;
}

}  // namespace
}  // namespace depl::worker
