// yaml-cpp's headers trip GCC 12's -Wdangling-pointer (a false positive inside yaml-cpp); clang
// has no such warning and rejects the unknown name.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include "depl/kube/kubeconfig.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "depl/common/base64.hpp"
#include "file_util.hpp"

namespace depl::kube {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reading state for one file: where we are, for error messages.
struct Reader {
  std::string path;
  std::string dir;
  std::optional<Error> failure;

  void fail(const std::string& where, const std::string& what) {
    if (!failure) failure = Error{path + ": " + where + ": " + what};
  }

  std::string string(const YAML::Node& map, const char* key, const std::string& where) {
    YAML::Node node = map[key];
    if (!node || node.IsNull()) return {};
    if (!node.IsScalar()) {
      fail(where + "." + key, "expected a string");
      return {};
    }
    return node.Scalar();
  }

  bool boolean(const YAML::Node& map, const char* key, const std::string& where) {
    std::string text = string(map, key, where);
    if (text.empty()) return false;
    if (text == "true" || text == "True" || text == "TRUE" || text == "yes" || text == "on")
      return true;
    if (text == "false" || text == "False" || text == "FALSE" || text == "no" || text == "off")
      return false;
    fail(where + "." + key, "expected true or false, got \"" + text + "\"");
    return false;
  }

  std::string path_field(const YAML::Node& map, const char* key, const std::string& where) {
    std::string value = string(map, key, where);
    return value.empty() ? value : resolve_relative(value, dir);
  }

  std::string data_field(const YAML::Node& map, const char* key, const std::string& where) {
    std::string value = string(map, key, where);
    if (value.empty()) return value;
    auto decoded = depl::base64_decode(value);
    if (!decoded) {
      fail(where + "." + key, "not valid base64");
      return {};
    }
    return *decoded;
  }
};

// Aliases make the YAML a graph that can be cyclic (`&a [*a]`) or expand exponentially (a
// "billion laughs"), so copying a subtree into JSON is bounded in depth and size.
constexpr int kMaxJsonDepth = 100;
constexpr std::size_t kMaxJsonValues = 10'000;  // a real extension has a handful of keys

struct JsonBudget {
  std::size_t values = 0;
  bool exceeded = false;
};

json to_json(const YAML::Node& node, JsonBudget& budget, int depth = 0) {
  if (budget.exceeded) return nullptr;
  if (depth > kMaxJsonDepth || ++budget.values > kMaxJsonValues) {
    budget.exceeded = true;
    return nullptr;
  }
  if (!node || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(to_json(item, budget, depth + 1));
    return out;
  }
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& item : node)
      out[item.first.Scalar()] = to_json(item.second, budget, depth + 1);
    return out;
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: always a string
  if (text == "true") return true;
  if (text == "false") return false;
  // Only text that can start a JSON number is tried as one: a failed parse builds an error
  // message, which across many aliased scalars took seconds.
  const char first = text.empty() ? '\0' : text.front();
  if (first == '-' || (first >= '0' && first <= '9')) {
    json number = json::parse(text, nullptr, false);
    if (!number.is_discarded() && number.is_number()) return number;
  }
  return text;
}

// Iterates a list of {name: ..., <kind>: {...}} entries.
template <typename Fn>
void for_each_named(Reader& reader, const YAML::Node& root, const char* list, const char* kind,
                    Fn&& fn) {
  YAML::Node entries = root[list];
  if (!entries || entries.IsNull()) return;
  if (!entries.IsSequence()) {
    reader.fail(list, "expected a list");
    return;
  }
  std::size_t index = 0;
  for (const auto& entry : entries) {
    std::string where = std::string(list) + "[" + std::to_string(index++) + "]";
    if (!entry.IsMap()) {
      reader.fail(where, "expected a mapping with name and " + std::string(kind));
      continue;
    }
    std::string name = reader.string(entry, "name", where);
    if (name.empty()) {
      reader.fail(where + ".name", "missing");
      continue;
    }
    where += " (\"" + name + "\")." + kind;
    YAML::Node body = entry[kind];
    if (!body || body.IsNull()) {
      fn(name, YAML::Node(YAML::NodeType::Map), where);
    } else if (!body.IsMap()) {
      reader.fail(where, "expected a mapping");
    } else {
      fn(name, body, where);
    }
  }
}

