#include "sim/kubelet.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "depl/common/base64.hpp"
#include "depl/common/json_dump.hpp"
#include "server/timer_thread.hpp"
#include "sim/object_cache.hpp"
#include "sim/process_runner.hpp"
#include "sim/scheduling.hpp"
#include "sim/time_format.hpp"

extern char** environ;

namespace depl::devcluster {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// $(VAR) references to earlier variables are expanded; $$(VAR) escapes; unknown stay as written.
std::string expand(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size()) {
      if (text[i + 1] == '$') {
        out.push_back('$');
        ++i;
        continue;
      }
      if (text[i + 1] == '(') {
        const auto close = text.find(')', i + 2);
        if (close != std::string::npos) {
          const std::string name = text.substr(i + 2, close - i - 2);
          if (auto it = vars.find(name); it != vars.end()) {
            out += it->second;
            i = close;
            continue;
          }
        }
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json container_list(const json& pod) {
  if (pod.contains("spec") && pod["spec"].contains("containers") &&
      pod["spec"]["containers"].is_array()) {
    return pod["spec"]["containers"];
  }
  return json::array();
}

}  // namespace

struct Kubelet::Impl {
  struct ContainerRun {
    std::string name;
    std::string image;
    std::string executable;  // "" = simulated
    int restart_count = 0;
    enum class State { Waiting, Running, Terminated } state = State::Waiting;
    std::string waiting_reason = "ContainerCreating";
    std::string waiting_message;
    std::string started_at;
    std::string finished_at;
    int exit_code = 0;
    std::string terminated_reason;
    std::string terminated_message;
    json last_state = json::object();
    // One per start; back() is the current one. A process's output goes to a file under the pod
    // directory; a simulated container's one line is kept here (`path` empty), so simulating a
    // pod touches no disk.
    struct Log {
      std::string path;
      std::string text;
    };
    std::vector<Log> logs;
    std::unique_ptr<RunningProcess> process;
    std::uint64_t run_id = 0;
    TimerThread::Id timer = 0;
  };
  struct PodRun {
    std::string uid, ns, name, node, dir, ip, start_time, restart_policy;
    // The pod as last seen: the cache's object, shared (a pod is a few KB of JSON, and every
    // status write of ours comes back as an event).
    ObjectCache::ObjectPtr pod;
    std::vector<ContainerRun> containers;
    bool terminating = false;
    std::string failed_reason, failed_message;
    TimerThread::Id kill_timer = 0;
    json last_status;
  };

  ApiStore& store;
  KubeletOptions options;
  LoopSignal signal;
  ObjectCache pods{store, ResourceRef{"", "v1", "pods", "", "", ""}, signal};
  ObjectCache nodes{store, ResourceRef{"", "v1", "nodes", "", "", ""}, signal};
  std::mutex mutex;                    // guards runs (the loop thread writes; log readers read)
  std::map<std::string, PodRun> runs;  // by uid
  std::mutex tasks_mutex;
  std::deque<std::function<void()>> tasks;
  std::uint32_t next_ip = 2;
  std::set<std::string> ready_nodes;
  TimerThread timers;  // after the state it touches through tasks only
  std::jthread thread;

  Impl(ApiStore& s, KubeletOptions o) : store(s), options(std::move(o)) {
    if (options.work_dir.empty()) {
      options.work_dir = (fs::temp_directory_path() / "depl-devcluster-kubelet").string();
    }
    std::error_code ec;
    fs::create_directories(options.work_dir, ec);
  }

  void post(std::function<void()> task) {
    {
      std::lock_guard lock(tasks_mutex);
      tasks.push_back(std::move(task));
    }
    signal.notify();
  }

  void run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      std::deque<std::function<void()>> batch;
      {
        std::lock_guard lock(tasks_mutex);
        batch.swap(tasks);
      }
      {
        std::lock_guard lock(mutex);
        for (auto& t : batch) t();
        std::vector<std::string> changed_nodes;
        nodes.sync([&](const std::string& type, const ObjectCache::ObjectPtr& node) {
          on_node_event(type, *node, changed_nodes);
        });
        pods.sync([&](const std::string& type, const ObjectCache::ObjectPtr& pod) {
          on_pod_event(type, pod);
        });
        // Pods that were waiting for their node to appear or become ready.
        for (const auto& node : changed_nodes) {
          for (const auto& [key, pod] : pods.objects()) {
            if (pod_node_name(*pod) == node) on_pod_event("MODIFIED", pod);
          }
        }
      }
      signal.wait(std::chrono::milliseconds(500));
    }
  }

