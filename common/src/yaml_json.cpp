// Reading YAML into JSON. This builds JSON straight from yaml-cpp's parser events rather than
// from YAML::Node: the events carry each scalar's tag (quoted vs plain) and position, anchors can
// be expanded under a size budget, and the document loop can stop yaml-cpp 0.7's LoadAll, which
// never returns on a stray top-level ',' (it yields an empty document without consuming it).
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <fmt/format.h>
#include <map>
#include <optional>
#include <sstream>

#include "depl/common/yaml_json.hpp"
#include "yaml_scalar.hpp"

namespace depl {
namespace {

using nlohmann::json;

// Aliases are expanded into the JSON; these bounds keep a "billion laughs" document or a deeply
// nested one from exhausting memory or the stack. Real manifests use aliases sparingly.
constexpr std::size_t kMaxValues = 1'000'000;
constexpr std::size_t kMaxAliasedValues = 100'000;
constexpr std::size_t kMaxDepth = 200;

std::string located(std::string_view source, int line, int column, std::string_view what) {
  if (line < 0) return source.empty() ? std::string(what) : fmt::format("{}: {}", source, what);
  if (source.empty()) return fmt::format("line {}, column {}: {}", line + 1, column + 1, what);
  return fmt::format("{}:{}:{}: {}", source, line + 1, column + 1, what);
}

// Thrown and caught inside the builder's callbacks; it never reaches yaml-cpp or callers.
struct BuildError {
  YAML::Mark mark;
  std::string what;
};

// Assembles one document's JSON from parser events.
class JsonBuilder final : public YAML::EventHandler {
 public:
  // Returns the finished document and readies the builder for the next one.
  json take_document() { return std::move(document_); }
  YAML::Mark document_start() const { return document_start_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    document_start_ = mark;
    failure_.reset();
    document_ = nullptr;
    stack_.clear();
    anchors_.clear();
  }
  void OnDocumentEnd() override {}

  // The first problem found while building, if any. Later events of the document are ignored
  // so that yaml-cpp still reports a syntax error further on, which takes precedence.
  const std::optional<BuildError>& failure() const { return failure_; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    guarded([&] {
      if (at_key()) return set_key(mark, "null");
      add(mark, json(nullptr), anchor, count_value(mark));
    });
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    guarded([&] { alias(mark, anchor); });
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& text) override {
    guarded([&] { scalar(mark, tag, anchor, text); });
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    guarded([&] { open(mark, json::array(), anchor); });
  }
  void OnSequenceEnd() override {
    guarded([&] { close(); });
  }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    guarded([&] { open(mark, json::object(), anchor); });
  }
  void OnMapEnd() override {
    guarded([&] { close(); });
  }

 private:
  struct Frame {
    json value;
    YAML::anchor_t anchor = 0;
    std::size_t values_at_start = 0;
    std::optional<std::string> key;  // maps only: the key whose value comes next
  };

  template <typename Step>
  void guarded(Step step) {
    if (failure_) return;
    try {
      step();
    } catch (const BuildError& e) {
      failure_ = e;
    }
  }

  void alias(const YAML::Mark& mark, YAML::anchor_t anchor) {
    const auto found = anchors_.find(anchor);
    if (found == anchors_.end()) {
      throw BuildError{mark, "alias refers to an anchor that is not complete yet (a cycle)"};
    }
    const auto& [value, size] = found->second;
    if (at_key()) {
      if (!value.is_string()) throw BuildError{mark, "a mapping key must be a scalar"};
      return set_key(mark, value.get<std::string>());
    }
    values_ += size;
    aliased_values_ += size;
    if (values_ > kMaxValues || aliased_values_ > kMaxAliasedValues) {
      throw BuildError{mark,
                       fmt::format("aliases expand to more than {} values", kMaxAliasedValues)};
    }
    add(mark, value, 0, size);
  }

  void scalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
              const std::string& text) {
    if (at_key()) return set_key(mark, text);
    // yaml-cpp tags quoted and block scalars "!" and plain ones "?"; `!!str` forces a string.
    json value;
    if (tag == "!" || tag == "tag:yaml.org,2002:str") {
      value = text;
    } else if (auto typed = yaml_detail::resolve_plain(text)) {
      value = std::move(*typed);
    } else {
      value = text;
    }
    add(mark, std::move(value), anchor, count_value(mark));
  }

