// The Dockerfile's runtime stage installs exactly the Debian packages that provide the shared
// libraries depl-controller links (ldd of the built binary, each library mapped to its package
// with dpkg -S), so the image cannot drift from the build. Skipped when the binary is not built
// or ldd/dpkg are missing.
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/common/subprocess.hpp"
#include "packaging/chart_files.hpp"

namespace depl::packaging {
namespace {

// stdout of a command, and whether it started and exited 0.
std::pair<std::string, bool> run(const std::vector<std::string>& argv) {
  SpawnOptions options;
  options.argv = argv;
  options.stdout_to = Redirect::pipe();
  options.stderr_to = Redirect::null();
  auto ran = run_command(options);
  if (!ran) return {"", false};
  return {ran->out, ran->status.exit_code == 0};
}

// Package names on the `apt-get install` line(s) of the last stage (after the last FROM).
std::set<std::string> runtime_packages(const std::string& dockerfile) {
  const auto last_from = dockerfile.rfind("\nFROM ");
  std::string stage = dockerfile.substr(last_from == std::string::npos ? 0 : last_from);
  // Join continuation lines.
  std::string joined;
  for (std::size_t i = 0; i < stage.size(); ++i) {
    if (stage[i] == '\\' && i + 1 < stage.size() && stage[i + 1] == '\n') {
      ++i;
      joined.push_back(' ');
    } else {
      joined.push_back(stage[i]);
    }
  }
  std::set<std::string> packages;
  std::istringstream lines(joined);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#")) continue;
    const auto at = line.find("apt-get install");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at + std::string("apt-get install").size()));
    for (std::string w; words >> w;) {
      if (w == "&&" || w == ";" || w == "||") break;
      if (!w.starts_with("-")) packages.insert(w);
    }
  }
  return packages;
}

TEST(Dockerfile, RuntimeStageParsesAsExpected) {
  const std::string sample =
      "FROM debian:bookworm AS build\nRUN apt-get install -y gcc\n"
      "FROM debian:bookworm-slim\nRUN apt-get update \\\n && apt-get install -y "
      "--no-install-recommends \\\n"
      "      libfoo1 libbar2 \\\n && rm -rf /var/lib/apt/lists/*\n";
  EXPECT_EQ(runtime_packages(sample), (std::set<std::string>{"libfoo1", "libbar2"}));
}

TEST(Dockerfile, RuntimeStageInstallsExactlyThePackagesOfTheControllersLibraries) {
  const std::filesystem::path binary =
      std::filesystem::path(DEPL_BINARY_DIR) / "bin" / "depl-controller";
  if (!std::filesystem::exists(binary))
    GTEST_SKIP() << binary << " is not built (cmake --build <build> --target depl-controller)";
  if (!run({"ldd", "--version"}).second || !run({"dpkg", "--version"}).second)
    GTEST_SKIP() << "ldd or dpkg is not installed";

  const auto [ldd, ldd_ok] = run({"ldd", binary.string()});
  ASSERT_TRUE(ldd_ok) << "ldd failed on " << binary;
  std::set<std::string> needed;
  std::istringstream lines(ldd);
  for (std::string line; std::getline(lines, line);) {
    // "\tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)" or
    // "\t/lib64/ld-linux-x86-64.so.2 (0x...)"
    std::istringstream words(line);
    std::string first, arrow, path;
    words >> first >> arrow >> path;
    std::string library = arrow == "=>" ? path : first;
    if (!library.starts_with("/")) continue;  // linux-vdso.so.1 has no file
    auto [owner, found] = run({"dpkg", "-S", library});
    if (!found) {
      // Merged /usr: dpkg may record the file under the other spelling of the directory.
      const std::string real = std::filesystem::canonical(library).string();
      std::tie(owner, found) = run({"dpkg", "-S", real});
      if (!found && library.starts_with("/lib"))
        std::tie(owner, found) = run({"dpkg", "-S", "/usr" + library});
      if (!found && library.starts_with("/usr/lib"))
        std::tie(owner, found) = run({"dpkg", "-S", library.substr(4)});
    }
    ASSERT_TRUE(found) << "no Debian package owns " << library;
    // "libssl3:amd64: /lib/x86_64-linux-gnu/libssl.so.3"
    std::string package = owner.substr(0, owner.find(':'));
    needed.insert(package);
  }
  ASSERT_FALSE(needed.empty());
  for (const auto& p : needed) {
    if (p.starts_with("libasan") || p.starts_with("libubsan") || p.starts_with("libtsan")) {
      GTEST_SKIP() << "a sanitizer build (the binary needs " << p
                   << "): the image ships a Release build, check that one";
    }
  }
  auto dockerfile = read_text(kRepo / "Dockerfile");
  ASSERT_TRUE(dockerfile) << dockerfile.error().message;
  std::string listed;
  for (const auto& p : needed) listed += " " + p;
  EXPECT_EQ(runtime_packages(*dockerfile), needed)
      << "the runtime stage's apt-get install should list exactly:" << listed;
}

