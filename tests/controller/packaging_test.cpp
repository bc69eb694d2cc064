// The Helm chart, manifests/install.yaml, the RBAC, values.schema.json and the examples agree
// with each other and with the code: what `helm install` and `kubectl apply -f` create is the same,
// the RBAC grants exactly the API calls listed in controller/api_calls.yaml, and the examples are
// valid DependableTrainingJobs under the CRD's schema.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "depl/controller/job_policy.hpp"
#include "depl/controller/pool_discovery.hpp"
#include "packaging/chart_files.hpp"
#include "packaging/schema_check.hpp"

namespace depl::packaging {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json must(Expected<json> v) {
  if (!v) ADD_FAILURE() << v.error().message;
  return v ? *v : json();
}

std::vector<json> must(Expected<std::vector<json>> v) {
  if (!v) ADD_FAILURE() << v.error().message;
  return v ? *v : std::vector<json>{};
}

std::vector<json> rendered_defaults() {
  auto ctx = default_context();
  if (!ctx) {
    ADD_FAILURE() << ctx.error().message;
    return {};
  }
  return must(render_chart(*ctx));
}

const json* find_object(const std::vector<json>& objects, const std::string& kind,
                        const std::string& name) {
  for (const auto& o : objects)
    if (o.value("kind", "") == kind && o["metadata"].value("name", "") == name) return &o;
  return nullptr;
}

std::vector<json> with_values(const std::function<void(json&)>& edit) {
  auto ctx = default_context();
  if (!ctx) return {};
  edit(ctx->values);
  return must(render_chart(*ctx));
}

// ----- the template renderer itself -----

TEST(ChartTemplate, RendersValuesConditionsRangesAndTrimming) {
  RenderContext ctx;
  ctx.values = {{"n", 3},
                {"on", true},
                {"off", false},
                {"empty", ""},
                {"m", {{"b", {{"x", 1}}}, {"a", "y"}}}};
  ctx.release = {{"Name", "r"}, {"Namespace", "ns"}};
  auto out = render_template(
      "a: {{ .Values.n }}\n"
      "{{- if gt (int .Values.n) 1 }}\nmany: true\n{{- end }}\n"
      "{{- if .Values.empty }}\nno: 2\n{{- end }}\n"
      "{{- if .Values.off }}\nno: 1\n{{- else }}\nyes: {{ .Release.Namespace | quote }}\n{{- end "
      "}}\n"
      "m:\n{{- range $k, $v := .Values.m }}\n  {{ $k }}: {{ $v | toJson | quote }}\n{{- end }}\n"
      "y:\n  {{- toYaml .Values.m | nindent 2 }}\n",
      ctx);
  ASSERT_TRUE(out) << out.error().message;
  auto doc = yaml_to_json(*out);
  ASSERT_TRUE(doc) << doc.error().message << "\n" << *out;
  EXPECT_EQ((*doc)["a"], 3);
  EXPECT_EQ((*doc)["many"], true);
  EXPECT_EQ((*doc)["yes"], "ns");
  EXPECT_FALSE(doc->contains("no"));
  EXPECT_EQ((*doc)["m"]["a"], "\"y\"");
  EXPECT_EQ((*doc)["m"]["b"], "{\"x\":1}");
  EXPECT_EQ((*doc)["y"], ctx.values["m"]);
}

TEST(ChartTemplate, RejectsUndefinedValuesAndSyntaxOutsideTheSubset) {
  RenderContext ctx;
  ctx.values = {{"a", 1}};
  auto missing = render_template("x: {{ .Values.b.c }}\n", ctx);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr(".Values.b.c is not defined"));
  auto include = render_template("{{ include \"x\" . }}", ctx);
  ASSERT_FALSE(include);
  EXPECT_THAT(include.error().message, HasSubstr("outside the supported template subset"));
  auto function = render_template("{{ .Values.a | b64enc }}", ctx);
  ASSERT_FALSE(function);
  EXPECT_THAT(function.error().message, HasSubstr("function b64enc"));
  auto unclosed = render_template("{{ if .Values.a }}x", ctx);
  ASSERT_FALSE(unclosed);
  EXPECT_THAT(unclosed.error().message, HasSubstr("has no {{ end }}"));
}

