#include "depl/common/json_dump.hpp"

#include <array>
#include <charconv>

namespace depl {

using nlohmann::json;

namespace {

// Bytes that nlohmann writes as they are in any string: printable ASCII but '"' and '\\'. DEL
// (0x7F) is left out too, though written as is: the table only decides what needs no look.
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x7F; ++c) table[static_cast<std::size_t>(c)] = true;
  table['"'] = false;
  table['\\'] = false;
  return table;
}();

bool is_plain(const std::string& text) {
  for (char c : text) {
    if (!kPlain[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

void append_string(std::string& out, const std::string& text) {
  if (is_plain(text)) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  // Escapes and UTF-8 (checked, and a type_error if invalid): nlohmann's own writing.
  out += json(text).dump();
}

template <typename Integer>
void append_integer(std::string& out, Integer value) {
  std::array<char, 24> digits;
  auto [end, error] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  (void)error;  // 24 characters hold any 64-bit integer
  out.append(digits.data(), end);
}

}  // namespace

void append_json(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      const auto& object = value.get_ref<const json::object_t&>();
      out += '{';
      bool first = true;
      for (const auto& [key, member] : object) {
        if (!first) out += ',';
        first = false;
        append_string(out, key);
        out += ':';
        append_json(out, member);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += ',';
        first = false;
        append_json(out, item);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      append_string(out, value.get_ref<const std::string&>());
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::number_integer:
      append_integer(out, value.get<json::number_integer_t>());
      return;
    case json::value_t::number_unsigned:
      append_integer(out, value.get<json::number_unsigned_t>());
      return;
    case json::value_t::number_float:  // nlohmann's shortest round-trip form, "null" if not finite
    case json::value_t::binary:
    case json::value_t::discarded:
      out += value.dump();
      return;
  }
}

std::string dump_json(const json& value) {
  std::string out;
  append_json(out, value);
  return out;
}

}  // namespace depl
