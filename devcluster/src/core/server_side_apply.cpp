// Server-side apply and managedFields tracking (a compact rendition of structured-merge-diff:
// field sets as FieldsV1 trees, ownership per manager and operation, conflicts on differing
// values, removal of fields a manager stops applying when nobody else owns them).
#include "depl/devcluster/server_side_apply.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "depl/devcluster/patches.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

using Path = std::vector<std::string>;  // "f:spec", "k:{\"name\":\"c\"}", "v:\"x\"", "."

struct ListKind {
  enum Kind { Atomic, Map, Set } kind = Atomic;
  std::vector<std::string> keys;
};

// Schema node for a dotted path (CRs); nullptr when unknown.
const json* schema_at(const json& schema, const std::vector<std::string>& names) {
  const json* node = &schema;
  for (const auto& name : names) {
    if (!node->is_object()) return nullptr;
    if (node->value("type", "") == "array" && node->contains("items")) node = &(*node)["items"];
    if (node->contains("properties") && (*node)["properties"].contains(name)) {
      node = &(*node)["properties"][name];
    } else if (node->contains("additionalProperties") &&
               (*node)["additionalProperties"].is_object()) {
      node = &(*node)["additionalProperties"];
    } else {
      return nullptr;
    }
  }
  return node;
}

ListKind list_kind(const std::vector<std::string>& names, const ApplyContext& context) {
  std::string dotted;
  for (const auto& n : names) {
    if (!dotted.empty()) dotted.push_back('.');
    dotted.append(n);
  }
  if (dotted == "metadata.finalizers") return {ListKind::Set, {}};
  if (dotted == "metadata.ownerReferences") return {ListKind::Map, {"uid"}};
  if (context.builtin) {
    ListStrategy s = strategic_list_strategy(dotted);
    if (s.kind == ListStrategy::MergeByKey) return {ListKind::Map, {s.merge_key}};
    if (s.kind == ListStrategy::MergePrimitives) return {ListKind::Set, {}};
    return {};
  }
  const json* node = context.schema ? schema_at(*context.schema, names) : nullptr;
  if (!node || !node->is_object()) return {};
  std::string type = node->value("x-kubernetes-list-type", "");
  if (type == "set") return {ListKind::Set, {}};
  if (type == "map" && node->contains("x-kubernetes-list-map-keys")) {
    ListKind kind{ListKind::Map, {}};
    for (const auto& k : (*node)["x-kubernetes-list-map-keys"])
      kind.keys.push_back(k.get<std::string>());
    return kind;
  }
  return {};
}

std::string item_key(const json& item, const ListKind& kind) {
  if (kind.kind == ListKind::Set) return "v:" + item.dump();
  json key = json::object();
  for (const auto& k : kind.keys) {
    if (item.is_object() && item.contains(k)) key[k] = item[k];
  }
  return "k:" + key.dump();
}

bool ignored_at_root(const std::string& key, const ApplyContext& context) {
  if (key == "apiVersion" || key == "kind") return true;
  if (context.status_endpoint) return key != "status";
  return context.has_status_subresource && key == "status";
}

bool ignored_metadata(const std::string& key) {
  static const std::set<std::string> server_owned = {"name",
                                                     "namespace",
                                                     "uid",
                                                     "resourceVersion",
                                                     "generation",
                                                     "selfLink",
                                                     "creationTimestamp",
                                                     "managedFields",
                                                     "deletionTimestamp",
                                                     "deletionGracePeriodSeconds",
                                                     "generateName"};
  return server_owned.count(key) > 0;
}

// Adds the field at `path` to a FieldsV1 tree.
void insert_field(json& set, const Path& path) {
  json* node = &set;
  for (const auto& element : path) {
    node = &(*node)[element];
    if (node->is_null()) *node = json::object();
  }
}

// Where collect puts the fields it finds: a set of paths or a FieldsV1 tree (which is what
// build() makes of the set).
void add_field(std::set<Path>& out, const Path& path) {
  // Object members come in key order: paths mostly arrive sorted, hence the hint.
  out.insert(out.end(), path);
}

void add_field(json& out, const Path& path) {
  insert_field(out, path);
}

