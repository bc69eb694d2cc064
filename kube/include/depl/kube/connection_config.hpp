// Everything needed to talk to one API server, however it was found (kubeconfig or in-cluster):
// the URL, how to trust it, how to reach it, and who we are. The transport and the client are
// built from this value.
#pragma once

#include <memory>
#include <string>

#include "depl/kube/credentials.hpp"

namespace depl::kube {

struct ConnectionConfig {
  std::string server{};  // "https://host:port[/prefix]" or "http://..." (dev cluster)
  std::string certificate_authority_pem{};  // empty: the system trust store
  bool insecure_skip_tls_verify = false;    // only when the kubeconfig asks for it
  std::string tls_server_name{};            // SNI and verified name when not the server host
  std::string proxy_url{};                  // "http://proxy:3128": tunnel with HTTP CONNECT
  std::string default_namespace = "default";
  std::shared_ptr<CredentialProvider> credentials{};  // may be null (no authentication)
  std::string context{};  // the kubeconfig context used, "" for in-cluster
};

}  // namespace depl::kube
