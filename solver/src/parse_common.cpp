#include "parse_common.hpp"

#include <fmt/format.h>

#include "depl/common/yaml_json.hpp"

namespace depl::solver::parse_detail {

std::string item_path(std::string_view list_path, std::size_t index) {
  return fmt::format("{}[{}]", list_path, index);
}

void UniqueNames::check(ObjectReader& item, const std::string& name) {
  if (name.empty()) return;  // a missing name is reported on its own
  const auto [it, inserted] = first_path_.emplace(name, item.path());
  if (!inserted) {
    item.diagnostics().add(item.path_of(key_), fmt::format("duplicate name {} (first at {})",
                                                           describe(name), it->second));
  }
}

Expected<nlohmann::json, ValidationError> read_yaml_document(std::string_view yaml,
                                                             std::string_view source,
                                                             std::string_view expected) {
  auto document = yaml_to_json(yaml, source);
  if (!document) return unexpected(ValidationError{{document.error().message}});
  if (document->is_null()) {
    return unexpected(with_source(
        ValidationError{{fmt::format("the document is empty, expected {}", expected)}}, source));
  }
  return std::move(*document);
}

ValidationError with_source(ValidationError error, std::string_view source) {
  if (source.empty()) return error;
  for (auto& message : error.messages) message = fmt::format("{}: {}", source, message);
  return error;
}

}  // namespace depl::solver::parse_detail