// ----- chart <-> install.yaml -----

TEST(Chart, CrdIsACopyOfTheRepositoryCrd) {
  auto chart_crd = read_text(kChart / "crds" / "depl.dev_dependabletrainingjobs.yaml");
  auto repo_crd = read_text(kRepo / "crds" / "depl.dev_dependabletrainingjobs.yaml");
  ASSERT_TRUE(chart_crd && repo_crd);
  EXPECT_TRUE(*chart_crd == *repo_crd) << "charts/depl-operator/crds/ differs from crds/: cp "
                                          "crds/depl.dev_dependabletrainingjobs.yaml "
                                          "charts/depl-operator/crds/";
}

TEST(Chart, MetadataAndValuesReadWell) {
  const json chart = must(read_yaml(kChart / "Chart.yaml"));
  EXPECT_EQ(chart["apiVersion"], "v2");
  EXPECT_EQ(chart["version"], "0.1.0");
  EXPECT_EQ(chart["appVersion"], "0.1.0");
  const json values = must(read_yaml(kChart / "values.yaml"));
  EXPECT_EQ(values["image"]["tag"], chart["appVersion"]) << "image.tag should follow appVersion";
}

TEST(Chart, InstallYamlIsTheChartRenderedWithDefaultValues) {
  const auto chart_objects = rendered_defaults();
  const auto manifest = must(read_yaml_documents(kRepo / "manifests" / "install.yaml"));
  ASSERT_FALSE(chart_objects.empty());

  std::map<std::string, json> from_chart, from_manifest;
  for (const auto& o : chart_objects) from_chart[object_id(o)] = o;
  // kubectl apply needs the namespace; helm's --create-namespace makes it.
  for (const auto& o : manifest) {
    if (o.value("kind", "") == "Namespace") {
      EXPECT_EQ(o["metadata"]["name"], kReleaseNamespace);
      continue;
    }
    from_manifest[object_id(o)] = o;
  }
  std::vector<std::string> chart_ids, manifest_ids;
  for (const auto& [id, o] : from_chart) chart_ids.push_back(id);
  for (const auto& [id, o] : from_manifest) manifest_ids.push_back(id);
  ASSERT_EQ(chart_ids, manifest_ids) << "same objects (kind/namespace/name)";
  for (const auto& [id, o] : from_chart)
    EXPECT_EQ(o, from_manifest[id]) << id << " differs; regenerate with "
                                    << "DEPL_UPDATE_MANIFESTS=1 build/tests/controller_tests "
                                       "--gtest_filter=Chart.InstallYaml*";
  EXPECT_EQ(manifest.size(), chart_objects.size() + 1) << "install.yaml has one Namespace more";
  // The same image in both (repeated for a clear message if the above ever gets loosened).
  const json* deployment = find_object(chart_objects, "Deployment", kReleaseName);
  ASSERT_NE(deployment, nullptr);
  EXPECT_EQ(
      from_manifest[object_id(*deployment)]["spec"]["template"]["spec"]["containers"][0]["image"],
      (*deployment)["spec"]["template"]["spec"]["containers"][0]["image"]);
}

// Regenerates manifests/install.yaml from the chart when DEPL_UPDATE_MANIFESTS=1 (not a check).
TEST(Chart, InstallYamlRegenerate) {
  if (std::getenv("DEPL_UPDATE_MANIFESTS") == nullptr)
    GTEST_SKIP() << "set DEPL_UPDATE_MANIFESTS=1";
  auto ctx = default_context();
  ASSERT_TRUE(ctx) << ctx.error().message;
  auto chart = render_chart_text(*ctx);
  ASSERT_TRUE(chart) << chart.error().message;
  std::string out =
      "# depl-operator 0.1.0 for `kubectl apply -f manifests/install.yaml`: the Helm chart\n"
      "# charts/depl-operator rendered with its default values (release depl-operator, namespace\n"
      "# depl-system), plus the Namespace. Generated; tests/controller/packaging_test.cpp keeps "
      "it\n"
      "# equal to the chart (DEPL_UPDATE_MANIFESTS=1 build/tests/controller_tests\n"
      "# --gtest_filter=Chart.InstallYamlRegenerate rewrites it).\n";
  out += fmt::format("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
                     kReleaseNamespace);
  out += *chart;
  std::ofstream(kRepo / "manifests" / "install.yaml") << out;
}

