// Container logs for the API: the captured output of a container's current or previous run,
// with tailLines and limitBytes, and followed logs that poll the file until the run ends.
#include "sim/kubelet_impl.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace depl::devcluster {

using json = nlohmann::json;

namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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
  // A container that has printed nothing yet has nothing to send (an empty write sends nothing).
  if (!first->empty()) out->write(*first);
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
