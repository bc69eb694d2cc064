#include "depl/cli/pod_run_executor.hpp"

#include <deque>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/kube/resource.hpp"

namespace depl::cli {

using nlohmann::json;

namespace {

constexpr const char* kContainer = "worker";
constexpr std::size_t kLogTailLines = 15;

// pod[key] when it is an object or array (as `empty` says), else `empty`: what the API server
// leaves out or sends as null must not throw.
json member(const json& object, const char* key, const json& empty = json::object()) {
  if (!object.is_object()) return empty;
  const auto it = object.find(key);
  if (it == object.end() || it->type() != empty.type()) return empty;
  return *it;
}

// A container that waits for one of these will not start without someone fixing the pod.
bool hopeless_waiting_reason(const std::string& reason) {
  static const std::set<std::string> reasons = {"ErrImagePull",         "ImagePullBackOff",
                                                "InvalidImageName",     "ErrImageNeverPull",
                                                "CreateContainerError", "RunContainerError"};
  return reasons.contains(reason);
}

std::string log_tail(const std::string& log) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < log.size()) {
    auto end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    if (end > begin) lines.push_back(log.substr(begin, end - begin));
    begin = end + 1;
  }
  if (lines.empty()) return "  (the log is empty)";
  std::string out;
  const std::size_t first = lines.size() > kLogTailLines ? lines.size() - kLogTailLines : 0;
  for (std::size_t i = first; i < lines.size(); ++i)
    out += (out.empty() ? "  " : "\n  ") + lines[i];
  return out;
}

// "exit code 1 (Error)" from the worker container's terminated state, "" when absent.
std::string termination(const json& pod) {
  const json status = member(pod, "status");
  for (const json& c : member(status, "containerStatuses", json::array())) {
    const json t = member(member(c, "state"), "terminated");
    if (t.empty()) continue;
    const auto code = t.find("exitCode");
    std::string out = fmt::format(
        "exit code {}", code != t.end() && code->is_number_integer() ? code->get<int>() : -1);
    if (const std::string reason = json_string(t, "reason"); !reason.empty())
      out += " (" + reason + ")";
    return out;
  }
  const std::string reason = json_string(status, "reason");
  const std::string message = json_string(status, "message");
  return message.empty() ? reason : reason + ": " + message;
}

std::string checkpoint_dir(const ProfileRun& run, const PodRunOptions& o) {
  if (!o.checkpoint_claim.empty()) {
    return fmt::format("{}/{}/{}", kProfileCheckpointMount, o.session, run.name);
  }
  return o.checkpoint_host_dir + "/" + run.name;
}

struct Step {
  std::size_t run = 0;
  std::size_t step = 0;
};

// One execute() call: the pods in flight, what they produced, and the cleanup.
class PodBatch {
 public:
  PodBatch(kube::Client& client, const PodRunOptions& options, const std::vector<ProfileRun>& runs)
      : client_(client), o_(options), runs_(runs), outputs_(runs.size()) {}
  ~PodBatch() { delete_all(); }

