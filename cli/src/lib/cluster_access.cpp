#include "depl/cli/cluster_access.hpp"
#include "depl/controller/job_resource.hpp"

#include <fmt/format.h>

#include "depl/kube/beast_transport.hpp"
#include "depl/kube/kubeconfig.hpp"

namespace depl::cli {

Expected<ClusterAccess> connect_to_cluster(const ClusterFlags& flags) {
  kube::KubeconfigLoadOptions load;
  load.explicit_path = flags.kubeconfig;
  auto config = kube::load_kubeconfig(load);
  if (!config) {
    return error(fmt::format(
        "{} (no kubeconfig to find the cluster with: pass --kubeconfig FILE or set KUBECONFIG)",
        config.error().message));
  }
  kube::ResolveOptions resolve;
  resolve.context = flags.context;
  resolve.namespace_ = flags.namespace_;
  resolve.stdin_is_terminal = false;  // a status read never prompts an exec plugin
  auto connection = kube::resolve_kubeconfig(*config, resolve);
  if (!connection) return unexpected(connection.error());

  kube::ClientOptions options;
  options.retry.max_attempts = 2;
  options.request_timeout = std::chrono::seconds(15);
  kube::TransportOptions transport;
  transport.connect_timeout = std::chrono::seconds(5);
  auto client = kube::make_client(*connection, options, transport);
  if (!client) {
    return error(fmt::format("API server {}: {}", connection->server, client.error().message));
  }
  return ClusterAccess{std::move(*client), connection->server, connection->default_namespace};
}

Expected<nlohmann::json> fetch_training_job(ClusterAccess& access, const std::string& name) {
  const kube::ResourceType type = controller::job_resource();
  auto job = access.client.get(type, access.namespace_, name);
  if (job) return std::move(*job);
  const kube::ApiError& e = job.error();
  if (e.is_transport()) {
    return error(
        fmt::format("cannot reach the API server at {}: {}", access.server, e.to_string()));
  }
  if (e.is_not_found()) {
    // A NotFound Status naming the object is the job missing; any other 404 (a plain "404 page
    // not found", or a Status about the resource) means the API itself is not served.
    const bool names_the_job = e.details.is_object() && e.details.value("name", "") == name;
    if (names_the_job) {
      return error(fmt::format("dependabletrainingjob \"{}\" not found in namespace \"{}\"", name,
                               access.namespace_));
    }
    return error(fmt::format(
        "the API server at {} does not serve {}.{}/{} ({}): is the DependableTrainingJob CRD "
        "installed? (kubectl apply -f crds/)",
        access.server, type.resource, type.group, type.version, e.to_string()));
  }
  if (e.is_unauthorized() || e.is_forbidden()) {
    return error(
        fmt::format("not allowed to read dependabletrainingjob \"{}\" in namespace "
                    "\"{}\": {}",
                    name, access.namespace_, e.to_string()));
  }
  return error(fmt::format("reading dependabletrainingjob \"{}\" in namespace \"{}\": {}", name,
                           access.namespace_, e.to_string()));
}

}  // namespace depl::cli
