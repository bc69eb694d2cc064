// Label selectors (=, ==, !=, in, notin, exists, !key) and field selectors (=, ==, != joined by
// commas) as list and watch requests carry them, parsed once and matched per object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::devcluster {

class LabelSelector {
 public:
  enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };

  // "" selects everything. Errors name the offending part.
  static Expected<LabelSelector> parse(std::string_view text);
  // `labels` is metadata.labels (object or null).
  bool matches(const nlohmann::json& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  struct Requirement {
    std::string field;  // "metadata.name", "spec.nodeName", ...
    bool equals;        // = / == vs !=
    std::string value;
  };

  static Expected<FieldSelector> parse(std::string_view text);
  // Fields are read from the object by their dotted path; a missing field reads as "".
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }
  // Renames fields (events.k8s.io "regarding.x" -> "involvedObject.x").
  void rename_prefix(const std::string& from, const std::string& to);

 private:
  std::vector<Requirement> requirements_;
};

// The dotted-path value of `object` as the string field selectors compare ("" if absent).
std::string field_value(const nlohmann::json& object, const std::string& dotted_path);

}  // namespace depl::devcluster
