#include "field_reader.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>

#include "depl/common/quantity.hpp"

namespace depl::solver::parse_detail {
namespace {

using nlohmann::json;

std::string number_text(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  return fmt::format("{}", value);
}

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitution = diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (lower(text[i]) != lower(prefix[i])) return false;
  }
  return true;
}

}  // namespace

void Diagnostics::add(std::string_view path, std::string_view what) {
  messages_.push_back(path.empty() ? std::string(what) : fmt::format("{}: {}", path, what));
}

std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(value.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(value.get<std::uint64_t>());
    case json::value_t::number_float:
      return number_text(value.get<double>());
    case json::value_t::string: {
      constexpr std::size_t kShown = 40;
      const auto& text = value.get_ref<const std::string&>();
      if (text.size() <= kShown) {
        return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
      }
      // Cut on a UTF-8 boundary so the replacement handler does not mangle the last character.
      std::size_t cut = kShown;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
      const std::string shown =
          json(text.substr(0, cut)).dump(-1, ' ', false, json::error_handler_t::replace);
      return shown.substr(0, shown.size() - 1) + "...\"";
    }
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "a mapping";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "nothing";
  }
  return "something else";
}

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(1, name.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    std::size_t distance = edit_distance(name, candidate);
    // "decay" for "decayPerEpoch": a truncated name is a likely slip too.
    if (name.size() >= 4 && starts_with_ignoring_case(candidate, name)) distance = 1;
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

bool Range::contains(double value) const {
  if (low && (low_inclusive ? value < *low : value <= *low)) return false;
  if (high && (high_inclusive ? value > *high : value >= *high)) return false;
  return true;
}

std::string Range::rule() const {
  if (low && high) {
    return fmt::format("must be in {}{},{}{}", low_inclusive ? '[' : '(', number_text(*low),
                       number_text(*high), high_inclusive ? ']' : ')');
  }
  if (low) return fmt::format("must be {} {}", low_inclusive ? ">=" : ">", number_text(*low));
  if (high) return fmt::format("must be {} {}", high_inclusive ? "<=" : "<", number_text(*high));
  return "may be any number";
}

ObjectReader::ObjectReader(const json& object, std::string path, Diagnostics& diagnostics)
    : object_(&object), path_(std::move(path)), diagnostics_(&diagnostics) {}

std::string ObjectReader::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

std::vector<std::string> ObjectReader::keys() const {
  std::vector<std::string> names;
  for (auto it = object_->begin(); it != object_->end(); ++it) names.push_back(it.key());
  return names;
}

const json* ObjectReader::get(std::string_view key) const {
  const auto found = object_->find(key);
  if (found == object_->end() || found->is_null()) return nullptr;
  return &*found;
}

void ObjectReader::allow_only(std::initializer_list<std::string_view> known,
                              std::initializer_list<std::string_view> ignored) {
  std::vector<std::string> candidates(known.begin(), known.end());
  candidates.insert(candidates.end(), ignored.begin(), ignored.end());
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    const std::string& key = it.key();
    if (std::find(candidates.begin(), candidates.end(), key) != candidates.end()) continue;
    const std::string shown_key = json(key).dump(-1, ' ', false, json::error_handler_t::replace);
    // Keys are shown raw in the path unless they need quoting to be readable.
    const bool plain = shown_key.size() == key.size() + 2 && !key.empty();
    const std::string path = plain ? path_of(key) : path_of(shown_key);
    if (auto hint = closest_name(key, candidates)) {
      diagnostics_->add(path, fmt::format("unknown field, did you mean \"{}\"?", *hint));
    } else {
      diagnostics_->add(path, "unknown field");
    }
  }
}

const json* ObjectReader::require(std::string_view key, Presence presence) {
  const json* value = get(key);
  if (!value && presence == Presence::Required) diagnostics_->add(path_of(key), "is required");
  return value;
}

void ObjectReader::type_error(std::string_view key, std::string_view expected, const json& got) {
  diagnostics_->add(path_of(key), fmt::format("must be {}, got {}", expected, describe(got)));
}

std::optional<double> ObjectReader::number(std::string_view key, Presence presence,
                                           const Range& range) {
  const json* value = require(key, presence);
  if (!value) return std::nullopt;
  if (!value->is_number()) {
    type_error(key, "a number", *value);
    return std::nullopt;
  }
  const double number = value->get<double>();
  if (!std::isfinite(number)) {
    type_error(key, "a finite number", *value);
    return std::nullopt;
  }
  if (!range.contains(number)) {
    diagnostics_->add(path_of(key), fmt::format("{}, got {}", range.rule(), describe(*value)));
    return std::nullopt;
  }
  return number;
}

std::optional<double> ObjectReader::quantity(std::string_view key, Presence presence,
                                             const Range& range) {
  const json* value = require(key, presence);
  if (!value) return std::nullopt;
  if (!value->is_string()) {
    if (!value->is_number()) type_error(key, "a number or a quantity such as 10Gi", *value);
    return value->is_number() ? number(key, presence, range) : std::nullopt;
  }
  const auto parsed = parse_quantity(value->get_ref<const std::string&>());
  if (!parsed) {
    diagnostics_->add(path_of(key), parsed.error().message);
    return std::nullopt;
  }
  if (!std::isfinite(*parsed)) {
    type_error(key, "a finite quantity", *value);
    return std::nullopt;
  }
  if (!range.contains(*parsed)) {
    diagnostics_->add(path_of(key), fmt::format("{}, got {}", range.rule(), describe(*value)));
    return std::nullopt;
  }
  return *parsed;
}