template <typename Out>
void collect(const json& value, std::vector<std::string>& names, Path& path,
             const ApplyContext& context, Out& out) {
  if (value.is_object() && !value.empty()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (names.empty() && ignored_at_root(it.key(), context)) continue;
      if (names.size() == 1 && names[0] == "metadata" && ignored_metadata(it.key())) continue;
      names.push_back(it.key());
      path.push_back("f:" + it.key());
      collect(*it, names, path, context, out);
      path.pop_back();
      names.pop_back();
    }
    return;
  }
  if (value.is_array() && !value.empty()) {
    ListKind kind = list_kind(names, context);
    if (kind.kind != ListKind::Atomic) {
      for (const auto& item : value) {
        path.push_back(item_key(item, kind));
        path.push_back(".");
        add_field(out, path);
        path.pop_back();
        if (kind.kind == ListKind::Map && item.is_object()) {
          for (auto it = item.begin(); it != item.end(); ++it) {
            names.push_back(it.key());
            path.push_back("f:" + it.key());
            collect(*it, names, path, context, out);
            path.pop_back();
            names.pop_back();
          }
        }
        path.pop_back();
      }
      return;
    }
  }
  if (!path.empty()) add_field(out, path);
}

std::set<Path> leaf_paths(const json& config, const ApplyContext& context) {
  std::set<Path> out;
  std::vector<std::string> names;
  Path path;
  collect(config, names, path, context, out);
  return out;
}

void flatten(const json& set, Path& path, std::set<Path>& out) {
  if (!set.is_object()) return;
  if (set.empty() && !path.empty()) {
    out.insert(path);
    return;
  }
  for (auto it = set.begin(); it != set.end(); ++it) {
    path.push_back(it.key());
    if (it.key() == ".") {
      out.insert(path);
    } else {
      flatten(*it, path, out);
    }
    path.pop_back();
  }
}

std::set<Path> flatten(const json& set) {
  std::set<Path> out;
  Path path;
  flatten(set, path, out);
  return out;
}

// Removes the field at `path` (there) from a FieldsV1 tree, and the nodes it leaves empty.
void erase_field(json& set, const Path& path, std::size_t depth = 0) {
  auto it = set.find(path[depth]);
  if (depth + 1 < path.size()) {
    erase_field(*it, path, depth + 1);
    if (!it->empty()) return;
  }
  set.erase(it);
}

json build(const std::set<Path>& paths) {
  json set = json::object();
  for (const auto& path : paths) insert_field(set, path);
  return set;
}

// The JSON value a "k:" or "v:" path element names. Parsed once per thread: every write looks up
// the same few list items (containers, env, conditions) again, and parsing is most of the cost.
const json& element_value(const std::string& element) {
  thread_local std::unordered_map<std::string, json> parsed;
  auto it = parsed.find(element);
  if (it != parsed.end()) return it->second;
  if (parsed.size() >= 4096) parsed.clear();  // keys come from clients: keep it bounded
  return parsed.emplace(element, json::parse(element.substr(2), nullptr, false)).first->second;
}

// Finds the child of `node` addressed by a path element; nullptr if absent.
json* child(json& node, const std::string& element) {
  if (element.rfind("f:", 0) == 0) {
    if (!node.is_object()) return nullptr;
    auto it = node.find(std::string_view(element).substr(2));
    return it == node.end() ? nullptr : &*it;
  }
  if (element.rfind("k:", 0) == 0 || element.rfind("v:", 0) == 0) {
    if (!node.is_array()) return nullptr;
    const json& wanted = element_value(element);
    if (wanted.is_discarded()) return nullptr;
    for (auto& item : node) {
      if (element[0] == 'v') {
        if (item == wanted) return &item;
        continue;
      }
      // Read through a const view: writes look items up in stored objects other threads read.
      const json& view = item;
      bool all = view.is_object();
      for (auto it = wanted.begin(); all && it != wanted.end(); ++it) {
        const auto member = view.find(it.key());
        all = member != view.end() && *member == *it;
      }
      if (all) return &item;
    }
  }
  return nullptr;
}

