#include "depl/common/yaml_json.hpp"

#include <fmt/format.h>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "yaml_scalar.hpp"

namespace depl {
namespace {

using nlohmann::json;
using yaml_detail::kInvalidCodePoint;
using yaml_detail::next_code_point;
using yaml_detail::resolve_plain;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Characters YAML allows to appear raw in a stream and that do not break a line.
bool printable_inline(std::int32_t cp) {
  if (cp == kInvalidCodePoint) return false;
  if (cp < 0x20) return false;  // tabs too: legal, but easy to lose when copied
  if (cp < 0x7F) return true;
  if (cp < 0xA0) return false;  // DEL, C1 controls and NEL (a line break in YAML 1.1)
  if (cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) return false;
  if (cp >= 0xD800 && cp <= 0xDFFF) return false;
  if (cp == 0xFFFE || cp == 0xFFFF) return false;
  return true;
}

bool is_yaml11_special(std::string_view s) {
  // Words and numerals a YAML 1.1 reader (PyYAML, older Go yaml) would not read as strings.
  static constexpr std::array<std::string_view, 20> kWords{
      "y",  "Y",  "yes", "Yes", "YES", "n",   "N", "no", "No", "NO",
      "on", "On", "ON",  "off", "Off", "OFF", "=", "<<", "-",  "?"};
  for (std::string_view w : kWords)
    if (s == w) return true;
  if (is_digit(s[0]) || s[0] == '+' || s[0] == '-' || s[0] == '.') {
    bool numeral = true;  // 1_000, 12:30, 2024-01-01, 0b101: ints, sexagesimals, timestamps
    for (char c : s) {
      if (!(is_digit(c) || c == '_' || c == ':' || c == '.' || c == '+' || c == '-' || c == 'e' ||
            c == 'E' || c == 'b' || c == 'x' || c == 'o'))
        numeral = false;
    }
    if (numeral) return true;
  }
  return false;
}

bool needs_quotes(std::string_view s) {
  if (s.empty() || resolve_plain(s).has_value() || is_yaml11_special(s)) return true;
  static constexpr std::string_view kIndicators = "-?:,[]{}#&*!|>'\"%@`";
  if (kIndicators.find(s.front()) != std::string_view::npos) return true;
  if (s.front() == ' ' || s.back() == ' ' || s.front() == '\t' || s.back() == '\t') return true;
  if (s.back() == ':') return true;
  if (s.find(": ") != std::string_view::npos || s.find(":\t") != std::string_view::npos ||
      s.find(" #") != std::string_view::npos || s.find("\t#") != std::string_view::npos)
    return true;
  for (std::size_t i = 0; i < s.size();) {
    if (!printable_inline(next_code_point(s, i))) return true;
  }
  return false;
}

// A YAML double-quoted scalar; printable characters stay raw (UTF-8), the rest are escaped and
// invalid bytes become U+FFFD.
std::string double_quoted(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const std::int32_t cp = next_code_point(s, i);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case kInvalidCodePoint:
        out += "\xEF\xBF\xBD";
        continue;
      default:
        break;
    }
    if (printable_inline(cp)) {
      out.append(s.substr(start, i - start));
    } else if (cp < 0x100) {
      out += fmt::format("\\x{:02X}", cp);
    } else {
      out += fmt::format("\\u{:04X}", cp);
    }
  }
  out += '"';
  return out;
}

std::string scalar_text(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
      return std::to_string(v.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(v.get<std::uint64_t>());
    case json::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) return ".nan";
      if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
      return v.dump();  // shortest round-trip form, always with '.' or an exponent
    }
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      return needs_quotes(s) ? double_quoted(s) : s;
    }
    case json::value_t::binary:
      return double_quoted("<binary>");
    case json::value_t::object:
      return "{}";
    case json::value_t::array:
      return "[]";
    case json::value_t::discarded:
      return "null";
  }
  return "null";
}

void emit_array(const json& array, int indent, bool inline_first, std::string& out);

void emit_object(const json& object, int indent, bool inline_first, std::string& out) {
  bool first = true;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (!(first && inline_first)) out.append(indent, ' ');
    first = false;
    const std::string& key = it.key();
    out += needs_quotes(key) ? double_quoted(key) : key;
    out += ':';
    const json& value = it.value();
    if (value.is_object() && !value.empty()) {
      out += '\n';
      emit_object(value, indent + 2, false, out);
    } else if (value.is_array() && !value.empty()) {
      out += '\n';
      emit_array(value, indent + 2, false, out);
    } else {
      out += ' ';
      out += scalar_text(value);
      out += '\n';
    }
  }
}

void emit_array(const json& array, int indent, bool inline_first, std::string& out) {
  bool first = true;
  for (const json& item : array) {
    if (!(first && inline_first)) out.append(indent, ' ');
    first = false;
    out += "- ";
    if (item.is_object() && !item.empty()) {
      emit_object(item, indent + 2, true, out);
    } else if (item.is_array() && !item.empty()) {
      emit_array(item, indent + 2, true, out);
    } else {
      out += scalar_text(item);
      out += '\n';
    }
  }
}

}  // namespace

std::string json_to_yaml(const nlohmann::json& value) {
  std::string out;
  if (value.is_object() && !value.empty()) {
    emit_object(value, 0, false, out);
  } else if (value.is_array() && !value.empty()) {
    emit_array(value, 0, false, out);
  } else {
    out = scalar_text(value);
    out += '\n';
  }
  return out;
}

}  // namespace depl
