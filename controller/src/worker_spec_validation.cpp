#include "depl/controller/worker_spec_validation.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "depl/common/json_fields.hpp"
#include "depl/common/kubernetes_names.hpp"
#include "depl/common/quantity.hpp"
#include "depl/controller/worker_pods.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

// How a value is shown after "got": strings quoted, containers by kind.
std::string describe(const json& value) {
  if (value.is_string()) return json(value).dump(-1, ' ', false, json::error_handler_t::replace);
  if (value.is_object()) return "a mapping";
  if (value.is_array()) return "a list";
  if (value.is_null()) return "nothing";
  return value.dump();
}

class Problems {
 public:
  void add(const std::string& path, const std::string& what) {
    messages_.push_back(fmt::format("{}: {}", path, what));
  }
  std::vector<std::string> take() { return std::move(messages_); }

 private:
  std::vector<std::string> messages_;
};

// The path of a map entry, as Kubernetes writes it when the key is not a plain word:
// "limits.memory", "limits[example.com/fpga]".
std::string key_path(const std::string& map_path, const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
  return plain ? fmt::format("{}.{}", map_path, key) : fmt::format("{}[{}]", map_path, key);
}

std::string item_path(const std::string& list_path, std::size_t index) {
  return fmt::format("{}[{}]", list_path, index);
}

void unknown_fields(const json& object, const std::string& path,
                    std::initializer_list<std::string_view> known, Problems& p) {
  std::string allowed;
  for (auto k : known) allowed += (allowed.empty() ? "" : ", ") + std::string(k);
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      p.add(key_path(path, key), fmt::format("unknown field (allowed: {})", allowed));
  }
}

constexpr const char* kSubdomainRule =
    "a lowercase RFC 1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending "
    "with a letter or digit, at most 253 characters)";
constexpr const char* kQualifiedNameRule =
    "an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', "
    "starting and ending with a letter or digit";

// A string member, reporting a value of another kind.
std::optional<std::string> string_member(const json& object, const char* key,
                                         const std::string& path, Problems& p) {
  const json* value = json_find_non_null(object, key);
  if (!value) return std::nullopt;
  if (!value->is_string()) {
    p.add(key_path(path, key), fmt::format("must be a string, got {}", describe(*value)));
    return std::nullopt;
  }
  return value->get<std::string>();
}

// ---- models[].image, resources, env ----------------------------------------------------------

void check_image(const json& model, const std::string& path, Problems& p) {
  const json* image = json_find_non_null(model, "image");
  if (!image || !image->is_string()) return;  // the solver reports it
  const std::string& text = image->get_ref<const std::string&>();
  if (!text.empty() && (std::isspace(static_cast<unsigned char>(text.front())) ||
                        std::isspace(static_cast<unsigned char>(text.back())))) {
    p.add(path + ".image", "must not have leading or trailing whitespace");
  }
}

// Why `name` cannot be a container resource, or nullopt.
std::optional<std::string> resource_name_problem(const std::string& name) {
  if (name.find('/') == std::string::npos) {
    if (is_standard_container_resource(name)) return std::nullopt;
    return "is not a container resource: use cpu, memory, ephemeral-storage, hugepages-<size> or "
           "a domain-prefixed name such as example.com/device";
  }
  if (!is_qualified_name(name)) {
    return fmt::format("is not a valid resource name: it must be {}", kQualifiedNameRule);
  }
  return std::nullopt;
}

struct Quantities {
  std::map<std::string, double> amount;
  std::map<std::string, std::string> shown;
};

