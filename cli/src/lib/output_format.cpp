#include "depl/cli/output_format.hpp"

#include <fmt/format.h>

#include "depl/common/yaml_json.hpp"

namespace depl::cli {

Expected<OutputFormat> parse_output_format(std::string_view name) {
  if (name == "table") return OutputFormat::Table;
  if (name == "json") return OutputFormat::Json;
  if (name == "yaml") return OutputFormat::Yaml;
  return depl::error(fmt::format("-o: must be one of table, json, yaml; got \"{}\"", name));
}

std::string render_document(const nlohmann::json& document, OutputFormat format) {
  if (format == OutputFormat::Yaml) return json_to_yaml(document);
  // Replace invalid UTF-8 rather than throw: names come from user files.
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
}

}  // namespace depl::cli
