// kubectl's everyday commands against the dev cluster, run with the real kubectl (HTTPS and a
// token, as the cluster serves by default), each with what it must print. The outcome is the
// table in docs/dev-cluster.md ("kubectl commands"): the test fails when a command behaves
// otherwise than the table says, or when the table is not the one this run produced
// (DEPL_UPDATE_DOCS=1 writes it). The commands the dev cluster deliberately does not serve
// (exec, port-forward, top) are in the table as "no", with the reason, and must fail.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "kubectl_fixture.hpp"
#include "test_http.hpp"

namespace depl::devcluster::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kDoc = fs::path(DEPL_SOURCE_DIR) / "docs" / "dev-cluster.md";
constexpr const char* kBegin = "<!-- kubectl-commands: produced by kubectl_commands_test -->";
constexpr const char* kEnd = "<!-- kubectl-commands: end -->";

struct Row {
  std::string shown;  // the command as the table shows it
  std::vector<std::string> args;
  std::string stdin_text;
  // Empty when the outcome is the expected one; otherwise what went wrong.
  std::function<std::string(const CommandResult&)> check;
  std::string limit;  // a deliberate limit: the command must fail, the table says why
};

// Exit code 0 and every one of `needles` in the output.
std::function<std::string(const CommandResult&)> succeeds_with(std::vector<std::string> needles) {
  return [needles](const CommandResult& r) -> std::string {
    if (r.exit_code != 0) return "exit code " + std::to_string(r.exit_code);
    for (const auto& n : needles) {
      if (r.output.find(n) == std::string::npos) return "no \"" + n + "\" in the output";
    }
    return "";
  };
}

// Exit code `code` and every one of `needles` in the output.
std::function<std::string(const CommandResult&)> exits_with(int code,
                                                            std::vector<std::string> needles) {
  return [code, needles](const CommandResult& r) -> std::string {
    if (r.exit_code != code) return "exit code " + std::to_string(r.exit_code);
    for (const auto& n : needles) {
      if (r.output.find(n) == std::string::npos) return "no \"" + n + "\" in the output";
    }
    return "";
  };
}

constexpr const char* kConfigMap = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
)";

constexpr const char* kChangedConfigMap = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: careful
)";

constexpr const char* kQuietPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: quiet
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: busybox
      command: [sh, -c, "sleep 1; echo woke up"]
)";

class KubectlCommandsTest : public KubectlTest {};

