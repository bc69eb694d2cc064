// Secret and projected volumes: written under the pod's directory before a container starts, and
// the container's paths under their mount paths pointed there (kubelet_impl.hpp).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "depl/common/base64.hpp"
#include "depl/common/json_fields.hpp"
#include "sim/kubelet_impl.hpp"

namespace depl::devcluster {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A Secret's keys and decoded values.
std::map<std::string, std::string> secret_data(const json& secret) {
  std::map<std::string, std::string> out;
  const json& data = json_member(secret, "data");
  if (data.is_object()) {
    for (const auto& [k, v] : data.items()) {
      if (v.is_string()) out[k] = base64_decode(v.get<std::string>()).value_or("");
    }
  }
  return out;
}

// A relative path that stays inside its volume: no absolute path, no "..".
bool safe_relative(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  for (const auto& part : fs::path(path)) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

Expected<std::map<std::string, std::string>> Kubelet::Impl::materialise_volumes(
    const PodRun& run, const json& container) {
  std::map<std::string, std::string> mounts;
  const json& volumes = json_member(json_member(*run.pod, "spec"), "volumes");
  const json& volume_mounts = json_member(container, "volumeMounts");
  if (!volumes.is_array() || !volume_mounts.is_array()) return mounts;
  // The files of one Secret source (a secret volume, or a projected volume's secret source):
  // `items` picks keys and names their files, else every key is a file of its name.
  auto secret_files = [&](const json& source, const std::string& volume,
                          std::map<std::string, std::string>& files) -> Expected<void> {
    const std::string name = json_string(source, "secretName").empty()
                                 ? json_string(source, "name")
                                 : json_string(source, "secretName");
    const bool optional = json_member(source, "optional") == json(true);
    auto got = store.get(ResourceRef{"", "v1", "secrets", run.ns, name, ""});
    if (!got.ok()) {
      if (optional) return {};
      return error(fmt::format(
          "MountVolume.SetUp failed for volume \"{}\" : secret \"{}\" not found", volume, name));
    }
    const auto data = secret_data(got.body);
    const json& items = json_member(source, "items");
    if (!items.is_array()) {
      for (const auto& [k, v] : data) files[k] = v;
      return {};
    }
    for (const auto& item : items) {
      const std::string key = json_string(item, "key");
      const std::string path = json_string(item, "path");
      auto value = data.find(key);
      if (value == data.end()) {
        if (optional) continue;
        return error(fmt::format(
            "MountVolume.SetUp failed for volume \"{}\" : references non-existent secret key: {}",
            volume, key));
      }
      files[path] = value->second;
    }
    return {};
  };
  for (const auto& mount : volume_mounts) {
    const std::string volume_name = json_string(mount, "name");
    const std::string mount_path = json_string(mount, "mountPath");
    const json* volume = nullptr;
    for (const auto& v : volumes) {
      if (json_string(v, "name") == volume_name) volume = &v;
    }
    if (!volume || mount_path.empty()) continue;
    std::map<std::string, std::string> files;
    if (const json& secret = json_member(*volume, "secret"); secret.is_object()) {
      if (auto read = secret_files(secret, volume_name, files); !read) {
        return unexpected(read.error());
      }
    } else if (const json& projected = json_member(*volume, "projected"); projected.is_object()) {
      const json& sources = json_member(projected, "sources");
      if (!sources.is_array()) continue;
      for (const auto& source : sources) {
        const json& secret = json_member(source, "secret");
        if (!secret.is_object()) continue;  // other projections are not materialised
        if (auto read = secret_files(secret, volume_name, files); !read) {
          return unexpected(read.error());
        }
      }
    } else {
      continue;  // a volume type this kubelet does not materialise
    }
    const fs::path dir = fs::path(run.dir) / "volumes" / volume_name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return error(
          fmt::format("cannot create the directory of volume {}: {}", volume_name, ec.message()));
    for (const auto& [path, content] : files) {
      if (!safe_relative(path)) {
        return error(fmt::format("volume {}: path {} leaves the volume", volume_name, path));
      }
      const fs::path file = dir / path;
      fs::create_directories(file.parent_path(), ec);
      fs::remove(file, ec);  // written read-only at an earlier start
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << content;
      if (!out) return error(fmt::format("volume {}: cannot write {}", volume_name, path));
      out.close();
      ::chmod(file.c_str(), 0444);
    }
    const std::string sub_path = json_string(mount, "subPath");
    mounts[mount_path] = sub_path.empty() ? dir.string() : (dir / sub_path).string();
  }
  return mounts;
}

std::string Kubelet::Impl::host_path(const std::map<std::string, std::string>& mounts,
                                     const std::string& path) {
  // The longest mount path that is `path` or a directory above it.
  const std::pair<const std::string, std::string>* best = nullptr;
  for (const auto& m : mounts) {
    const std::string& at = m.first;
    const bool under =
        path == at || (path.size() > at.size() && path.compare(0, at.size(), at) == 0 &&
                       (at.back() == '/' || path[at.size()] == '/'));
    if (under && (!best || at.size() > best->first.size())) best = &m;
  }
  if (!best) return path;
  return best->second + path.substr(best->first.size());
}

}  // namespace depl::devcluster