Quantities read_quantities(const json& resources, const char* which, const std::string& path,
                           Problems& p) {
  Quantities out;
  const json* list = json_find_non_null(resources, which);
  if (!list) return out;
  const std::string list_path = fmt::format("{}.{}", path, which);
  if (!list->is_object()) {
    p.add(list_path, fmt::format("must be a mapping of resource names to quantities, got {}",
                                 describe(*list)));
    return out;
  }
  for (const auto& [name, value] : list->items()) {
    const std::string field = key_path(list_path, name);
    if (name == "nvidia.com/gpu") {
      p.add(field, "is set by the operator from the model's gpusPerWorker; remove it");
      continue;
    }
    if (auto problem = resource_name_problem(name)) {
      p.add(field, *problem);
      continue;
    }
    double amount = 0;
    if (value.is_number()) {
      amount = value.get<double>();
    } else if (value.is_string()) {
      auto parsed = parse_quantity(value.get<std::string>());
      if (!parsed) {
        p.add(field, parsed.error().message);
        continue;
      }
      amount = *parsed;
    } else {
      p.add(field, fmt::format("must be a quantity such as 500m or 4Gi, got {}", describe(value)));
      continue;
    }
    if (amount < 0) {
      p.add(field, fmt::format("must be >= 0, got {}", describe(value)));
      continue;
    }
    out.amount[name] = amount;
    out.shown[name] = describe(value);
  }
  return out;
}

void check_resources(const json& resources, const std::string& path, Problems& p) {
  if (!resources.is_object()) {
    p.add(path,
          fmt::format("must be a mapping with limits and requests, got {}", describe(resources)));
    return;
  }
  unknown_fields(resources, path, {"limits", "requests"}, p);
  const Quantities limits = read_quantities(resources, "limits", path, p);
  const Quantities requests = read_quantities(resources, "requests", path, p);
  for (const auto& [name, request] : requests.amount) {
    auto limit = limits.amount.find(name);
    if (limit != limits.amount.end() && request > limit->second) {
      p.add(key_path(path + ".requests", name),
            fmt::format("must be <= the limit ({}), got {}", limits.shown.at(name),
                        requests.shown.at(name)));
    }
  }
}

void check_env(const json& env, const std::string& path, Problems& p) {
  if (!env.is_array()) {
    p.add(path, fmt::format("must be a list of {{name, value}}, got {}", describe(env)));
    return;
  }
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < env.size(); ++i) {
    const json& var = env[i];
    const std::string var_path = item_path(path, i);
    if (!var.is_object()) {
      p.add(var_path, fmt::format("must be a mapping with name and value, got {}", describe(var)));
      continue;
    }
    unknown_fields(var, var_path, {"name", "value"}, p);
    (void)string_member(var, "value", var_path, p);
    const json* name_value = json_find_non_null(var, "name");
    if (!name_value) {
      p.add(var_path + ".name", "is required");
      continue;
    }
    const auto name = string_member(var, "name", var_path, p);
    if (!name) continue;
    const std::string name_path = var_path + ".name";
    if (name->empty()) {
      p.add(name_path, "must not be empty");
    } else if (!is_env_var_name(*name)) {
      p.add(name_path, fmt::format("{} is not a valid environment variable name: use letters, "
                                   "digits, '_', '-' or '.', not starting with a digit",
                                   describe(*name)));
    } else if (std::find(kContractEnvNames.begin(), kContractEnvNames.end(), *name) !=
               kContractEnvNames.end()) {
      p.add(name_path, fmt::format("{} is set by the operator (the worker contract, "
                                   "docs/worker-contract.md); use another name",
                                   describe(*name)));
    } else if (auto earlier = seen.find(*name); earlier != seen.end()) {
      p.add(name_path, fmt::format("{} is already set by {}", describe(*name),
                                   item_path(path, earlier->second)));
    } else {
      seen.emplace(*name, i);
    }
  }
}

// ---- podTemplate -----------------------------------------------------------------------------

void check_node_selector(const json& selector, const std::string& path, Problems& p) {
  if (!selector.is_object()) {
    p.add(path,
          fmt::format("must be a mapping of label keys to values, got {}", describe(selector)));
    return;
  }
  for (const auto& [key, value] : selector.items()) {
    const std::string field = key_path(path, key);
    if (!is_qualified_name(key)) {
      p.add(field, fmt::format("is not a valid label key: it must be {}", kQualifiedNameRule));
    }
    if (!value.is_string()) {
      p.add(field, fmt::format("must be a string, got {}", describe(value)));
    } else if (!is_label_value(value.get<std::string>())) {
      p.add(field, fmt::format("{} is not a valid label value: at most 63 letters, digits, '-', "
                               "'_' or '.', starting and ending with a letter or digit",
                               describe(value)));
    }
  }
}