// ----- RBAC = the API calls the code makes -----

using Grant =
    std::tuple<std::string, std::string, std::string, std::string>;  // scope,group,res,verb

std::set<Grant> grants_of(const json& role, const std::string& scope) {
  std::set<Grant> out;
  for (const auto& rule : role["rules"]) {
    EXPECT_FALSE(rule.contains("resourceNames") || rule.contains("nonResourceURLs"));
    for (const auto& g : rule["apiGroups"])
      for (const auto& r : rule["resources"])
        for (const auto& v : rule["verbs"]) {
          EXPECT_NE(v, "*") << "wildcard verb";
          EXPECT_NE(r, "*") << "wildcard resource";
          out.insert({scope, g.get<std::string>(), r.get<std::string>(), v.get<std::string>()});
        }
  }
  return out;
}

std::set<Grant> api_calls() {
  const json calls = must(read_yaml(kRepo / "controller" / "api_calls.yaml"));
  std::set<Grant> out;
  for (const auto& c : calls["calls"])
    for (const auto& v : c["verbs"])
      out.insert({c["scope"].get<std::string>(), c["group"].get<std::string>(),
                  c["resource"].get<std::string>(), v.get<std::string>()});
  return out;
}

TEST(Rbac, ClusterRoleAndRoleGrantExactlyTheApiCallsTheControllerMakes) {
  const auto objects = rendered_defaults();
  const json* cluster_role = find_object(objects, "ClusterRole", kReleaseName);
  const json* role = find_object(objects, "Role", kReleaseName);
  ASSERT_NE(cluster_role, nullptr);
  ASSERT_NE(role, nullptr);
  EXPECT_EQ((*role)["metadata"]["namespace"], kReleaseNamespace);
  auto granted = grants_of(*cluster_role, "cluster");
  for (const auto& g : grants_of(*role, "own-namespace")) granted.insert(g);
  const auto needed = api_calls();
  ASSERT_FALSE(needed.empty());
  std::vector<Grant> extra, missing;
  std::set_difference(granted.begin(), granted.end(), needed.begin(), needed.end(),
                      std::back_inserter(extra));
  std::set_difference(needed.begin(), needed.end(), granted.begin(), granted.end(),
                      std::back_inserter(missing));
  auto show = [](const std::vector<Grant>& gs) {
    std::string s;
    for (const auto& [scope, g, r, v] : gs) s += fmt::format(" {}:{}/{}:{}", scope, g, r, v);
    return s;
  };
  EXPECT_THAT(extra, IsEmpty()) << "granted but never called:" << show(extra);
  EXPECT_THAT(missing, IsEmpty()) << "called but not granted:" << show(missing);
}

// The controller reads no Secret anywhere: it creates each job's token Secret and keeps the
// token's hash in the job's status.
TEST(Rbac, NoSecretIsReadable) {
  const auto objects = rendered_defaults();
  for (const char* kind : {"ClusterRole", "Role"}) {
    const json* role = find_object(objects, kind, kReleaseName);
    ASSERT_NE(role, nullptr) << kind;
    for (const auto& [scope, group, resource, verb] : grants_of(*role, kind)) {
      if (group == "" && resource == "secrets") {
        EXPECT_EQ(verb, "create") << kind;
      }
    }
  }
}

