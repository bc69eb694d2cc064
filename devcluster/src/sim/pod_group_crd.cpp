#include "sim/pod_group_crd.hpp"

#include "depl/common/yaml_json.hpp"

namespace depl::devcluster {

namespace {

// Fields and types as scheduler-plugins' v1alpha1 PodGroup; descriptions are ours.
constexpr const char* kPodGroupCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: podgroups.scheduling.x-k8s.io
spec:
  group: scheduling.x-k8s.io
  scope: Namespaced
  names:
    kind: PodGroup
    listKind: PodGroupList
    plural: podgroups
    singular: podgroup
    shortNames: [pg, pgs]
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - {name: Phase, type: string, jsonPath: .status.phase, description: The group's phase.}
        - {name: MinMember, type: integer, jsonPath: .spec.minMember,
           description: How many of its pods must fit before any is bound.}
        - {name: Running, type: string, jsonPath: .status.running,
           description: Its running pods.}
        - {name: Succeeded, type: string, jsonPath: .status.succeeded,
           description: Its pods that succeeded.}
        - {name: Failed, type: string, jsonPath: .status.failed,
           description: Its pods that failed.}
        - {name: Age, type: date, jsonPath: .metadata.creationTimestamp,
           description: Time since the group was created.}
      schema:
        openAPIV3Schema:
          type: object
          description: A set of pods scheduled together, all or nothing.
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              description: How the group is scheduled.
              properties:
                minMember:
                  type: integer
                  format: int32
                  description: No pod of the group is bound until this many of them fit.
                minResources:
                  type: object
                  description: Resources that must be free before any pod of the group is bound.
                  additionalProperties:
                    anyOf: [{type: integer}, {type: string}]
                    x-kubernetes-int-or-string: true
                    pattern: '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'
                scheduleTimeoutSeconds:
                  type: integer
                  format: int32
                  description: How long the group's pods may wait for each other.
            status:
              type: object
              description: What the scheduler last saw of the group.
              properties:
                phase: {type: string}
                occupiedBy: {type: string}
                running: {type: integer, format: int32}
                succeeded: {type: integer, format: int32}
                failed: {type: integer, format: int32}
                scheduleStartTime: {type: string, format: date-time}
)";

}  // namespace

nlohmann::json pod_group_crd() {
  auto crd = yaml_to_json(kPodGroupCrd, "podgroups.scheduling.x-k8s.io");
  // The text is ours and fixed: a parse error is a bug of this file.
  return crd ? *crd : nlohmann::json();
}

Expected<void> install_pod_group_crd(ApiStore& store) {
  WriteOptions write;
  write.field_manager = "scheduler-plugins";
  auto created = store.create(
      ResourceRef{"apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "", ""},
      pod_group_crd(), write);
  if (!created.ok()) {
    return error("cannot create the PodGroup CRD: " +
                 (created.body.is_object() ? created.body.value("message", "") : ""));
  }
  return {};
}

}  // namespace depl::devcluster