void check_toleration(const json& t, const std::string& path, Problems& p) {
  if (!t.is_object()) {
    p.add(path, fmt::format("must be a mapping, got {}", describe(t)));
    return;
  }
  unknown_fields(t, path, {"key", "operator", "value", "effect", "tolerationSeconds"}, p);
  const std::string key = string_member(t, "key", path, p).value_or("");
  const std::string op = string_member(t, "operator", path, p).value_or("");
  const std::string value = string_member(t, "value", path, p).value_or("");
  const std::string effect = string_member(t, "effect", path, p).value_or("");
  if (!key.empty() && !is_qualified_name(key)) {
    p.add(path + ".key",
          fmt::format("{} is not a valid key: it must be {}", describe(key), kQualifiedNameRule));
  }
  if (op != "" && op != "Exists" && op != "Equal") {
    p.add(path + ".operator", fmt::format("must be Exists or Equal, got {}", describe(op)));
  }
  if (key.empty() && op != "Exists") {
    p.add(path + ".operator", "must be Exists when key is empty (to tolerate every taint)");
  }
  if (op == "Exists" && !value.empty()) {
    p.add(path + ".value", "must be empty when operator is Exists");
  }
  if (effect != "" && effect != "NoSchedule" && effect != "PreferNoSchedule" &&
      effect != "NoExecute") {
    p.add(path + ".effect", fmt::format("must be NoSchedule, PreferNoSchedule or NoExecute, got {}",
                                        describe(effect)));
  }
  if (const json* seconds = json_find_non_null(t, "tolerationSeconds")) {
    if (!seconds->is_number_integer()) {
      p.add(path + ".tolerationSeconds",
            fmt::format("must be a whole number of seconds, got {}", describe(*seconds)));
    } else if (effect != "NoExecute") {
      p.add(path + ".tolerationSeconds", "may only be set when effect is NoExecute");
    }
  }
}

void check_pod_template(const json& pt, const std::string& path, Problems& p) {
  if (!pt.is_object()) {
    p.add(path, fmt::format("must be a mapping, got {}", describe(pt)));
    return;
  }
  unknown_fields(pt, path, {"serviceAccountName", "nodeSelector", "tolerations"}, p);
  if (auto sa = string_member(pt, "serviceAccountName", path, p); sa && !sa->empty()) {
    if (!is_dns1123_subdomain(*sa)) {
      p.add(path + ".serviceAccountName",
            fmt::format("{} is not a valid ServiceAccount name: it must be {}", describe(*sa),
                        kSubdomainRule));
    }
  }
  if (const json* selector = json_find_non_null(pt, "nodeSelector")) {
    check_node_selector(*selector, path + ".nodeSelector", p);
  }
  if (const json* tolerations = json_find_non_null(pt, "tolerations")) {
    if (!tolerations->is_array()) {
      p.add(path + ".tolerations", fmt::format("must be a list, got {}", describe(*tolerations)));
    } else {
      for (std::size_t i = 0; i < tolerations->size(); ++i)
        check_toleration((*tolerations)[i], item_path(path + ".tolerations", i), p);
    }
  }
}

// ---- volumes ---------------------------------------------------------------------------------

// A PersistentVolumeClaim name; returns it when it is one.
std::optional<std::string> check_claim(const json& object, const std::string& path, Problems& p) {
  auto claim = string_member(object, "pvc", path, p);
  if (!claim) return std::nullopt;
  if (!is_dns1123_subdomain(*claim)) {
    p.add(path + ".pvc", fmt::format("{} is not a PersistentVolumeClaim name: it must be {}",
                                     describe(*claim), kSubdomainRule));
    return std::nullopt;
  }
  return claim;
}

