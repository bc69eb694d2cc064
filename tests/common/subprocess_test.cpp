#include "depl/common/subprocess.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace depl {
namespace {

using namespace std::chrono_literals;

SpawnOptions sh(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.stdout_to = Redirect::pipe();
  o.stderr_to = Redirect::pipe();
  return o;
}

std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("depl-subprocess-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RunCommand, CapturesStdoutStderrAndTheExitCode) {
  auto r = run_command(sh("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->status.exit_code, 3);
  EXPECT_EQ(r->status.signal, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->cancelled);

  auto ok = run_command(sh("true"));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status.exit_code, 0);
}

TEST(RunCommand, ASignalThatEndsTheChildIsReported) {
  auto r = run_command(sh("kill -TERM $$"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status.signal, SIGTERM);
  EXPECT_EQ(r->status.exit_code, 128 + SIGTERM);
}

TEST(RunCommand, LargeOutputsOnBothStreamsAreReadWhileTheChildWrites) {
  // 4 MiB on each stream, far more than a pipe holds: reading one stream to its end before the
  // other would deadlock against a child blocked on the full one.
  auto r = run_command(sh("head -c 4194304 /dev/zero | tr '\\0' o & "
                          "head -c 4194304 /dev/zero | tr '\\0' e >&2; wait"),
                       {.timeout = 60s});
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->status.exit_code, 0);
  EXPECT_EQ(r->out.size(), 4194304u);
  EXPECT_EQ(r->err.size(), 4194304u);
  EXPECT_EQ(std::count(r->out.begin(), r->out.end(), 'o'), 4194304);
  EXPECT_EQ(std::count(r->err.begin(), r->err.end(), 'e'), 4194304);
}

TEST(RunCommand, FeedsStdinPastAPipesSizeAndMergesStderrWhenAsked) {
  SpawnOptions o = sh("cat; echo done >&2");
  o.stdin_from = Redirect::pipe();
  o.stderr_to = Redirect::to_stdout();
  const std::string input(1'000'000, 'x');
  auto r = run_command(o, {.input = input});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->out, input + "done\n");
  EXPECT_EQ(r->err, "");
}

TEST(RunCommand, TheEnvironmentIsInheritedWithOverridesOrGivenWhole) {
  ::setenv("DEPL_SUBPROCESS_TEST_INHERITED", "kept", 1);
  ::setenv("DEPL_SUBPROCESS_TEST_REPLACED", "old", 1);
  SpawnOptions o = sh("echo \"[$DEPL_SUBPROCESS_TEST_INHERITED][$DEPL_SUBPROCESS_TEST_REPLACED]\"");
  o.env = {{"DEPL_SUBPROCESS_TEST_REPLACED", "new"}};
  EXPECT_EQ(run_command(o)->out, "[kept][new]\n");
  o.inherit_env = false;
  EXPECT_EQ(run_command(o)->out, "[][new]\n");
}

TEST(RunCommand, ATimeoutKillsTheChildAndItsGroup) {
  SpawnOptions o = sh("sleep 60 & echo started; wait");
  o.own_process_group = true;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_command(o, {.timeout = 300ms});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->status.signal, SIGKILL);
  EXPECT_EQ(r->out, "started\n");
  // The backgrounded sleep holds the pipe too: had it survived, reading would have waited 60 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

TEST(RunCommand, ATimeoutAlsoEndsAChildWithoutPipes) {
  SpawnOptions o;
  o.argv = {"sleep", "60"};
  auto r = run_command(o, {.timeout = 200ms});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->status.signal, SIGKILL);
}

TEST(RunCommand, CancellationSendsSigterm) {
  std::atomic<bool> cancelled{true};
  SpawnOptions o =
      sh("trap 'echo stopping; exit 5' TERM; echo started; while :; do sleep 0.1; done");
  auto r = run_command(o, {.timeout = 60s, .cancelled = &cancelled});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->timed_out);
  // The shell runs its trap once the sleep it waits for ends, or is killed by the TERM itself
  // when it had not installed the trap yet.
  EXPECT_TRUE(r->status.exit_code == 5 || r->status.signal == SIGTERM) << r->status.exit_code;
}