std::optional<ExecConfig> read_exec(Reader& reader, const YAML::Node& user,
                                    const std::string& where) {
  YAML::Node node = user["exec"];
  if (!node || node.IsNull()) return std::nullopt;
  const std::string at = where + ".exec";
  if (!node.IsMap()) {
    reader.fail(at, "expected a mapping");
    return std::nullopt;
  }
  ExecConfig exec;
  exec.command = reader.string(node, "command", at);
  // Only commands with a path separator are files relative to the kubeconfig; bare names are
  // looked up on PATH (as client-go does).
  if (exec.command.find('/') != std::string::npos)
    exec.command = resolve_relative(exec.command, reader.dir);
  exec.api_version = reader.string(node, "apiVersion", at);
  exec.install_hint = reader.string(node, "installHint", at);
  exec.provide_cluster_info = reader.boolean(node, "provideClusterInfo", at);
  exec.interactive_mode = reader.string(node, "interactiveMode", at);
  if (YAML::Node args = node["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) {
      reader.fail(at + ".args", "expected a list of strings");
    } else {
      for (const auto& arg : args) {
        if (!arg.IsScalar()) {
          reader.fail(at + ".args", "expected a list of strings");
          break;
        }
        exec.args.push_back(arg.Scalar());
      }
    }
  }
  if (YAML::Node env = node["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) {
      reader.fail(at + ".env", "expected a list of {name, value}");
    } else {
      std::size_t index = 0;
      for (const auto& item : env) {
        std::string item_at = at + ".env[" + std::to_string(index++) + "]";
        if (!item.IsMap()) {
          reader.fail(item_at, "expected {name, value}");
          continue;
        }
        std::string name = reader.string(item, "name", item_at);
        if (name.empty()) reader.fail(item_at + ".name", "missing");
        exec.env.emplace_back(name, reader.string(item, "value", item_at));
      }
    }
  }
  return exec;
}

}  // namespace

Expected<Kubeconfig> parse_kubeconfig(std::string_view text, std::string_view path) {
  Reader reader;
  reader.path = std::string(path);
  std::error_code ec;
  fs::path absolute =
      path.empty() ? fs::current_path(ec) / "kubeconfig" : fs::absolute(fs::path(path), ec);
  reader.dir = absolute.parent_path().string();

  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return error(reader.path + ":" + std::to_string(e.mark.line + 1) + ":" +
                 std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
  }
  Kubeconfig config;
  config.files.push_back(reader.path);
  if (!root || root.IsNull()) return config;
  if (!root.IsMap())
    return error(reader.path + ": expected a mapping at the top level (a kubeconfig)");

  config.current_context = reader.string(root, "current-context", "current-context");

  for_each_named(
      reader, root, "clusters", "cluster",
      [&](const std::string& name, const YAML::Node& body, const std::string& where) {
        if (config.clusters.count(name)) return;  // first entry wins
        KubeconfigCluster cluster;
        cluster.source_file = reader.path;
        cluster.server = reader.string(body, "server", where);
        cluster.certificate_authority = reader.path_field(body, "certificate-authority", where);
        cluster.certificate_authority_data =
            reader.data_field(body, "certificate-authority-data", where);
        cluster.insecure_skip_tls_verify = reader.boolean(body, "insecure-skip-tls-verify", where);
        cluster.tls_server_name = reader.string(body, "tls-server-name", where);
        cluster.proxy_url = reader.string(body, "proxy-url", where);
        cluster.disable_compression = reader.boolean(body, "disable-compression", where);
        if (YAML::Node extensions = body["extensions"]; extensions && extensions.IsSequence()) {
          std::size_t index = 0;
          for (const auto& extension : extensions) {
            const std::string at = where + ".extensions[" + std::to_string(index++) + "]";
            if (extension.IsMap() && extension["name"] && extension["name"].IsScalar() &&
                extension["name"].Scalar() == "client.authentication.k8s.io/exec") {
              JsonBudget budget;
              cluster.exec_extension = to_json(extension["extension"], budget);
              if (budget.exceeded) {
                reader.fail(at + ".extension",
                            "nested deeper than " + std::to_string(kMaxJsonDepth) +
                                " levels or more than " + std::to_string(kMaxJsonValues) +
                                " values (aliases expand too far, or refer to themselves)");
              }
            }
          }
        }
        config.clusters.emplace(name, std::move(cluster));
      });

  for_each_named(reader, root, "users", "user",
                 [&](const std::string& name, const YAML::Node& body, const std::string& where) {
                   if (config.users.count(name)) return;
                   KubeconfigUser user;
                   user.source_file = reader.path;
                   user.token = reader.string(body, "token", where);
                   user.token_file = reader.path_field(body, "tokenFile", where);
                   user.client_certificate = reader.path_field(body, "client-certificate", where);
                   user.client_certificate_data =
                       reader.data_field(body, "client-certificate-data", where);
                   user.client_key = reader.path_field(body, "client-key", where);
                   user.client_key_data = reader.data_field(body, "client-key-data", where);
                   user.username = reader.string(body, "username", where);
                   user.password = reader.string(body, "password", where);
                   user.exec = read_exec(reader, body, where);
                   if (body["auth-provider"] && !body["auth-provider"].IsNull()) {
                     reader.fail(where + ".auth-provider",
                                 "auth-provider plugins are not supported (removed from kubectl); "
                                 "use an exec plugin");
                   }
                   config.users.emplace(name, std::move(user));
                 });

  for_each_named(reader, root, "contexts", "context",
                 [&](const std::string& name, const YAML::Node& body, const std::string& where) {
                   if (config.contexts.count(name)) return;
                   KubeconfigContext context;
                   context.source_file = reader.path;
                   context.cluster = reader.string(body, "cluster", where);
                   context.user = reader.string(body, "user", where);
                   context.namespace_ = reader.string(body, "namespace", where);
                   config.contexts.emplace(name, std::move(context));
                 });

  if (reader.failure) return unexpected(*reader.failure);
  return config;
}

