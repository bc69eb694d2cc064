// The pools half of parse.hpp: a pools file (`pools: [...]`) -> validated Pool values.
#include <fmt/format.h>
#include <climits>

#include "depl/solver/limits.hpp"
#include "depl/solver/parse.hpp"
#include "field_reader.hpp"
#include "parse_common.hpp"

namespace depl::solver {
namespace {

using nlohmann::json;
using parse_detail::closest_name;
using parse_detail::describe;
using parse_detail::Diagnostics;
using parse_detail::item_path;
using parse_detail::kOptional;
using parse_detail::kRequired;
using parse_detail::ObjectReader;
using parse_detail::Presence;
using parse_detail::Range;
using parse_detail::read_object;
using parse_detail::read_yaml_document;
using parse_detail::UniqueNames;
using parse_detail::with_source;

// Pool names end up in pod labels and node selectors, so they follow the DNS label rules.
bool is_dns_label(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name) {
    if (!alnum(c) && c != '-') return false;
  }
  return alnum(name.front()) && alnum(name.back());
}

// gpus, or nodes * gpusPerNode when only those are given; both given must agree.
void read_gpu_count(ObjectReader& reader, Pool& pool) {
  const auto nodes = reader.small_integer("nodes", kOptional, Range::at_least(1));
  const auto per_node = reader.small_integer("gpusPerNode", kOptional, Range::at_least(1));
  const auto gpus = reader.small_integer("gpus", kOptional, Range::at_least(0));
  pool.nodes = nodes.value_or(0);
  pool.gpus_per_node = per_node.value_or(0);
  const bool shape_given = reader.get("nodes") && reader.get("gpusPerNode");
  const std::int64_t total = static_cast<std::int64_t>(pool.nodes) * pool.gpus_per_node;
  if (gpus) {
    pool.gpus = *gpus;
    if (nodes && per_node && *gpus > total) {
      reader.diagnostics().add(
          reader.path_of("gpus"),
          fmt::format("must be <= nodes * gpusPerNode ({}), got {}", total, *gpus));
    }
  } else if (reader.get("gpus")) {
    // invalid gpus: already reported
  } else if (!shape_given) {
    reader.diagnostics().add(reader.path_of("gpus"),
                             "is required (or give both nodes and gpusPerNode)");
  } else if (nodes && per_node) {
    if (total > INT_MAX) {
      reader.diagnostics().add(reader.path_of("gpus"),
                               fmt::format("nodes * gpusPerNode is too large ({})", total));
    } else {
      pool.gpus = static_cast<int>(total);
    }
  }
}

void read_inter_pool(ObjectReader& reader, Pool& pool) {
  auto links = reader.object("interPool", kOptional);
  if (!links) return;
  if (links->keys().size() > limits::kInterPool) {
    reader.diagnostics().add(reader.path_of("interPool"),
                             fmt::format("must have at most {} entries, got {}", limits::kInterPool,
                                         links->keys().size()));
    return;
  }
  for (const auto& key : links->keys()) {
    if (auto bandwidth = links->quantity(key, kRequired, Range::above(0))) {
      pool.inter_pool[key] = *bandwidth;
    }
  }
}

// capacityType (OnDemand or Spot) and interruptionsPerHour, whose default follows the type.
void read_capacity(ObjectReader& reader, Pool& pool) {
  if (auto type = reader.string("capacityType", kOptional)) {
    if (*type == "OnDemand") {
      pool.capacity_type = CapacityType::OnDemand;
    } else if (*type == "Spot") {
      pool.capacity_type = CapacityType::Spot;
    } else {
      std::string what = fmt::format("must be OnDemand or Spot, got {}", describe(*type));
      if (auto hint = closest_name(*type, {"OnDemand", "Spot"})) {
        what += fmt::format(" (did you mean \"{}\"?)", *hint);
      }
      reader.diagnostics().add(reader.path_of("capacityType"), what);
    }
  }
  pool.interruptions_per_hour = reader.number("interruptionsPerHour", kOptional, Range::at_least(0))
                                    .value_or(default_interruptions_per_hour(pool.capacity_type));
}

void read_pools(const json& object, std::vector<Pool>& pools, Diagnostics& diagnostics) {
  if (!object.is_object()) {
    diagnostics.add("", fmt::format("must be a pools file (a mapping with a pools: list), got {}",
                                    describe(object)));
    return;
  }
  ObjectReader root(object, "", diagnostics);
  root.allow_only({"pools"});
  const json* list = root.list("pools", kRequired, limits::kPools);
  if (!list) return;
  UniqueNames names("name");
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto reader = read_object((*list)[i], item_path("pools", i), diagnostics);
    if (!reader) continue;
    reader->allow_only({"name", "gpuType", "gpus", "gpuGflops", "pricePerGpuHour",
                        "bandwidthBytesPerSecond", "storageBandwidthBytesPerSecond",
                        "startupSeconds", "interPool", "nodes", "gpusPerNode", "capacityType",
                        "interruptionsPerHour"});
    Pool pool;
    if (auto name = reader->string("name", kRequired)) {
      if (!is_dns_label(*name)) {
        diagnostics.add(reader->path_of("name"),
                        fmt::format("must be a DNS label (lowercase letters, digits and '-', "
                                    "starting and ending with a letter or digit, at most 63 "
                                    "characters), got {}",
                                    describe(*name)));
      }
      pool.name = *name;
      names.check(*reader, pool.name);
    }
    pool.gpu_type = reader->string("gpuType", kRequired, false, limits::kNameLength).value_or("");
    read_gpu_count(*reader, pool);
    pool.gpu_gflops = reader->number("gpuGflops", kRequired, Range::above(0)).value_or(0);
    pool.price_per_gpu_hour =
        reader->number("pricePerGpuHour", kRequired, Range::at_least(0)).value_or(0);
    pool.bandwidth =
        reader->quantity("bandwidthBytesPerSecond", kRequired, Range::above(0)).value_or(0);
    pool.storage_bandwidth =
        reader->quantity("storageBandwidthBytesPerSecond", kRequired, Range::above(0)).value_or(0);
    pool.startup_seconds =
        reader->number("startupSeconds", kOptional, Range::at_least(0)).value_or(0);
    read_inter_pool(*reader, pool);
    read_capacity(*reader, pool);
    pools.push_back(std::move(pool));
  }
}

}  // namespace

Expected<std::vector<Pool>, ValidationError> parse_pools_json(const nlohmann::json& object) {
  Diagnostics diagnostics;
  std::vector<Pool> pools;
  read_pools(object, pools, diagnostics);
  if (!diagnostics.empty()) return unexpected(ValidationError{diagnostics.take()});
  return pools;
}

Expected<std::vector<Pool>, ValidationError> parse_pools_yaml(std::string_view yaml,
                                                              std::string_view source) {
  auto document = read_yaml_document(yaml, source, "a pools file (pools: [...])");
  if (!document) return unexpected(std::move(document).error());
  auto pools = parse_pools_json(*document);
  if (!pools) return unexpected(with_source(std::move(pools).error(), source));
  return pools;
}

}  // namespace depl::solver
