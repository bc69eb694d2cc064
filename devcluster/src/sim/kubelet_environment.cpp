// Container environments: the base variables, envFrom, env with values, the downward API and
// keys of Secrets and ConfigMaps read from the API.
#include "sim/kubelet_impl.hpp"

#include "depl/common/base64.hpp"

namespace depl::devcluster {

using json = nlohmann::json;

std::string expand_variables(const std::string& text,
                             const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size()) {
      if (text[i + 1] == '$') {
        out.push_back('$');
        ++i;
        continue;
      }
      if (text[i + 1] == '(') {
        const auto close = text.find(')', i + 2);
        if (close != std::string::npos) {
          const std::string name = text.substr(i + 2, close - i - 2);
          if (auto it = vars.find(name); it != vars.end()) {
            out += it->second;
            i = close;
            continue;
          }
        }
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

// Environment of one container: a minimal base, then envFrom, then env (later wins).
Expected<std::vector<std::string>> Kubelet::Impl::container_env(
    const PodRun& run, const json& spec, std::map<std::string, std::string>& vars) {
  const char* path = std::getenv("PATH");
  vars["PATH"] = path ? path : "/usr/local/bin:/usr/bin:/bin";
  vars["HOME"] = run.dir;
  vars["HOSTNAME"] = run.name;
  for (const auto& [k, v] : options.extra_env) vars[k] = v;
  auto lookup = [&](const std::string& plural, const std::string& name) -> std::optional<json> {
    auto r = store.get(ResourceRef{"", "v1", plural, run.ns, name, ""});
    if (!r.ok()) return std::nullopt;
    return r.body;
  };
  auto data_of = [](const json& object, bool secret) {
    std::map<std::string, std::string> out;
    if (object.contains("data") && object["data"].is_object()) {
      for (const auto& [k, v] : object["data"].items()) {
        if (v.is_string())
          out[k] = secret ? depl::base64_decode(v.get<std::string>()).value_or("")
                          : v.get<std::string>();
      }
    }
    if (object.contains("stringData") && object["stringData"].is_object()) {
      for (const auto& [k, v] : object["stringData"].items()) {
        if (v.is_string()) out[k] = v.get<std::string>();
      }
    }
    return out;
  };
  if (spec.contains("envFrom") && spec["envFrom"].is_array()) {
    for (const auto& source : spec["envFrom"]) {
      const std::string prefix = source.value("prefix", "");
      for (const char* kind : {"configMapRef", "secretRef"}) {
        if (!source.contains(kind)) continue;
        const bool secret = std::string(kind) == "secretRef";
        const std::string name = source[kind].value("name", "");
        auto object = lookup(secret ? "secrets" : "configmaps", name);
        if (!object) {
          if (source[kind].value("optional", false)) continue;
          return error(std::string(secret ? "secret" : "configmap") + " \"" + name +
                       "\" not found");
        }
        for (const auto& [k, v] : data_of(*object, secret)) vars[prefix + k] = v;
      }
    }
  }
  if (spec.contains("env") && spec["env"].is_array()) {
    for (const auto& e : spec["env"]) {
      const std::string name = e.value("name", "");
      if (name.empty()) continue;
      if (e.contains("value")) {
        vars[name] =
            expand_variables(e["value"].is_string() ? e["value"].get<std::string>() : "", vars);
        continue;
      }
      if (!e.contains("valueFrom")) {
        vars[name] = "";
        continue;
      }
      const json& from = e["valueFrom"];
      if (from.contains("fieldRef")) {
        const std::string field = from["fieldRef"].value("fieldPath", "");
        const json& meta = (*run.pod)["metadata"];
        if (field == "metadata.name") {
          vars[name] = run.name;
        } else if (field == "metadata.namespace") {
          vars[name] = run.ns;
        } else if (field == "metadata.uid") {
          vars[name] = run.uid;
        } else if (field == "status.podIP") {
          vars[name] = run.ip;
        } else if (field == "status.hostIP") {
          vars[name] = "127.0.0.1";
        } else if (field == "spec.nodeName") {
          vars[name] = run.node;
        } else if (field == "spec.serviceAccountName") {
          vars[name] = (*run.pod)["spec"].value("serviceAccountName", "default");
        } else if (field.rfind("metadata.labels['", 0) == 0 ||
                   field.rfind("metadata.annotations['", 0) == 0) {
          const bool labels = field[9] == 'l';
          const size_t start = field.find('\'') + 1;
          const std::string key = field.substr(start, field.rfind('\'') - start);
          const char* map_name = labels ? "labels" : "annotations";
          vars[name] = meta.contains(map_name) && meta[map_name].contains(key)
                           ? meta[map_name][key].get<std::string>()
                           : "";
        } else {
          return error("unsupported fieldRef " + field + " in env " + name);
        }
      } else if (from.contains("secretKeyRef") || from.contains("configMapKeyRef")) {
        const bool secret = from.contains("secretKeyRef");
        const json& ref = secret ? from["secretKeyRef"] : from["configMapKeyRef"];
        const std::string object_name = ref.value("name", "");
        const std::string key = ref.value("key", "");
        auto object = lookup(secret ? "secrets" : "configmaps", object_name);
        const auto data = object ? data_of(*object, secret) : std::map<std::string, std::string>();
        auto value = data.find(key);
        if (!object || value == data.end()) {
          if (ref.value("optional", false)) continue;
          if (!object) {
            return error(std::string(secret ? "secret" : "configmap") + " \"" + object_name +
                         "\" not found");
          }
          return error("couldn't find key " + key + " in " + (secret ? "Secret " : "ConfigMap ") +
                       run.ns + "/" + object_name);
        }
        vars[name] = value->second;
      } else {
        vars[name] = "";
      }
    }
  }
  std::vector<std::string> env;
  for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
  return env;
}

}  // namespace depl::devcluster