  static BuildError too_many(const YAML::Mark& mark) {
    return BuildError{mark, fmt::format("more than {} values", kMaxValues)};
  }

  std::size_t count_value(const YAML::Mark& mark) {
    if (++values_ > kMaxValues) throw too_many(mark);
    return 1;
  }

  bool at_key() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().key;
  }

  void set_key(const YAML::Mark& mark, std::string key) {
    if (stack_.back().value.contains(key)) {
      throw BuildError{mark, fmt::format("duplicate key \"{}\"", key)};
    }
    stack_.back().key = std::move(key);
  }

  void open(const YAML::Mark& mark, json empty, YAML::anchor_t anchor) {
    if (at_key()) {
      throw BuildError{mark, "a mapping key must be a scalar, not a list or mapping"};
    }
    if (stack_.size() >= kMaxDepth) {
      throw BuildError{mark, fmt::format("nested deeper than {} levels", kMaxDepth)};
    }
    count_value(mark);
    stack_.push_back(Frame{std::move(empty), anchor, values_ - 1, std::nullopt});
    marks_.push_back(mark);
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    const YAML::Mark mark = marks_.back();
    marks_.pop_back();
    add(mark, std::move(frame.value), frame.anchor, values_ - frame.values_at_start);
  }

  // Places a finished value in its parent (or as the document) and remembers it if anchored.
  void add(const YAML::Mark&, json value, YAML::anchor_t anchor, std::size_t size) {
    if (anchor != 0) anchors_[anchor] = {value, size};
    if (stack_.empty()) {
      document_ = std::move(value);
      return;
    }
    Frame& parent = stack_.back();
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
    } else {
      parent.value[*parent.key] = std::move(value);
      parent.key.reset();
    }
  }

  json document_;
  YAML::Mark document_start_;
  std::vector<Frame> stack_;
  std::vector<YAML::Mark> marks_;
  std::map<YAML::anchor_t, std::pair<json, std::size_t>> anchors_;
  std::size_t values_ = 0;
  std::size_t aliased_values_ = 0;
  std::optional<BuildError> failure_;
};

Expected<std::vector<json>> read_documents(std::string_view yaml, std::string_view source) {
  if (auto bad = yaml_detail::first_invalid_utf8(yaml)) {
    return error(located(source, bad->first, bad->second, "not valid UTF-8 text"));
  }
  std::vector<json> documents;
  JsonBuilder builder;
  try {
    std::istringstream stream{std::string(yaml)};
    YAML::Parser parser(stream);
    std::optional<int> previous_start;
    while (parser.HandleNextDocument(builder)) {
      const YAML::Mark start = builder.document_start();
      if (previous_start && *previous_start == start.pos) {
        const char c = start.pos >= 0 && static_cast<std::size_t>(start.pos) < yaml.size()
                           ? yaml[static_cast<std::size_t>(start.pos)]
                           : '?';
        return error(located(source, start.line, start.column,
                             fmt::format("unexpected '{}' outside a flow collection", c)));
      }
      if (const auto& failure = builder.failure()) {
        return error(located(source, failure->mark.line, failure->mark.column, failure->what));
      }
      previous_start = start.pos;
      documents.push_back(builder.take_document());
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard (its message is just "bad file"); the builder's limit is lower and
    // usually trips first.
    return error(located(source, e.mark.line, e.mark.column,
                         fmt::format("nested deeper than {} levels", kMaxDepth)));
  } catch (const YAML::Exception& e) {
    return error(located(source, e.mark.line, e.mark.column, e.msg));
  } catch (const std::exception& e) {
    return error(located(source, -1, -1, fmt::format("cannot read YAML: {}", e.what())));
  }
  return documents;
}

}  // namespace

Expected<std::vector<nlohmann::json>> yaml_documents_to_json(std::string_view yaml,
                                                             std::string_view source) {
  return read_documents(yaml, source);
}

Expected<nlohmann::json> yaml_to_json(std::string_view yaml, std::string_view source) {
  // The whole stream is read so that junk after the first document (yaml-cpp ends a document
  // silently at a stray ',') is reported rather than ignored.
  auto documents = yaml_documents_to_json(yaml, source);
  if (!documents) return unexpected(documents.error());
  if (documents->empty()) return json(nullptr);
  return std::move(documents->front());
}

}  // namespace depl
