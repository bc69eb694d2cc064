// track_update on generated objects and managedFields histories. It has two ways through a
// managedFields entry: entries in the form it writes itself are edited in place (the fast way,
// which skips the parts of the object a write leaves alone, e.g. all but the status of a /status
// write), any other entry is taken apart into field paths and built again (the general way). An
// entry with one member too many goes the general way and comes out without it, so both ways
// must give byte-identical managedFields for the same entries. Every case replays from its seed.
#include <random>

#include "depl/devcluster/server_side_apply.hpp"
#include "test_support.hpp"

namespace depl::devcluster {
namespace {

using nlohmann::json;

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : random_(seed) {}

  int below(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  std::string pick(std::initializer_list<const char*> options) {
    return *(options.begin() + below(static_cast<int>(options.size())));
  }

  // A pod-shaped object: keyed lists (containers, env, ports, conditions, ownerReferences), a set
  // (finalizers), atomic lists (tolerations, args), maps, nulls.
  json object() {
    json o = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
    json& meta = o["metadata"];
    if (chance(70)) meta["labels"] = small_map("l");
    if (chance(40)) meta["annotations"] = small_map("a");
    if (chance(30)) meta["finalizers"] = finalizers();
    if (chance(20)) {
      meta["ownerReferences"] = json::array(
          {{{"uid", "u" + std::to_string(below(3))}, {"kind", "ConfigMap"}, {"name", "o"}}});
    }
    json spec = json::object();
    spec["containers"] = json::array();
    for (int i = 0, n = 1 + below(3); i < n; ++i) spec["containers"].push_back(container(i));
    if (chance(30)) spec["nodeName"] = pick({"n1", "n2"});
    if (chance(30)) spec["tolerations"] = json::array({{{"key", pick({"a", "b"})}}});
    if (chance(10)) spec["priority"] = nullptr;
    o["spec"] = spec;
    if (chance(80)) o["status"] = status();
    return o;
  }

  // A write's change: a few edits anywhere.
  json mutate(json o) {
    for (int i = 0, n = 1 + below(4); i < n; ++i) {
      switch (below(12)) {
        case 0:
          o["metadata"]["labels"]["l" + std::to_string(below(3))] = value();
          break;
        case 1:
          o["metadata"].erase("labels");
          break;
        case 2:
          o["metadata"]["finalizers"] = finalizers();
          break;
        case 3:
          o["spec"]["containers"][0]["image"] = pick({"i:1", "i:2", "i:3"});
          break;
        case 4:
          o["spec"]["containers"].push_back(container(below(4)));
          break;
        case 5:
          if (o["spec"]["containers"].size() > 1) o["spec"]["containers"].erase(0);
          break;
        case 6:
          o["spec"]["containers"][0]["env"] = env();
          break;
        case 7:
          o["status"] = status();
          break;
        case 8:
          o["status"]["phase"] = pick({"Pending", "Running", "Failed"});
          break;
        case 9:
          o.erase("status");
          break;
        case 10:
          o["spec"]["nodeName"] = value();
          break;
        default:
          o["spec"].erase("tolerations");
          break;
      }
    }
    return o;
  }

  // Fields an entry may own that the object does not hold (left by apply, pruning, clients).
  void add_stale_fields(json& fields) {
    static const std::vector<std::vector<std::string>> paths = {
        {"f:spec", "f:gone"},
        {"f:spec", "f:containers", "k:{\"name\":\"c9\"}", "."},
        {"f:spec", "f:containers", "k:{\"name\":\"c0\"}", "f:env", "k:{\"name\":\"E9\"}", "."},
        {"f:status", "f:gone"},
        {"f:status", "f:conditions", "k:{\"type\":\"Gone\"}", "f:status"},
        {"f:metadata", "f:labels", "f:gone"},
        {"f:metadata", "f:finalizers", "v:\"f/gone\""},
        {"f:spec", "f:containers", "k:not json", "."},
    };
    for (int i = 0, n = below(3); i < n; ++i) {
      json* node = &fields;
      for (const auto& element : paths[static_cast<std::size_t>(below(8))]) {
        node = &(*node)[element];
        if (node->is_null()) *node = json::object();
      }
    }
  }

 private:
  json value() {
    switch (below(4)) {
      case 0:
        return below(3);
      case 1:
        return nullptr;
      case 2:
        return json::object({{"x", below(2)}});
      default:
        return pick({"a", "b"});
    }
  }
  json small_map(const std::string& prefix) {
    json m = json::object();
    for (int i = 0, n = below(3); i < n; ++i) m[prefix + std::to_string(below(4))] = value();
    return m;
  }
  json finalizers() {
    json f = json::array();
    for (const char* name : {"f/a", "f/b", "f/c"}) {
      if (chance(50)) f.push_back(name);
    }
    return f;
  }
  json env() {
    json e = json::array();
    for (int i = 0, n = below(4); i < n; ++i) {
      json var = {{"name", "E" + std::to_string(below(4))}};
      if (chance(80)) var["value"] = std::to_string(below(3));
      e.push_back(var);
    }
    return e;
  }
  json container(int i) {
    json c = {{"name", "c" + std::to_string(i)}, {"image", pick({"i:1", "i:2"})}};
    if (chance(60)) c["env"] = env();
    if (chance(40)) {
      c["ports"] = json::array({{{"containerPort", 80 + below(2)}, {"protocol", "TCP"}}});
    }
    if (chance(20)) c["args"] = json::array({pick({"-a", "-b"})});
    return c;
  }
  json status() {
    json s = {{"phase", pick({"Pending", "Running"})}};
    json conditions = json::array();
    for (const char* type : {"Ready", "Initialized", "PodScheduled"}) {
      if (chance(60)) conditions.push_back({{"type", type}, {"status", pick({"True", "False"})}});
    }
    if (!conditions.empty()) s["conditions"] = conditions;
    if (chance(50)) s["podIP"] = pick({"10.0.0.1", "10.0.0.2"});
    return s;
  }

  std::mt19937_64 random_;
};

// The same entries, each with a member track_update does not write: it takes them the general
// way and leaves the member out.
json marked(json entries) {
  for (auto& e : entries) e["x-general-way"] = true;
  return entries;
}

ApplyContext pod_context(bool status_endpoint) {
  ApplyContext context;
  context.builtin = true;
  context.has_status_subresource = true;
  context.status_endpoint = status_endpoint;
  return context;
}

TEST(ManagedFieldsProperty, EditingWrittenEntriesInPlaceEqualsRebuildingThemFromPaths) {
  int compared = 0, entries_written = 0, entries_dropped = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    Generator g(seed);
    json before = g.object();
    track_update(json(), before, "creator", pod_context(false), "2026-01-01T00:00:00Z");
    for (int step = 0; step < 12; ++step) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
      const std::string manager = g.pick({"creator", "kubelet", "controller"});
      const ApplyContext context = pod_context(g.chance(50));
      const std::string time = "2026-01-01T00:00:" + std::to_string(10 + step) + "Z";
      json after = g.mutate(before);
      after["metadata"].erase("managedFields");
      json entries = before["metadata"].value("managedFields", json::array());
      for (auto& e : entries) {
        if (g.chance(15)) g.add_stale_fields(e["fieldsV1"]);
      }
      // The entries come with the request, or the store fills in the stored ones.
      const bool from_request = g.chance(50);
      json fast_before = before, general_before = before;
      json fast = after, general = after;
      if (from_request) {
        fast["metadata"]["managedFields"] = entries;
        general["metadata"]["managedFields"] = marked(entries);
      } else {
        fast_before["metadata"]["managedFields"] = entries;
        general_before["metadata"]["managedFields"] = marked(entries);
      }
      track_update(fast_before, fast, manager, context, time);
      track_update(general_before, general, manager, context, time);
      ASSERT_EQ(fast.dump(), general.dump()) << "before " << fast_before.dump() << "\nafter "
                                             << after.dump() << "\nentries " << entries.dump();
      ++compared;
      const json& written = fast["metadata"].value("managedFields", json::array());
      entries_written += static_cast<int>(written.size());
      entries_dropped += written.size() < entries.size();
      before = std::move(fast);
    }
  }
  // Not all trivial: several managers' entries live on, and some lose all their fields.
  EXPECT_EQ(compared, 3600);
  EXPECT_GT(entries_written, 2 * compared);
  EXPECT_GT(entries_dropped, compared / 50);
}

}  // namespace
}  // namespace depl::devcluster