const json* value_at(const json& object, const Path& path) {
  json* node = const_cast<json*>(&object);
  for (const auto& element : path) {
    if (element == ".") break;
    node = child(*node, element);
    if (!node) return nullptr;
  }
  return node;
}

// value_at for one path after another in the same (unchanging) object: it keeps the nodes of the
// previous path and resolves the next one from the longest prefix the two share, so the paths of
// a set, taken in order, resolve each list item (a JSON parse of its key) once, not once per
// field under it.
class PathResolver {
 public:
  explicit PathResolver(const json& object) : object_(object) {}

  const json* at(const Path& path) {
    std::size_t depth = 0;
    while (depth < nodes_.size() && depth < path.size() && path[depth] == elements_[depth]) {
      ++depth;
    }
    nodes_.resize(depth);
    elements_.resize(depth);
    json* node = depth == 0 ? const_cast<json*>(&object_) : nodes_.back();
    for (; depth < path.size() && path[depth] != "."; ++depth) {
      node = child(*node, path[depth]);
      if (!node) return nullptr;
      nodes_.push_back(node);
      elements_.push_back(path[depth]);
    }
    return node;
  }

 private:
  const json& object_;
  std::vector<json*> nodes_;           // nodes_[i]: the node at elements_[0..i]
  std::vector<std::string> elements_;  // a copy: the caller may drop its path afterwards
};

void remove_at(json& object, const Path& path) {
  Path target = path;
  if (!target.empty() && target.back() == ".") target.pop_back();
  if (target.empty()) return;
  json* parent = &object;
  for (std::size_t i = 0; i + 1 < target.size(); ++i) {
    parent = child(*parent, target[i]);
    if (!parent) return;
  }
  const std::string& last = target.back();
  if (last.rfind("f:", 0) == 0) {
    if (parent->is_object()) parent->erase(last.substr(2));
    return;
  }
  json* item = child(*parent, last);
  if (!item || !parent->is_array()) return;
  for (auto it = parent->begin(); it != parent->end(); ++it) {
    if (&*it == item) {
      parent->erase(it);
      return;
    }
  }
}

bool has_prefix(const Path& path, const Path& prefix) {
  if (prefix.size() > path.size()) return false;
  return std::equal(prefix.begin(), prefix.end(), path.begin());
}

std::string path_text(const Path& path) {
  std::string out;
  for (const auto& element : path) {
    if (element == ".") continue;
    if (element.rfind("f:", 0) == 0) {
      out.push_back('.');
      out.append(element, 2);
    } else {
      out.push_back('[');
      out.append(element, 2);
      out.push_back(']');
    }
  }
  return out;
}

// Merges an applied configuration into the live object: maps by key, keyed lists by key, sets as
// unions, everything else replaced.
json merge_config(const json& live, const json& config, std::vector<std::string>& names,
                  const ApplyContext& context) {
  if (config.is_object()) {
    json result = live.is_object() ? live : json::object();
    for (auto it = config.begin(); it != config.end(); ++it) {
      if (names.empty() && ignored_at_root(it.key(), context) && it.key() != "apiVersion" &&
          it.key() != "kind") {
        continue;
      }
      names.push_back(it.key());
      auto existing = result.find(it.key());
      result[it.key()] =
          merge_config(existing == result.end() ? json() : *existing, *it, names, context);
      names.pop_back();
    }
    return result;
  }
  if (config.is_array() && live.is_array()) {
    ListKind kind = list_kind(names, context);
    if (kind.kind == ListKind::Atomic) return config;
    json result = live;
    for (const auto& item : config) {
      std::string key = item_key(item, kind);
      json* match = child(result, key);
      if (!match) {
        result.push_back(item);
      } else if (kind.kind == ListKind::Map) {
        *match = merge_config(*match, item, names, context);
      }
    }
    return result;
  }
  return config;
}

struct Entry {
  std::string manager;
  std::string operation;
  std::string subresource;
  std::string api_version;
  std::string time;
  std::set<Path> fields;
  // Instead of `fields`: the entry itself, in written form (see track_update). It is edited in
  // place, and write_entries moves it into the new list.
  json* written = nullptr;
};