  // ---- nodes --------------------------------------------------------------------------------

  void on_node_event(const std::string& type, const json& node, std::vector<std::string>& changed) {
    const std::string name = node["metadata"].value("name", "");
    const bool ready = type != "DELETED" && node_is_ready(node);
    const bool was_ready = ready_nodes.count(name) > 0;
    if (ready) {
      ready_nodes.insert(name);
    } else {
      ready_nodes.erase(name);
    }
    if (type == "DELETED") {
      // The machine is gone, and its kubelet with it: the processes die and nothing more is
      // reported about its pods. The pod garbage collector (sim/pod_gc) fails and removes them.
      for (auto it = runs.begin(); it != runs.end();) {
        if (it->second.node != name) {
          ++it;
          continue;
        }
        stop_all(it->second, SIGKILL);
        spdlog::info("event=pod_lost pod={}/{} node={} reason=NodeDeleted", it->second.ns,
                     it->second.name, name);
        it = runs.erase(it);  // reaps its processes; their exit reports find no run
      }
      return;
    }
    if (!ready && was_ready) {
      for (auto& [uid, run] : runs) {
        if (run.node == name && run.failed_reason.empty()) node_lost(run);
      }
    }
    if (ready != was_ready) changed.push_back(name);
  }

  void node_lost(PodRun& run) {
    run.failed_reason = "NodeLost";
    run.failed_message =
        "Node " + run.node + " which was running pod " + run.name + " is unresponsive";
    for (auto& c : run.containers) {
      cancel_timer(c);
      if (c.process) c.process->signal_group(SIGKILL);
      if (c.state != ContainerRun::State::Terminated) {
        c.state = ContainerRun::State::Terminated;
        c.exit_code = 137;
        c.terminated_reason = "Error";
        c.terminated_message = "node " + run.node + " is not ready";
        c.finished_at = rfc3339_now();
        ++c.run_id;  // the coming exit report is stale
        c.process.reset();
      }
    }
    spdlog::info("event=pod_failed pod={}/{} node={} reason=NodeLost", run.ns, run.name, run.node);
    write_status(run);
  }

  // ---- pods ---------------------------------------------------------------------------------

  void on_pod_event(const std::string& type, const ObjectCache::ObjectPtr& shared) {
    const json& pod = *shared;
    const std::string uid = pod["metadata"].value("uid", "");
    auto it = runs.find(uid);
    if (type == "DELETED") {
      if (it != runs.end()) {
        stop_all(it->second, SIGKILL);
        runs.erase(it);
      }
      return;
    }
    const std::string node(pod_node_name(pod));
    if (node.empty()) return;
    const bool deleting = pod["metadata"].contains("deletionTimestamp");
    if (it == runs.end()) {
      // No node, no kubelet: a pod bound to a node that is gone (or not registered yet) is
      // neither started nor removed here; the pod garbage collector (sim/pod_gc) deals with it.
      auto found = nodes.objects().find(node);
      if (found == nodes.objects().end()) return;
      if (deleting) return force_remove(pod);
      if (pod_is_terminal(pod)) return;
      const json* node_object = found->second.get();
      if (!node_is_ready(*node_object)) {
        fail_unstarted(pod, node);
        return;
      }
      start_pod(shared);
      return;
    }
    PodRun& run = it->second;
    run.pod = shared;
    if (deleting && !run.terminating) begin_termination(run);
  }

  void fail_unstarted(const json& pod, const std::string& node) {
    json status = {{"status",
                    {{"phase", "Failed"},
                     {"reason", "NodeLost"},
                     {"message", "Node " + node + " is not ready"}}}};
    patch_status(pod["metadata"].value("namespace", ""), pod["metadata"].value("name", ""), status);
  }

  std::string allocate_ip() {
    const std::uint32_t n = next_ip++;
    return "127." + std::to_string((n >> 16) & 255) + "." + std::to_string((n >> 8) & 255) + "." +
           std::to_string(n & 255);
  }

