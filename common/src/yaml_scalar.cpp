#include "yaml_scalar.hpp"

#include <cstdlib>
#include <limits>
#include <string>

namespace depl::yaml_detail {
namespace {

using nlohmann::json;

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_octal(char c) {
  return c >= '0' && c <= '7';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool is_core_float(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

json integer_from_digits(std::string_view digits, int base, bool negative) {
  // Exact in 64 bits when it fits, otherwise the nearest double (YAML does not bound ints).
  std::uint64_t value = 0;
  bool overflow = false;
  double approx = 0;
  for (char c : digits) {
    const int d = is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
    approx = approx * base + d;
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / base) overflow = true;
    value = value * base + d;
  }
  if (!overflow) {
    if (!negative) {
      if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return json(static_cast<std::int64_t>(value));
      return json(value);
    }
    if (value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)
      return json(static_cast<std::int64_t>(0 - value));
  }
  return json(negative ? -approx : approx);
}

}  // namespace

std::int32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  int length = 0;
  std::int32_t cp = 0;
  std::int32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    ++i;
    return kInvalidCodePoint;
  }
  if (i + length > s.size()) {
    ++i;
    return kInvalidCodePoint;
  }
  for (int k = 1; k < length; ++k) {
    const unsigned char c = byte(i + k);
    if ((c & 0xC0) != 0x80) {
      ++i;
      return kInvalidCodePoint;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return kInvalidCodePoint;
  }
  i += length;
  return cp;
}

std::optional<std::pair<int, int>> first_invalid_utf8(std::string_view s) {
  int line = 0, column = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    if (next_code_point(s, i) == kInvalidCodePoint) return std::pair{line, column};
    if (s[start] == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
  }
  return std::nullopt;
}

std::optional<json> resolve_plain(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);
  {
    std::string_view digits = s;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (all_of(digits, is_digit)) return integer_from_digits(digits, 10, negative);
  }
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && all_of(s.substr(2), is_octal))
    return integer_from_digits(s.substr(2), 8, false);
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && all_of(s.substr(2), is_hex))
    return integer_from_digits(s.substr(2), 16, false);
  if (is_core_float(s)) {
    // strtod also covers overflow (to +-inf) and underflow (to 0) the way YAML readers do.
    const std::string text(s);
    return json(std::strtod(text.c_str(), nullptr));
  }
  for (std::string_view inf : {".inf", ".Inf", ".INF"}) {
    if (s == inf || (s.size() == inf.size() + 1 && s.substr(1) == inf && s[0] == '+'))
      return json(std::numeric_limits<double>::infinity());
    if (s.size() == inf.size() + 1 && s.substr(1) == inf && s[0] == '-')
      return json(-std::numeric_limits<double>::infinity());
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN")
    return json(std::numeric_limits<double>::quiet_NaN());
  return std::nullopt;
}

}  // namespace depl::yaml_detail
