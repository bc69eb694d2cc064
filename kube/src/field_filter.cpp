#include "depl/kube/field_filter.hpp"

#include <utility>
#include <vector>

namespace depl::kube {

using nlohmann::json;

FieldFilter* FieldFilter::node_at(std::initializer_list<std::string_view> path) {
  FieldFilter* node = this;
  for (std::string_view name : path) {
    if (node->whole_) return nullptr;
    FieldFilter* next = nullptr;
    for (auto& [member, filter] : node->members_) {
      if (member == name) next = &filter;
    }
    if (next == nullptr)
      next = &node->members_.emplace_back(std::string(name), FieldFilter{}).second;
    node = next;
  }
  return node;
}

FieldFilter& FieldFilter::keep(std::initializer_list<std::string_view> path) {
  if (FieldFilter* node = node_at(path)) {
    node->whole_ = true;
    node->members_.clear();
  }
  return *this;
}

FieldFilter& FieldFilter::keep(std::initializer_list<std::string_view> path,
                               const FieldFilter& below) {
  if (FieldFilter* node = node_at(path)) *node = below;
  return *this;
}

const FieldFilter* FieldFilter::member(std::string_view name) const {
  if (whole_) return this;
  for (const auto& [member, filter] : members_) {
    if (member == name) return &filter;
  }
  return nullptr;
}

json FieldFilter::apply(const json& value) const {
  if (whole_) return value;
  if (value.is_array()) {
    json out = json::array();
    for (const json& element : value) out.push_back(apply(element));
    return out;
  }
  if (!value.is_object()) return value;
  json out = json::object();
  for (const auto& [name, member_value] : value.items()) {
    if (const FieldFilter* filter = member(name)) out[name] = filter->apply(member_value);
  }
  return out;
}

namespace {

// nlohmann's DOM builder (json_sax_dom_parser) with a filter: a member the filter drops is not
// built, and nothing below it either (the lexer still reads it).
class FilteringSax {
 public:
  FilteringSax(json& root, const FieldFilter& filter) : root_(root), root_filter_(filter) {}

  bool null() { return add(nullptr); }
  bool boolean(bool value) { return add(value); }
  bool number_integer(json::number_integer_t value) { return add(value); }
  bool number_unsigned(json::number_unsigned_t value) { return add(value); }
  bool number_float(json::number_float_t value, const std::string&) { return add(value); }
  bool string(std::string& value) { return add(std::move(value)); }
  bool binary(json::binary_t& value) { return add(std::move(value)); }

  bool start_object(std::size_t) { return start(json::value_t::object); }
  bool start_array(std::size_t) { return start(json::value_t::array); }
  bool end_object() { return end(); }
  bool end_array() { return end(); }

  bool key(std::string& name) {
    if (skip_depth_ > 0) return true;
    Frame& top = stack_.back();
    const FieldFilter* filter = top.filter->member(name);
    if (filter == nullptr) {
      slot_ = nullptr;  // the value that follows is dropped
      return true;
    }
    slot_ = &(*top.value)[std::move(name)];
    slot_filter_ = filter;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  struct Frame {
    json* value;
    const FieldFilter* filter;  // applies to its members (or, for an array, to its elements)
  };

  // Where the next value goes and which filter applies to it; nullptr: it is dropped.
  json* place(json&& value, const FieldFilter*& filter) {
    if (stack_.empty()) {
      root_ = std::move(value);
      filter = &root_filter_;
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(value));
      filter = top.filter;
      return &top.value->back();
    }
    json* slot = slot_;
    slot_ = nullptr;
    if (slot == nullptr) return nullptr;
    *slot = std::move(value);
    filter = slot_filter_;
    return slot;
  }

  bool dropping_next() const {
    return !stack_.empty() && !stack_.back().value->is_array() && slot_ == nullptr;
  }

  template <typename Value>
  bool add(Value&& value) {
    if (skip_depth_ > 0 || dropping_next()) return true;
    const FieldFilter* ignored = nullptr;
    place(json(std::forward<Value>(value)), ignored);
    return true;
  }

  bool start(json::value_t type) {
    if (skip_depth_ > 0 || dropping_next()) {
      ++skip_depth_;
      return true;
    }
    const FieldFilter* filter = nullptr;
    json* value = place(json(type), filter);
    stack_.push_back({value, filter});
    return true;
  }

  bool end() {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    stack_.pop_back();
    return true;
  }

  json& root_;
  const FieldFilter& root_filter_;
  std::vector<Frame> stack_;
  json* slot_ = nullptr;  // the member whose value comes next (after key())
  const FieldFilter* slot_filter_ = nullptr;
  int skip_depth_ = 0;  // > 0: inside a dropped object or array
  std::string error_;
};

}  // namespace

Expected<json> parse_filtered(std::string_view text, const FieldFilter& filter) {
  json out;
  FilteringSax sax(out, filter);
  if (!json::sax_parse(text, &sax)) return error(sax.error());
  return out;
}

}  // namespace depl::kube
