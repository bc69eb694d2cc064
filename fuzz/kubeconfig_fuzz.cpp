// Fuzz target: one kubeconfig file through parse_kubeconfig, merged into a fixed config, and
// through resolve_kubeconfig when that stays pure: configs that name files (CA, client
// certificate or key, token file) are not resolved, since resolving reads them, and exec plugins
// are only set up, never run.
#include "depl/kube/kubeconfig.hpp"
#include "fuzz_target.hpp"

namespace depl::fuzz {
namespace {

constexpr std::string_view kPath = "/fuzz/kubeconfig";

bool names_files(const kube::Kubeconfig& config) {
  for (const auto& [name, cluster] : config.clusters) {
    if (!cluster.certificate_authority.empty()) return true;
  }
  for (const auto& [name, user] : config.users) {
    if (!user.token_file.empty() || !user.client_certificate.empty() || !user.client_key.empty())
      return true;
  }
  return false;
}

void check_error(const Error& error) {
  check(!error.message.empty(), "an error says what is wrong");
}

}  // namespace

int kubeconfig(const std::uint8_t* data, std::size_t size) {
  auto parsed = kube::parse_kubeconfig(as_text(data, size), kPath);
  if (!parsed) {
    check_error(parsed.error());
    check(parsed.error().message.rfind(kPath, 0) == 0, "a parse error names the file");
    return 0;
  }
  check(parsed->files.size() == 1 && parsed->files[0] == kPath, "files lists the file read");
  kube::Kubeconfig merged;
  merged.current_context = "fixed";
  merged.files = {"/fuzz/first"};
  kube::merge_kubeconfig(merged, *parsed);
  check(merged.current_context == "fixed", "the first file's current-context wins");
  if (names_files(*parsed)) return 0;
  kube::ResolveOptions options;
  options.stdin_is_terminal = false;
  auto resolved = kube::resolve_kubeconfig(*parsed, options);
  if (!resolved) {
    check_error(resolved.error());
  } else {
    check(!resolved->server.empty(), "a resolved config has a server");
    check(!resolved->default_namespace.empty(), "a resolved config has a namespace");
  }
  return 0;
}

}  // namespace depl::fuzz

DEPL_FUZZ_ENTRY(kubeconfig)
