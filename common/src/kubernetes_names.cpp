#include "depl/common/kubernetes_names.hpp"

#include <algorithm>

namespace depl {

namespace {

bool lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool alnum(char c) {
  return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

bool is_dns1123_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253 || !lower_alnum(s.front()) || !lower_alnum(s.back()))
    return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return lower_alnum(c) || c == '-' || c == '.'; });
}

bool has_dns1123_label_form(std::string_view s) {
  if (s.empty() || !lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return lower_alnum(c) || c == '-'; });
}

bool has_dns1035_label_form(std::string_view s) {
  return has_dns1123_label_form(s) && s.front() >= 'a' && s.front() <= 'z';
}

bool is_qualified_name_part(std::string_view s) {
  if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_qualified_name(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos) return is_qualified_name_part(s);
  return is_dns1123_subdomain(s.substr(0, slash)) && is_qualified_name_part(s.substr(slash + 1));
}

bool is_label_value(std::string_view s) {
  return s.empty() || is_qualified_name_part(s);
}

bool is_env_var_name(std::string_view s) {
  if (s.empty() || digit(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_standard_container_resource(std::string_view s) {
  return s == "cpu" || s == "memory" || s == "ephemeral-storage" || s.rfind("hugepages-", 0) == 0;
}

}  // namespace depl