// An entry of managedFields without its fields.
Entry entry_header(const json& m) {
  return {m.value("manager", ""),     m.value("operation", "Update"),
          m.value("subresource", ""), m.value("apiVersion", ""),
          m.value("time", ""),        {}};
}

Entry read_entry(const json& m) {
  Entry e = entry_header(m);
  if (auto fields = m.find("fieldsV1"); fields != m.end()) e.fields = flatten(*fields);
  return e;
}

std::vector<Entry> read_entries(const json& object) {
  std::vector<Entry> entries;
  static const json::json_pointer kManagedFields("/metadata/managedFields");
  if (!object.contains(kManagedFields)) return entries;
  for (const auto& m : object[kManagedFields]) {
    if (m.is_object()) entries.push_back(read_entry(m));
  }
  return entries;
}

// An entry as write_entries writes it ("written form").
json written_entry(const Entry& e, FieldSet fields) {
  json m = {{"manager", e.manager}, {"operation", e.operation}, {"apiVersion", e.api_version},
            {"time", e.time},       {"fieldsType", "FieldsV1"}, {"fieldsV1", std::move(fields)}};
  if (!e.subresource.empty()) m["subresource"] = e.subresource;
  return m;
}

void write_entries(json& object, const std::vector<Entry>& entries) {
  json managed = json::array();
  for (const auto& e : entries) {
    if (e.written) {
      if (!(*e.written)["fieldsV1"].empty()) managed.push_back(std::move(*e.written));
      continue;
    }
    if (e.fields.empty()) continue;
    managed.push_back(written_entry(e, build(e.fields)));
  }
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = json::object();
  }
  if (managed.empty()) {
    object["metadata"].erase("managedFields");
  } else {
    object["metadata"]["managedFields"] = std::move(managed);
  }
}

// Whether a FieldsV1 tree holds objects only, "." members empty: what build() makes of the paths
// flatten() finds in it.
bool tree_in_written_form(const json& fields) {
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    if (!it->is_object()) return false;
    if (it.key() == "." ? !it->empty() : !tree_in_written_form(*it)) return false;
  }
  return true;
}

// Whether a managedFields entry is exactly what write_entries makes of what read_entries reads
// from it: the string members it writes, "subresource" only when not empty, and fields (some) in
// written form.
bool in_written_form(const json& m) {
  for (const char* key : {"manager", "operation", "apiVersion", "time"}) {
    auto it = m.find(key);
    if (it == m.end() || !it->is_string()) return false;
  }
  auto type = m.find("fieldsType");
  if (type == m.end() || *type != "FieldsV1") return false;
  auto subresource = m.find("subresource");
  const bool has_subresource = subresource != m.end();
  if (has_subresource &&
      (!subresource->is_string() || subresource->get_ref<const std::string&>().empty())) {
    return false;
  }
  auto fields = m.find("fieldsV1");
  if (fields == m.end() || !fields->is_object() || fields->empty()) return false;
  return m.size() == (has_subresource ? 7u : 6u) && tree_in_written_form(*fields);
}

// Whether a path in `paths` starts with `prefix` (they follow it in order).
bool any_under(const std::set<Path>& paths, const Path& prefix) {
  auto it = paths.lower_bound(prefix);
  return it != paths.end() && has_prefix(*it, prefix);
}

// The fields of `fields` (a FieldsV1 tree in written form, at `path`) that track_update takes
// from their manager: those that changed, unless the manager made the change (`own`), and those
// `after` neither sets nor holds any more. `value` is the node of `after` at `path`, if any.
// `in_sets`: whether `now` or `changed` may hold paths under `path` (else only `after` counts:
// a status write sets nothing outside the status).
void find_lost_fields(const json& fields, const json* value, Path& path, const std::set<Path>& now,
                      const std::set<Path>& changed, bool own, std::vector<Path>& lost,
                      bool in_sets = true) {
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    const bool self = it.key() == ".";
    const json* node = self || !value ? value : child(const_cast<json&>(*value), it.key());
    path.push_back(it.key());
    if (self || it->empty()) {
      if (!in_sets) {
        if (!node) lost.push_back(path);
      } else if (changed.count(path) ? !own : !node && !now.count(path)) {
        lost.push_back(path);
      }
    } else {
      find_lost_fields(*it, node, path, now, changed, own, lost,
                       in_sets && (any_under(now, path) || any_under(changed, path)));
    }
    path.pop_back();
  }
}

