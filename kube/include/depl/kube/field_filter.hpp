// Decoding JSON with only some of its members: a FieldFilter is a tree of member names to keep,
// applied while the text is parsed, so what a reader would throw away is skipped instead of
// being built (an informer that caches a few fields of every pod need not build the rest).
// The parser still reads and checks every byte: text is accepted or refused exactly as a whole
// parse would.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::kube {

// Which members of a JSON value to keep, by path. Applied to a value:
//   - a kept path's value is kept whole;
//   - an object keeps only the members on some kept path, each filtered by the rest of its paths;
//   - an array is transparent: each element is filtered as the array itself would be (so
//     {"spec", "containers", "name"} keeps the name of every container);
//   - a string, number, boolean or null is kept as it is.
// An empty filter keeps nothing of an object. Values: copyable, immutable once built, safe to
// share between threads for reading.
class FieldFilter {
 public:
  // Keeps the value at `path` (member names, arrays not counted) whole. A path under one kept
  // whole adds nothing; a path above kept ones keeps everything below it.
  FieldFilter& keep(std::initializer_list<std::string_view> path);
  // Keeps the value at `path` filtered by `below` (replacing what was kept there).
  FieldFilter& keep(std::initializer_list<std::string_view> path, const FieldFilter& below);

  // Whether the filter keeps every member (a kept empty path).
  bool keeps_everything() const { return whole_; }
  // The filter for member `name` of an object this filter applies to; nullptr when that member
  // is dropped.
  const FieldFilter* member(std::string_view name) const;

  // `value` with only the members this filter keeps (what parsing its text with the filter gives).
  nlohmann::json apply(const nlohmann::json& value) const;

  bool operator==(const FieldFilter&) const = default;

 private:
  // The node at `path`, made where missing; nullptr when one on the way keeps everything.
  FieldFilter* node_at(std::initializer_list<std::string_view> path);

  bool whole_ = false;
  std::vector<std::pair<std::string, FieldFilter>> members_;  // few: a scan beats a map
};

// Parses `text` keeping only what `filter` keeps. Text that is not valid JSON is an error saying
// why (nlohmann's message), whatever the filter would have dropped.
Expected<nlohmann::json> parse_filtered(std::string_view text, const FieldFilter& filter);

}  // namespace depl::kube