  Expected<std::vector<RunOutput>> run(const ProfileRunExecutor::RunFinished& finished) {
    for (std::size_t i = 0; i < runs_.size(); ++i) pending_.push_back({i, 0});
    while (!pending_.empty() || !in_flight_.empty()) {
      while (static_cast<int>(in_flight_.size()) < o_.parallel && !pending_.empty()) {
        const Step next = pending_.front();
        pending_.pop_front();
        if (auto ok = create(next); !ok) return unexpected(ok.error());
      }
      if (auto ok = wait_a_little(); !ok) return unexpected(ok.error());
      auto pods =
          client_.list(kube::resources::pods(), o_.namespace_,
                       {.label_selector = fmt::format("{}={}", kProfileSessionLabel, o_.session)});
      if (!pods) {
        return error(fmt::format("listing the profiling pods in namespace \"{}\": {}",
                                 o_.namespace_, pods.error().to_string()));
      }
      std::map<std::string, json> by_name;
      for (json& pod : (*pods)["items"]) {
        std::string pod_name = json_string(member(pod, "metadata"), "name");
        by_name.emplace(std::move(pod_name), std::move(pod));
      }
      for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        const std::string name = it->first;
        const Step step = it->second;
        auto found = by_name.find(name);
        if (found == by_name.end()) {
          return error(fmt::format("{}: pod {} disappeared before it finished (deleted?)",
                                   runs_[step.run].label, name));
        }
        auto done = check(name, step, found->second);
        if (!done) return unexpected(done.error());
        if (!*done) {
          ++it;
          continue;
        }
        it = in_flight_.erase(it);
        remove(name);
        if (step.step + 1 < runs_[step.run].steps.size()) {
          // The run's next step goes first: its checkpoint is waiting.
          pending_.push_front({step.run, step.step + 1});
        } else if (finished) {
          finished(step.run);
        }
      }
    }
    return std::move(outputs_);
  }

 private:
  Expected<void> create(const Step& s) {
    const ProfileRun& run = runs_[s.run];
    const json pod = profile_pod(run, s.step, o_);
    const std::string name = profile_pod_name(run, s.step);
    auto created = client_.create(kube::resources::pods(), o_.namespace_, pod);
    if (!created) {
      if (created.error().is_already_exists()) {
        return error(fmt::format(
            "{}: pod {} already exists in namespace \"{}\": another kubectl-depl profile is "
            "running there, or an interrupted one left it (kubectl delete pods -n {} -l {}={})",
            run.label, name, o_.namespace_, o_.namespace_, kProfilePodNameLabel,
            kProfilePodNameValue));
      }
      return error(fmt::format("{}: creating pod {} in namespace \"{}\": {}", run.label, name,
                               o_.namespace_, created.error().to_string()));
    }
    created_.insert(name);
    in_flight_.emplace(name, s);
    created_at_[name] = std::chrono::steady_clock::now();
    return {};
  }

  // True when the pod succeeded and its output is recorded; false while it runs.
  Expected<bool> check(const std::string& name, const Step& s, const json& pod) {
    const ProfileRun& run = runs_[s.run];
    const std::string what = fmt::format("{}: {}", run.label, run.steps[s.step].what);
    const json status = member(pod, "status");
    const std::string phase = json_string(status, "phase");
    if (phase == "Failed") {
      auto log = read_log(name);
      return error(fmt::format(
          "{}: pod {} failed with {}; the end of its log:\n{}", what, name, termination(pod),
          log ? log_tail(*log) : "  (cannot read it: " + log.error().message + ")"));
    }
    if (phase == "Succeeded") {
      auto log = read_log(name);
      if (!log) return error(fmt::format("{}: pod {}: {}", what, name, log.error().message));
      auto lines = parse_epoch_lines(*log);
      if (!lines) return error(fmt::format("{}: pod {}: {}", what, name, lines.error().message));
      if (lines->empty()) {  // every step reports at least one epoch or evaluation
        return error(
            fmt::format("{}: pod {} succeeded without printing an epoch line: does --image {} run "
                        "depl-reference-worker as its entrypoint? The end of its log:\n{}",
                        what, name, o_.image, log_tail(*log)));
      }
      outputs_[s.run].push_back(std::move(*lines));
      return true;
    }
    for (const json& c : member(status, "containerStatuses", json::array())) {
      const json waiting = member(member(c, "state"), "waiting");
      const std::string reason = json_string(waiting, "reason");
      if (hopeless_waiting_reason(reason)) {
        return error(fmt::format("{}: pod {} cannot start its container: {}: {} (--image {})", what,
                                 name, reason, json_string(waiting, "message"), o_.image));
      }
    }
    const auto since = created_at_.find(name);
    if ((phase.empty() || phase == "Pending") && o_.start_timeout.count() > 0 &&
        since != created_at_.end() &&
        std::chrono::steady_clock::now() - since->second >= o_.start_timeout) {
      std::string why = "not scheduled yet";
      for (const json& c : member(status, "conditions", json::array())) {
        if (json_string(c, "type") == "PodScheduled" && json_string(c, "status") == "False") {
          why = fmt::format("{}: {}", json_string(c, "reason"), json_string(c, "message"));
        }
      }
      if (!json_string(member(pod, "spec"), "nodeName").empty() && why == "not scheduled yet") {
        why = "scheduled, its container not started";
      }
      return error(
          fmt::format("{}: pod {} is still Pending after {} s ({}); see kubectl describe "
                      "pod -n {} {} (--pod-start-timeout)",
                      what, name, o_.start_timeout.count(), why, o_.namespace_, name));
    }
    return false;
  }

  Expected<std::string> read_log(const std::string& name) {
    kube::HttpRequest request;
    request.method = "GET";
    request.path = fmt::format("/api/v1/namespaces/{}/pods/{}/log", o_.namespace_, name);
    request.query = {{"container", kContainer}};
    auto response = client_.send(std::move(request));
    if (!response) return error("reading its log: " + response.error().to_string());
    if (response->status != 200) {
      return error(
          fmt::format("reading its log: {}",
                      kube::ApiError::from_response(response->status, response->body).to_string()));
    }
    return std::move(response->body);
  }

  void remove(const std::string& name) {
    kube::DeleteOptions options;
    options.grace_period_seconds = 0;  // the pod has ended, or we are giving up on it
    auto removed = client_.remove(kube::resources::pods(), o_.namespace_, name, options);
    if (removed || removed.error().is_not_found()) created_.erase(name);
  }

  void delete_all() {
    const std::set<std::string> names = created_;
    for (const std::string& name : names) remove(name);
  }

  Expected<void> wait_a_little() {
    const auto until = std::chrono::steady_clock::now() + o_.poll_interval;
    while (std::chrono::steady_clock::now() < until) {
      if (o_.cancelled != nullptr && o_.cancelled->load()) {
        return error("interrupted: deleting the profiling pods");
      }
      std::this_thread::sleep_for(
          std::min<std::chrono::milliseconds>(o_.poll_interval, std::chrono::milliseconds(50)));
    }
    return {};
  }

  kube::Client& client_;
  const PodRunOptions& o_;
  const std::vector<ProfileRun>& runs_;
  std::vector<RunOutput> outputs_;
  std::deque<Step> pending_;
  std::map<std::string, Step> in_flight_;
  std::set<std::string> created_;  // not yet deleted
  std::map<std::string, std::chrono::steady_clock::time_point> created_at_;
};

}  // namespace

