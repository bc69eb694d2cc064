// Starting a pod's containers (as processes, or simulated), their exits and restarts.
#include "sim/kubelet_impl.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sim/time_format.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

namespace fs = std::filesystem;

std::string Kubelet::Impl::allocate_ip() {
  const std::uint32_t n = next_ip++;
  return "127." + std::to_string((n >> 16) & 255) + "." + std::to_string((n >> 8) & 255) + "." +
         std::to_string(n & 255);
}

std::string Kubelet::Impl::executable_for(const std::string& image) const {
  if (auto it = options.image_map.find(image); it != options.image_map.end()) return it->second;
  // Also match without a tag or digest ("worker:1.0" -> "worker").
  std::string bare = image.substr(0, image.find('@'));
  const auto colon = bare.rfind(':');
  if (colon != std::string::npos && bare.find('/', colon) == std::string::npos) {
    bare.resize(colon);
  }
  if (auto it = options.image_map.find(bare); it != options.image_map.end()) return it->second;
  if (auto it = options.image_map.find("*"); it != options.image_map.end()) return it->second;
  return "";
}

void Kubelet::Impl::start_pod(const ObjectCache::ObjectPtr& shared) {
  const json& pod = *shared;
  PodRun run;
  run.uid = pod["metadata"].value("uid", "");
  run.ns = pod["metadata"].value("namespace", "");
  run.name = pod["metadata"].value("name", "");
  run.node = pod["spec"].value("nodeName", "");
  run.restart_policy = pod["spec"].value("restartPolicy", "Always");
  run.pod = shared;
  run.ip = allocate_ip();
  run.start_time = rfc3339_now();
  // Created when a container process starts there.
  run.dir = (fs::path(options.work_dir) / (run.ns + "_" + run.name + "_" + run.uid.substr(0, 8)))
                .string();
  for (const auto& c : container_list(pod)) {
    ContainerRun cr;
    cr.name = c.value("name", "");
    cr.image = c.value("image", "");
    cr.executable = executable_for(cr.image);
    run.containers.push_back(std::move(cr));
  }
  auto [it, inserted] = runs.emplace(run.uid, std::move(run));
  spdlog::info("event=pod_started pod={}/{} node={} ip={}", it->second.ns, it->second.name,
               it->second.node, it->second.ip);
  for (size_t i = 0; i < it->second.containers.size(); ++i) start_container(it->second, i);
  write_status(it->second);
}

const json* Kubelet::Impl::container_spec(const PodRun& run, const std::string& name) const {
  const json& list = (*run.pod)["spec"]["containers"];
  for (const auto& c : list) {
    if (c.value("name", "") == name) return &c;
  }
  return nullptr;
}