void check_volumes(const json& spec, Problems& p) {
  std::map<std::string, std::string> dataset_mounts;  // mount path -> dataset path
  if (const json* datasets = json_find_non_null(spec, "datasets");
      datasets && datasets->is_array()) {
    for (std::size_t i = 0; i < datasets->size(); ++i) {
      const json* source = json_find_non_null((*datasets)[i], "source");
      if (!source || !source->is_object()) continue;  // the CRD's schema says what it must be
      const std::string path = item_path("spec.datasets", i);
      if (check_claim(*source, path + ".source", p)) {
        if (const json* name = json_find_non_null((*datasets)[i], "name");
            name && name->is_string())
          dataset_mounts.emplace("/data/" + name->get<std::string>(), path);
      }
      (void)string_member(*source, "uri", path + ".source", p);
    }
  }
  const json* checkpoint = json_find_non_null(spec, "checkpoint");
  if (!checkpoint || !checkpoint->is_object()) return;
  const bool has_claim = check_claim(*checkpoint, "spec.checkpoint", p).has_value();
  auto path = string_member(*checkpoint, "path", "spec.checkpoint", p);
  if (!path) return;
  if (path->empty() || path->front() != '/') {
    p.add("spec.checkpoint.path", fmt::format("must be an absolute path, got {}", describe(*path)));
    return;
  }
  std::string mount = *path;
  while (mount.size() > 1 && mount.back() == '/') mount.pop_back();
  if (auto clash = dataset_mounts.find(mount); has_claim && clash != dataset_mounts.end()) {
    p.add("spec.checkpoint.path", fmt::format("{} is where {} is mounted; choose another path",
                                              describe(*path), clash->second));
  }
}

// The job's name begins the names of what it makes: its rendezvous Services "<name>-p<phase>"
// (DNS-1035 labels: a letter first) and its worker pods "<name>-p<phase>-w<rank>", whose name is
// also their hostname (a DNS-1123 label of at most 63). The API server accepts names with dots or
// a leading digit for the job itself, so they are caught here rather than by a refused create.
// The length bound leaves room for the shortest suffix, "-p0-w0"; a plan with ten phases or ten
// workers needs more, which the API server's refusal reports (creation_rejection.hpp).
void check_job_name(const json& job, Problems& p) {
  const json* metadata = json_find_non_null(job, "metadata");
  if (!metadata || !metadata->is_object()) return;
  const json* name = json_find_non_null(*metadata, "name");
  if (!name || !name->is_string() || name->get_ref<const std::string&>().empty()) return;
  const std::string& n = name->get_ref<const std::string&>();
  constexpr std::size_t kLongest = 63 - std::char_traits<char>::length("-p0-w0");
  if (!has_dns1035_label_form(n)) {
    p.add("metadata.name",
          fmt::format("must start with a lowercase letter, hold only lowercase letters, digits and "
                      "'-', and not end with '-': it begins the names of the job's Services and "
                      "pods (<name>-p<phase>-w<rank>); got {}; create the job under another name",
                      json(n).dump()));
  } else if (n.size() > kLongest) {
    p.add("metadata.name",
          fmt::format("must be at most {} characters: the job's worker pods are named "
                      "<name>-p<phase>-w<rank>, at most 63; got {} characters; create the job "
                      "under another name",
                      kLongest, n.size()));
  }
}

}  // namespace

std::vector<std::string> validate_worker_fields(const json& job) {
  Problems p;
  const json* spec = json_find_non_null(job, "spec");
  if (!spec || !spec->is_object()) return {};
  check_job_name(job, p);
  if (const json* models = json_find_non_null(*spec, "models"); models && models->is_array()) {
    for (std::size_t i = 0; i < models->size(); ++i) {
      const json& model = (*models)[i];
      if (!model.is_object()) continue;
      const std::string path = item_path("spec.models", i);
      check_image(model, path, p);
      if (const json* resources = json_find_non_null(model, "resources"))
        check_resources(*resources, path + ".resources", p);
      if (const json* env = json_find_non_null(model, "env")) check_env(*env, path + ".env", p);
    }
  }
  if (const json* pod_template = json_find_non_null(*spec, "podTemplate"))
    check_pod_template(*pod_template, "spec.podTemplate", p);
  check_volumes(*spec, p);
  return p.take();
}

}  // namespace depl::controller
