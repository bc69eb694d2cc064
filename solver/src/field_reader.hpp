// Internal to the parsers: reads typed, range-checked fields out of JSON objects and collects
// every problem as "path: rule, got X" instead of stopping at the first, so a user sees all
// that is wrong with a manifest at once. Reading never throws.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::solver::parse_detail {

// The messages found so far, each "path: what is wrong".
class Diagnostics {
 public:
  void add(std::string_view path, std::string_view what);
  bool empty() const { return messages_.empty(); }
  std::size_t size() const { return messages_.size(); }
  std::vector<std::string> take() { return std::move(messages_); }

 private:
  std::vector<std::string> messages_;
};

// How a value is shown after "got": numbers in shortest form, strings quoted and shortened,
// containers by kind ("a list", "a mapping").
std::string describe(const nlohmann::json& value);

// The closest of `candidates` to `name` when it is close enough to be a likely typo.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates);

enum class Presence { Required, Optional };
inline constexpr Presence kRequired = Presence::Required;
inline constexpr Presence kOptional = Presence::Optional;

// The allowed interval of a number; open or closed ends, or no end at all.
struct Range {
  std::optional<double> low;
  bool low_inclusive = true;
  std::optional<double> high;
  bool high_inclusive = true;

  static Range any() { return {}; }
  static Range above(double low) { return {low, false, std::nullopt, true}; }
  static Range at_least(double low) { return {low, true, std::nullopt, true}; }
  static Range between(double low, bool low_inclusive, double high, bool high_inclusive) {
    return {low, low_inclusive, high, high_inclusive};
  }
  bool contains(double value) const;
  std::string rule() const;  // "must be > 0", "must be in (0,1]"
};

// Reads the fields of one JSON object that lives at `path` ("spec.models[1]"). Absent keys and
// explicit nulls are treated alike (YAML `key:` with no value is null). Every read that fails
// records a message and returns nullopt.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& object, std::string path, Diagnostics& diagnostics);

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const;
  // Every key of the object, in the JSON's order.
  std::vector<std::string> keys() const;
  // The value under `key`, or nullptr when absent or null.
  const nlohmann::json* get(std::string_view key) const;

  // Reports each key that is neither `known` nor `ignored`, with a "did you mean" hint when a
  // known key is close. `ignored` keys are accepted without looking at their value.
  void allow_only(std::initializer_list<std::string_view> known,
                  std::initializer_list<std::string_view> ignored = {});

  std::optional<double> number(std::string_view key, Presence presence,
                               const Range& range = Range::any());
  // A number, or a Kubernetes quantity string ("40Gi", "1.25G").
  std::optional<double> quantity(std::string_view key, Presence presence,
                                 const Range& range = Range::any());
  // A whole number (2.0 is fine, 2.5 is not) that fits the range and 64 bits.
  std::optional<std::int64_t> integer(std::string_view key, Presence presence,
                                      const Range& range = Range::any());
  // An int-sized integer.
  std::optional<int> small_integer(std::string_view key, Presence presence,
                                   const Range& range = Range::any());
  // `max_length` in bytes (0: none).
  std::optional<std::string> string(std::string_view key, Presence presence,
                                    bool allow_empty = false, std::size_t max_length = 0);
  // At most `max_items` strings (0: any number) of at most `max_length` bytes each.
  std::optional<std::vector<std::string>> string_list(std::string_view key, Presence presence,
                                                      std::size_t max_items = 0,
                                                      std::size_t max_length = 0);
  // A nested mapping, or nullopt (recording an error when it is the wrong kind or missing).
  std::optional<ObjectReader> object(std::string_view key, Presence presence);
  // A nested list; nullptr when absent (recording an error when required), the wrong kind or
  // longer than `max_items` (0: any length).
  const nlohmann::json* list(std::string_view key, Presence presence, std::size_t max_items = 0);

  Diagnostics& diagnostics() { return *diagnostics_; }

 private:
  const nlohmann::json* require(std::string_view key, Presence presence);
  void type_error(std::string_view key, std::string_view expected, const nlohmann::json& got);

  const nlohmann::json* object_;
  std::string path_;
  Diagnostics* diagnostics_;
};

// An ObjectReader for `value` when it is a mapping; otherwise records
// "path: must be a mapping, got ..." and returns nullopt.
std::optional<ObjectReader> read_object(const nlohmann::json& value, std::string path,
                                        Diagnostics& diagnostics);

}  // namespace depl::solver::parse_detail
