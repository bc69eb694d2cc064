// Child processes, started with posix_spawn: the program (a path, or a name looked up on PATH)
// with its arguments, environment and working directory, where its standard streams go (this
// process's, /dev/null, a pipe to this process, a file), and whether it leads a process group of
// its own (so that a signal reaches its children too). The one way the project runs a program:
// exec credential plugins, the dev cluster's containers, profiling workers, the controller as a
// child of a test or a benchmark, kubectl and the CLI in tests.
//
// A child never inherits this process's other descriptors (a listening socket of the parent would
// stay open in it, and a restarted server could not bind its port again) and starts with default
// signal handling and an empty signal mask (a parent that blocks SIGTERM in its threads would pass
// that on).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "depl/common/expected.hpp"

namespace depl {

// Where one of the child's standard streams goes.
struct Redirect {
  enum class Kind { Inherit, Null, Pipe, File, Stdout };
  Kind kind = Kind::Inherit;
  std::string path{};  // Kind::File
  bool append = true;  // Kind::File: append to the file, or truncate it

  static Redirect inherit() { return {Kind::Inherit}; }
  static Redirect null() { return {Kind::Null}; }  // /dev/null
  static Redirect pipe() { return {Kind::Pipe}; }  // a pipe to this process
  static Redirect file(std::string path, bool append = true) {
    return {Kind::File, std::move(path), append};
  }
  static Redirect to_stdout() { return {Kind::Stdout}; }  // stderr only: where stdout goes
};

struct SpawnOptions {
  std::vector<std::string> argv{};  // argv[0]: a path, or a name looked up on PATH
  // The child's environment: this process's with these added (a name given here replaces the
  // inherited one), or only these when `inherit_env` is false.
  std::vector<std::pair<std::string, std::string>> env{};
  bool inherit_env = true;
  std::string working_dir{};  // empty: this process's
  Redirect stdin_from = Redirect::null();
  Redirect stdout_to = Redirect::inherit();
  Redirect stderr_to = Redirect::inherit();
  bool own_process_group = false;
};

// How a child ended.
struct ExitStatus {
  int exit_code = 0;       // its exit status, or 128 + the signal that killed it
  int signal = 0;          // the signal that killed it, 0 when it exited
  double cpu_seconds = 0;  // user and system CPU time it used
};

// Starts a child and leaves it to the caller, who reaps `pid` itself (a thread that waits for it,
// for instance). Not for pipes (use Subprocess). The error names the program.
Expected<pid_t> spawn_process(const SpawnOptions& options);

// A running child. Destroying it kills the child (its group when it leads one) if it has not been
// reaped, and reaps it. Not thread-safe.
class Subprocess {
 public:
  // The error names the program and why it could not start (not found, not executable, ...).
  static Expected<Subprocess> spawn(const SpawnOptions& options);
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }
  // This process's ends of the pipes (Redirect::pipe()), -1 otherwise or once closed.
  int stdin_fd() const { return stdin_fd_; }
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  void close_stdin();

  // Sends `signal` to the child; nothing once it is reaped.
  void signal(int signal);
  // Sends `signal` to the child's group when it leads one, else to the child.
  void signal_group(int signal);
  // The exit status once the child has ended (it is then reaped), nullopt while it runs.
  std::optional<ExitStatus> try_wait();
  // Waits for the child to end (at once when it is already reaped).
  ExitStatus wait();
  // Waits at most `timeout` for the child to end; nullopt while it still runs.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // SIGKILL to the child (its group when it leads one), then waits for it.
  ExitStatus kill();

 private:
  Subprocess() = default;
  void release();

  pid_t pid_ = -1;
  int pidfd_ = -1;  // readable once the child has ended; -1 where the kernel has no pidfd
  bool group_ = false;
  bool reaped_ = false;
  ExitStatus status_{};
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
};

struct RunOptions {
  std::string_view input{};  // fed on stdin when it is a pipe, then stdin is closed
  // After this long the child (its group when it leads one) is killed with SIGKILL.
  std::optional<std::chrono::milliseconds> timeout{};
  // When it turns true the child (its group when it leads one) gets SIGTERM; looked at every
  // 100 ms.
  const std::atomic<bool>* cancelled = nullptr;
};

struct CommandResult {
  ExitStatus status{};
  bool timed_out = false;  // killed at the timeout (status then says by which signal)
  bool cancelled = false;  // sent SIGTERM because `cancelled` turned true
  std::string out{};       // stdout, when it was a pipe
  std::string err{};       // stderr, when it was a pipe
};

// Runs a program to its end. stdout and stderr given as pipes are read as the child writes them
// (a chatty child never blocks on a full pipe) while stdin, when a pipe, is fed. Fails only when
// the program cannot be started; how it ended is in the result.
Expected<CommandResult> run_command(const SpawnOptions& options, const RunOptions& run = {});

}  // namespace depl