Entry& entry_for(std::vector<Entry>& entries, const std::string& manager,
                 const std::string& operation, const std::string& subresource) {
  for (auto& e : entries) {
    if (e.manager == manager && e.operation == operation && e.subresource == subresource) return e;
  }
  entries.push_back({manager, operation, subresource, "", "", {}});
  return entries.back();
}

}  // namespace

FieldSet fields_of(const json& config, const ApplyContext& context) {
  FieldSet set = json::object();
  std::vector<std::string> names;
  Path path;
  collect(config, names, path, context, set);
  return set;
}

Expected<ApplyOutcome, ApiResult> server_side_apply(const json& live, const json& config,
                                                    const std::string& manager, bool force,
                                                    const ApplyContext& context,
                                                    const std::string& time) {
  std::string subresource = context.status_endpoint ? "status" : "";
  std::set<Path> applied = leaf_paths(config, context);
  std::vector<Entry> entries = live.is_object() ? read_entries(live) : std::vector<Entry>{};

  // Conflicts: fields another manager owns whose value the configuration would change.
  struct Conflict {
    std::string manager;
    std::string api_version;
    Path path;
  };
  std::vector<Conflict> conflicts;
  for (auto& e : entries) {
    if (e.manager == manager && e.operation == "Apply") continue;
    for (const auto& path : applied) {
      if (!e.fields.count(path) || path.back() == ".") continue;
      const json* current = live.is_object() ? value_at(live, path) : nullptr;
      const json* wanted = value_at(config, path);
      if (current && wanted && *current == *wanted) continue;
      conflicts.push_back({e.manager, e.api_version, path});
    }
  }
  if (!conflicts.empty() && !force) {
    json causes = json::array();
    std::string message;
    for (const auto& c : conflicts) {
      std::string with = fmt::format("conflict with \"{}\" using {}", c.manager, c.api_version);
      std::string text = fmt::format("{}: {}", with, path_text(c.path));
      causes.push_back(
          {{"reason", "FieldManagerConflict"}, {"message", with}, {"field", path_text(c.path)}});
      if (!message.empty()) message.append("\n- ");
      message.append(text);
    }
    if (conflicts.size() > 1) message = "- " + message;
    std::string full = fmt::format("Apply failed with {} conflict{}: {}", conflicts.size(),
                                   conflicts.size() > 1 ? "s" : "", message);
    return unexpected(status_error(409, "Conflict", full, {{"causes", causes}}));
  }
  if (force) {
    for (const auto& c : conflicts) {
      for (auto& e : entries) {
        if (e.manager == c.manager && !(e.manager == manager && e.operation == "Apply")) {
          e.fields.erase(c.path);
        }
      }
    }
  }

  json object = live.is_object() ? live : json::object();
  // Fields this manager applied before and no longer applies go, unless someone else owns them.
  Entry& mine = entry_for(entries, manager, "Apply", subresource);
  std::vector<Path> dropped;
  for (const auto& path : mine.fields) {
    if (applied.count(path)) continue;
    bool shared = false;
    for (const auto& e : entries) {
      if (&e == &mine) continue;
      for (const auto& owned : e.fields) {
        if (has_prefix(owned, path.back() == "." ? Path(path.begin(), path.end() - 1) : path)) {
          shared = true;
          break;
        }
      }
      if (shared) break;
    }
    if (!shared) dropped.push_back(path);
  }
  // Shallowest first: a list item goes as a whole before its fields (whose removal would
  // otherwise erase the item's key and leave it unaddressable); later removals inside an already
  // removed part find nothing and do nothing.
  auto depth = [](const Path& p) { return p.size() - (p.back() == "." ? 1 : 0); };
  std::stable_sort(dropped.begin(), dropped.end(), [&](const Path& a, const Path& b) {
    if (depth(a) != depth(b)) return depth(a) < depth(b);
    return a.back() == "." && b.back() != ".";
  });
  for (const auto& path : dropped) remove_at(object, path);

  std::vector<std::string> names;
  object = merge_config(object, config, names, context);
  mine.fields = applied;
  mine.time = time;
  mine.api_version = config.value("apiVersion", object.value("apiVersion", ""));
  write_entries(object, entries);
  return ApplyOutcome{std::move(object)};
}

