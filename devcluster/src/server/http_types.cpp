#include "server/http_types.hpp"

namespace depl::devcluster {

std::string HttpRequest::header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> HttpRequest::query_param(std::string_view name) const {
  std::optional<std::string> value;
  for (const auto& [k, v] : query) {
    if (k == name) value = v;
  }
  return value;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

void HttpRequest::parse_target() {
  const auto q = target.find('?');
  path = percent_decode(std::string_view(target).substr(0, q), false);
  query.clear();
  if (q == std::string::npos) return;
  std::string_view rest = std::string_view(target).substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    std::string key = percent_decode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true);
    query.emplace_back(std::move(key), std::move(value));
  }
}

}  // namespace depl::devcluster
