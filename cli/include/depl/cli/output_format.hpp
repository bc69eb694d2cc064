// The `-o` flag shared by the subcommands that print documents: table (for people), json and
// yaml (for programs; yaml is the json document written as YAML).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::cli {

enum class OutputFormat { Table, Json, Yaml };

// "table" | "json" | "yaml"; anything else is an error naming the accepted values.
Expected<OutputFormat> parse_output_format(std::string_view name);

// The document as pretty JSON (2-space indent) or block YAML, ending with a newline.
std::string render_document(const nlohmann::json& document, OutputFormat format);

}  // namespace depl::cli
