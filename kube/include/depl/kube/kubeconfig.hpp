// kubeconfig loading with kubectl's rules: `--kubeconfig` loads exactly one file; otherwise the
// KUBECONFIG path list is merged with the first file to set a value or name an entry winning
// (whole entries, no per-field merge); otherwise ~/.kube/config. Relative paths resolve against
// the file that named them. Every error names the file and the field.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/kube/connection_config.hpp"

namespace depl::kube {

struct KubeconfigCluster {
  std::string server{};
  std::string certificate_authority{};       // absolute path, or ""
  std::string certificate_authority_data{};  // decoded PEM, or ""
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name{};
  std::string proxy_url{};
  bool disable_compression = false;
  // extensions[name == "client.authentication.k8s.io/exec"].extension, passed to exec plugins.
  nlohmann::json exec_extension{};
  std::string source_file{};  // the kubeconfig file that defined this entry
};

struct ExecConfig {
  std::string command{};  // absolute when it contained a '/', else looked up on PATH
  std::vector<std::string> args{};
  std::vector<std::pair<std::string, std::string>> env{};
  std::string api_version{};  // client.authentication.k8s.io/v1 or /v1beta1
  std::string install_hint{};
  bool provide_cluster_info = false;
  std::string interactive_mode{};  // "Never", "IfAvailable", "Always"
};

struct KubeconfigUser {
  std::string token{};
  std::string token_file{};               // absolute path
  std::string client_certificate{};       // absolute path
  std::string client_certificate_data{};  // decoded PEM
  std::string client_key{};
  std::string client_key_data{};
  std::string username{};
  std::string password{};
  std::optional<ExecConfig> exec{};
  std::string source_file{};
};

struct KubeconfigContext {
  std::string cluster{};
  std::string user{};
  std::string namespace_{};
  std::string source_file{};
};

struct Kubeconfig {
  std::string current_context{};
  std::map<std::string, KubeconfigCluster> clusters{};
  std::map<std::string, KubeconfigUser> users{};
  std::map<std::string, KubeconfigContext> contexts{};
  std::vector<std::string> files{};  // the files that were read, in merge order
};

// Parses one kubeconfig file's text. `path` names it in errors and anchors relative paths.
Expected<Kubeconfig> parse_kubeconfig(std::string_view text, std::string_view path);

// Merges `later` into `merged`: values and entries already present in `merged` win.
void merge_kubeconfig(Kubeconfig& merged, const Kubeconfig& later);

struct KubeconfigLoadOptions {
  std::string explicit_path{};                  // --kubeconfig: exactly this file, no merge
  std::optional<std::string> kubeconfig_env{};  // $KUBECONFIG; nullopt = read the environment
  std::optional<std::string> home{};            // $HOME; nullopt = read the environment
};

// Which files, in merge order: the explicit one; else the non-empty KUBECONFIG entries
// (':'-separated); else $HOME/.kube/config.
std::vector<std::string> kubeconfig_paths(const KubeconfigLoadOptions& options);

// Loads and merges per the rules above. A missing explicit file is an error; missing files in
// the KUBECONFIG list are skipped (as kubectl does), but at least one must exist; a file that
// cannot be parsed is an error.
Expected<Kubeconfig> load_kubeconfig(const KubeconfigLoadOptions& options = {});

struct ResolveOptions {
  std::string context{};           // --context; "" = current-context
  std::string namespace_{};        // --namespace; "" = the context's, else "default"
  std::shared_ptr<Clock> clock{};  // for token-file and exec credential caching; null = system
  // Whether stdin is a terminal (exec interactiveMode); nullopt = isatty(0).
  std::optional<bool> stdin_is_terminal{};
};

// Picks the context and builds the connection: validates the cluster (server set) and the user
// (one authentication method; certificate and key together; file and data not both), reads CA
// and certificate files, and sets up token-file or exec credential providers.
Expected<ConnectionConfig> resolve_kubeconfig(const Kubeconfig& config,
                                              const ResolveOptions& options = {});

}  // namespace depl::kube