  std::string executable_for(const std::string& image) const {
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

  void start_pod(const ObjectCache::ObjectPtr& shared) {
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

  // Environment of one container: a minimal base, then envFrom, then env (later wins).
  Expected<std::vector<std::string>> container_env(const PodRun& run, const json& spec,
                                                   std::map<std::string, std::string>& vars) {
    const char* path = std::getenv("PATH");
    vars["PATH"] = path ? path : "/usr/local/bin:/usr/bin:/bin";
    vars["HOME"] = run.dir;
    vars["HOSTNAME"] = run.name;
    for (const auto& [k, v] : options.extra_env) vars[k] = v;
    auto lookup = [&](const std::string& plural, const std::string& name) -> std::optional<json> {
      auto r = store.get(ResourceRef{"", "v1", plural, run.ns, name, ""});
      if (!r.ok()) return std::nullopt;
      return r.body;
    };
    auto data_of = [](const json& object, bool secret) {
      std::map<std::string, std::string> out;
      if (object.contains("data") && object["data"].is_object()) {
        for (const auto& [k, v] : object["data"].items()) {
          if (v.is_string())
            out[k] = secret ? depl::base64_decode(v.get<std::string>()).value_or("")
                            : v.get<std::string>();
        }
      }
      if (object.contains("stringData") && object["stringData"].is_object()) {
        for (const auto& [k, v] : object["stringData"].items()) {
          if (v.is_string()) out[k] = v.get<std::string>();
        }
      }
      return out;
    };
    if (spec.contains("envFrom") && spec["envFrom"].is_array()) {
      for (const auto& source : spec["envFrom"]) {
        const std::string prefix = source.value("prefix", "");
        for (const char* kind : {"configMapRef", "secretRef"}) {
          if (!source.contains(kind)) continue;
          const bool secret = std::string(kind) == "secretRef";
          const std::string name = source[kind].value("name", "");
          auto object = lookup(secret ? "secrets" : "configmaps", name);
          if (!object) {
            if (source[kind].value("optional", false)) continue;
            return error(std::string(secret ? "secret" : "configmap") + " \"" + name +
                         "\" not found");
          }
          for (const auto& [k, v] : data_of(*object, secret)) vars[prefix + k] = v;
        }
      }
    }
    if (spec.contains("env") && spec["env"].is_array()) {
      for (const auto& e : spec["env"]) {
        const std::string name = e.value("name", "");
        if (name.empty()) continue;
        if (e.contains("value")) {
          vars[name] = expand(e["value"].is_string() ? e["value"].get<std::string>() : "", vars);
          continue;
        }
        if (!e.contains("valueFrom")) {
          vars[name] = "";
          continue;
        }
        const json& from = e["valueFrom"];
        if (from.contains("fieldRef")) {
          const std::string field = from["fieldRef"].value("fieldPath", "");
          const json& meta = (*run.pod)["metadata"];
          if (field == "metadata.name") {
            vars[name] = run.name;
          } else if (field == "metadata.namespace") {
            vars[name] = run.ns;
          } else if (field == "metadata.uid") {
            vars[name] = run.uid;
          } else if (field == "status.podIP") {
            vars[name] = run.ip;
          } else if (field == "status.hostIP") {
            vars[name] = "127.0.0.1";
          } else if (field == "spec.nodeName") {
            vars[name] = run.node;
          } else if (field == "spec.serviceAccountName") {
            vars[name] = (*run.pod)["spec"].value("serviceAccountName", "default");
          } else if (field.rfind("metadata.labels['", 0) == 0 ||
                     field.rfind("metadata.annotations['", 0) == 0) {
            const bool labels = field[9] == 'l';
            const size_t start = field.find('\'') + 1;
            const std::string key = field.substr(start, field.rfind('\'') - start);
            const char* map_name = labels ? "labels" : "annotations";
            vars[name] = meta.contains(map_name) && meta[map_name].contains(key)
                             ? meta[map_name][key].get<std::string>()
                             : "";
          } else {
            return error("unsupported fieldRef " + field + " in env " + name);
          }
        } else if (from.contains("secretKeyRef") || from.contains("configMapKeyRef")) {
          const bool secret = from.contains("secretKeyRef");
          const json& ref = secret ? from["secretKeyRef"] : from["configMapKeyRef"];
          const std::string object_name = ref.value("name", "");
          const std::string key = ref.value("key", "");
          auto object = lookup(secret ? "secrets" : "configmaps", object_name);
          const auto data =
              object ? data_of(*object, secret) : std::map<std::string, std::string>();
          auto value = data.find(key);
          if (!object || value == data.end()) {
            if (ref.value("optional", false)) continue;
            if (!object) {
              return error(std::string(secret ? "secret" : "configmap") + " \"" + object_name +
                           "\" not found");
            }
            return error("couldn't find key " + key + " in " + (secret ? "Secret " : "ConfigMap ") +
                         run.ns + "/" + object_name);
          }
          vars[name] = value->second;
        } else {
          vars[name] = "";
        }
      }
    }
    std::vector<std::string> env;
    for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
    return env;
  }

  const json* container_spec(const PodRun& run, const std::string& name) const {
    const json& list = (*run.pod)["spec"]["containers"];
    for (const auto& c : list) {
      if (c.value("name", "") == name) return &c;
    }
    return nullptr;
  }

  void start_container(PodRun& run, size_t index) {
    ContainerRun& c = run.containers[index];
    if (run.terminating || !run.failed_reason.empty()) return;
    const std::uint64_t run_id = ++c.run_id;
    const std::string uid = run.uid;
    if (c.executable.empty()) {
      c.logs.push_back(
          {"", "simulated container " + c.name + " (image " + c.image + ") started\n"});
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
    auto env = container_env(run, spec ? *spec : json::object(), vars);
    if (!env) {
      // Like the real kubelet: wait and try again, the Secret or ConfigMap may appear.
      c.state = ContainerRun::State::Waiting;
      c.waiting_reason = "CreateContainerConfigError";
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
          if (s.is_string()) out.push_back(expand(s.get<std::string>(), vars));
        }
      }
      return out;
    };
    // The mapped executable stands in for the image's binary: it replaces command[0] (or the
    // image's entrypoint when there is no command), the rest of command and args follow.
    const auto command = strings("command");
    for (size_t i = 1; i < command.size(); ++i) process.argv.push_back(command[i]);
    for (const auto& a : strings("args")) process.argv.push_back(a);
    process.env = std::move(*env);
    process.log_path = log_path;
    process.working_dir = run.dir;
    if (spec && spec->contains("workingDir") && (*spec)["workingDir"].is_string()) {
      std::error_code ec;
      const std::string wd = (*spec)["workingDir"].get<std::string>();
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

  void on_exit(const std::string& uid, size_t index, std::uint64_t run_id, ProcessExit exit) {
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

  void after_exit(PodRun& run, size_t index) {
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

  // ---- termination --------------------------------------------------------------------------

  void cancel_timer(ContainerRun& c) {
    if (c.timer) timers.cancel(c.timer);
    c.timer = 0;
  }

  void stop_all(PodRun& run, int signal_number) {
    for (auto& c : run.containers) {
      cancel_timer(c);
      if (c.process) c.process->signal_group(signal_number);
    }
    if (run.kill_timer) timers.cancel(run.kill_timer);
    run.kill_timer = 0;
  }

  void begin_termination(PodRun& run) {
    run.terminating = true;
    std::int64_t grace = 30;
    const json& meta = (*run.pod)["metadata"];
    if (meta.contains("deletionGracePeriodSeconds") &&
        meta["deletionGracePeriodSeconds"].is_number_integer()) {
      grace = meta["deletionGracePeriodSeconds"].get<std::int64_t>();
    }
    spdlog::info("event=pod_terminating pod={}/{} grace_seconds={}", run.ns, run.name, grace);
    for (size_t i = 0; i < run.containers.size(); ++i) {
      ContainerRun& c = run.containers[i];
      cancel_timer(c);
      if (c.process) {
        c.process->signal_group(grace > 0 ? SIGTERM : SIGKILL);
      } else if (c.state != ContainerRun::State::Terminated) {
        // Simulated or waiting containers stop at once.
        c.state = ContainerRun::State::Terminated;
        c.exit_code = 0;
        c.terminated_reason = "Completed";
        c.finished_at = rfc3339_now();
        ++c.run_id;
      }
    }
    if (grace > 0) {
      const std::string uid = run.uid;
      run.kill_timer = timers.schedule_after(std::chrono::seconds(grace), [this, uid] {
        post([this, uid] {
          auto it = runs.find(uid);
          if (it == runs.end()) return;
          it->second.kill_timer = 0;
          spdlog::info("event=grace_period_expired pod={}/{} signal=SIGKILL", it->second.ns,
                       it->second.name);
          for (auto& c : it->second.containers) {
            if (c.process) c.process->signal_group(SIGKILL);
          }
        });
      });
    }
    write_status(run);
    finish_termination_if_done(run);
  }

  void finish_termination_if_done(PodRun& run) {
    for (const auto& c : run.containers) {
      if (c.process) return;
    }
    if (run.kill_timer) timers.cancel(run.kill_timer);
    run.kill_timer = 0;
    write_status(run);
    force_remove(*run.pod);
  }

  void force_remove(const json& pod) {
    DeleteOptions options;
    options.grace_period_seconds = 0;
    options.precondition_uid = pod["metadata"].value("uid", "");
    options.user_agent = "depl-devcluster/kubelet";
    auto r = store.remove(ResourceRef{"", "v1", "pods", pod["metadata"].value("namespace", ""),
                                      pod["metadata"].value("name", ""), ""},
                          options);
    if (!r.ok() && r.code != 404 && r.code != 409) {
      spdlog::warn("event=pod_remove_failed pod={}/{} code={}",
                   pod["metadata"].value("namespace", ""), pod["metadata"].value("name", ""),
                   r.code);
    }
  }

  // ---- status -------------------------------------------------------------------------------

  json container_status(const PodRun& run, const ContainerRun& c) const {
    json state;
    if (c.state == ContainerRun::State::Running) {
      state = {{"running", {{"startedAt", c.started_at}}}};
    } else if (c.state == ContainerRun::State::Waiting) {
      state = {{"waiting", {{"reason", c.waiting_reason}}}};
      if (!c.waiting_message.empty()) state["waiting"]["message"] = c.waiting_message;
    } else {
      state = {{"terminated",
                {{"exitCode", c.exit_code},
                 {"reason", c.terminated_reason},
                 {"startedAt", c.started_at},
                 {"finishedAt", c.finished_at},
                 {"containerID", "depl://" + run.uid + "/" + c.name}}}};
      if (!c.terminated_message.empty()) state["terminated"]["message"] = c.terminated_message;
    }
    json s = {
        {"name", c.name},
        {"image", c.image},
        {"imageID", c.executable.empty() ? "simulated://" + c.image : "file://" + c.executable},
        {"ready", c.state == ContainerRun::State::Running && !run.terminating},
        {"started", c.state == ContainerRun::State::Running},
        {"restartCount", c.restart_count},
        {"state", state},
        {"lastState", c.last_state}};
    if (c.state != ContainerRun::State::Waiting || c.run_id > 0) {
      s["containerID"] = "depl://" + run.uid + "/" + c.name;
    }
    return s;
  }

  std::string phase(const PodRun& run) const {
    if (!run.failed_reason.empty()) return "Failed";
    bool any_started = false;
    bool all_terminated = true;
    bool all_succeeded = true;
    for (const auto& c : run.containers) {
      if (c.state != ContainerRun::State::Terminated) all_terminated = false;
      if (c.state == ContainerRun::State::Running || c.restart_count > 0 ||
          c.state == ContainerRun::State::Terminated) {
        any_started = true;
      }
      if (c.state == ContainerRun::State::Terminated && c.exit_code != 0) all_succeeded = false;
    }
    if (all_terminated && !run.containers.empty()) return all_succeeded ? "Succeeded" : "Failed";
    return any_started ? "Running" : "Pending";
  }

  void write_status(PodRun& run) {
    // No status writes while terminating: the pod's end is its deletion (grace period 0) once
    // its processes are gone, as a real kubelet does after the grace period.
    if (run.terminating) return;
    const std::string ph = phase(run);
    bool all_running = !run.containers.empty();
    json statuses = json::array();
    for (const auto& c : run.containers) {
      statuses.push_back(container_status(run, c));
      if (c.state != ContainerRun::State::Running) all_running = false;
    }
    const bool ready = all_running && !run.terminating && run.failed_reason.empty();
    const std::string now = rfc3339_now();
    json scheduled_time = now;
    json conditions = json::array();
    auto old_condition = [&](const std::string& type) -> json {
      // A reference to the pod's own status (`cond ? (*run.pod)["status"] : json()` would be a
      // copy of it, at every call).
      static const json kNone;
      auto found = run.pod->find("status");
      const json& status = found != run.pod->end() ? *found : kNone;
      if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
        for (const auto& c : status["conditions"]) {
          if (c.value("type", "") == type) return c;
        }
      }
      return nullptr;
    };
    auto condition = [&](const std::string& type, bool value, const std::string& reason) {
      json c = {{"type", type}, {"status", value ? "True" : "False"}, {"lastProbeTime", nullptr}};
      const json old = old_condition(type);
      c["lastTransitionTime"] = old.is_object() && old.value("status", "") == c["status"] &&
                                        old.contains("lastTransitionTime")
                                    ? old["lastTransitionTime"]
                                    : json(now);
      if (!reason.empty()) c["reason"] = reason;
      conditions.push_back(c);
    };
    const bool completed = ph == "Succeeded" || ph == "Failed";
    condition("PodScheduled", true, "");
    condition("Initialized", true, "");
    condition("ContainersReady", ready,
              ready ? "" : (completed ? "PodCompleted" : "ContainersNotReady"));
    condition("Ready", ready, ready ? "" : (completed ? "PodCompleted" : "ContainersNotReady"));
    json status = {{"phase", ph},
                   {"conditions", conditions},
                   {"hostIP", "127.0.0.1"},
                   {"hostIPs", json::array({{{"ip", "127.0.0.1"}}})},
                   {"podIP", run.ip},
                   {"podIPs", json::array({{{"ip", run.ip}}})},
                   {"startTime", run.start_time},
                   {"qosClass", "BestEffort"},
                   {"containerStatuses", statuses}};
    if (!run.failed_reason.empty()) {
      status["reason"] = run.failed_reason;
      status["message"] = run.failed_message;
    }
    // Timestamps of unchanged conditions are kept above, so equal means nothing happened.
    if (status == run.last_status) return;
    run.last_status = status;
    patch_status(run.ns, run.name, json{{"status", status}});
  }

  void patch_status(const std::string& ns, const std::string& name, const json& body) {
    WriteOptions options;
    options.field_manager = "depl-kubelet";
    options.user_agent = "depl-devcluster/kubelet";
    options.shared_answer = true;  // only the code is read
    auto r = store.patch(ResourceRef{"", "v1", "pods", ns, name, "status"}, PatchType::Merge,
                         dump_json(body), options);
    if (!r.ok() && r.code != 404) {
      spdlog::warn("event=pod_status_failed pod={}/{} code={} message=\"{}\"", ns, name, r.code,
                   r.body.is_object() ? r.body.value("message", "") : "");
    }
  }
};

Kubelet::Kubelet(ApiStore& store, KubeletOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {
  impl_->thread = std::jthread([impl = impl_.get()](std::stop_token stop) { impl->run(stop); });
}

Kubelet::~Kubelet() {
  impl_->thread.request_stop();
  impl_->signal.notify();
  impl_->thread.join();
  std::lock_guard lock(impl_->mutex);
  for (auto& [uid, run] : impl_->runs) {
    for (auto& c : run.containers) c.process.reset();  // SIGKILL and reap
  }
}

int Kubelet::container_pid(const std::string& ns, const std::string& pod,
                           const std::string& container) {
  std::lock_guard lock(impl_->mutex);
  for (const auto& [uid, run] : impl_->runs) {
    if (run.ns != ns || run.name != pod) continue;
    for (const auto& c : run.containers) {
      if (c.name == container && c.process && !c.process->exited()) return c.process->pid();
    }
  }
  return 0;
}

Expected<void> Kubelet::kill_container(const std::string& ns, const std::string& pod,
                                       const std::string& container) {
  std::lock_guard lock(impl_->mutex);
  for (const auto& [uid, run] : impl_->runs) {
    if (run.ns != ns || run.name != pod || run.containers.empty()) continue;
    for (const auto& c : run.containers) {
      if (!container.empty() ? c.name != container : &c != &run.containers.front()) continue;
      if (!c.process || c.process->exited()) break;
      spdlog::info("event=container_killed pod={}/{} container={} pid={} signal=SIGKILL", ns, pod,
                   c.name, c.process->pid());
      c.process->signal_group(SIGKILL);
      return {};
    }
  }
  return error("no running container process " + (container.empty() ? "" : container + " ") +
               "in pod " + ns + "/" + pod);
}

namespace {

ApiResult log_error(const std::string& message) {
  return status_error(400, "BadRequest", message);
}

std::string apply_limits(std::string text, const PodLogQuery& query) {
  if (query.tail_lines && *query.tail_lines >= 0) {
    long lines = 0;
    size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') --pos;
    while (pos > 0) {
      if (text[pos - 1] == '\n' && ++lines == *query.tail_lines) break;
      --pos;
    }
    if (*query.tail_lines == 0) pos = text.size();
    text = text.substr(pos);
  }
  if (query.limit_bytes && *query.limit_bytes >= 0 &&
      static_cast<size_t>(*query.limit_bytes) < text.size()) {
    text.resize(static_cast<size_t>(*query.limit_bytes));
  }
  return text;
}

}  // namespace

Expected<std::string, ApiResult> Kubelet::read_log(const json& pod, const PodLogQuery& query) {
  const std::string uid = pod["metadata"].value("uid", "");
  const std::string name = pod["metadata"].value("name", "");
  std::vector<std::string> names;
  for (const auto& c : container_list(pod)) names.push_back(c.value("name", ""));
  std::string container = query.container;
  if (container.empty()) {
    if (names.size() != 1) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
      return unexpected(log_error("a container name must be specified for pod " + name +
                                  ", choose one of: [" + list + "]"));
    }
    container = names[0];
  }
  if (std::find(names.begin(), names.end(), container) == names.end()) {
    return unexpected(log_error("container " + container + " is not valid for pod " + name));
  }
  Impl::ContainerRun::Log log;
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->runs.find(uid);
    const Impl::ContainerRun* run = nullptr;
    if (it != impl_->runs.end()) {
      for (const auto& c : it->second.containers) {
        if (c.name == container) run = &c;
      }
    }
    if (!run || run->logs.empty()) {
      return unexpected(log_error("container \"" + container + "\" in pod \"" + name +
                                  "\" is waiting to start: ContainerCreating"));
    }
    if (query.previous) {
      if (run->logs.size() < 2) {
        return unexpected(log_error("previous terminated container \"" + container +
                                    "\" in pod \"" + name + "\" not found"));
      }
      log = run->logs[run->logs.size() - 2];
    } else {
      log = run->logs.back();
    }
  }
  return apply_limits(log.path.empty() ? log.text : read_file(log.path), query);
}

void Kubelet::follow_log(const json& pod, const PodLogQuery& query,
                         std::shared_ptr<ChunkWriter> out) {
  auto first = read_log(pod, query);
  if (!first) {
    out->finish();
    return;
  }
  out->write(*first);
  // Poll the file for growth until the container's current run ends.
  struct Follower {
    std::string uid, container, path;
    std::uint64_t run_id = 0;
    std::size_t offset = 0;
  };
  auto follower = std::make_shared<Follower>();
  follower->uid = pod["metadata"].value("uid", "");
  follower->container = query.container;
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->runs.find(follower->uid);
    if (it == impl_->runs.end()) {
      out->finish();
      return;
    }
    for (const auto& c : it->second.containers) {
      if (follower->container.empty() || c.name == follower->container) {
        follower->container = c.name;
        follower->path = c.logs.empty() ? "" : c.logs.back().path;
        follower->run_id = c.run_id;
      }
    }
  }
  {
    std::error_code ec;
    follower->offset = static_cast<std::size_t>(fs::file_size(follower->path, ec));
    if (ec) follower->offset = 0;
  }
  auto tick = std::make_shared<std::function<void()>>();
  Impl* impl = impl_.get();
  *tick = [impl, follower, out, weak = std::weak_ptr<std::function<void()>>(tick)] {
    if (out->closed()) return;
    bool running = false;
    {
      std::lock_guard lock(impl->mutex);
      auto it = impl->runs.find(follower->uid);
      if (it != impl->runs.end()) {
        for (const auto& c : it->second.containers) {
          if (c.name == follower->container) {
            running = c.run_id == follower->run_id && c.state == Impl::ContainerRun::State::Running;
          }
        }
      }
    }
    if (!follower->path.empty()) {  // a simulated container's log does not grow
      std::ifstream in(follower->path, std::ios::binary);
      in.seekg(static_cast<std::streamoff>(follower->offset));
      std::string more((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      follower->offset += more.size();
      if (!more.empty()) out->write(std::move(more));
    }
    if (!running) {
      out->finish();
      return;
    }
    if (auto again = weak.lock())
      impl->timers.schedule_after(std::chrono::milliseconds(100), *again);
  };
  // The writer keeps the tick alive for as long as the stream is open.
  out->on_close([tick] {});
  impl->timers.schedule_after(std::chrono::milliseconds(100), *tick);
}

}  // namespace depl::devcluster
