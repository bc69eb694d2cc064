// The end of pods: lost nodes, deletion with SIGTERM then SIGKILL after the grace period, and
// the final delete with grace period 0.
#include "sim/kubelet_impl.hpp"

#include <spdlog/spdlog.h>

#include "sim/time_format.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

void Kubelet::Impl::node_lost(PodRun& run) {
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

void Kubelet::Impl::cancel_timer(ContainerRun& c) {
  if (c.timer) timers.cancel(c.timer);
  c.timer = 0;
}

void Kubelet::Impl::stop_all(PodRun& run, int signal_number) {
  for (auto& c : run.containers) {
    cancel_timer(c);
    if (c.process) c.process->signal_group(signal_number);
  }
  if (run.kill_timer) timers.cancel(run.kill_timer);
  run.kill_timer = 0;
}

void Kubelet::Impl::begin_termination(PodRun& run) {
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

void Kubelet::Impl::finish_termination_if_done(PodRun& run) {
  for (const auto& c : run.containers) {
    if (c.process) return;
  }
  if (run.kill_timer) timers.cancel(run.kill_timer);
  run.kill_timer = 0;
  write_status(run);
  force_remove(*run.pod);
}

void Kubelet::Impl::force_remove(const json& pod) {
  DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = pod["metadata"].value("uid", "");
  options.user_agent = "depl-devcluster/kubelet";
  auto r = store.remove(ResourceRef{"", "v1", "pods", pod["metadata"].value("namespace", ""),
                                    pod["metadata"].value("name", ""), ""},
                        options);
  if (!r.ok() && r.code != 404 && r.code != 409) {
    spdlog::warn("event=pod_remove_failed pod={}/{} code={}",
                 pod["metadata"].value("namespace", ""), pod["metadata"].value("name", ""), r.code);
  }
}

}  // namespace depl::devcluster
