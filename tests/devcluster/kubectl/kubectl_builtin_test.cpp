// kubectl against the dev cluster, built-in resources: nodes from the pools file, pods run by the
// kubelet (logs), garbage collection of dependents, Deployments and RBAC objects, pods/binding.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kubectl_fixture.hpp"

namespace depl::devcluster::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(KubectlTest, ListsNodesByPoolLabel) {
  auto all = kubectl({"get", "nodes"});
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_THAT(all.output, HasSubstr("a100-0"));
  EXPECT_THAT(all.output, HasSubstr("t4-0"));
  EXPECT_THAT(all.output, HasSubstr("Ready"));
  auto a100 = kubectl({"get", "nodes", "-l", "depl.dev/pool=a100", "-o", "name"});
  ASSERT_EQ(a100.exit_code, 0) << a100.output;
  EXPECT_EQ(a100.output, "node/a100-0\nnode/a100-1\n");
}

TEST_F(KubectlTest, DescribesANode) {
  auto described = kubectl({"describe", "node", "a100-1"});
  ASSERT_EQ(described.exit_code, 0) << described.output;
  EXPECT_THAT(described.output, HasSubstr("Name:               a100-1"));
  EXPECT_THAT(described.output, HasSubstr("depl.dev/pool=a100"));
  EXPECT_THAT(described.output, HasSubstr("nvidia.com/gpu:"));
  EXPECT_THAT(described.output, HasSubstr("depl.dev/gpu-gflops: 19500"));
}

TEST_F(KubectlTest, ShowsTheLogsOfAPodRunAsALocalProcess) {
  constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: busybox
      command: [sh, -c, 'echo "hello from $(POD_NAME) on $NODE"']
      env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - name: NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
      resources:
        requests: {cpu: 100m, nvidia.com/gpu: "1"}
        limits: {nvidia.com/gpu: "1"}
)";
  auto applied = kubectl({"apply", "-f", "-"}, kPod);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto done =
      kubectl({"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/hello", "--timeout=30s"});
  ASSERT_EQ(done.exit_code, 0) << done.output
                               << kubectl({"get", "pod", "hello", "-o", "yaml"}).output;
  auto node = kubectl({"get", "pod", "hello", "-o", "jsonpath={.spec.nodeName}"});
  auto logs = kubectl({"logs", "hello"});
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_EQ(logs.output, "hello from hello on " + node.output + "\n");
  auto ip = kubectl({"get", "pod", "hello", "-o", "jsonpath={.status.podIP}"});
  EXPECT_THAT(ip.output, HasSubstr("127.0."));
  auto pods = kubectl({"get", "pods"});
  EXPECT_THAT(pods.output, HasSubstr("Completed"));
}

