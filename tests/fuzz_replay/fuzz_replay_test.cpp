// Every seed (fuzz/corpus/<target>/) and every input that once crashed a target
// (fuzz/regressions/<target>/) run through the fuzz target's function, built without libFuzzer.
// A target that crashes, throws or breaks one of its invariants (they abort) fails this test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

namespace fs = std::filesystem;
using Target = int (*)(const std::uint8_t*, std::size_t);

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> all{
      {"job_spec", &job_spec},
      {"pools", &pools},
      {"quantity", &quantity},
      {"kubeconfig", &kubeconfig},
      {"watch_stream", &watch_stream},
      {"progress_endpoint", &progress_endpoint},
      {"solve", &solve},
  };
  return all;
}

const fs::path kFuzzDir = fs::path(DEPL_SOURCE_DIR) / "fuzz";

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> files;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = kFuzzDir / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().filename().string().front() != '.')
        files.push_back(entry.path());
    }
  }
  return files;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

TEST(FuzzReplay, EveryCorpusDirectoryHasATargetAndEveryTargetSeeds) {
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(kFuzzDir / "corpus")) {
    dirs.push_back(entry.path().filename().string());
    EXPECT_EQ(targets().count(dirs.back()), 1u) << "no target for fuzz/corpus/" << dirs.back();
  }
  for (const auto& [name, target] : targets()) {
    (void)target;
    EXPECT_GE(inputs(name).size(), 3u) << "fuzz/corpus/" << name << " needs seeds";
  }
  if (fs::is_directory(kFuzzDir / "regressions")) {
    for (const auto& entry : fs::directory_iterator(kFuzzDir / "regressions")) {
      EXPECT_EQ(targets().count(entry.path().filename().string()), 1u)
          << "no target for " << entry.path();
    }
  }
}

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, EveryInputRunsClean) {
  const Target target = targets().at(GetParam());
  for (const auto& path : inputs(GetParam())) {
    SCOPED_TRACE(path.string());
    const std::string bytes = read_bytes(path);
    EXPECT_EQ(target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(FuzzReplay, Corpus,
                         ::testing::Values("job_spec", "pools", "quantity", "kubeconfig",
                                           "watch_stream", "progress_endpoint", "solve"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace depl::fuzz
