// In-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
// service-account CA and token (re-read every minute), and the namespace from $POD_NAMESPACE,
// else the service-account namespace file, else "default".
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/kube/connection_config.hpp"

namespace depl::kube {

struct InClusterOptions {
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // Environment lookup; null = std::getenv.
  std::function<std::optional<std::string>(std::string_view)> getenv;
  std::shared_ptr<Clock> clock{};  // null = system
};

Expected<ConnectionConfig> in_cluster_config(const InClusterOptions& options = {});

}  // namespace depl::kube
