#include "depl/worker/shards.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace depl::worker {
namespace {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Replaces exactly round(fraction * count) labels of the shard, each by one of the other classes,
// so the declared fraction is the fraction of wrong labels.
void corrupt_labels(const ShardDefinition& shard, std::uint64_t noise_seed, int classes,
                    std::vector<std::uint8_t>& labels, std::size_t offset) {
  const int noisy = static_cast<int>(std::lround(shard.label_noise * shard.count));
  if (noisy == 0 || classes < 2) return;
  std::seed_seq seq{static_cast<std::uint32_t>(noise_seed),
                    static_cast<std::uint32_t>(noise_seed >> 32),
                    static_cast<std::uint32_t>(fnv1a(shard.name)),
                    static_cast<std::uint32_t>(fnv1a(shard.name) >> 32)};
  std::mt19937_64 rng(seq);
  std::vector<int> positions(static_cast<std::size_t>(shard.count));
  for (int i = 0; i < shard.count; ++i) positions[static_cast<std::size_t>(i)] = i;
  for (int i = 0; i < noisy; ++i) {  // partial Fisher-Yates: the first `noisy` are a random subset
    std::uniform_int_distribution<int> pick(i, shard.count - 1);
    std::swap(positions[static_cast<std::size_t>(i)],
              positions[static_cast<std::size_t>(pick(rng))]);
    std::uniform_int_distribution<int> shift(1, classes - 1);
    auto& label = labels[offset + static_cast<std::size_t>(positions[static_cast<std::size_t>(i)])];
    label = static_cast<std::uint8_t>((label + shift(rng)) % classes);
  }
}

Expected<void> check_layout(const ShardLayout& layout, int total, const std::string& origin) {
  std::set<std::string> names;
  for (const auto& s : layout.shards) {
    if (s.name.empty()) return error(fmt::format("{}: a shard has an empty name", origin));
    if (!names.insert(s.name).second) {
      return error(fmt::format("{}: shard name '{}' appears twice", origin, s.name));
    }
    if (s.count <= 0) {
      return error(
          fmt::format("{}: shard '{}' needs samples > 0, got {}", origin, s.name, s.count));
    }
    if (!(s.label_noise >= 0.0 && s.label_noise <= 1.0)) {
      return error(fmt::format("{}: shard '{}' labelNoise must be in [0, 1], got {}", origin,
                               s.name, s.label_noise));
    }
    if (s.first + s.count > total) {
      return error(fmt::format("{}: shard '{}' ends at row {}, but the training set has {} rows",
                               origin, s.name, s.first + s.count, total));
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = trim(item);
    if (!item.empty()) names.push_back(item);
  }
  return names;
}

Expected<ShardLayout> equal_shards(int count, int total) {
  if (count <= 0) return error(fmt::format("shards: need a positive shard count, got {}", count));
  if (count > total) {
    return error(fmt::format("shards: {} shards of {} rows would be empty", count, total));
  }
  ShardLayout layout;
  const int size = total / count;
  for (int i = 0; i < count; ++i) {
    layout.shards.push_back({fmt::format("shard{}", i), i * size, size, 0.0});
  }
  return layout;
}

Expected<ShardLayout> parse_shards_json(const std::string& text, int total,
                                        const std::string& origin) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!doc.is_object() || !doc.contains("shards") || !doc["shards"].is_array()) {
    return error(fmt::format("{}: want an object with a \"shards\" array", origin));
  }
  ShardLayout layout;
  if (doc.contains("noiseSeed")) {
    if (!doc["noiseSeed"].is_number_unsigned()) {
      return error(fmt::format("{}: noiseSeed must be a non-negative integer", origin));
    }
    layout.noise_seed = doc["noiseSeed"].get<std::uint64_t>();
  }
  int next = 0;
  for (std::size_t i = 0; i < doc["shards"].size(); ++i) {
    const auto& item = doc["shards"][i];
    const std::string where = fmt::format("{}: shards[{}]", origin, i);
    if (!item.is_object()) return error(where + ": must be an object");
    if (!item.contains("name") || !item["name"].is_string()) {
      return error(where + ".name: must be a string");
    }
    if (!item.contains("samples") || !item["samples"].is_number_integer()) {
      return error(where + ".samples: must be an integer");
    }
    ShardDefinition shard;
    shard.name = item["name"].get<std::string>();
    shard.first = next;
    const auto samples = item["samples"].get<long long>();
    if (samples <= 0 || samples > total) {
      return error(fmt::format("{}.samples: must be in [1, {}], got {}", where, total, samples));
    }
    shard.count = static_cast<int>(samples);
    if (item.contains("labelNoise")) {
      if (!item["labelNoise"].is_number()) return error(where + ".labelNoise: must be a number");
      shard.label_noise = item["labelNoise"].get<double>();
    }
    next += shard.count;
    layout.shards.push_back(shard);
  }
  if (layout.shards.empty()) return error(origin + ": \"shards\" is empty");
  auto ok = check_layout(layout, total, origin);
  if (!ok) return unexpected(ok.error());
  return layout;
}

