#include "http_post.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace depl::e2e {

namespace {

HttpAnswer http_request(const std::string& method, const std::string& url, const std::string& token,
                        const std::string& body) {
  const std::string prefix = "http://";
  if (url.rfind(prefix, 0) != 0) return {};
  const std::string rest = url.substr(prefix.size());
  const auto slash = rest.find('/');
  const std::string host_port = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return {};
  const std::string host = host_port.substr(0, colon);
  const int port = std::stoi(host_port.substr(colon + 1));

  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &address.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return {};
  }
  std::string request = fmt::format(
      "{} {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\nConnection: close\r\n",
      method, path, host_port, body.size());
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n" + body;
  // The server may answer (413) and close before reading the whole body: a failed send is fine.
  std::size_t sent = 0;
  while (sent < request.size()) {
    const auto n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  char buffer[4096];
  while (true) {
    const auto n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);

  HttpAnswer answer;
  // "HTTP/1.1 401 Unauthorized\r\n...\r\n\r\nbody"
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return answer;
  answer.status = std::stoi(response.substr(9, 3));
  const auto end_of_head = response.find("\r\n\r\n");
  if (end_of_head != std::string::npos) answer.body = response.substr(end_of_head + 4);
  return answer;
}

}  // namespace

HttpAnswer http_post(const std::string& url, const std::string& token, const std::string& body) {
  return http_request("POST", url, token, body);
}

HttpAnswer http_get(const std::string& url) {
  return http_request("GET", url, "", "");
}

}  // namespace depl::e2e