TEST(Rbac, BindingsBindTheRolesToTheControllersServiceAccount) {
  const auto objects = rendered_defaults();
  for (const auto& [binding, role] :
       {std::pair{"ClusterRoleBinding", "ClusterRole"}, std::pair{"RoleBinding", "Role"}}) {
    const json* b = find_object(objects, binding, kReleaseName);
    ASSERT_NE(b, nullptr) << binding;
    EXPECT_EQ((*b)["roleRef"]["kind"], role);
    EXPECT_EQ((*b)["roleRef"]["name"], kReleaseName);
    ASSERT_EQ((*b)["subjects"].size(), 1u);
    EXPECT_EQ((*b)["subjects"][0]["kind"], "ServiceAccount");
    EXPECT_EQ((*b)["subjects"][0]["name"], kReleaseName);
    EXPECT_EQ((*b)["subjects"][0]["namespace"], kReleaseNamespace);
  }
  const json* deployment = find_object(objects, "Deployment", kReleaseName);
  ASSERT_NE(deployment, nullptr);
  EXPECT_EQ((*deployment)["spec"]["template"]["spec"]["serviceAccountName"], kReleaseName);
  EXPECT_NE(find_object(objects, "ServiceAccount", kReleaseName), nullptr);
}

// Each call listed in api_calls.yaml still appears in the code it cites, so deleting a call
// without updating the list (and so the RBAC) fails here.
TEST(Rbac, ApiCallsListCitesCodeThatStillMakesTheCalls) {
  const json calls = must(read_yaml(kRepo / "controller" / "api_calls.yaml"));
  ASSERT_TRUE(calls.contains("calls"));
  for (const auto& c : calls["calls"]) {
    ASSERT_TRUE(c.contains("evidence")) << c.dump();
    for (const auto& e : c["evidence"]) {
      auto text = read_text(kRepo / e["file"].get<std::string>());
      ASSERT_TRUE(text) << text.error().message;
      EXPECT_THAT(*text, HasSubstr(e["contains"].get<std::string>()))
          << c["resource"] << ": " << e["file"] << " no longer contains the cited call";
    }
  }
}

// ----- the Deployment -----

std::vector<std::string> controller_args(const std::vector<json>& objects) {
  const json* d = find_object(objects, "Deployment", kReleaseName);
  if (d == nullptr) return {};
  return (*d)["spec"]["template"]["spec"]["containers"][0]["args"].get<std::vector<std::string>>();
}

TEST(Deployment, IsHardenedAndProbesHealthEndpoints) {
  const auto objects = rendered_defaults();
  const json* d = find_object(objects, "Deployment", kReleaseName);
  ASSERT_NE(d, nullptr);
  const json& pod = (*d)["spec"]["template"]["spec"];
  const json& c = pod["containers"][0];
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"], "health");
  EXPECT_EQ(c["image"], "ghcr.io/depl-dev/depl-controller:0.1.0");
  EXPECT_EQ(c["env"][0]["name"], "POD_NAMESPACE");
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace");
  EXPECT_TRUE(c["resources"]["limits"].contains("memory"));
  std::map<std::string, int> ports;
  for (const auto& p : c["ports"]) ports[p["name"]] = p["containerPort"];
  EXPECT_EQ(ports,
            (std::map<std::string, int>{{"health", 8082}, {"metrics", 8080}, {"progress", 8081}}));
  EXPECT_THAT(controller_args(objects),
              ElementsAre("--metrics-addr=:8080", "--progress-addr=:8081", "--health-addr=:8082",
                          "--progress-advertise-url=http://depl-operator.depl-system.svc:8081",
                          "--workers=4", "--log-format=text", "--solve-time-budget=10s",
                          "--solve-memory-budget=96Mi", "--spot-capacity-wait=10m"));
}

TEST(Deployment, LeaderElectsOnlyWithMoreThanOneReplica) {
  auto one = controller_args(rendered_defaults());
  EXPECT_THAT(one, ::testing::Not(::testing::Contains("--leader-elect")));
  auto three = with_values([](json& v) { v["replicas"] = 3; });
  EXPECT_THAT(controller_args(three), ::testing::Contains("--leader-elect"));
  EXPECT_EQ((*find_object(three, "Deployment", kReleaseName))["spec"]["replicas"], 3);
  auto watch = with_values([](json& v) { v["watchNamespace"] = "ml"; });
  EXPECT_THAT(controller_args(watch), ::testing::Contains("--namespace=ml"));
}