TEST(Dockerfile, RunsAsNonRootWithTheControllerAsEntrypoint) {
  auto dockerfile = read_text(kRepo / "Dockerfile");
  ASSERT_TRUE(dockerfile) << dockerfile.error().message;
  EXPECT_THAT(*dockerfile, ::testing::HasSubstr("FROM debian:bookworm AS build"));
  EXPECT_THAT(*dockerfile, ::testing::HasSubstr("\nFROM debian:bookworm-slim"));
  EXPECT_THAT(*dockerfile, ::testing::HasSubstr("\nUSER 65532:65532\n"));
  EXPECT_THAT(*dockerfile, ::testing::HasSubstr("ENTRYPOINT [\"/usr/local/bin/depl-controller\"]"));
  EXPECT_THAT(*dockerfile, ::testing::HasSubstr("make deps"));
}

// The text of the stage `FROM ... AS <name>`, up to the next FROM.
std::string stage_named(const std::string& dockerfile, const std::string& name) {
  const auto from = dockerfile.find(" AS " + name + "\n");
  if (from == std::string::npos) return "";
  const auto next = dockerfile.find("\nFROM ", from);
  return dockerfile.substr(from, next == std::string::npos ? std::string::npos : next - from);
}

// The packages of the Makefile's DEB_PACKAGES (what `make deps` installs on a development machine).
std::set<std::string> make_deps_packages(const std::string& makefile) {
  std::set<std::string> out;
  const auto start = makefile.find("DEB_PACKAGES := ");
  if (start == std::string::npos) return out;
  std::istringstream lines(makefile.substr(start + std::string("DEB_PACKAGES := ").size()));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    bool continued = false;
    for (std::string w; words >> w;) {
      if (w == "\\") {
        continued = true;
      } else {
        out.insert(w);
      }
    }
    if (!continued) break;
  }
  return out;
}

TEST(Dockerfile, PytorchWorkerStageRunsTheExampleOnDebiansTorch) {
  auto dockerfile = read_text(kRepo / "Dockerfile");
  ASSERT_TRUE(dockerfile) << dockerfile.error().message;
  const std::string stage = stage_named(*dockerfile, "pytorch-worker");
  ASSERT_FALSE(stage.empty()) << "no stage named pytorch-worker";
  // Its packages are Debian's, and a development machine has them too (make deps).
  const std::set<std::string> packages = runtime_packages("\nFROM " + stage);
  for (const char* p : {"python3-torch", "python3-numpy", "dataset-fashion-mnist"}) {
    EXPECT_TRUE(packages.contains(p)) << p;
  }
  auto makefile = read_text(kRepo / "Makefile");
  ASSERT_TRUE(makefile) << makefile.error().message;
  const std::set<std::string> deps = make_deps_packages(*makefile);
  for (const auto& p : packages) EXPECT_TRUE(deps.contains(p)) << p << " is not in make deps";
  // What it copies exists, and its entrypoint is the example on Debian's python3.
  EXPECT_THAT(stage,
              ::testing::HasSubstr("COPY sdk/python/depl /usr/lib/python3/dist-packages/depl"));
  EXPECT_THAT(stage, ::testing::HasSubstr("COPY examples/pytorch /opt/depl/examples/pytorch"));
  EXPECT_TRUE(std::filesystem::exists(kRepo / "sdk/python/depl/__init__.py"));
  EXPECT_TRUE(std::filesystem::exists(kRepo / "examples/pytorch/train.py"));
  EXPECT_THAT(stage,
              ::testing::HasSubstr(
                  "ENTRYPOINT [\"/usr/bin/python3\", \"/opt/depl/examples/pytorch/train.py\"]"));
  EXPECT_THAT(stage, ::testing::HasSubstr("\nUSER 65532:65532\n"));
}

}  // namespace
}  // namespace depl::packaging
