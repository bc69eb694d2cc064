#include "depl/kube/in_cluster.hpp"

#include <cstdlib>

#include "depl/kube/token_file_credentials.hpp"
#include "file_util.hpp"

namespace depl::kube {

Expected<ConnectionConfig> in_cluster_config(const InClusterOptions& options) {
  auto getenv =
      options.getenv ? options.getenv : [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  auto port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return error(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
        "must be set");
  }
  ConnectionConfig out;
  const bool ipv6 = host->find(':') != std::string::npos;
  out.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  const std::string dir = options.service_account_dir;
  auto ca = read_file(dir + "/ca.crt");
  if (!ca) return error("in-cluster CA: " + ca.error().message);
  out.certificate_authority_pem = std::move(*ca);
  auto clock = options.clock ? options.clock : std::make_shared<SystemClock>();
  auto credentials = std::make_shared<TokenFileCredentials>(dir + "/token", clock);
  if (auto first = credentials->credentials(); !first) {
    return error("in-cluster token: " + first.error().message);
  }
  out.credentials = credentials;
  if (auto ns = getenv("POD_NAMESPACE"); ns && !ns->empty()) {
    out.default_namespace = *ns;
  } else if (auto file = read_file(dir + "/namespace"); file) {
    std::string text = *file;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    out.default_namespace = text.empty() ? "default" : text;
  } else {
    out.default_namespace = "default";
  }
  return out;
}

}  // namespace depl::kube
