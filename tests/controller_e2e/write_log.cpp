#include "write_log.hpp"

#include <fmt/format.h>

namespace depl::e2e {

std::string identity_of(const std::string& user_agent) {
  if (user_agent.rfind("depl-controller/", 0) != 0) return "";
  const std::string marker = "(identity=";
  const auto start = user_agent.find(marker);
  if (start == std::string::npos) return "";
  const auto end = user_agent.find(')', start);
  if (end == std::string::npos) return "";
  return user_agent.substr(start + marker.size(), end - start - marker.size());
}

WriteLog::WriteLog(devcluster::ApiStore& store) : store_(store) {
  store_.set_write_recorder([this](const devcluster::WriteRecord& r) {
    {
      std::lock_guard lock(mutex_);
      writes_.push_back({r, identity_of(r.user_agent)});
    }
    changed_.notify_all();
  });
}

WriteLog::~WriteLog() {
  store_.set_write_recorder(nullptr);
}

std::vector<Write> WriteLog::writes() const {
  std::lock_guard lock(mutex_);
  return writes_;
}

std::size_t WriteLog::count(const std::function<bool(const Write&)>& match) const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& w : writes_) n += match(w) ? 1 : 0;
  return n;
}

bool WriteLog::wait_for(const std::function<bool(const Write&)>& match, std::size_t n,
                        std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    std::size_t seen = 0;
    for (const auto& w : writes_) seen += match(w) ? 1 : 0;
    return seen >= n;
  });
}

std::string describe(const Write& w, std::chrono::steady_clock::time_point origin) {
  const auto& r = w.record;
  return fmt::format("{} {}{} {}/{} by {} at +{} ms (rv {})", r.verb, r.plural,
                     r.subresource.empty() ? "" : "/" + r.subresource, r.ns, r.name,
                     w.identity.empty() ? r.user_agent : w.identity,
                     std::chrono::duration_cast<std::chrono::milliseconds>(r.time - origin).count(),
                     r.resource_version);
}

}  // namespace depl::e2e