TEST_F(KubectlTest, DeletingAnOwnerCollectsItsDependents) {
  // (kubectl's imperative `create configmap` sends protobuf, which the dev cluster does not read.)
  auto owner =
      kubectl({"apply", "-f", "-"},
              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\ndata:\n  a: b\n");
  ASSERT_EQ(owner.exit_code, 0) << owner.output;
  auto uid = kubectl({"get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"});
  ASSERT_EQ(uid.exit_code, 0);
  const std::string dependent = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences:
    - apiVersion: v1
      kind: ConfigMap
      name: owner
      uid: )" + uid.output + R"(
data:
  x: y
)";
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, dependent).exit_code, 0);
  auto deleted = kubectl({"delete", "configmap", "owner"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  auto gone = kubectl({"wait", "--for=delete", "configmap/dependent", "--timeout=20s"});
  EXPECT_EQ(gone.exit_code, 0) << gone.output;
}

TEST_F(KubectlTest, AppliesADeploymentAndRbacObjects) {
  constexpr const char* kObjects = R"(apiVersion: v1
kind: ServiceAccount
metadata:
  name: operator
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: depl-operator
rules:
  - apiGroups: [depl.dev]
    resources: [dependabletrainingjobs, dependabletrainingjobs/status]
    verbs: [get, list, watch, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: depl-operator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: depl-operator
subjects:
  - kind: ServiceAccount
    name: operator
    namespace: default
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: leases
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: leases
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}
subjects: [{kind: ServiceAccount, name: operator, namespace: default}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: operator
  labels: {app: operator}
spec:
  replicas: 1
  selector:
    matchLabels: {app: operator}
  template:
    metadata:
      labels: {app: operator}
    spec:
      serviceAccountName: operator
      containers:
        - name: manager
          image: depl-controller:latest
          args: [--leader-elect]
          env:
            - {name: A, value: "1"}
          ports:
            - {containerPort: 8080, name: metrics}
)";
  auto applied = kubectl({"apply", "-f", "-"}, kObjects);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_THAT(applied.output, HasSubstr("deployment.apps/operator created"));
  EXPECT_THAT(applied.output,
              HasSubstr("clusterrolebinding.rbac.authorization.k8s.io/depl-operator created"));
  auto again = kubectl({"apply", "-f", "-"}, kObjects);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("deployment.apps/operator unchanged"));
  EXPECT_THAT(again.output, Not(HasSubstr("warning")));
  std::string changed = kObjects;
  changed.replace(changed.find(R"(value: "1")"), 10, R"(value: "2")");
  auto configured = kubectl({"apply", "-f", "-"}, changed);
  ASSERT_EQ(configured.exit_code, 0) << configured.output;
  EXPECT_THAT(configured.output, HasSubstr("deployment.apps/operator configured"));
  auto env = kubectl({"get", "deployment", "operator", "-o",
                      "jsonpath={.spec.template.spec.containers[0].env[0].value}"});
  EXPECT_EQ(env.output, "2");
  auto listed = kubectl({"get", "deployments,roles,rolebindings,serviceaccounts"});
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_THAT(listed.output, HasSubstr("operator"));
}

// What kube-scheduler sends to bind a pod, through kubectl's raw client: the pod stays pending
// (its selector matches no node) until the Binding names a node.
TEST_F(KubectlTest, BindsAPendingPodThroughThePodsBindingSubresource) {
  constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: stuck
spec:
  nodeSelector: {depl.dev/pool: none}
  containers:
    - {name: main, image: sim}
)";
  constexpr const char* kBinding =
      R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"stuck"},)"
      R"("target":{"apiVersion":"v1","kind":"Node","name":"t4-0"}})";
  auto applied = kubectl({"apply", "-f", "-"}, kPod);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto pending =
      kubectl({"wait", "--for=condition=PodScheduled=False", "pod/stuck", "--timeout=30s"});
  ASSERT_EQ(pending.exit_code, 0) << pending.output;
  const std::vector<std::string> bind = {
      "create", "--raw", "/api/v1/namespaces/default/pods/stuck/binding", "-f", "-"};
  auto bound = kubectl(bind, kBinding);
  ASSERT_EQ(bound.exit_code, 0) << bound.output;
  EXPECT_THAT(bound.output, HasSubstr(R"("status":"Success")"));
  EXPECT_THAT(bound.output, HasSubstr(R"("code":201)"));
  EXPECT_EQ(kubectl({"get", "pod", "stuck", "-o", "jsonpath={.spec.nodeName}"}).output, "t4-0");
  auto scheduled = kubectl({"get", "pod", "stuck", "-o",
                            R"(jsonpath={.status.conditions[?(@.type=="PodScheduled")].status})"});
  EXPECT_EQ(scheduled.output, "True");
  auto again = kubectl(bind, kBinding);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.output, HasSubstr(R"(pod stuck is already assigned to node "t4-0")"));
}

// A pod created with scheduling gates waits, as kubectl shows it, until the last gate is removed
// (the way a queue such as Kueue admits it); gates cannot be added back.
TEST_F(KubectlTest, AGatedPodWaitsUntilItsGatesAreRemoved) {
  constexpr const char* kGated = R"(apiVersion: v1
kind: Pod
metadata:
  name: gated
spec:
  restartPolicy: Never
  schedulingGates:
    - name: kueue.x-k8s.io/admission
    - name: example.com/quota
  containers:
    - {name: main, image: sim}
)";
  constexpr const char* kWitness = R"(apiVersion: v1
