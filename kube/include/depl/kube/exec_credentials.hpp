// Credentials from an exec plugin (client.authentication.k8s.io v1 / v1beta1), as kubectl runs
// them: ExecCredential input in KUBERNETES_EXEC_INFO (spec.interactive, and spec.cluster when
// provideClusterInfo), a token or a client certificate/key on stdout, cached until
// status.expirationTimestamp or a 401, whichever comes first.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/kube/credentials.hpp"
#include "depl/kube/kubeconfig.hpp"

namespace depl::kube {

class ExecCredentials : public CredentialProvider {
 public:
  // `cluster` is sent to the plugin when exec.provide_cluster_info; `fallback_identity` (from
  // the kubeconfig user, may be null) is used when the plugin returns only a token.
  ExecCredentials(ExecConfig exec, KubeconfigCluster cluster, std::string user_name,
                  std::shared_ptr<Clock> clock, bool stdin_is_terminal,
                  std::shared_ptr<const TlsClientIdentity> fallback_identity = nullptr);

  Expected<Credentials, ApiError> credentials() override;
  void on_unauthorized() override;

  // The ExecCredential JSON put into KUBERNETES_EXEC_INFO (exposed for tests).
  nlohmann::json exec_info() const;
  // How many times the plugin ran (tests check caching).
  int runs() const;

 private:
  Expected<Credentials, ApiError> run_plugin();

  ExecConfig exec_{};
  KubeconfigCluster cluster_{};
  std::string user_name_{};
  std::shared_ptr<Clock> clock_{};
  bool interactive_{};
  std::shared_ptr<const TlsClientIdentity> fallback_identity_{};
  mutable std::mutex mutex_{};
  std::optional<Credentials> cached_{};
  std::optional<Clock::WallTimePoint> expires_at_{};
  int runs_ = 0;
};

}  // namespace depl::kube
