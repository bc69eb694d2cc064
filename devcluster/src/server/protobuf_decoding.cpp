#include "server/protobuf_decoding.hpp"

#include <cstring>

#include <fmt/format.h>

#include "core/builtin_schemas.hpp"
#include "depl/common/base64.hpp"
#include "depl/common/time.hpp"

namespace depl::devcluster {

namespace {

using nlohmann::json;

// One field of a protobuf message as read from the wire.
struct WireField {
  int tag = 0;
  int wire_type = 0;
  std::uint64_t varint = 0;  // wire types 0 and 1 (the raw 64 bits)
  std::string_view bytes;    // wire type 2
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  Expected<std::uint64_t> varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return error("truncated varint");
      const auto byte = static_cast<unsigned char>(data_[pos_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    return error("varint longer than 10 bytes");
  }

  Expected<WireField> next() {
    auto key = varint();
    if (!key) return unexpected(key.error());
    WireField f;
    f.tag = static_cast<int>(*key >> 3);
    f.wire_type = static_cast<int>(*key & 7);
    switch (f.wire_type) {
      case 0: {
        auto v = varint();
        if (!v) return unexpected(v.error());
        f.varint = *v;
        return f;
      }
      case 1:
      case 5: {
        const std::size_t n = f.wire_type == 1 ? 8 : 4;
        if (pos_ + n > data_.size()) return error("truncated fixed-size field");
        std::uint64_t v = 0;
        std::memcpy(&v, data_.data() + pos_, n);
        pos_ += n;
        f.varint = v;
        return f;
      }
      case 2: {
        auto length = varint();
        if (!length) return unexpected(length.error());
        if (*length > data_.size() - pos_) return error("truncated length-delimited field");
        f.bytes = data_.substr(pos_, static_cast<std::size_t>(*length));
        pos_ += static_cast<std::size_t>(*length);
        return f;
      }
      default:
        return error(fmt::format("unsupported wire type {} of field {}", f.wire_type, f.tag));
    }
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

// Every field of a message, in order.
Expected<std::vector<WireField>> fields_of(std::string_view message) {
  std::vector<WireField> out;
  Reader reader(message);
  while (!reader.done()) {
    auto f = reader.next();
    if (!f) return unexpected(f.error());
    out.push_back(*f);
  }
  return out;
}

class Decoder {
 public:
  explicit Decoder(const BuiltinSchemas& schemas) : schemas_(schemas) {}

  Expected<json> message(const SchemaTypeDef& def, std::string_view data) {
    json out = json::object();
    if (auto filled = fill(def, data, out); !filled) return unexpected(filled.error());
    return out;
  }

 private:
  // Decodes `data` (a message of `def`) into `out`'s members.
  Expected<void> fill(const SchemaTypeDef& def, std::string_view data, json& out) {
    auto fields = fields_of(data);
    if (!fields) return unexpected(fields.error());
    for (const WireField& wire : *fields) {
      const SchemaField* field = schemas_.field_by_tag(def, wire.tag);
      if (!field) {
        return error(fmt::format("{} has no field number {}", def.openapi_name, wire.tag));
      }
      const std::string where = def.openapi_name + "." + field->name;
      // A status the schemas leave opaque is what a client sends along with the object it
      // creates, all zeros; the server sets or computes statuses itself, so it is not read.
      if (field->name == "status" && field->type.kind == SchemaType::Kind::Scalar &&
          field->type.name == "object") {
        continue;
      }
      if (field->inline_fields) {
        const SchemaTypeDef* inner = schemas_.type(field->type.name);
        if (wire.wire_type != 2) return error(where + ": expected a message");
        if (auto filled = fill(*inner, wire.bytes, out); !filled) return filled;
        continue;
      }
      switch (field->type.kind) {
        case SchemaType::Kind::Array: {
          json& list = out[field->name];
          if (!list.is_array()) list = json::array();
          if (auto added = append(*field->type.element, wire, list, where); !added) return added;
          break;
        }
        case SchemaType::Kind::Map: {
          auto entry = map_entry(*field->type.element, wire, where);
          if (!entry) return unexpected(entry.error());
          out[field->name][entry->first] = std::move(entry->second);
          break;
        }
        default: {
          auto value = single(field->type, wire, where);
          if (!value) return unexpected(value.error());
          if (keep(*value, field->optional)) {
            out[field->name] = std::move(*value);
          } else {
            out.erase(field->name);
          }
        }
      }
    }
    return {};
  }

  // Whether a decoded value is worth a JSON member: a non-optional zero is what protobuf sends
  // for a field that is not set.
  static bool keep(const json& value, bool optional) {
    if (value.is_null()) return false;
    if (optional) return true;
    if (value.is_string()) return !value.get_ref<const std::string&>().empty();
    if (value.is_boolean()) return value.get<bool>();
    if (value.is_number_integer()) return value.get<std::int64_t>() != 0;
    if (value.is_number_float()) return value.get<double>() != 0;
    if (value.is_object()) return !value.empty();
    return true;
  }

  Expected<void> append(const SchemaType& element, const WireField& wire, json& list,
                        const std::string& where) {
    const bool numeric = element.kind == SchemaType::Kind::Scalar &&
                         (element.name == "integer" || element.name == "int64" ||
                          element.name == "boolean" || element.name == "number");
    if (numeric && wire.wire_type == 2) {  // packed
      Reader reader(wire.bytes);
      while (!reader.done()) {
        if (element.name == "number") return error(where + ": packed doubles");
        WireField item;
        auto v = reader.varint();
        if (!v) return unexpected(v.error());
        item.varint = *v;
        auto value = single(element, item, where);
        if (!value) return unexpected(value.error());
        list.push_back(std::move(*value));
      }
      return {};
    }
    auto value = single(element, wire, where);
    if (!value) return unexpected(value.error());
    list.push_back(std::move(*value));
    return {};
  }

  Expected<std::pair<std::string, json>> map_entry(const SchemaType& element, const WireField& wire,
                                                   const std::string& where) {
    if (wire.wire_type != 2) return error(where + ": expected a map entry");
    auto fields = fields_of(wire.bytes);
    if (!fields) return unexpected(fields.error());
    std::string key;
    json value = nullptr;
    for (const WireField& f : *fields) {
      if (f.tag == 1 && f.wire_type == 2) {
        key = std::string(f.bytes);
      } else if (f.tag == 2) {
        if (element.kind == SchemaType::Kind::Array) {
          // map<string, []string> travels as a message with the items in field 1.
          if (f.wire_type != 2) return error(where + ": expected a list message");
          auto items = fields_of(f.bytes);
          if (!items) return unexpected(items.error());
          value = json::array();
          for (const WireField& item : *items) {
            auto v = single(*element.element, item, where);
            if (!v) return unexpected(v.error());
            value.push_back(std::move(*v));
          }
        } else {
          auto v = single(element, f, where);
          if (!v) return unexpected(v.error());
          value = std::move(*v);
        }
      }
    }
    if (value.is_null()) {
      value = element.kind == SchemaType::Kind::Scalar &&
                      (element.name == "string" || element.name == "bytes")
                  ? json("")
                  : json::object();
    }
    return std::make_pair(std::move(key), std::move(value));
  }

  Expected<json> single(const SchemaType& type, const WireField& wire, const std::string& where) {
    if (type.kind == SchemaType::Kind::Ref) {
      if (wire.wire_type != 2) return error(where + ": expected a message");
      return message(*schemas_.type(type.name), wire.bytes);
    }
    if (type.kind != SchemaType::Kind::Scalar) return error(where + ": nested lists or maps");
    const std::string& s = type.name;
    auto need = [&](int wire_type) -> Expected<void> {
      if (wire.wire_type != wire_type) {
        return error(fmt::format("{}: wire type {} where {} was expected", where, wire.wire_type,
                                 wire_type));
      }
      return {};
    };
    if (s == "string") {
      if (auto ok = need(2); !ok) return unexpected(ok.error());
      return json(std::string(wire.bytes));
    }
    if (s == "bytes") {
      if (auto ok = need(2); !ok) return unexpected(ok.error());
      return json(base64_encode(std::string(wire.bytes)));
    }
    if (s == "integer" || s == "int64") {
      if (auto ok = need(0); !ok) return unexpected(ok.error());
      return json(static_cast<std::int64_t>(wire.varint));
    }
    if (s == "boolean") {
      if (auto ok = need(0); !ok) return unexpected(ok.error());
      return json(wire.varint != 0);
    }
    if (s == "number") {
      if (auto ok = need(1); !ok) return unexpected(ok.error());
      double d = 0;
      std::memcpy(&d, &wire.varint, sizeof d);
      return json(d);
    }
    if (auto ok = need(2); !ok) return unexpected(ok.error());
    // An empty message decodes to an empty object whatever its type: how clients send the status
    // of an object they create.
    if (s == "object" && wire.bytes.empty()) return json::object();
    auto fields = fields_of(wire.bytes);
    if (!fields) return unexpected(fields.error());
    if (s == "time" || s == "microtime") {
      std::int64_t seconds = 0, nanos = 0;
      for (const auto& f : *fields) {
        if (f.tag == 1) seconds = static_cast<std::int64_t>(f.varint);
        if (f.tag == 2) nanos = static_cast<std::int64_t>(f.varint);
      }
      // Go's zero time, which JSON writes as null.
      if (seconds == -62135596800 && nanos == 0) return json(nullptr);
      auto text = format_rfc3339_unix(seconds, nanos, s == "microtime");
      if (!text) {
        return error(fmt::format("{}: seconds {} and nanos {} are not a time in the years 0000-9999",
                                 where, seconds, nanos));
      }
      return json(std::move(*text));
    }
    if (s == "quantity") {
      for (const auto& f : *fields) {
        if (f.tag == 1 && f.wire_type == 2) return json(std::string(f.bytes));
      }
      return json("0");
    }
    if (s == "intorstring") {
      std::int64_t kind = 0, int_value = 0;
      std::string str_value;
      for (const auto& f : *fields) {
        if (f.tag == 1) kind = static_cast<std::int64_t>(f.varint);
        if (f.tag == 2) int_value = static_cast<std::int32_t>(f.varint);
        if (f.tag == 3) str_value = std::string(f.bytes);
      }
      return kind == 1 ? json(str_value) : json(int_value);
    }
    if (s == "json") {
      for (const auto& f : *fields) {
        if (f.tag == 1 && f.wire_type == 2) {
          json parsed = json::parse(f.bytes, nullptr, false);
          if (parsed.is_discarded()) return error(where + ": raw JSON that does not parse");
          return parsed;
        }
      }
      return json(nullptr);
    }
    return error(where + ": this field cannot be decoded from protobuf (send JSON)");
  }

  const BuiltinSchemas& schemas_;
};

}  // namespace

Expected<json> decode_protobuf_object(std::string_view body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic)
    return error("the body does not start with the magic \"k8s\\0\"");
  auto envelope = fields_of(body.substr(4));
  if (!envelope) return unexpected(envelope.error());
  std::string api_version, kind;
  std::string_view raw;
  for (const auto& f : *envelope) {
    if (f.tag == 1 && f.wire_type == 2) {
      auto type_meta = fields_of(f.bytes);
      if (!type_meta) return unexpected(type_meta.error());
      for (const auto& t : *type_meta) {
        if (t.tag == 1 && t.wire_type == 2) api_version = std::string(t.bytes);
        if (t.tag == 2 && t.wire_type == 2) kind = std::string(t.bytes);
      }
    } else if (f.tag == 2 && f.wire_type == 2) {
      raw = f.bytes;
    } else if (f.tag == 3 && f.wire_type == 2 && !f.bytes.empty()) {
      return error("content encoding " + std::string(f.bytes) + " is not supported");
    }
  }
  const BuiltinSchemas& schemas = BuiltinSchemas::get();
  const SchemaTypeDef* def = schemas.kind(api_version, kind);
  if (!def) {
    return error(fmt::format("no protobuf schema for {} {} (send JSON)", api_version, kind));
  }
  auto object = Decoder(schemas).message(*def, raw);
  if (!object) return unexpected(object.error());
  json out = json::object();
  out["apiVersion"] = api_version;
  out["kind"] = kind;
  for (auto& [key, value] : object->items()) out[key] = std::move(value);
  return out;
}

}  // namespace depl::devcluster