std::string profile_pod_name(const ProfileRun& run, std::size_t step) {
  std::string name = std::string(kProfilePodNameValue) + "-" + run.name;
  if (run.steps.size() > 1) name += "-" + std::to_string(step + 1);
  return name;
}

json profile_pod(const ProfileRun& run, std::size_t step, const PodRunOptions& o) {
  const WorkerStep& s = run.steps.at(step);
  json container = {{"name", kContainer},
                    {"image", o.image},
                    {"args", worker_arguments(run, step, checkpoint_dir(run, o))}};
  json spec = {{"restartPolicy", "Never"}, {"containers", json::array()}};
  if (s.checkpoint != WorkerStep::Checkpoint::None) {
    const bool claim = !o.checkpoint_claim.empty();
    const std::string mount = claim ? kProfileCheckpointMount : o.checkpoint_host_dir;
    container["volumeMounts"] = json::array({{{"name", "checkpoints"}, {"mountPath", mount}}});
    json volume = {{"name", "checkpoints"}};
    if (claim) {
      volume["persistentVolumeClaim"] = {{"claimName", o.checkpoint_claim}};
    } else {
      volume["hostPath"] = {{"path", o.checkpoint_host_dir}, {"type", "DirectoryOrCreate"}};
    }
    spec["volumes"] = json::array({volume});
  }
  spec["containers"].push_back(std::move(container));
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", profile_pod_name(run, step)},
            {"namespace", o.namespace_},
            {"labels",
             {{kProfilePodNameLabel, kProfilePodNameValue},
              {kProfileSessionLabel, o.session},
              {kProfileRunLabel, run.name}}}}},
          {"spec", std::move(spec)}};
}

PodRunExecutor::PodRunExecutor(kube::Client client, PodRunOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

Expected<std::vector<RunOutput>> PodRunExecutor::execute(const std::vector<ProfileRun>& runs,
                                                         const RunFinished& finished) {
  if (options_.parallel < 1) return error("--parallel: must be at least 1");
  if (options_.session.empty()) return error("the profiling session has no name");
  for (const ProfileRun& run : runs) {
    if (run.uses_checkpoint() && options_.checkpoint_claim.empty() &&
        options_.checkpoint_host_dir.empty()) {
      return error(fmt::format("{}: a switch run needs --checkpoint-volume (or a host directory)",
                               run.label));
    }
  }
  PodBatch batch(client_, options_, runs);
  return batch.run(finished);
}

}  // namespace depl::cli
