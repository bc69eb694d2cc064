// A minimal HTTP CONNECT proxy on 127.0.0.1 for transport tests: accepts CONNECT host:port,
// answers 200 and relays bytes both ways. Records the requested targets.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace depl::kube::test {

class ConnectProxy {
 public:
  ConnectProxy();
  ~ConnectProxy();
  std::string url() const;  // http://127.0.0.1:<port>
  std::vector<std::string> connect_targets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::kube::test
