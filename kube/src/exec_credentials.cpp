#include "depl/kube/exec_credentials.hpp"

#include <fmt/format.h>

#include <charconv>
#include <ctime>

#include <spdlog/spdlog.h>

#include "depl/common/base64.hpp"
#include "depl/common/subprocess.hpp"
#include "depl/common/time.hpp"
#include "file_util.hpp"

namespace depl::kube {

using nlohmann::json;

namespace {
Unexpected<ApiError> config_error(std::string message) {
  return unexpected(ApiError::transport(ApiError::kConfigError, std::move(message)));
}

std::string trimmed(std::string text, std::size_t max = 400) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.size() > max) text = text.substr(0, max) + "...";
  return text;
}

}  // namespace

ExecCredentials::ExecCredentials(ExecConfig exec, KubeconfigCluster cluster, std::string user_name,
                                 std::shared_ptr<Clock> clock, bool stdin_is_terminal,
                                 std::shared_ptr<const TlsClientIdentity> fallback_identity)
    : exec_(std::move(exec)),
      cluster_(std::move(cluster)),
      user_name_(std::move(user_name)),
      clock_(clock ? std::move(clock) : std::make_shared<SystemClock>()),
      interactive_(exec_.interactive_mode != "Never" && stdin_is_terminal),
      fallback_identity_(std::move(fallback_identity)) {}

json ExecCredentials::exec_info() const {
  json spec = {{"interactive", interactive_}};
  if (exec_.provide_cluster_info) {
    json cluster = {{"server", cluster_.server}};
    if (!cluster_.tls_server_name.empty()) cluster["tls-server-name"] = cluster_.tls_server_name;
    if (cluster_.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    std::string ca = cluster_.certificate_authority_data;
    if (ca.empty() && !cluster_.certificate_authority.empty()) {
      if (auto file = read_file(cluster_.certificate_authority)) ca = *file;
    }
    if (!ca.empty()) cluster["certificate-authority-data"] = depl::base64_encode(ca);
    if (!cluster_.proxy_url.empty()) cluster["proxy-url"] = cluster_.proxy_url;
    if (cluster_.disable_compression) cluster["disable-compression"] = true;
    if (!cluster_.exec_extension.is_null()) cluster["config"] = cluster_.exec_extension;
    spec["cluster"] = std::move(cluster);
  }
  return {{"apiVersion", exec_.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}};
}

int ExecCredentials::runs() const {
  std::lock_guard lock(mutex_);
  return runs_;
}

Expected<Credentials, ApiError> ExecCredentials::credentials() {
  std::lock_guard lock(mutex_);
  if (cached_ && (!expires_at_ || clock_->wall_now() < *expires_at_)) return *cached_;
  cached_.reset();
  expires_at_.reset();
  return run_plugin();
}

void ExecCredentials::on_unauthorized() {
  std::lock_guard lock(mutex_);
  if (cached_) spdlog::info("kube exec credentials reset after 401 user={}", user_name_);
  cached_.reset();
  expires_at_.reset();
}

Expected<Credentials, ApiError> ExecCredentials::run_plugin() {
  const std::string who = "exec plugin \"" + exec_.command + "\" for user \"" + user_name_ + "\"";
  if (exec_.interactive_mode == "Always" && !interactive_) {
    return config_error(who +
                        " requires interactive mode (interactiveMode: Always) but standard "
                        "input is not a terminal");
  }
  SpawnOptions plugin;
  plugin.argv = {exec_.command};
  plugin.argv.insert(plugin.argv.end(), exec_.args.begin(), exec_.args.end());
  plugin.env = exec_.env;
  plugin.env.emplace_back("KUBERNETES_EXEC_INFO", exec_info().dump());
  plugin.stdin_from = interactive_ ? Redirect::inherit() : Redirect::null();
  plugin.stdout_to = Redirect::pipe();
  plugin.stderr_to = Redirect::pipe();
  ++runs_;
  auto result = run_command(plugin);
  if (!result) {
    std::string message = who + " could not be started: " + result.error().message;
    if (!exec_.install_hint.empty()) message += "\n" + exec_.install_hint;
    return config_error(std::move(message));
  }
  if (result->status.exit_code != 0) {
    return config_error(who + " failed with exit code " + std::to_string(result->status.exit_code) +
                        (result->err.empty() ? "" : ": " + trimmed(result->err)));
  }
  json output = json::parse(result->out, nullptr, false);
  if (output.is_discarded() || !output.is_object()) {
    // What it printed is not shown: a plugin's stdout holds credentials, and a broken one may
    // hold them too.
    return config_error(fmt::format(
        "{} did not print an ExecCredential JSON object ({} bytes on stdout, {}; not shown, as "
        "they may hold credentials)",
        who, result->out.size(), output.is_discarded() ? "not JSON" : "JSON but not an object"));
  }
  if (output.value("kind", json()) != "ExecCredential") {
    return config_error(who + " printed kind " + output.value("kind", json("")).dump() +
                        ", want ExecCredential");
  }
  const json api_version = output.value("apiVersion", json(""));
  if (api_version != exec_.api_version) {
    return config_error(
        "exec plugin is configured to use API version " + exec_.api_version +
        ", plugin returned version " +
        (api_version.is_string() ? api_version.get<std::string>() : api_version.dump()));
  }
  const json status = output.value("status", json());
  if (!status.is_object()) return config_error(who + ": the ExecCredential has no status");
  auto text = [&](const char* key) {
    auto it = status.find(key);
    return (it != status.end() && it->is_string()) ? it->get<std::string>() : std::string();
  };
  Credentials credentials;
  const std::string token = text("token");
  const std::string cert = text("clientCertificateData");
  const std::string key = text("clientKeyData");
  if (cert.empty() != key.empty()) {
    return config_error(who +
                        ": status.clientCertificateData and status.clientKeyData must both be "
                        "set");
  }
  if (token.empty() && cert.empty()) {
    return config_error(who + ": status has neither token nor clientCertificateData/clientKeyData");
  }
  if (!token.empty()) credentials.authorization = "Bearer " + token;
  if (!cert.empty()) {
    credentials.tls_identity =
        std::make_shared<const TlsClientIdentity>(TlsClientIdentity{cert, key});
  } else {
    credentials.tls_identity = fallback_identity_;
  }
  if (std::string expiry = text("expirationTimestamp"); !expiry.empty()) {
    expires_at_ = parse_rfc3339(expiry);
    if (!expires_at_) {
      return config_error(who + ": status.expirationTimestamp \"" + expiry + "\" is not RFC 3339");
    }
  }
  cached_ = credentials;
  return credentials;
}

}  // namespace depl::kube