void merge_kubeconfig(Kubeconfig& merged, const Kubeconfig& later) {
  if (merged.current_context.empty()) merged.current_context = later.current_context;
  // map::insert never replaces: the first file to name an entry keeps all of it.
  merged.clusters.insert(later.clusters.begin(), later.clusters.end());
  merged.users.insert(later.users.begin(), later.users.end());
  merged.contexts.insert(later.contexts.begin(), later.contexts.end());
  merged.files.insert(merged.files.end(), later.files.begin(), later.files.end());
}

std::vector<std::string> kubeconfig_paths(const KubeconfigLoadOptions& options) {
  if (!options.explicit_path.empty()) return {options.explicit_path};
  std::optional<std::string> env = options.kubeconfig_env;
  if (!env) {
    if (const char* value = std::getenv("KUBECONFIG")) env = value;
  }
  std::vector<std::string> paths;
  if (env) {
    std::stringstream list(*env);
    std::string item;
    while (std::getline(list, item, ':')) {
      if (!item.empty()) paths.push_back(item);
    }
  }
  if (!paths.empty()) return paths;
  std::optional<std::string> home = options.home;
  if (!home) {
    if (const char* value = std::getenv("HOME")) home = value;
  }
  if (home && !home->empty()) return {*home + "/.kube/config"};
  return {};
}

Expected<Kubeconfig> load_kubeconfig(const KubeconfigLoadOptions& options) {
  std::vector<std::string> paths = kubeconfig_paths(options);
  if (paths.empty()) return error("no kubeconfig: set --kubeconfig, KUBECONFIG or HOME");
  const bool explicit_file = !options.explicit_path.empty();
  Kubeconfig merged;
  bool any = false;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      if (explicit_file || paths.size() == 1)
        return error(path + ": kubeconfig file does not exist");
      continue;  // kubectl skips missing entries of KUBECONFIG
    }
    auto text = read_file(path);
    if (!text) return unexpected(text.error());
    auto parsed = parse_kubeconfig(*text, path);
    if (!parsed) return parsed;
    if (!any) {
      merged = std::move(*parsed);
      any = true;
    } else {
      merge_kubeconfig(merged, *parsed);
    }
  }
  if (!any) {
    std::string list;
    for (const auto& path : paths) list += (list.empty() ? "" : ", ") + path;
    return error("none of the KUBECONFIG files exist: " + list);
  }
  return merged;
}

}  // namespace depl::kube