std::optional<std::int64_t> ObjectReader::integer(std::string_view key, Presence presence,
                                                  const Range& range) {
  const json* value = require(key, presence);
  if (!value) return std::nullopt;
  if (value->is_number_integer() && !value->is_number_unsigned()) {
    const auto whole = value->get<std::int64_t>();
    if (!range.contains(static_cast<double>(whole))) {
      diagnostics_->add(path_of(key), fmt::format("{}, got {}", range.rule(), describe(*value)));
      return std::nullopt;
    }
    return whole;
  }
  if (!value->is_number()) {
    type_error(key, "an integer", *value);
    return std::nullopt;
  }
  // Unsigned beyond int64 and floats: accept whole floats in range ("2.0 workers").
  const double number = value->get<double>();
  if (!std::isfinite(number) || std::floor(number) != number) {
    type_error(key, "an integer", *value);
    return std::nullopt;
  }
  if (!range.contains(number)) {
    diagnostics_->add(path_of(key), fmt::format("{}, got {}", range.rule(), describe(*value)));
    return std::nullopt;
  }
  constexpr double kLimit = 9.2e18;  // just under 2^63
  if (std::fabs(number) >= kLimit) {
    diagnostics_->add(path_of(key), fmt::format("is too large, got {}", describe(*value)));
    return std::nullopt;
  }
  return static_cast<std::int64_t>(number);
}

std::optional<int> ObjectReader::small_integer(std::string_view key, Presence presence,
                                               const Range& range) {
  const auto whole = integer(key, presence, range);
  if (!whole) return std::nullopt;
  if (*whole > INT_MAX || *whole < INT_MIN) {
    diagnostics_->add(path_of(key), fmt::format("must be at most {}, got {}", INT_MAX, *whole));
    return std::nullopt;
  }
  return static_cast<int>(*whole);
}

std::optional<std::string> ObjectReader::string(std::string_view key, Presence presence,
                                                bool allow_empty, std::size_t max_length) {
  const json* value = require(key, presence);
  if (!value) return std::nullopt;
  if (!value->is_string()) {
    type_error(key, "a string", *value);
    return std::nullopt;
  }
  const auto& text = value->get_ref<const std::string&>();
  if (text.empty() && !allow_empty) {
    diagnostics_->add(path_of(key), "must not be empty");
    return std::nullopt;
  }
  if (max_length > 0 && text.size() > max_length) {
    diagnostics_->add(path_of(key), fmt::format("must be at most {} characters, got {}", max_length,
                                                text.size()));
    return std::nullopt;
  }
  return text;
}

std::optional<std::vector<std::string>> ObjectReader::string_list(std::string_view key,
                                                                  Presence presence,
                                                                  std::size_t max_items,
                                                                  std::size_t max_length) {
  const json* value = list(key, presence, max_items);
  if (!value) return std::nullopt;
  std::vector<std::string> items;
  bool ok = true;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& item = (*value)[i];
    const std::string item_path = fmt::format("{}[{}]", path_of(key), i);
    if (!item.is_string()) {
      diagnostics_->add(item_path, fmt::format("must be a string, got {}", describe(item)));
      ok = false;
    } else if (item.get_ref<const std::string&>().empty()) {
      diagnostics_->add(item_path, "must not be empty");
      ok = false;
    } else if (max_length > 0 && item.get_ref<const std::string&>().size() > max_length) {
      diagnostics_->add(item_path, fmt::format("must be at most {} characters, got {}", max_length,
                                               item.get_ref<const std::string&>().size()));
      ok = false;
    } else {
      items.push_back(item.get<std::string>());
    }
  }
  if (!ok) return std::nullopt;
  return items;
}

std::optional<ObjectReader> ObjectReader::object(std::string_view key, Presence presence) {
  const json* value = require(key, presence);
  if (!value) return std::nullopt;
  return read_object(*value, path_of(key), *diagnostics_);
}

const json* ObjectReader::list(std::string_view key, Presence presence, std::size_t max_items) {
  const json* value = require(key, presence);
  if (!value) return nullptr;
  if (!value->is_array()) {
    type_error(key, "a list", *value);
    return nullptr;
  }
  if (max_items > 0 && value->size() > max_items) {
    // Past this the solver's budget could not promise an answer: the schema says the same.
    diagnostics_->add(path_of(key),
                      fmt::format("must list at most {} items, got {}", max_items, value->size()));
    return nullptr;
  }
  return value;
}

std::optional<ObjectReader> read_object(const json& value, std::string path,
                                        Diagnostics& diagnostics) {
  if (!value.is_object()) {
    diagnostics.add(path, fmt::format("must be a mapping, got {}", describe(value)));
    return std::nullopt;
  }
  return ObjectReader(value, std::move(path), diagnostics);
}

}  // namespace depl::solver::parse_detail