void Kubelet::Impl::start_container(PodRun& run, size_t index) {
  ContainerRun& c = run.containers[index];
  if (run.terminating || !run.failed_reason.empty()) return;
  const std::uint64_t run_id = ++c.run_id;
  const std::string uid = run.uid;
  if (c.executable.empty()) {
    c.logs.push_back({"", "simulated container " + c.name + " (image " + c.image + ") started\n"});
    c.state = ContainerRun::State::Running;
    c.started_at = rfc3339_now();
    if (run.restart_policy != "Always" && options.simulated_run_time.count() >= 0) {
      c.timer = timers.schedule_after(options.simulated_run_time, [this, uid, index, run_id] {
        post([this, uid, index, run_id] { on_exit(uid, index, run_id, ProcessExit{0, 0}); });
      });
    }
    return;
  }
  std::error_code ec;
  fs::create_directories(run.dir, ec);
  const std::string log_path =
      (fs::path(run.dir) / (c.name + "-" + std::to_string(c.restart_count) + ".log")).string();
  { std::ofstream touch(log_path, std::ios::app); }
  c.logs.push_back({log_path, ""});
  const json* spec = container_spec(run, c.name);
  std::map<std::string, std::string> vars;
  auto mounts = materialise_volumes(run, spec ? *spec : json::object());
  auto env = mounts ? container_env(run, spec ? *spec : json::object(), vars)
                    : Expected<std::vector<std::string>>(unexpected(mounts.error()));
  if (!env) {
    // Like the real kubelet: wait and try again, the Secret or ConfigMap may appear.
    c.state = ContainerRun::State::Waiting;
    c.waiting_reason = mounts ? "CreateContainerConfigError" : "ContainerCreating";
    c.waiting_message = env.error().message;
    c.logs.pop_back();
    --c.run_id;
    c.timer = timers.schedule_after(std::chrono::seconds(1), [this, uid, index] {
      post([this, uid, index] {
        auto it = runs.find(uid);
        if (it == runs.end()) return;
        start_container(it->second, index);
        write_status(it->second);
      });
    });
    return;
  }
  ProcessSpec process;
  process.argv.push_back(c.executable);
  auto strings = [&](const char* key) {
    std::vector<std::string> out;
    if (spec && spec->contains(key) && (*spec)[key].is_array()) {
      for (const auto& s : (*spec)[key]) {
        if (s.is_string()) out.push_back(expand_variables(s.get<std::string>(), vars));
      }
    }
    return out;
  };
  // The mapped executable stands in for the image's binary: it replaces command[0] (or the
  // image's entrypoint when there is no command), the rest of command and args follow.
  const auto command = strings("command");
  for (size_t i = 1; i < command.size(); ++i) process.argv.push_back(command[i]);
  for (const auto& a : strings("args")) process.argv.push_back(a);
  // Values that are paths under a materialised volume's mountPath point at its directory.
  for (auto& entry : *env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq + 1 >= entry.size() || entry[eq + 1] != '/') continue;
    entry = entry.substr(0, eq + 1) + host_path(*mounts, entry.substr(eq + 1));
  }
  process.env = std::move(*env);
  process.log_path = log_path;
  process.working_dir = run.dir;
  if (spec && spec->contains("workingDir") && (*spec)["workingDir"].is_string()) {
    std::error_code ec;
    const std::string wd = host_path(*mounts, (*spec)["workingDir"].get<std::string>());
    if (fs::is_directory(wd, ec)) process.working_dir = wd;
  }
  auto started = RunningProcess::start(process, [this, uid, index, run_id](ProcessExit exit) {
    post([this, uid, index, run_id, exit] { on_exit(uid, index, run_id, exit); });
  });
  if (!started) {
    c.state = ContainerRun::State::Terminated;
    c.exit_code = 128;
    c.terminated_reason = "StartError";
    c.terminated_message = started.error().message;
    c.started_at = c.finished_at = rfc3339_now();
    spdlog::warn("event=container_start_failed pod={}/{} container={} error=\"{}\"", run.ns,
                 run.name, c.name, started.error().message);
    after_exit(run, index);
    return;
  }
  c.process = std::move(*started);
  c.state = ContainerRun::State::Running;
  c.started_at = rfc3339_now();
  spdlog::info("event=container_started pod={}/{} container={} pid={} executable={}", run.ns,
               run.name, c.name, c.process->pid(), c.executable);
}

void Kubelet::Impl::on_exit(const std::string& uid, size_t index, std::uint64_t run_id,
                            ProcessExit exit) {
  auto it = runs.find(uid);
  if (it == runs.end()) return;
  PodRun& run = it->second;
  if (index >= run.containers.size()) return;
  ContainerRun& c = run.containers[index];
  if (c.run_id != run_id || c.state != ContainerRun::State::Running) return;
  c.process.reset();
  c.timer = 0;
  c.state = ContainerRun::State::Terminated;
  c.exit_code = exit.exit_code;
  c.terminated_reason = exit.exit_code == 0 ? "Completed" : "Error";
  c.terminated_message.clear();
  c.finished_at = rfc3339_now();
  spdlog::info("event=container_exited pod={}/{} container={} exit_code={}", run.ns, run.name,
               c.name, exit.exit_code);
  after_exit(run, index);
}

void Kubelet::Impl::after_exit(PodRun& run, size_t index) {
  ContainerRun& c = run.containers[index];
  if (run.terminating) {
    finish_termination_if_done(run);
    return;
  }
  const bool restart =
      run.restart_policy == "Always" || (run.restart_policy == "OnFailure" && c.exit_code != 0);
  if (restart) {
    c.last_state = {{"terminated",
                     {{"exitCode", c.exit_code},
                      {"reason", c.terminated_reason},
                      {"startedAt", c.started_at},
                      {"finishedAt", c.finished_at},
                      {"containerID", "depl://" + run.uid + "/" + c.name}}}};
    auto delay = options.restart_backoff * (1 << std::min(c.restart_count, 6));
    delay = std::min<std::chrono::milliseconds>(delay, std::chrono::seconds(10));
    c.state = ContainerRun::State::Waiting;
    c.waiting_reason = "CrashLoopBackOff";
    c.waiting_message = "back-off restarting failed container " + c.name + " in pod " + run.name +
                        "_" + run.ns + "(" + run.uid + ")";
    const std::string uid = run.uid;
    c.timer = timers.schedule_after(delay, [this, uid, index] {
      post([this, uid, index] {
        auto it = runs.find(uid);
        if (it == runs.end()) return;
        ContainerRun& cr = it->second.containers[index];
        if (cr.state != ContainerRun::State::Waiting || it->second.terminating) return;
        ++cr.restart_count;
        start_container(it->second, index);
        write_status(it->second);
      });
    });
  }
  write_status(run);
}

}  // namespace depl::devcluster