TEST_F(KubectlCommandsTest, EverydayCommandsBehaveAsTheDocumentedTableSays) {
  ASSERT_TRUE(cluster_->url().starts_with("https://")) << "the dev cluster serves HTTPS by default";
  // A service account with a Role, for the authorization commands.
  std::string robot_token;
  auto token_of_robot = [&] {
    if (robot_token.empty()) {
      auto token = cluster_->service_account_token("default", "robot");
      robot_token = token ? *token : "no-token";
    }
    return robot_token;
  };
  const std::string robot = "system:serviceaccount:default:robot";
  // The editor `kubectl edit` runs: it changes the ConfigMap's mode.
  const fs::path editor = cache_dir_.parent_path() / "editor.sh";
  {
    std::ofstream out(editor);
    out << "#!/bin/sh\nsed -i 's/mode: careful/mode: edited/' \"$1\"\n";
  }
  fs::permissions(editor, fs::perms::owner_all);

  std::vector<Row> rows = {
      {"kubectl version", {"version"}, "", succeeds_with({"Server Version: v1.32"}), ""},
      {"kubectl cluster-info", {"cluster-info"}, "", succeeds_with({"is running at https://"}), ""},
      {"kubectl api-resources",
       {"api-resources"},
       "",
       succeeds_with({"selfsubjectaccessreviews", "deployments"}),
       ""},
      {"kubectl get nodes -o wide",
       {"get", "nodes", "-o", "wide"},
       "",
       succeeds_with({"a100-0", "t4-0"}),
       ""},
      {"kubectl describe node",
       {"describe", "node", "a100-0"},
       "",
       succeeds_with({"nvidia.com/gpu", "depl.dev/pool=a100"}),
       ""},
      {"kubectl apply -f",
       {"apply", "-f", "-"},
       kConfigMap,
       succeeds_with({"configmap/settings created"}),
       ""},
      {"kubectl diff -f",
       {"diff", "-f", "-"},
       kChangedConfigMap,
       exits_with(1, {"-  mode: fast", "+  mode: careful"}),
       ""},
      {"kubectl apply --server-side --force-conflicts -f",
       {"apply", "--server-side", "--force-conflicts", "-f", "-"},
       kChangedConfigMap,
       succeeds_with({"configmap/settings serverside-applied"}),
       ""},
      {"kubectl edit",
       {"edit", "configmap", "settings"},
       "",
       succeeds_with({"configmap/settings edited"}),
       ""},
      {"kubectl get -o jsonpath",
       {"get", "configmap", "settings", "-o", "jsonpath={.data.mode}"},
       "",
       succeeds_with({"edited"}),
       ""},
      {"kubectl patch --type=merge",
       {"patch", "configmap", "settings", "--type=merge", "-p", R"({"data":{"extra":"1"}})"},
       "",
       succeeds_with({"configmap/settings patched"}),
       ""},
      {"kubectl label",
       {"label", "configmap", "settings", "tier=backend"},
       "",
       succeeds_with({"configmap/settings labeled"}),
       ""},
      {"kubectl annotate",
       {"annotate", "configmap", "settings", "owner=team-a"},
       "",
       succeeds_with({"configmap/settings annotated"}),
       ""},
      {"kubectl get -l",
       {"get", "configmaps", "-l", "tier=backend", "-o", "name"},
       "",
       succeeds_with({"configmap/settings"}),
       ""},
      {"kubectl create namespace",
       {"create", "namespace", "team-a"},
       "",
       succeeds_with({"namespace/team-a created"}),
       ""},
      {"kubectl create configmap --from-literal",
       {"create", "configmap", "flags", "--from-literal=debug=true"},
       "",
       succeeds_with({"configmap/flags created"}),
       ""},
      {"kubectl create secret generic",
       {"create", "secret", "generic", "password", "--from-literal=value=s3cret"},
       "",
       succeeds_with({"secret/password created"}),
       ""},
      {"kubectl create deployment",
       {"create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80"},
       "",
       succeeds_with({"deployment.apps/web created"}),
       ""},
      // What the protobuf bodies of the two commands above carried.
      {"kubectl get -o jsonpath (after create from protobuf)",
       {"get", "deployment", "web", "-o",
        "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} "
        "{.spec.template.spec.containers[0].ports[0].containerPort} "
        "{.spec.selector.matchLabels.app}"},
       "",
       succeeds_with({"2 nginx:1.27 80 web"}),
       ""},
      {"kubectl patch (strategic)",
       {"patch", "deployment", "web", "-p", R"({"spec":{"replicas":3}})"},
       "",
       succeeds_with({"deployment.apps/web patched"}),
       ""},
      {"kubectl create serviceaccount",
       {"create", "serviceaccount", "robot"},
       "",
       succeeds_with({"serviceaccount/robot created"}),
       ""},
      {"kubectl create role",
       {"create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods"},
       "",
       succeeds_with({"role.rbac.authorization.k8s.io/pod-reader created"}),
       ""},
      {"kubectl create rolebinding",
       {"create", "rolebinding", "robot-reads-pods", "--role=pod-reader",
        "--serviceaccount=default:robot"},
       "",
       succeeds_with({"rolebinding.rbac.authorization.k8s.io/robot-reads-pods created"}),
       ""},
      {"kubectl create token",
       {"create", "token", "robot", "--duration=10m"},
       "",
       succeeds_with({}),
       ""},
      {"kubectl auth whoami",
       {"auth", "whoami"},
       "",
       succeeds_with({"kubernetes-admin", "system:masters"}),
       ""},
      {"kubectl auth can-i", {"auth", "can-i", "delete", "nodes"}, "", succeeds_with({"yes"}), ""},
      {"kubectl auth can-i --as (allowed)",
       {"auth", "can-i", "list", "pods", "--as=" + robot},
       "",
       succeeds_with({"yes"}),
       ""},
      {"kubectl auth can-i --as (denied)",
       {"auth", "can-i", "list", "secrets", "--as=" + robot},
       "",
       exits_with(1, {"no"}),
       ""},
      {"kubectl auth can-i --list --as",
       {"auth", "can-i", "--list", "--as=" + robot},
       "",
       succeeds_with({"pods", "[get list watch]", "selfsubjectreviews"}),
       ""},
      {"kubectl get (as a service account, allowed)",
       {"get", "pods", "--token=ROBOT"},
       "",
       succeeds_with({}),
       ""},
      {"kubectl get (as a service account, forbidden)",
       {"get", "secrets", "--token=ROBOT"},
       "",
       exits_with(1, {"secrets is forbidden: User \"" + robot +
                      "\" cannot list resource \"secrets\" in API group \"\" in the namespace "
                      "\"default\""}),
       ""},
      {"kubectl explain",
       {"explain", "pods.spec.containers.env"},
       "",
       succeeds_with({"FIELD: env <[]EnvVar>", "valueFrom"}),
       ""},
      {"kubectl explain --recursive",
       {"explain", "deployment.spec.strategy", "--recursive"},
       "",
       succeeds_with({"rollingUpdate", "maxSurge"}),
       ""},
      {"kubectl create -f (strict validation)",
       {"create", "-f", "-"},
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\nspec:\n  containerz: []\n",
       exits_with(1, {"unknown field \"spec.containerz\""}),
       ""},
      {"kubectl apply -f (a pod)",
       {"apply", "-f", "-"},
       kQuietPod,
       succeeds_with({"pod/quiet created"}),
       ""},
      {"kubectl logs -f (quiet at first)",
       {"logs", "-f", "quiet"},
       "",
       succeeds_with({"woke up"}),
       ""},
      {"kubectl wait --for=jsonpath",
       {"wait", "pod/quiet", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=30s"},
       "",
       succeeds_with({"pod/quiet condition met"}),
       ""},
      {"kubectl logs", {"logs", "quiet"}, "", succeeds_with({"woke up"}), ""},
      {"kubectl patch a pod's image (allowed)",
       {"patch", "pod", "quiet", "-p",
        R"({"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}})"},
       "",
       succeeds_with({"pod/quiet patched"}),
       ""},
      // A merge patch replaces the whole list: the command and env are gone, which the API
      // refuses (as it refused nothing before).
      {"kubectl patch a pod's command (refused)",
       {"patch", "pod", "quiet", "--type=merge", "-p",
        R"({"spec":{"containers":[{"name":"main","image":"busybox"}]}})"},
       "",
       exits_with(1, {"pod updates may not change fields other than"}),
       ""},
      {"kubectl get events", {"get", "events", "-A"}, "", succeeds_with({}), ""},
      {"kubectl events", {"events", "-A"}, "", succeeds_with({}), ""},
      {"kubectl cordon", {"cordon", "t4-0"}, "", succeeds_with({"node/t4-0 cordoned"}), ""},
      {"kubectl uncordon", {"uncordon", "t4-0"}, "", succeeds_with({"node/t4-0 uncordoned"}), ""},
      {"kubectl delete",
       {"delete", "pod", "quiet"},
       "",
       succeeds_with({"pod \"quiet\" deleted"}),
       ""},
      {"kubectl delete -l",
       {"delete", "configmaps", "-l", "tier=backend"},
       "",
       succeeds_with({"configmap \"settings\" deleted"}),
       ""},
      {"kubectl run",
       {"run", "sleeper", "--image=busybox", "--restart=Never", "--command", "--", "sh", "-c",
        "sleep 300"},
       "",
       succeeds_with({"pod/sleeper created"}),
       ""},
      {"kubectl wait --for=condition=Ready",
       {"wait", "pod/sleeper", "--for=condition=Ready", "--timeout=30s"},
       "",
       succeeds_with({"pod/sleeper condition met"}),
       ""},
      {"kubectl exec",
       {"exec", "sleeper", "--", "true"},
       "",
       exits_with(1, {}),
       "exec and attach need a container runtime's streams; pods are local processes"},
      {"kubectl port-forward",
       {"port-forward", "pod/sleeper", ":80"},
       "",
       exits_with(1, {}),
       "not served; a pod listens on its own loopback address (status.podIP), reachable as is"},
      {"kubectl top",
       {"top", "nodes"},
       "",
       exits_with(1, {"Metrics API not available"}),
       "no metrics-server (metrics.k8s.io) is served"},
      {"kubectl delete --wait=false",
       {"delete", "pod", "sleeper", "--wait=false"},
       "",
       succeeds_with({"pod \"sleeper\" deleted"}),
       ""},
  };

  std::ostringstream table;
  table << "| Command | Against the dev cluster |\n| --- | --- |\n";
  for (auto& row : rows) {
    for (auto& arg : row.args) {
      if (arg == "--token=ROBOT") arg = "--token=" + token_of_robot();
    }
    std::vector<std::string> argv = row.args;
    argv.insert(argv.begin(), "kubectl");
    argv.push_back("--request-timeout=20s");
    auto env = kubectl_env();
    env["KUBE_EDITOR"] = editor.string();
    const CommandResult result = run_command(argv, env, row.stdin_text, std::chrono::seconds(60));
    const std::string problem = row.check(result);
    EXPECT_EQ(problem, "") << row.shown << ":\n" << result.output;
    std::string outcome;
    if (!problem.empty()) {
      outcome = "FAILED (" + problem + ")";
    } else {
      outcome = row.limit.empty() ? "yes" : "no: " + row.limit;
    }
    table << "| `" << row.shown << "` | " << outcome << " |\n";
  }

  // kubectl proxy: a request through it reaches the API with the kubeconfig's credentials.
  {
    auto args = std::vector<std::string>{"kubectl", "proxy", "--port=0"};
    Subprocess proxy(args, kubectl_env());
    ASSERT_TRUE(proxy.started());
    std::string outcome = "FAILED (no \"Starting to serve\" line)";
    if (auto line = proxy.read_line(std::chrono::seconds(30))) {
      const auto colon = line->rfind(':');
      const int port = colon == std::string::npos ? 0 : std::atoi(line->c_str() + colon + 1);
      auto answer = http_request(static_cast<std::uint16_t>(port), "GET", "/api/v1/nodes/a100-0");
      outcome = answer.status == 200 && answer.body.find("a100-0") != std::string::npos
                    ? "yes"
                    : "FAILED (HTTP " + std::to_string(answer.status) + ")";
    }
    EXPECT_EQ(outcome, "yes");
    table << "| `kubectl proxy` | " << outcome << " |\n";
  }

  std::ifstream in(kDoc);
  std::stringstream doc;
  doc << in.rdbuf();
  std::string text = doc.str();
  const auto begin = text.find(kBegin);
  const auto end = text.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << kDoc << " lacks the line " << kBegin;
  ASSERT_NE(end, std::string::npos) << kDoc << " lacks the line " << kEnd;
  const std::string current =
      text.substr(begin + std::strlen(kBegin) + 1, end - begin - std::strlen(kBegin) - 1);
  if (current != table.str() && std::getenv("DEPL_UPDATE_DOCS")) {
    text.replace(begin + std::strlen(kBegin) + 1, end - begin - std::strlen(kBegin) - 1,
                 table.str());
    std::ofstream out(kDoc, std::ios::trunc);
    out << text;
    return;
  }
  EXPECT_EQ(current, table.str())
      << "docs/dev-cluster.md's kubectl table is not what this run produced (run the test with "
         "DEPL_UPDATE_DOCS=1 to write it)";
}

}  // namespace
}  // namespace depl::devcluster::testing
