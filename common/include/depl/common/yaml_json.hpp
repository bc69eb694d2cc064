// YAML text <-> nlohmann::json, the one bridge between the YAML people write (manifests, pools
// files, `-o yaml`) and the JSON every layer works on. Parsing follows the YAML 1.2 core schema
// (plain `true`, `3`, `1.5`, `null` are typed; quoted scalars stay strings); emitting quotes a
// string only when it would otherwise read back as something else. Never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl {

// The first document of `yaml` as JSON (null for an empty input); later documents must still be
// well-formed YAML. Errors carry the position,
// "job.yaml:3:7: <what>" when `source` is given, "line 3, column 7: <what>" otherwise. Mapping
// keys must be scalars and unique; `.inf`/`.nan` become non-finite doubles (callers that need
// finite numbers check). Anchors and aliases are expanded, within a size limit.
Expected<nlohmann::json> yaml_to_json(std::string_view yaml, std::string_view source = "");

// Every document of a `---` separated stream, in order (empty for an empty input).
Expected<std::vector<nlohmann::json>> yaml_documents_to_json(std::string_view yaml,
                                                             std::string_view source = "");

// Block-style YAML for `value`, keys in the json's iteration order, ending with a newline.
// Reading the text back with yaml_to_json gives `value` again (non-finite doubles become
// .inf/-.inf/.nan; invalid UTF-8 in strings is replaced by U+FFFD).
std::string json_to_yaml(const nlohmann::json& value);

}  // namespace depl
