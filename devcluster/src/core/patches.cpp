// JSON merge patch, JSON patch and strategic merge patch (see the sig-api-machinery
// strategic-merge-patch design: merge keys per field, $patch / $retainKeys /
// $deleteFromPrimitiveList / $setElementOrder directives).
#include "depl/devcluster/patches.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace depl::devcluster {

using nlohmann::json;

namespace {

// RFC 7386: `patch` merged into a copy of `target`. Only what the result keeps is copied: a
// member the patch replaces or removes is not copied first (a kubelet's status patch replaces most
// of a pod's status).
json merged_copy(const json* target, const json& patch) {
  if (!patch.is_object()) return patch;
  json result = json::object();
  auto& members = result.get_ref<json::object_t&>();
  const bool merge = target && target->is_object();
  if (merge) {
    for (auto it = target->begin(); it != target->end(); ++it) {
      const auto replacement = patch.find(it.key());
      if (replacement == patch.end()) {
        members.emplace_hint(members.end(), it.key(), *it);
      } else if (!replacement->is_null()) {
        members.emplace_hint(members.end(), it.key(), merged_copy(&*it, *replacement));
      }
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    // A member the target lacks starts as null: an object in the patch loses its nulls.
    if (it->is_null() || (merge && target->contains(it.key()))) continue;
    members.emplace(it.key(), merged_copy(nullptr, *it));
  }
  return result;
}

}  // namespace

json apply_merge_patch(const json& target, const json& patch) {
  return merged_copy(&target, patch);
}

Expected<json> apply_json_patch(const json& target, const json& patch) {
  if (!patch.is_array()) {
    return error("json patch must be an array of operations");
  }
  for (std::size_t i = 0; i < patch.size(); ++i) {
    const json& op = patch[i];
    if (!op.is_object() || !op.contains("op") || !op["op"].is_string() || !op.contains("path") ||
        !op["path"].is_string()) {
      return error(
          fmt::format("json patch operation {}: needs string fields \"op\" and \"path\"", i));
    }
  }
  // Applied one operation at a time so an error names the failing operation (on an error the
  // partly patched copy is dropped).
  json current = target;
  for (std::size_t i = 0; i < patch.size(); ++i) {
    try {
      current.patch_inplace(json::array({patch[i]}));
    } catch (const json::exception& e) {
      std::string what = e.what();
      if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
      return error(fmt::format("json patch operation {} ({} {}): {}", i,
                               patch[i]["op"].get<std::string>(),
                               patch[i]["path"].get<std::string>(), what));
    }
  }
  return current;
}

ListStrategy strategic_list_strategy(const std::string& path) {
  auto dot = path.find_last_of('.');
  std::string field = dot == std::string::npos ? path : path.substr(dot + 1);
  std::string parent_path = dot == std::string::npos ? "" : path.substr(0, dot);
  auto pdot = parent_path.find_last_of('.');
  std::string parent = pdot == std::string::npos ? parent_path : parent_path.substr(pdot + 1);

  static const std::map<std::string, std::string> by_name = {
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"env", "name"},
      {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"},
      {"tolerations", "key"},
      {"conditions", "type"},
      {"imagePullSecrets", "name"},
      {"hostAliases", "ip"},
      {"ownerReferences", "uid"},
      {"topologySpreadConstraints", "topologyKey"},
      {"secrets", "name"},
      {"resourceClaims", "name"},
      {"schedulingGates", "name"}};
  if (field == "ports") {
    if (parent == "containers" || parent == "initContainers" || parent == "ephemeralContainers") {
      return {ListStrategy::MergeByKey, "containerPort", false};
    }
    if (parent == "spec" && parent_path == "spec") return {ListStrategy::MergeByKey, "port", false};
    return {};
  }
  if (field == "volumes") return {ListStrategy::MergeByKey, "name", true};
  if (field == "finalizers") return {ListStrategy::MergePrimitives, "", false};
  if (auto it = by_name.find(field); it != by_name.end()) {
    return {ListStrategy::MergeByKey, it->second, false};
  }
  return {};
}

namespace {

constexpr std::string_view kSetElementOrder = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string child_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The merges take the original by value: callers move in the part of an object they replace with
// the result, so nothing is copied twice.
Expected<json> merge_value(json original, const json& patch, const std::string& path);

// Removes directive markers from a value that is inserted as a whole (no original to merge with).
json strip_directives(const json& value, const std::string& path) {
  if (value.is_object()) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (starts_with(it.key(), "$")) continue;
      if (it->is_null()) continue;
      out[it.key()] = strip_directives(*it, child_path(path, it.key()));
    }
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const auto& item : value) {
      // List-level markers ({"$patch":"replace"}) and deletions of absent items vanish.
      if (item.is_object() && item.contains("$patch") &&
          (item["$patch"] == "delete" || item.size() == 1)) {
        continue;
      }
      out.push_back(strip_directives(item, path));
    }
    return out;
  }
  return value;
}

