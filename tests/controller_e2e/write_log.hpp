// Every write the dev cluster's store applies, with who made it: the high-availability and
// restart scenarios ask "which replica wrote what, and when". A depl-controller names its
// identity in its User-Agent ("depl-controller/0.1 (identity=<id>)"); the time is the store's,
// taken under its lock when it applied the write, so it orders writes like the store did.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "depl/devcluster/api_store.hpp"

namespace depl::e2e {

struct Write {
  devcluster::WriteRecord record;
  std::string identity;  // the controller replica's identity, "" for anyone else
  bool is_lease() const { return record.plural == "leases"; }
};

// The identity in a depl-controller User-Agent, or "".
std::string identity_of(const std::string& user_agent);

class WriteLog {
 public:
  // Installs itself as the store's write recorder (the store has one) until destroyed.
  explicit WriteLog(devcluster::ApiStore& store);
  ~WriteLog();
  WriteLog(const WriteLog&) = delete;
  WriteLog& operator=(const WriteLog&) = delete;

  std::vector<Write> writes() const;
  // Writes so far for which `match` is true.
  std::size_t count(const std::function<bool(const Write&)>& match) const;
  // Waits until `count(match) >= n` or `timeout`; returns whether it got there.
  bool wait_for(const std::function<bool(const Write&)>& match, std::size_t n,
                std::chrono::milliseconds timeout) const;

 private:
  devcluster::ApiStore& store_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<Write> writes_;
};

// "verb plural[/subresource] ns/name by <identity or user agent> at +<ms>" for failure messages.
std::string describe(const Write& w, std::chrono::steady_clock::time_point origin);

}  // namespace depl::e2e
