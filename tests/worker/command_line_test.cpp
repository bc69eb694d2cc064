// The depl-reference-worker binary itself: exit codes and where its output goes.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace depl::worker {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr as the command line below redirects them
};

Outcome run(const std::string& arguments) {
  const std::string command =
      std::string(DEPL_BINARY_DIR) + "/bin/depl-reference-worker " + arguments;
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return outcome;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) outcome.output += buffer.data();
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

TEST(CommandLine, HelpExitsZero) {
  const Outcome o = run("--help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.output.find("--init-from"), std::string::npos);
}

TEST(CommandLine, AnIncompleteContractExitsTwoNamingTheVariable) {
  const std::string binary = std::string(DEPL_BINARY_DIR) + "/bin/depl-reference-worker";
  Outcome o;
  {
    FILE* pipe = popen(("env DEPL_JOB=j " + binary + " 2>&1").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::array<char, 4096> buffer{};
    while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) o.output += buffer.data();
    const int status = pclose(pipe);
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.output.find("DEPL_NAMESPACE is not set"), std::string::npos) << o.output;
}

TEST(CommandLine, BadFlagsExitTwo) {
  const Outcome o = run("--model enormous 2>&1");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.output.find("--model"), std::string::npos) << o.output;
}

TEST(CommandLine, StdoutCarriesOnlyTheEpochLines) {
  DEPL_REQUIRE_FASHION_MNIST();
  testing::TempDir dir;
  const Outcome o =
      run("--shards 300 --datasets shard0 --epochs 2 --variant eighth "
          "--test-samples 100 --checkpoint-dir " +
          dir.file("ckpt") + " 2>/dev/null");
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
      run("--shards 300 --datasets shard0 --epochs 2 --variant eighth "
          "--test-samples 100 --checkpoint-dir " +
          dir.file("ckpt") + " 2>/dev/null");
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.output, "");
}

TEST(CommandLine, AMissingDataDirectoryExitsOne) {
  const Outcome o = run("--data-dir /nonexistent/fashion 2>&1");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.output.find("dataset-fashion-mnist"), std::string::npos) << o.output;
}

}  // namespace
}  // namespace depl::worker
