// The DependableTrainingJob custom resource as the Kubernetes client addresses it
// (crds/depl.dev_dependabletrainingjobs.yaml). It lives here, not in kube/: the Kubernetes
// library knows nothing of DepL.
#pragma once

#include "depl/kube/resource.hpp"

namespace depl::controller {

inline kube::ResourceType job_resource() {
  return {"depl.dev", "v1alpha1", "dependabletrainingjobs", "DependableTrainingJob", true};
}

}  // namespace depl::controller
