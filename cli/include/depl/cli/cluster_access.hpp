// How kubectl-depl commands that read the cluster find it and fetch a DependableTrainingJob:
// kubectl's --kubeconfig/--context/--namespace rules (docs/kube-client.md), and errors a user can
// act on (no kubeconfig, API server unreachable, job not found in the namespace, CRD missing).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/kube/client.hpp"

namespace depl::cli {

struct ClusterFlags {
  std::string kubeconfig;  // --kubeconfig: exactly this file; "" = KUBECONFIG, ~/.kube/config
  std::string context;     // --context; "" = current-context
  std::string namespace_;  // -n; "" = the context's namespace, else "default"
};

struct ClusterAccess {
  kube::Client client;
  std::string server;      // the API server's URL, for messages
  std::string namespace_;  // resolved
};

// Loads and resolves the kubeconfig and builds a client. A command-line tool does not wait long
// for an API server that is down: two attempts, then the error.
Expected<ClusterAccess> connect_to_cluster(const ClusterFlags& flags);

// The DependableTrainingJob `name` in access.namespace_, as the API server returns it. Errors
// say what to do: 'dependabletrainingjob "x" not found in namespace "ns"', 'cannot reach the
// API server at URL: ...', 'the API server does not serve dependabletrainingjobs.depl.dev/
// v1alpha1: is the CRD installed?'.
Expected<nlohmann::json> fetch_training_job(ClusterAccess& access, const std::string& name);

}  // namespace depl::cli
