#include "depl/kube/http.hpp"

#include <algorithm>
#include <cctype>

#include "depl/kube/resource.hpp"

namespace depl::kube {

static bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view find_header(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return {};
}

std::string HttpRequest::target() const {
  std::string out = path;
  char separator = '?';
  for (const auto& [key, value] : query) {
    out.push_back(separator);
    separator = '&';
    out += percent_encode(key);
    out.push_back('=');
    out += percent_encode(value);
  }
  return out;
}

std::optional<std::string> HttpRequest::query_param(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return value;
  }
  return std::nullopt;
}

void HttpRequest::set_header(std::string name, std::string value) {
  for (auto& [key, existing] : headers) {
    if (iequals(key, name)) {
      existing = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

}  // namespace depl::kube