Expected<json> merge_list(json original, const json& patch, const std::string& path) {
  ListStrategy strategy = strategic_list_strategy(path);
  // A {"$patch":"replace"} element means: the rest of the patch list replaces the list.
  bool replace_all = std::any_of(patch.begin(), patch.end(), [](const json& item) {
    return item.is_object() && item.size() == 1 && item.value("$patch", "") == "replace";
  });
  if (strategy.kind == ListStrategy::Replace || replace_all || !original.is_array()) {
    return strip_directives(patch, path);
  }
  json result = std::move(original);
  if (strategy.kind == ListStrategy::MergePrimitives) {
    for (const auto& item : patch) {
      if (std::find(result.begin(), result.end(), item) == result.end()) result.push_back(item);
    }
    return result;
  }
  const std::string& key = strategy.merge_key;
  for (const auto& item : patch) {
    if (!item.is_object() || !item.contains(key)) {
      if (item.is_object() && item.value("$patch", "") == "delete") {
        return error(fmt::format("{}: $patch delete without the merge key \"{}\"", path, key));
      }
      return error(
          fmt::format("{}: list item lacks the merge key \"{}\": {}", path, key, item.dump()));
    }
    auto match = std::find_if(result.begin(), result.end(), [&](const json& existing) {
      return existing.is_object() && existing.contains(key) && existing[key] == item[key];
    });
    std::string directive = item.value("$patch", "");
    if (directive == "delete") {
      if (match != result.end()) result.erase(match);
      continue;
    }
    if (match == result.end()) {
      result.push_back(strip_directives(item, path));
    } else if (directive == "replace") {
      *match = strip_directives(item, path);
    } else {
      auto merged = merge_value(std::move(*match), item, path);
      if (!merged) return merged;
      *match = std::move(*merged);
    }
  }
  return result;
}

// Orders `list` by `order` (items or their merge keys); unlisted items keep their relative
// order after the listed ones.
json order_list(const json& list, const json& order, const std::string& path) {
  if (!list.is_array() || !order.is_array()) return list;
  ListStrategy strategy = strategic_list_strategy(path);
  auto matches = [&](const json& item, const json& wanted) {
    if (strategy.kind == ListStrategy::MergeByKey && item.is_object() && wanted.is_object()) {
      return item.contains(strategy.merge_key) && wanted.contains(strategy.merge_key) &&
             item[strategy.merge_key] == wanted[strategy.merge_key];
    }
    return item == wanted;
  };
  json ordered = json::array();
  std::vector<bool> used(list.size(), false);
  for (const auto& wanted : order) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!used[i] && matches(list[i], wanted)) {
        ordered.push_back(list[i]);
        used[i] = true;
        break;
      }
    }
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!used[i]) ordered.push_back(list[i]);
  }
  return ordered;
}

Expected<json> merge_object(json original, const json& patch, const std::string& path) {
  std::string directive = patch.value("$patch", "");
  if (directive == "replace") return strip_directives(patch, path);
  if (directive == "delete") return json();  // caller removes the field
  if (!directive.empty() && directive != "merge") {
    return error(fmt::format("{}: unknown $patch directive \"{}\"", path.empty() ? "<root>" : path,
                             directive));
  }
  json result = original.is_object() ? std::move(original) : json::object();
  // Deletions from primitive lists first, then the merge, then element order.
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (!starts_with(it.key(), kDeleteFromPrimitiveList)) continue;
    std::string field = it.key().substr(kDeleteFromPrimitiveList.size());
    if (!result.contains(field) || !result[field].is_array() || !it->is_array()) continue;
    json kept = json::array();
    for (const auto& v : result[field]) {
      if (std::find(it->begin(), it->end(), v) == it->end()) kept.push_back(v);
    }
    result[field] = kept;
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (starts_with(key, "$")) continue;
    std::string sub = child_path(path, key);
    if (it->is_null()) {
      result.erase(key);
      continue;
    }
    auto existing = result.find(key);
    if (existing == result.end()) {
      if (it->is_object() && it->value("$patch", "") == "delete") continue;
      result[key] = strip_directives(*it, sub);
      continue;
    }
    auto merged = merge_value(std::move(*existing), *it, sub);
    if (!merged) return merged;
    if (merged->is_null() && it->is_object()) {
      result.erase(key);  // $patch: delete on a map
    } else {
      result[key] = std::move(*merged);
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (!starts_with(it.key(), kSetElementOrder)) continue;
    std::string field = it.key().substr(kSetElementOrder.size());
    if (result.contains(field)) {
      result[field] = order_list(result[field], *it, child_path(path, field));
    }
  }
  if (auto retain = patch.find("$retainKeys"); retain != patch.end() && retain->is_array()) {
    for (auto it = result.begin(); it != result.end();) {
      if (std::find(retain->begin(), retain->end(), it.key()) == retain->end()) {
        it = result.erase(it);
      } else {
        ++it;
      }
    }
  }
  return result;
}

Expected<json> merge_value(json original, const json& patch, const std::string& path) {
  if (patch.is_object()) {
    if (!original.is_object()) return merge_object(json::object(), patch, path);
    return merge_object(std::move(original), patch, path);
  }
  if (patch.is_array()) return merge_list(std::move(original), patch, path);
  return patch;
}

}  // namespace

Expected<json> apply_strategic_merge_patch(const json& target, const json& patch) {
  if (!patch.is_object()) return error("strategic merge patch must be a JSON object");
  return merge_object(target, patch, "");
}

}  // namespace depl::devcluster