Expected<ShardLayout> shard_layout_from_spec(const std::string& spec, int total) {
  int count = 0;
  const auto* end = spec.data() + spec.size();
  if (auto [p, ec] = std::from_chars(spec.data(), end, count); ec == std::errc() && p == end) {
    return equal_shards(count, total);
  }
  // Inline JSON: a pod gets its shard layout in its arguments, without a file to mount.
  if (const auto first = spec.find_first_not_of(" \t\n"); first != std::string::npos &&
                                                             spec[first] == '{') {
    return parse_shards_json(spec, total, "the inline shards JSON");
  }
  std::ifstream in(spec);
  if (!in) {
    return error(
        fmt::format("shards: '{}' is neither a shard count, nor inline shards JSON, nor a readable shards file", spec));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_shards_json(text.str(), total, spec);
}

Expected<void> apply_label_noise(ShardLayout& layout, const std::string& spec) {
  for (const auto& item : split_names(spec)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      return error(fmt::format("label noise '{}': want shard=fraction", item));
    }
    const std::string name = trim(item.substr(0, eq));
    const std::string value = trim(item.substr(eq + 1));
    double fraction = 0;
    const auto* end = value.data() + value.size();
    auto [p, ec] = std::from_chars(value.data(), end, fraction);
    if (ec != std::errc() || p != end || !(fraction >= 0.0 && fraction <= 1.0)) {
      return error(
          fmt::format("label noise for '{}': want a fraction in [0, 1], got '{}'", name, value));
    }
    auto shard = std::find_if(layout.shards.begin(), layout.shards.end(),
                              [&](const ShardDefinition& s) { return s.name == name; });
    if (shard == layout.shards.end()) {
      return error(fmt::format("label noise: no shard named '{}'", name));
    }
    shard->label_noise = fraction;
  }
  return {};
}

Expected<int> rows_needed(const ShardLayout& layout, const std::vector<std::string>& names) {
  int rows = 0;
  for (const auto& name : names) {
    auto shard = std::find_if(layout.shards.begin(), layout.shards.end(),
                              [&](const ShardDefinition& s) { return s.name == name; });
    if (shard == layout.shards.end()) {
      std::string known;
      for (const auto& s : layout.shards) known += (known.empty() ? "" : ", ") + s.name;
      return error(fmt::format("dataset '{}' is not a shard (known: {})", name, known));
    }
    rows = std::max(rows, shard->first + shard->count);
  }
  return rows;
}

Expected<SampleSet> select_shards(const ImageTable& table, const ShardLayout& layout,
                                  const std::vector<std::string>& names, int classes) {
  if (names.empty()) return error("datasets: no shard selected");
  auto needed = rows_needed(layout, names);
  if (!needed) return unexpected(needed.error());
  if (*needed > table.count) {
    return error(fmt::format("datasets: the shards need {} training rows, {} are loaded", *needed,
                             table.count));
  }
  std::set<std::string> seen;
  SampleSet set;
  set.table = &table;
  for (const auto& name : names) {
    if (!seen.insert(name).second) {
      return error(fmt::format("datasets: '{}' is listed twice", name));
    }
    const auto& shard = *std::find_if(layout.shards.begin(), layout.shards.end(),
                                      [&](const ShardDefinition& s) { return s.name == name; });
    const std::size_t offset = set.labels.size();
    for (int i = 0; i < shard.count; ++i) {
      set.rows.push_back(shard.first + i);
      set.labels.push_back(table.labels[static_cast<std::size_t>(shard.first + i)]);
    }
    corrupt_labels(shard, layout.noise_seed, classes, set.labels, offset);
  }
  return set;
}

SampleSet leading_rows(const ImageTable& table, int limit) {
  SampleSet set;
  set.table = &table;
  const int n = std::min(limit, table.count);
  for (int i = 0; i < n; ++i) {
    set.rows.push_back(i);
    set.labels.push_back(table.labels[static_cast<std::size_t>(i)]);
  }
  return set;
}

}  // namespace depl::worker