TEST(Service, ExposesMetricsAndTheAdvertisedProgressPort) {
  const auto objects = rendered_defaults();
  const json* s = find_object(objects, "Service", kReleaseName);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*s)["metadata"]["namespace"], kReleaseNamespace);
  std::map<std::string, int> ports;
  for (const auto& p : (*s)["spec"]["ports"]) ports[p["name"]] = p["port"];
  EXPECT_EQ(ports, (std::map<std::string, int>{{"metrics", 8080}, {"progress", 8081}}));
  const json* d = find_object(objects, "Deployment", kReleaseName);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ((*s)["spec"]["selector"], (*d)["spec"]["template"]["metadata"]["labels"]);
}

TEST(ServiceMonitor, RenderedOnlyWhenEnabled) {
  EXPECT_EQ(find_object(rendered_defaults(), "ServiceMonitor", kReleaseName), nullptr);
  auto on = with_values([](json& v) { v["serviceMonitor"]["enabled"] = true; });
  const json* m = find_object(on, "ServiceMonitor", kReleaseName);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["spec"]["endpoints"][0]["port"], "metrics");
  EXPECT_EQ((*m)["spec"]["endpoints"][0]["interval"], "30s");
}

// The controller's own parser reads the rendered catalog without complaint.
TEST(GpuCatalog, RenderedConfigMapReadsWithTheControllersParser) {
  const auto objects = rendered_defaults();
  const json* cm = find_object(objects, "ConfigMap", "depl-gpu-catalog");
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ((*cm)["metadata"]["namespace"], kReleaseNamespace);
  std::vector<std::string> problems;
  const auto catalog = controller::parse_gpu_catalog(*cm, problems);
  EXPECT_THAT(problems, IsEmpty());
  for (const char* gpu : {"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3",
                          "NVIDIA-L4", "Tesla-T4", "Tesla-V100-SXM2-16GB", "NVIDIA-A10G"}) {
    ASSERT_TRUE(catalog.contains(gpu)) << gpu;
    EXPECT_GT(catalog.at(gpu).gflops, 0) << gpu;
    EXPECT_GT(catalog.at(gpu).price_per_gpu_hour, 0) << gpu;
  }
  EXPECT_DOUBLE_EQ(catalog.at("NVIDIA-H100-80GB-HBM3").gflops, 400000);
  auto cheap = with_values([](json& v) { v["gpuCatalog"]["Tesla-T4"]["pricePerGpuHour"] = 0.11; });
  const auto overridden =
      controller::parse_gpu_catalog(*find_object(cheap, "ConfigMap", "depl-gpu-catalog"), problems);
  EXPECT_DOUBLE_EQ(overridden.at("Tesla-T4").price_per_gpu_hour, 0.11);
}

// The rendered depl-job-policy reads with the controller's own parser: by default no
// ServiceAccount, no toleration, any image; what the values list is what the controller allows.
TEST(JobPolicy, RenderedConfigMapReadsWithTheControllersParser) {
  const auto objects = rendered_defaults();
  const json* cm = find_object(objects, "ConfigMap", controller::kJobPolicyConfigMap);
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ((*cm)["metadata"]["namespace"], kReleaseNamespace);
  auto defaults = controller::parse_job_policy(*cm);
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_THAT(defaults->service_accounts, IsEmpty());
  EXPECT_THAT(defaults->tolerations, IsEmpty());
  EXPECT_THAT(defaults->images, ElementsAre("*"));
  auto custom = with_values([](json& v) {
    v["jobPolicy"]["serviceAccounts"] = {"trainer"};
    v["jobPolicy"]["tolerations"] = {{{"key", "spot"}, {"operator", "Exists"}}};
    v["jobPolicy"]["images"] = {"registry.example.com/ml/*"};
  });
  const json* custom_cm = find_object(custom, "ConfigMap", controller::kJobPolicyConfigMap);
  ASSERT_NE(custom_cm, nullptr);
  auto policy = controller::parse_job_policy(*custom_cm);
  ASSERT_TRUE(policy) << policy.error().message;
  EXPECT_THAT(policy->service_accounts, ElementsAre("trainer"));
  ASSERT_EQ(policy->tolerations.size(), 1u);
  EXPECT_EQ(policy->tolerations[0]["key"], "spot");
  EXPECT_THAT(policy->images, ElementsAre("registry.example.com/ml/*"));
}