kind: Pod
metadata:
  name: witness
spec:
  restartPolicy: Never
  containers:
    - {name: main, image: sim}
)";
  auto applied = kubectl({"apply", "-f", "-"}, kGated);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  // The scheduler takes pods oldest first: once a pod created after the gated one has run, the
  // gated one has been passed over, not merely not reached yet.
  auto witness = kubectl({"apply", "-f", "-"}, kWitness);
  ASSERT_EQ(witness.exit_code, 0) << witness.output;
  auto ran =
      kubectl({"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/witness", "--timeout=30s"});
  ASSERT_EQ(ran.exit_code, 0) << ran.output;

  auto listed = kubectl({"get", "pod", "gated"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_THAT(listed.output, HasSubstr("SchedulingGated"));
  const std::string condition =
      R"(jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}/{.spec.nodeName})";
  EXPECT_EQ(kubectl({"get", "pod", "gated", "-o", condition}).output, "SchedulingGated/");

  auto added = kubectl({"patch", "pod", "gated", "--type=json", "-p",
                        R"([{"op":"add","path":"/spec/schedulingGates/-",)"
                        R"("value":{"name":"example.com/more"}}])"});
  EXPECT_NE(added.exit_code, 0);
  EXPECT_THAT(added.output, HasSubstr("spec.schedulingGates[2].name: Forbidden: only deletion is "
                                      "allowed, but found new scheduling gate 'example.com/more'"));

  // Gates go one at a time, in any order.
  auto one = kubectl({"patch", "pod", "gated", "--type=json", "-p",
                      R"([{"op":"remove","path":"/spec/schedulingGates/0"}])"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(
      kubectl({"get", "pod", "gated", "-o", "jsonpath={.spec.schedulingGates[*].name}"}).output,
      "example.com/quota");
  auto last = kubectl({"patch", "pod", "gated", "--type=json", "-p",
                       R"([{"op":"remove","path":"/spec/schedulingGates"}])"});
  ASSERT_EQ(last.exit_code, 0) << last.output;
  auto done =
      kubectl({"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/gated", "--timeout=30s"});
  ASSERT_EQ(done.exit_code, 0) << done.output
                               << kubectl({"get", "pod", "gated", "-o", "yaml"}).output;
  EXPECT_EQ(kubectl({"get", "pod", "gated", "-o",
                     R"(jsonpath={.status.conditions[?(@.type=="PodScheduled")].status})"})
                .output,
            "True");
}

}  // namespace
}  // namespace depl::devcluster::testing

namespace depl::devcluster::testing {
namespace {

TEST(KubectlTlsTest, ServesHttpsWithTheGeneratedCaAndRequiresTheToken) {
  if (!kubectl_installed()) {
    GTEST_SKIP() << "kubectl is not installed; skipping kubectl tests";
  }
  DevClusterOptions options;
  options.pools_yaml = kTestPools;
  options.run_kubelet = false;
  auto cluster = DevCluster::start(options);
  ASSERT_TRUE(cluster) << cluster.error().message;
  EXPECT_EQ((*cluster)->url().rfind("https://127.0.0.1:", 0), 0u);
  const auto dir = std::filesystem::path((*cluster)->kubeconfig_path()).parent_path();
  const std::map<std::string, std::string> env = {{"KUBECONFIG", (*cluster)->kubeconfig_path()},
                                                  {"KUBECACHEDIR", (dir / "cache").string()},
                                                  {"HOME", dir.string()}};
  auto nodes = run_command({"kubectl", "get", "nodes", "-o", "name"}, env);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.output;
  EXPECT_THAT(nodes.output, ::testing::HasSubstr("node/a100-0"));
  auto wrong = run_command({"kubectl", "get", "nodes", "--token=not-the-token"}, env);
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.output, ::testing::HasSubstr("Unauthorized"));
}

}  // namespace
}  // namespace depl::devcluster::testing
