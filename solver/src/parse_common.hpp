// Internal to the parsers: the pieces the job and pools parsers share (list item paths,
// duplicate-name detection, reading the one YAML document, prefixing the source name).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/solver/parse.hpp"
#include "field_reader.hpp"

namespace depl::solver::parse_detail {

// "spec.models" + 1 -> "spec.models[1]".
std::string item_path(std::string_view list_path, std::size_t index);

// Remembers the names seen in one list and reports a repeat at the repeating item's `key`.
class UniqueNames {
 public:
  explicit UniqueNames(std::string key) : key_(std::move(key)) {}
  void check(ObjectReader& item, const std::string& name);

 private:
  std::string key_;
  std::map<std::string, std::string> first_path_;  // name -> path of the item that had it
};

// The first YAML document of `yaml` as JSON; a syntax error or an empty document is a
// ValidationError naming `source` ("job.yaml:3:7: ..."). `expected` says what the document
// should have been ("a DependableTrainingJob manifest").
Expected<nlohmann::json, ValidationError> read_yaml_document(std::string_view yaml,
                                                             std::string_view source,
                                                             std::string_view expected);

// Prefixes every message with "<source>: " when `source` is not empty.
ValidationError with_source(ValidationError error, std::string_view source);

}  // namespace depl::solver::parse_detail