// The NetworkPolicy admits worker pods to the progress port and the configured peers to the
// metrics port, and nothing to the health port (the kubelet's probes come from the node).
TEST(NetworkPolicy, AdmitsWorkersToProgressAndTheConfiguredPeersToMetrics) {
  const auto objects = rendered_defaults();
  const json* np = find_object(objects, "NetworkPolicy", kReleaseName);
  ASSERT_NE(np, nullptr);
  const json* d = find_object(objects, "Deployment", kReleaseName);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ((*np)["spec"]["podSelector"]["matchLabels"],
            (*d)["spec"]["template"]["metadata"]["labels"]);
  EXPECT_EQ((*np)["spec"]["policyTypes"], json::array({"Ingress"}));
  std::map<int, json> from_by_port;
  for (const auto& rule : (*np)["spec"]["ingress"]) {
    for (const auto& port : rule["ports"]) from_by_port[port["port"].get<int>()] = rule["from"];
  }
  ASSERT_EQ(from_by_port.size(), 2u) << (*np).dump(1);
  EXPECT_FALSE(from_by_port.contains(8082)) << "the health port admits only the node";
  const json& workers = from_by_port[8081];
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0]["namespaceSelector"], json::object());
  EXPECT_EQ(workers[0]["podSelector"]["matchExpressions"][0]["key"], "depl.dev/job");
  EXPECT_EQ(workers[0]["podSelector"]["matchExpressions"][0]["operator"], "Exists");
  EXPECT_EQ(from_by_port[8080], json::array({{{"namespaceSelector", json::object()}}}));

  // An empty metricsFrom admits no one to metrics (an empty `from` would admit everyone).
  auto closed = with_values([](json& v) { v["networkPolicy"]["metricsFrom"] = json::array(); });
  const json* shut = find_object(closed, "NetworkPolicy", kReleaseName);
  ASSERT_NE(shut, nullptr);
  EXPECT_EQ((*shut)["spec"]["ingress"].size(), 1u);
  auto off = with_values([](json& v) { v["networkPolicy"]["enabled"] = false; });
  EXPECT_EQ(find_object(off, "NetworkPolicy", kReleaseName), nullptr);
}

TEST(Notes, RenderAndTellTheUserWhatToDoNext) {
  auto ctx = default_context();
  ASSERT_TRUE(ctx) << ctx.error().message;
  auto notes = read_text(kChart / "templates" / "NOTES.txt");
  ASSERT_TRUE(notes) << notes.error().message;
  auto rendered = render_template(*notes, *ctx);
  ASSERT_TRUE(rendered) << rendered.error().message;
  EXPECT_THAT(*rendered,
              HasSubstr("kubectl -n depl-system rollout status deployment/depl-operator"));
  EXPECT_THAT(*rendered, HasSubstr("kubectl apply -f examples/quickstart/job.yaml"));
  EXPECT_THAT(*rendered, HasSubstr("http://depl-operator.depl-system.svc:8080/metrics"));
}

// ----- values -----

json values_schema() {
  auto text = read_text(kChart / "values.schema.json");
  if (!text) return json();
  return json::parse(*text);
}

TEST(ValuesSchema, AcceptsTheDefaultValues) {
  EXPECT_THAT(schema_errors(must(read_yaml(kChart / "values.yaml")), values_schema(),
                            SchemaDialect::JsonSchema),
              IsEmpty());
}

