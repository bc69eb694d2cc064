// `kubectl-depl demo`, the README's first command, run as a subprocess on the quickstart: the dev
// cluster starts, the controller plans the job, the simulated workers train it and the demo exits
// with the job's outcome. The epochs are paced fast; the outcome is random by design (the plan
// promises P(target) >= 0.9), so the test checks that the job *ends* and that the exit code
// agrees with how it ended, not that it succeeded.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "subprocess.hpp"

namespace depl::cli {
namespace {

using testing::run_process;

const std::string kBinary = DEPL_BINARY_DIR "/bin/kubectl-depl";
const std::string kSource = DEPL_SOURCE_DIR;

TEST(Demo, RunsTheQuickstartToAnEndAndExitsWithItsOutcome) {
  const auto r = run_process(kBinary,
                             {"demo", "--job", kSource + "/examples/quickstart/job.yaml", "--pools",
                              kSource + "/examples/quickstart/pools.yaml", "--crd",
                              kSource + "/crds/depl.dev_dependabletrainingjobs.yaml",
                              "--epoch-seconds", "0.05", "--timeout", "240"},
                             std::chrono::seconds(300));
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_NE(r.out.find("plan 1: "), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("P(target)"), std::string::npos) << r.out;
  // The live line counts the job's worker pods that are Running (one per phase here).
  EXPECT_NE(r.out.find("  pods 1 running"), std::string::npos) << r.out;
  const bool succeeded = r.out.find("\njob Succeeded: ") != std::string::npos;
  const bool failed = r.out.find("\njob Failed: ") != std::string::npos;
  ASSERT_TRUE(succeeded || failed) << "the job did not end:\n" << r.out << r.err;
  EXPECT_EQ(r.exit_code, succeeded ? 0 : 1) << r.out << r.err;
  if (failed) {
    // A failed demo keeps its logs for the user and says where.
    EXPECT_NE(r.out.find("logs kept in "), std::string::npos) << r.out;
  }
}

// What `make demo` runs: the Fashion-MNIST job on the pools that describe this machine.
TEST(Demo, FashionMnistJobTrainsForRealWithTheReferenceWorker) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (make deps installs it)";
  }
  const auto r = run_process(kBinary,
                             {"demo", "--job", kSource + "/examples/fashion-mnist/job.yaml",
                              "--pools", kSource + "/examples/fashion-mnist/pools.yaml", "--crd",
                              kSource + "/crds/depl.dev_dependabletrainingjobs.yaml", "--timeout",
                              "240"},
                             std::chrono::seconds(300));
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_NE(r.out.find("plan 1: "), std::string::npos) << r.out << r.err;
  // The reference worker reports real validation losses (Fashion-MNIST cross-entropy).
  EXPECT_NE(r.out.find(" loss  0."), std::string::npos) << r.out;
  // The plan leaves the noisy shards out, and says so; at the end, what ran, phase by phase.
  EXPECT_NE(r.out.find("(left out: shard4, shard5)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("what ran (losses as the workers reported them):\n  phase 0 "),
            std::string::npos)
      << r.out;
  const bool succeeded = r.out.find("\njob Succeeded: ") != std::string::npos;
  const bool failed = r.out.find("\njob Failed: ") != std::string::npos;
  ASSERT_TRUE(succeeded || failed) << "the job did not end:\n" << r.out << r.err;
  EXPECT_EQ(r.exit_code, succeeded ? 0 : 1) << r.out << r.err;
}

TEST(Demo, MissingJobFileIsBadInputNamingTheFlag) {
  const auto r = run_process(kBinary, {"demo", "--job", "/nonexistent/job.yaml", "--crd",
                                       kSource + "/crds/depl.dev_dependabletrainingjobs.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--job /nonexistent/job.yaml"), std::string::npos) << r.err;
}

TEST(Demo, BadEpochSecondsIsRejected) {
  const auto r = run_process(kBinary, {"demo", "--epoch-seconds", "-1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--epoch-seconds"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace depl::cli
