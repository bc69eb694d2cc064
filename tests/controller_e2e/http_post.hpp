// A bare HTTP/1.1 request over a loopback socket: POSTs for sending the progress endpoint what no
// well-behaved worker would (wrong tokens, oversized and malformed bodies), GETs for reading the
// controller's metrics.
#pragma once

#include <string>

namespace depl::e2e {

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection failed or closed early)
  std::string body;
};

// POSTs `body` to `url` ("http://127.0.0.1:PORT/path") with "Authorization: Bearer <token>"
// unless `token` is empty.
HttpAnswer http_post(const std::string& url, const std::string& token, const std::string& body);
// GETs `url` (a body sent with Connection: close, read to the end).
HttpAnswer http_get(const std::string& url);

}  // namespace depl::e2e