TEST(ValuesSchema, RejectsBrokenValuesNamingTheField) {
  const json defaults = must(read_yaml(kChart / "values.yaml"));
  const json schema = values_schema();
  struct Case {
    std::string what;
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"no replicas", [](json& v) { v["replicas"] = 0; }, "replicas: 0 must be at least 1"},
      {"fractional workers", [](json& v) { v["workers"] = 1.5; },
       "workers: must be of type integer"},
      {"too many workers", [](json& v) { v["workers"] = 65; }, "workers: 65 must be at most 64"},
      {"log format", [](json& v) { v["logFormat"] = "xml"; }, "logFormat: \"xml\" is not one of"},
      {"pull policy", [](json& v) { v["image"]["pullPolicy"] = "Sometimes"; }, "image.pullPolicy"},
      {"numeric tag", [](json& v) { v["image"]["tag"] = 1; }, "image.tag: must be of type string"},
      {"typo", [](json& v) { v["replica"] = 2; }, "replica: unknown field"},
      {"missing image", [](json& v) { v.erase("image"); }, "image: required"},
      {"port range", [](json& v) { v["ports"]["metrics"] = 70000; },
       "ports.metrics: 70000 must be at most 65535"},
      {"gpu without gflops",
       [](json& v) {
         v["gpuCatalog"]["X"] = {{"pricePerGpuHour", 1}};
       },
       "gpuCatalog.X.gflops: required"},
      {"zero gflops", [](json& v) { v["gpuCatalog"]["Tesla-T4"]["gflops"] = 0; },
       "gpuCatalog.Tesla-T4.gflops: 0 must be greater than 0"},
      {"monitor flag", [](json& v) { v["serviceMonitor"]["enabled"] = "yes"; },
       "serviceMonitor.enabled: must be of type boolean"},
      {"time budget without a unit", [](json& v) { v["solveBudget"]["time"] = "10"; },
       "solveBudget.time: \"10\" does not match"},
      {"time budget in words", [](json& v) { v["solveBudget"]["time"] = "10 seconds"; },
       "solveBudget.time: \"10 seconds\" does not match"},
      {"memory budget unit", [](json& v) { v["solveBudget"]["memory"] = "96MB"; },
       "solveBudget.memory: \"96MB\" does not match"},
      {"memory budget as a number", [](json& v) { v["solveBudget"]["memory"] = 100663296; },
       "solveBudget.memory: must be of type string"},
      {"budget typo", [](json& v) { v["solveBudget"]["timeout"] = "10s"; },
       "solveBudget.timeout: unknown field"},
      {"spot wait without a unit", [](json& v) { v["spotCapacityWait"] = "600"; },
       "spotCapacityWait: \"600\" does not match"},
      {"spot wait as a number", [](json& v) { v["spotCapacityWait"] = 600; },
       "spotCapacityWait: must be of type string"},
  };
  for (const auto& c : cases) {
    json values = defaults;
    c.edit(values);
    const auto errors = schema_errors(values, schema, SchemaDialect::JsonSchema);
    EXPECT_THAT(errors, ::testing::Contains(HasSubstr(c.expected))) << c.what;
  }
}

// The solver's budget reaches the controller's flags; the schema takes only what its parsers do
// (controller_main.cpp: a duration of ms, s, m or h; a quantity).
TEST(Deployment, PassesTheSolveBudget) {
  auto given = with_values([](json& v) {
    v["solveBudget"] = {{"time", "1.5m"}, {"memory", "256Mi"}};
  });
  EXPECT_THAT(controller_args(given),
              ::testing::IsSupersetOf({"--solve-time-budget=1.5m", "--solve-memory-budget=256Mi"}));
  const json defaults = must(read_yaml(kChart / "values.yaml"));
  for (const char* time : {"0s", "500ms", "10s", "1.5m", "2h"}) {
    json values = defaults;
    values["solveBudget"]["time"] = time;
    EXPECT_THAT(schema_errors(values, values_schema(), SchemaDialect::JsonSchema), IsEmpty())
        << time;
  }
  for (const char* memory : {"0", "96Mi", "1Gi", "500M", "1.5Gi"}) {
    json values = defaults;
    values["solveBudget"]["memory"] = memory;
    EXPECT_THAT(schema_errors(values, values_schema(), SchemaDialect::JsonSchema), IsEmpty())
        << memory;
  }
}

// The spot capacity wait reaches --spot-capacity-wait in the forms its parser takes
// (controller_main.cpp: a duration of ms, s, m or h).
TEST(Deployment, PassesTheSpotCapacityWait) {
  auto given = with_values([](json& v) { v["spotCapacityWait"] = "90s"; });
  EXPECT_THAT(controller_args(given), ::testing::Contains("--spot-capacity-wait=90s"));
  const json defaults = must(read_yaml(kChart / "values.yaml"));
  for (const char* wait : {"0s", "90s", "10m", "1.5h"}) {
    json values = defaults;
    values["spotCapacityWait"] = wait;
    EXPECT_THAT(schema_errors(values, values_schema(), SchemaDialect::JsonSchema), IsEmpty())
        << wait;
  }
}

