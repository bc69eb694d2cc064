// Turning a merged kubeconfig into a ConnectionConfig: context selection, client-go's
// validation rules, and the credential provider for the user's one authentication method.
#include <unistd.h>

#include <vector>

#include "depl/kube/exec_credentials.hpp"
#include "depl/kube/kubeconfig.hpp"
#include "depl/kube/token_file_credentials.hpp"
#include "file_util.hpp"

namespace depl::kube {

namespace {

std::string file_list(const Kubeconfig& config) {
  std::string out;
  for (const auto& file : config.files) out += (out.empty() ? "" : ", ") + file;
  return out.empty() ? "(no files)" : out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out;
}

// The PEM from `data` or the file at `path` (already validated not both set).
Expected<std::string> pem_from(const std::string& data, const std::string& path) {
  if (!data.empty()) return data;
  if (path.empty()) return std::string();
  return read_file(path);
}

Expected<void> validate_exec(const ExecConfig& exec, const std::string& where) {
  if (exec.command.empty()) return error(where + ".exec.command: missing");
  if (exec.api_version.empty()) return error(where + ".exec.apiVersion: missing");
  if (exec.api_version == "client.authentication.k8s.io/v1alpha1") {
    return error(where +
                 ".exec.apiVersion: client.authentication.k8s.io/v1alpha1 is no longer "
                 "supported; use client.authentication.k8s.io/v1");
  }
  if (exec.api_version != "client.authentication.k8s.io/v1" &&
      exec.api_version != "client.authentication.k8s.io/v1beta1") {
    return error(where + ".exec.apiVersion: unsupported \"" + exec.api_version +
                 "\" (want client.authentication.k8s.io/v1 or v1beta1)");
  }
  if (exec.interactive_mode.empty() && exec.api_version == "client.authentication.k8s.io/v1") {
    return error(where +
                 ".exec.interactiveMode: required for client.authentication.k8s.io/v1 "
                 "(Never, IfAvailable or Always)");
  }
  if (!exec.interactive_mode.empty() && exec.interactive_mode != "Never" &&
      exec.interactive_mode != "IfAvailable" && exec.interactive_mode != "Always") {
    return error(where + ".exec.interactiveMode: invalid \"" + exec.interactive_mode +
                 "\" (want Never, IfAvailable or Always)");
  }
  return {};
}

}  // namespace

Expected<ConnectionConfig> resolve_kubeconfig(const Kubeconfig& config,
                                              const ResolveOptions& options) {
  const std::string context_name =
      options.context.empty() ? config.current_context : options.context;
  if (context_name.empty()) {
    return error("no context: current-context is not set in " + file_list(config) +
                 " and no --context was given");
  }
  auto context_it = config.contexts.find(context_name);
  if (context_it == config.contexts.end()) {
    return error("context \"" + context_name + "\" not found in " + file_list(config));
  }
  const KubeconfigContext& context = context_it->second;
  const std::string context_where = context.source_file + ": contexts (\"" + context_name + "\")";
  if (context.cluster.empty()) return error(context_where + ".context.cluster: missing");
  auto cluster_it = config.clusters.find(context.cluster);
  if (cluster_it == config.clusters.end()) {
    return error(context_where + ".context.cluster: cluster \"" + context.cluster +
                 "\" is not defined in " + file_list(config));
  }
  const KubeconfigCluster& cluster = cluster_it->second;
  const std::string cluster_where =
      cluster.source_file + ": clusters (\"" + context.cluster + "\").cluster";
  if (cluster.server.empty()) return error(cluster_where + ".server: missing");
  if (cluster.server.rfind("https://", 0) != 0 && cluster.server.rfind("http://", 0) != 0) {
    return error(cluster_where + ".server: \"" + cluster.server +
                 "\" must start with https:// or http://");
  }
  if (!cluster.certificate_authority.empty() && !cluster.certificate_authority_data.empty()) {
    return error(cluster_where +
                 ": certificate-authority-data and certificate-authority are both "
                 "specified; only one is allowed");
  }
  if (cluster.insecure_skip_tls_verify &&
      (!cluster.certificate_authority.empty() || !cluster.certificate_authority_data.empty())) {
    return error(cluster_where +
                 ": specifying a root certificate authority with "
                 "insecure-skip-tls-verify is not allowed");
  }

  ConnectionConfig out;
  out.context = context_name;
  out.server = cluster.server;
  out.insecure_skip_tls_verify = cluster.insecure_skip_tls_verify;
  out.tls_server_name = cluster.tls_server_name;
  out.proxy_url = cluster.proxy_url;
  out.default_namespace = !options.namespace_.empty()   ? options.namespace_
                          : !context.namespace_.empty() ? context.namespace_
                                                        : "default";
  auto ca = pem_from(cluster.certificate_authority_data, cluster.certificate_authority);
  if (!ca) return error(cluster_where + ".certificate-authority: " + ca.error().message);
  out.certificate_authority_pem = std::move(*ca);

  if (context.user.empty()) return out;  // anonymous
  auto user_it = config.users.find(context.user);
  if (user_it == config.users.end()) {
    return error(context_where + ".context.user: user \"" + context.user + "\" is not defined in " +
                 file_list(config));
  }
  const KubeconfigUser& user = user_it->second;
  const std::string user_where = user.source_file + ": users (\"" + context.user + "\").user";

  if (!user.client_certificate.empty() && !user.client_certificate_data.empty()) {
    return error(user_where +
                 ": client-certificate-data and client-certificate are both "
                 "specified; only one is allowed");
  }
  if (!user.client_key.empty() && !user.client_key_data.empty()) {
    return error(user_where +
                 ": client-key-data and client-key are both specified; only one is "
                 "allowed");
  }
  const bool has_cert = !user.client_certificate.empty() || !user.client_certificate_data.empty();
  const bool has_key = !user.client_key.empty() || !user.client_key_data.empty();
  if (has_cert && !has_key) {
    return error(user_where +
                 ": client-key-data or client-key must be specified to use a client "
                 "certificate");
  }
  if (has_key && !has_cert) {
    return error(user_where +
                 ": client-certificate-data or client-certificate must be specified "
                 "to use a client key");
  }
  std::vector<std::string> methods;
  if (!user.token.empty() || !user.token_file.empty()) methods.push_back("token");
  if (!user.username.empty() || !user.password.empty()) methods.push_back("basicAuth");
  if (user.exec) methods.push_back("exec");
  if (methods.size() > 1) {
    return error(user_where + ": more than one authentication method found (" + join(methods) +
                 "); only one is allowed");
  }

  std::shared_ptr<const TlsClientIdentity> identity;
  if (has_cert) {
    auto cert = pem_from(user.client_certificate_data, user.client_certificate);
    if (!cert) return error(user_where + ".client-certificate: " + cert.error().message);
    auto key = pem_from(user.client_key_data, user.client_key);
    if (!key) return error(user_where + ".client-key: " + key.error().message);
    identity = std::make_shared<const TlsClientIdentity>(
        TlsClientIdentity{std::move(*cert), std::move(*key)});
  }
  auto clock = options.clock ? options.clock : std::make_shared<SystemClock>();

  if (user.exec) {
    if (auto valid = validate_exec(*user.exec, user_where); !valid)
      return unexpected(valid.error());
    ExecConfig exec = *user.exec;
    if (exec.interactive_mode.empty()) exec.interactive_mode = "IfAvailable";  // v1beta1 default
    const bool terminal = options.stdin_is_terminal.value_or(isatty(0) == 1);
    out.credentials = std::make_shared<ExecCredentials>(std::move(exec), cluster, context.user,
                                                        clock, terminal, identity);
  } else if (!user.token.empty()) {
    out.credentials =
        std::make_shared<StaticCredentials>(Credentials{"Bearer " + user.token, identity});
  } else if (!user.token_file.empty()) {
    auto provider = std::make_shared<TokenFileCredentials>(user.token_file, clock, identity);
    // Fail now, naming the field, rather than on the first request.
    if (auto first = provider->credentials(); !first) {
      return error(user_where + ".tokenFile: " + first.error().message);
    }
    out.credentials = provider;
  } else if (!user.username.empty() || !user.password.empty()) {
    out.credentials = std::make_shared<StaticCredentials>(
        Credentials{basic_authorization(user.username, user.password), identity});
  } else if (identity) {
    out.credentials = std::make_shared<StaticCredentials>(Credentials{"", identity});
  }
  return out;
}

}  // namespace depl::kube
