// A tiny blocking HTTP/1.1 client for the dev cluster's tests (plain HTTP on 127.0.0.1): one
// request per call, and a streaming reader for watches and followed logs.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace depl::devcluster::testing {

struct TestResponse {
  int status = 0;  // 0: could not connect or read
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

TestResponse http_request(std::uint16_t port, const std::string& method, const std::string& target,
                          const std::string& body = "", const std::string& content_type = "",
                          const std::map<std::string, std::string>& headers = {});

// An open streaming GET; lines of the chunked body are read one by one.
class TestStream {
 public:
  TestStream(std::uint16_t port, const std::string& target,
             const std::map<std::string, std::string>& headers = {});
  ~TestStream();
  int status() const;
  // The next newline-terminated line, or nullopt at the end of the stream or after `timeout`.
  std::optional<std::string> next_line(std::chrono::milliseconds timeout);
  // True once the server ended the response.
  bool ended() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::devcluster::testing