// Every `.Values.x.y` a template mentions is a key of values.yaml (rendering would also fail,
// but only for the branches the default values take).
TEST(ValuesSchema, TemplatesReferenceOnlyDefinedValues) {
  const json values = must(read_yaml(kChart / "values.yaml"));
  int references = 0;
  auto templates = files_in(kChart / "templates", ".yaml");
  templates.push_back(kChart / "templates" / "NOTES.txt");
  for (const auto& path : templates) {
    const std::string text = read_text(path).value_or("");
    for (std::size_t at = text.find(".Values."); at != std::string::npos;
         at = text.find(".Values.", at + 1)) {
      std::size_t end = at + 8;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                   text[end] == '.' || text[end] == '_'))
        ++end;
      const std::string ref = text.substr(at + 8, end - at - 8);
      const json* v = &values;
      std::size_t start = 0;
      while (start <= ref.size()) {
        const auto dot = ref.find('.', start);
        const std::string key = ref.substr(start, dot == std::string::npos ? dot : dot - start);
        ASSERT_TRUE(v->is_object() && v->contains(key))
            << path.filename() << ": .Values." << ref << " is not in values.yaml";
        v = &(*v)[key];
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      ++references;
    }
  }
  EXPECT_GT(references, 10);
}

// ----- examples under the CRD schema -----

json crd_schema() {
  const json crd = must(read_yaml(kRepo / "crds" / "depl.dev_dependabletrainingjobs.yaml"));
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

TEST(Examples, EveryJobIsValidUnderTheCrdSchema) {
  const json schema = crd_schema();
  int jobs = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kRepo / "examples")) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    for (const auto& doc : must(read_yaml_documents(e.path()))) {
      if (doc.value("kind", "") != "DependableTrainingJob") continue;
      EXPECT_EQ(doc["apiVersion"], "depl.dev/v1alpha1") << e.path();
      EXPECT_THAT(schema_errors(doc, schema, SchemaDialect::Structural), IsEmpty()) << e.path();
      ++jobs;
    }
  }
  EXPECT_GE(jobs, 1);
}

TEST(Examples, SchemaCheckRejectsBrokenJobs) {
  const json schema = crd_schema();
  const json job = must(read_yaml(kRepo / "examples" / "quickstart" / "job.yaml"));
  struct Case {
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["spec"]["target"]["probability"] = 1.5; },
       "spec.target.probability: 1.5 must be at most 0.9999"},
      {[](json& j) { j["spec"]["target"]["loss"] = 0; },
       "spec.target.loss: 0 must be greater than 0"},
      {[](json& j) { j["spec"]["target"]["guarantee"] = "Always"; },
       "spec.target.guarantee: \"Always\" is not one of"},
      {[](json& j) { j["spec"].erase("models"); }, "spec.models: required"},
      {[](json& j) { j["spec"]["models"][0]["lossProfile"]["decayPerEpoch"] = 1; },
       "spec.models[0].lossProfile.decayPerEpoch: 1 must be less than 1"},
      {[](json& j) { j["spec"]["datasets"][0]["samples"] = "many"; },
       "spec.datasets[0].samples: must be of type integer"},
      {[](json& j) { j["spec"]["datasets"][0]["sizeBytes"] = 1.5; },
       "spec.datasets[0].sizeBytes: must be an integer or a string"},
      {[](json& j) { j["spec"]["trainng"] = json::object(); }, "spec.trainng: unknown field"},
      {[](json& j) { j["spec"]["datasets"] = json::array(); },
       "spec.datasets: needs at least 1 item"},
  };
  for (const auto& c : cases) {
    json broken = job;
    c.edit(broken);
    EXPECT_THAT(schema_errors(broken, schema, SchemaDialect::Structural),
                ::testing::Contains(HasSubstr(c.expected)));
  }
}

}  // namespace
}  // namespace depl::packaging