TEST(RunCommand, AProgramThatCannotStartIsAnErrorNamingItAndWhy) {
  SpawnOptions o;
  o.argv = {"depl-no-such-program", "--flag"};
  auto r = run_command(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("depl-no-such-program"), std::string::npos);
  EXPECT_NE(r.error().message.find("No such file"), std::string::npos) << r.error().message;

  o.argv = {"/etc/hostname"};  // exists, not executable
  r = run_command(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("/etc/hostname"), std::string::npos);

  o.argv = {"/bin/true"};
  o.working_dir = "/nonexistent/depl-subprocess-test";
  r = run_command(o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("/nonexistent/depl-subprocess-test"), std::string::npos);

  auto empty = run_command(SpawnOptions{});
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().message, "no program to run");
}

TEST(Subprocess, WritesToAFileInItsWorkingDirectoryAndIsWaitedFor) {
  const auto dir = scratch_dir("file");
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "pwd; echo oops >&2; exit 7"};
  o.working_dir = dir.string();
  o.stdout_to = Redirect::file((dir / "log").string(), /*append=*/false);
  o.stderr_to = Redirect::to_stdout();
  auto child = Subprocess::spawn(o);
  ASSERT_TRUE(child.has_value());
  EXPECT_EQ(child->wait().exit_code, 7);
  EXPECT_EQ(read_file(dir / "log"), std::filesystem::canonical(dir).string() + "\noops\n");

  o.stdout_to = Redirect::file((dir / "log").string());  // appends
  o.argv = {"/bin/sh", "-c", "echo again"};
  auto second = Subprocess::spawn(o);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->wait().exit_code, 0);
  EXPECT_EQ(read_file(dir / "log"), std::filesystem::canonical(dir).string() + "\noops\nagain\n");
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, WaitForReturnsAtTheTimeoutWithoutKillingThenASignalEndsIt) {
  SpawnOptions o;
  o.argv = {"sleep", "60"};
  auto child = Subprocess::spawn(o);
  ASSERT_TRUE(child.has_value());
  EXPECT_FALSE(child->try_wait().has_value());
  EXPECT_FALSE(child->wait_for(50ms).has_value());
  EXPECT_EQ(::kill(child->pid(), 0), 0) << "still running";
  child->signal(SIGTERM);
  auto status = child->wait_for(30s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->signal, SIGTERM);
  EXPECT_EQ(status->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(child->reaped());
  EXPECT_EQ(child->wait().signal, SIGTERM) << "the status is kept once reaped";
}

TEST(Subprocess, DestructionKillsAndReapsIt) {
  SpawnOptions o;
  o.argv = {"sleep", "60"};
  pid_t pid = -1;
  {
    auto child = Subprocess::spawn(o);
    ASSERT_TRUE(child.has_value());
    pid = child->pid();
    Subprocess moved = std::move(*child);  // the moved-from one owns nothing
    EXPECT_EQ(moved.pid(), pid);
  }
  EXPECT_EQ(::kill(pid, 0), -1) << "killed and reaped when destroyed";
}

TEST(Subprocess, ParentDescriptorsDoNotLeakIntoTheChild) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // not close-on-exec
  auto r = run_command(sh("ls /proc/self/fd"));
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(r.has_value());
  // 0, 1, 2 and the one ls opens for the listing; the pipe's two would make six.
  EXPECT_EQ(std::count(r->out.begin(), r->out.end(), '\n'), 4) << r->out;
}

TEST(Subprocess, StartsWithDefaultSignalsAndAnEmptyMask) {
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigset_t before;
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, &before), 0);
  auto r = run_command(sh("grep '^SigBlk' /proc/self/status"));
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->out.find("SigBlk:\t0000000000000000"), std::string::npos) << r->out;
}

TEST(SpawnProcess, LeavesTheChildToTheCallerAndRefusesPipes) {
  const auto dir = scratch_dir("spawn");
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo $0 $DEPL_X", "named"};
  o.env = {{"DEPL_X", "x"}};
  o.stdout_to = Redirect::file((dir / "out").string());
  auto pid = spawn_process(o);
  ASSERT_TRUE(pid.has_value()) << pid.error().message;
  int status = 0;
  ASSERT_EQ(::waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(read_file(dir / "out"), "named x\n");
  std::filesystem::remove_all(dir);

  o.stdout_to = Redirect::pipe();
  EXPECT_FALSE(spawn_process(o).has_value());
}

}  // namespace
}  // namespace depl