void track_update(const json& before, json& after, const std::string& manager,
                  const ApplyContext& context, const std::string& time) {
  static const json::json_pointer kManagedFields("/metadata/managedFields");
  std::string subresource = context.status_endpoint ? "status" : "";
  if (!before.is_object() && !after.contains(kManagedFields)) {
    // A new object without managedFields (a create): every field it sets is the manager's.
    Entry mine{manager, "Update", subresource, after.value("apiVersion", ""), time, {}};
    json entry = written_entry(mine, fields_of(after, context));
    mine.written = &entry;
    write_entries(after, {mine});
    return;
  }
  // The fields `after` sets: those whose value differs from `before` move from `now` to
  // `changed` (the two together are every field set).
  std::set<Path> now = leaf_paths(after, context);
  std::set<Path> changed;
  PathResolver old_values(before);
  PathResolver new_values(after);
  for (auto it = now.begin(); it != now.end();) {
    const Path& path = *it;
    bool differs = false;
    if (path.back() == ".") {
      differs = !before.is_object() || !old_values.at(path);
    } else {
      const json* old_value = before.is_object() ? old_values.at(path) : nullptr;
      const json* new_value = old_value ? new_values.at(path) : nullptr;
      differs = !old_value || !new_value || *old_value != *new_value;
    }
    if (differs) {
      changed.insert(now.extract(it++));
    } else {
      ++it;
    }
  }
  // The request's managedFields win (kubectl's client-side-apply -> SSA upgrade rewrites them
  // with a JSON patch); the store fills in the old ones when a request leaves them out. They are
  // replaced below: entries can move out of them.
  json old_entries;
  json* managed = &old_entries;
  if (after.contains(kManagedFields)) {
    managed = &after[kManagedFields];
  } else if (before.is_object() && before.contains(kManagedFields)) {
    old_entries = before[kManagedFields];
  }
  // Entries in written form (all but those a client wrote) are edited in place: the few fields a
  // write takes or gives are erased from or added to their FieldsV1 tree, which is what taking
  // them apart into paths and building them again would give. Other entries go through paths.
  std::vector<Entry> entries;
  std::vector<std::pair<json*, Path>> lost;  // in written-form entries
  for (auto& m : *managed) {
    if (!m.is_object()) continue;
    if (!in_written_form(m)) {
      entries.push_back(read_entry(m));
      continue;
    }
    Entry e = entry_header(m);
    e.written = &m;
    json& fields = m["fieldsV1"];
    std::vector<Path> dropped;
    Path path;
    find_lost_fields(fields, &after, path, now, changed,
                     e.manager == manager && e.operation == "Update", dropped);
    for (auto& p : dropped) lost.emplace_back(&fields, std::move(p));
    entries.push_back(std::move(e));
  }
  for (auto& e : entries) {
    for (auto it = e.fields.begin(); it != e.fields.end();) {
      bool is_changed = changed.count(*it) > 0;
      bool gone = !is_changed && !new_values.at(*it) && !now.count(*it);
      if (gone || (is_changed && !(e.manager == manager && e.operation == "Update"))) {
        it = e.fields.erase(it);
      } else {
        ++it;
      }
    }
  }
  // No lookup in `after` is left: the entries in its managedFields can change.
  for (const auto& [fields, path] : lost) erase_field(*fields, path);
  if (!changed.empty()) {
    Entry& mine = entry_for(entries, manager, "Update", subresource);
    if (mine.written) {
      for (const auto& path : changed) insert_field((*mine.written)["fieldsV1"], path);
      (*mine.written)["time"] = time;
      (*mine.written)["apiVersion"] = after.value("apiVersion", "");
    } else {
      mine.fields.merge(changed);
      mine.time = time;
      mine.api_version = after.value("apiVersion", "");
    }
  }
  write_entries(after, entries);
}

}  // namespace depl::devcluster
