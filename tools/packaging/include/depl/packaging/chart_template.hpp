// Renders the depl-operator Helm chart's templates without the helm binary, for tests that keep
// manifests/install.yaml, the RBAC and the values in agreement with the chart. It implements only
// the subset of Go template syntax the chart uses; anything else is an error naming the action,
// so a template that strays from the subset fails the tests instead of rendering wrongly.
//
// Supported (the chart's templates must stay within this):
//   {{ .Values.a.b }}  {{ .Release.Name|Namespace|Service }}  {{ .Chart.Name|Version|AppVersion }}
//   {{ $var }}                              variables bound by range
//   functions: quote X, toJson X, toYaml X, nindent N X, int X, gt A B
//   pipelines: X | f args  (X becomes f's last argument), parentheses for nested calls
//   {{ if COND }} ... [{{ else }} ...] {{ end }}   COND is any expression; Helm truthiness
//   {{ range $k, $v := MAP }} ... {{ end }}        keys in sorted order, as Go ranges maps
//   {{- and -}} trim the whitespace (newlines included) before / after the action.
// A reference to a value that values.yaml does not define is an error (Helm would print
// nothing), so templates can only use defined values.
#pragma once

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/common/yaml_json.hpp"

namespace depl::packaging {

using nlohmann::json;

struct RenderContext {
  json values;   // values.yaml (with overrides applied)
  json release;  // {"Name", "Namespace", "Service"}
  json chart;    // {"Name", "Version", "AppVersion"}
};

namespace detail {

struct Node {
  enum class Kind { Text, Output, If, Range } kind = Kind::Text;
  std::string text;        // Text: the text; others: the action's expression
  std::string key_var;     // Range: "$k"
  std::string value_var;   // Range: "$v"
  std::vector<Node> body;  // If: then-branch; Range: body
  std::vector<Node> otherwise;
};

struct Token {
  bool action = false;
  std::string text;  // action: inner text, trimmed of spaces and trim markers
};

inline std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

inline Expected<std::vector<Token>> tokenize(std::string_view tpl) {
  std::vector<Token> tokens;
  bool trim_next = false;
  std::size_t pos = 0;
  while (pos < tpl.size()) {
    const auto open = tpl.find("{{", pos);
    std::string text(tpl.substr(pos, open == std::string_view::npos ? open : open - pos));
    if (trim_next)
      text.erase(0, text.find_first_not_of(" \t\r\n") == std::string::npos
                        ? text.size()
                        : text.find_first_not_of(" \t\r\n"));
    if (open == std::string_view::npos) {
      tokens.push_back({false, text});
      break;
    }
    const auto close = tpl.find("}}", open);
    if (close == std::string_view::npos) return error("unterminated {{ action");
    std::string inner(tpl.substr(open + 2, close - open - 2));
    const bool trim_before = inner.starts_with("-");
    trim_next = inner.ends_with("-");
    if (trim_before) {
      const auto keep = text.find_last_not_of(" \t\r\n");
      text.erase(keep == std::string::npos ? 0 : keep + 1);
    }
    tokens.push_back({false, text});
    if (trim_before) inner.erase(0, 1);
    if (trim_next) inner.pop_back();
    tokens.push_back({true, trim(inner)});
    pos = close + 2;
  }
  return tokens;
}

// Builds the tree; `stop` receives the terminating "else"/"end" keyword.
inline Expected<std::vector<Node>> parse(const std::vector<Token>& tokens, std::size_t& i,
                                         std::string& stop) {
  std::vector<Node> nodes;
  for (; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (!t.action) {
      if (!t.text.empty()) nodes.push_back({Node::Kind::Text, t.text, {}, {}, {}, {}});
      continue;
    }
    if (t.text == "end" || t.text == "else") {
      stop = t.text;
      return nodes;
    }
    if (t.text.starts_with("/*")) continue;  // comment
    if (t.text.starts_with("if ")) {
      Node n{Node::Kind::If, trim(t.text.substr(3)), {}, {}, {}, {}};
      std::string s;
      auto then = parse(tokens, ++i, s);
      if (!then) return unexpected(then.error());
      n.body = std::move(*then);
      if (s == "else") {
        auto other = parse(tokens, ++i, s);
        if (!other) return unexpected(other.error());
        n.otherwise = std::move(*other);
      }
      if (s != "end") return error(fmt::format("{{{{ {} }}}} has no {{{{ end }}}}", t.text));
      nodes.push_back(std::move(n));
      continue;
    }
    if (t.text.starts_with("range ")) {
      // range $k, $v := EXPR
      const auto assign = t.text.find(":=");
      const auto comma = t.text.find(',');
      if (assign == std::string::npos || comma == std::string::npos || comma > assign)
        return error(
            fmt::format("unsupported range form {{{{ {} }}}} (use $k, $v := MAP)", t.text));
      Node n{Node::Kind::Range,
             trim(t.text.substr(assign + 2)),
             trim(t.text.substr(6, comma - 6)),
             trim(t.text.substr(comma + 1, assign - comma - 1)),
             {},
             {}};
      std::string s;
      auto body = parse(tokens, ++i, s);
      if (!body) return unexpected(body.error());
      if (s != "end") return error(fmt::format("{{{{ {} }}}} has no {{{{ end }}}}", t.text));
      n.body = std::move(*body);
      nodes.push_back(std::move(n));
      continue;
    }
    for (const char* keyword : {"define ", "include ", "template ", "with ", "block ", "tpl "}) {
      if (t.text.starts_with(keyword))
        return error(fmt::format("{{{{ {} }}}} is outside the supported template subset", t.text));
    }
    nodes.push_back({Node::Kind::Output, t.text, {}, {}, {}, {}});
  }
  stop = "";
  return nodes;
}

// Splits an expression into words, keeping "(...)" groups and "..." strings whole, and "|" alone.
inline Expected<std::vector<std::string>> words(std::string_view expr) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < expr.size()) {
    if (std::isspace(static_cast<unsigned char>(expr[i]))) {
      ++i;
      continue;
    }
    std::size_t j = i;
    if (expr[i] == '(') {
      int depth = 0;
      for (; j < expr.size(); ++j) {
        if (expr[j] == '(') ++depth;
        if (expr[j] == ')' && --depth == 0) break;
      }
      if (j == expr.size()) return error(fmt::format("unbalanced parentheses in \"{}\"", expr));
      ++j;
    } else if (expr[i] == '"') {
      for (++j; j < expr.size() && expr[j] != '"'; ++j)
        if (expr[j] == '\\') ++j;
      if (j == expr.size()) return error(fmt::format("unterminated string in \"{}\"", expr));
      ++j;
    } else if (expr[i] == '|') {
      j = i + 1;
    } else {
      while (j < expr.size() && !std::isspace(static_cast<unsigned char>(expr[j])) &&
             expr[j] != '|' && expr[j] != '(')
        ++j;
    }
    out.emplace_back(expr.substr(i, j - i));
    i = j;
  }
  return out;
}

inline bool truthy(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();  // json::empty() is false for strings
  if (v.is_object() || v.is_array()) return !v.empty();
  return true;
}

// How Go's text/template prints a value.
inline Expected<std::string> print(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<long long>(d)))
      return fmt::format("{}", static_cast<long long>(d));
    return v.dump();
  }
  if (v.is_null()) return error("prints a value that is not set");
  return error("prints a map or list directly (use toYaml or toJson)");
}

// Go's encoding/json prints a float64 without a fraction as an integer (3, not 3.0); values.yaml
// numbers reach Helm as float64, so whole numbers print the same either way.
inline json go_json(const json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<long long>(d))) return static_cast<long long>(d);
    return v;
  }
  if (v.is_object() || v.is_array()) {
    json out = v;
    for (auto& item : out) item = go_json(item);
    return out;
  }
  return v;
}

inline std::string to_yaml(const json& v) {
  if (v.is_object() && v.empty()) return "{}";
  if (v.is_array() && v.empty()) return "[]";
  std::string s = json_to_yaml(v);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class Evaluator {
 public:
  Evaluator(const RenderContext& ctx, std::map<std::string, json> vars)
      : ctx_(ctx), vars_(std::move(vars)) {}

  Expected<json> eval(std::string_view expr) {
    auto w = words(expr);
    if (!w) return unexpected(w.error());
    // Split the pipeline.
    std::vector<std::vector<std::string>> stages(1);
    for (auto& word : *w) {
      if (word == "|") {
        stages.emplace_back();
      } else {
        stages.back().push_back(word);
      }
    }
    std::optional<json> carried;
    for (auto& stage : stages) {
      if (stage.empty()) return error(fmt::format("empty pipeline stage in \"{}\"", expr));
      auto value = call(stage, carried);
      if (!value) return value;
      carried = std::move(*value);
    }
    return *carried;
  }

 private:
  Expected<json> operand(const std::string& word) {
    if (word.starts_with("(")) return eval(word.substr(1, word.size() - 2));
    if (word.starts_with("\"")) return json(word.substr(1, word.size() - 2));
    if (word.starts_with("$")) {
      auto it = vars_.find(word);
      if (it == vars_.end()) return error(fmt::format("undefined variable {}", word));
      return it->second;
    }
    if (word.starts_with(".")) return field(word);
    if (!word.empty() && (std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '-')) {
      try {
        return json::parse(word);
      } catch (const std::exception&) {
        return error(fmt::format("bad number {}", word));
      }
    }
    if (word == "true" || word == "false") return json(word == "true");
    return error(fmt::format("unsupported operand {}", word));
  }

  Expected<json> field(const std::string& path) {
    std::vector<std::string> parts;
    std::size_t start = 1;
    while (start <= path.size()) {
      const auto dot = path.find('.', start);
      parts.push_back(
          path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    const json* root = nullptr;
    if (parts[0] == "Values") root = &ctx_.values;
    if (parts[0] == "Release") root = &ctx_.release;
    if (parts[0] == "Chart") root = &ctx_.chart;
    if (root == nullptr) return error(fmt::format("unsupported field {}", path));
    const json* at = root;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      if (!at->is_object() || !at->contains(parts[i]))
        return error(fmt::format("{} is not defined (values.yaml has no such key)", path));
      at = &(*at)[parts[i]];
    }
    return *at;
  }

  Expected<json> call(const std::vector<std::string>& stage, const std::optional<json>& piped) {
    const std::string& head = stage[0];
    std::vector<json> args;
    for (std::size_t i = 1; i < stage.size(); ++i) {
      auto a = operand(stage[i]);
      if (!a) return a;
      args.push_back(std::move(*a));
    }
    if (piped) args.push_back(*piped);
    const bool is_function = !head.starts_with(".") && !head.starts_with("$") &&
                             !head.starts_with("(") && !head.starts_with("\"") &&
                             !std::isdigit(static_cast<unsigned char>(head[0]));
    if (!is_function) {
      if (!args.empty()) return error(fmt::format("{} takes no arguments", head));
      return operand(head);
    }
    auto want = [&](std::size_t n) -> Expected<void> {
      if (args.size() != n)
        return error(fmt::format("{} takes {} argument(s), got {}", head, n, args.size()));
      return {};
    };
    if (head == "quote") {
      if (auto ok = want(1); !ok) return unexpected(ok.error());
      auto s = print(args[0]);
      if (!s) return unexpected(s.error());
      std::string q = "\"";
      for (char c : *s) {
        if (c == '"' || c == '\\') q.push_back('\\');
        q.push_back(c);
      }
      return json(q + "\"");
    }
    if (head == "toJson") {
      if (auto ok = want(1); !ok) return unexpected(ok.error());
      return json(go_json(args[0]).dump());
    }
    if (head == "toYaml") {
      if (auto ok = want(1); !ok) return unexpected(ok.error());
      return json(to_yaml(args[0]));
    }
    if (head == "nindent") {
      if (auto ok = want(2); !ok) return unexpected(ok.error());
      if (!args[0].is_number_integer()) return error("nindent wants a whole number of spaces");
      const std::string pad(args[0].get<std::size_t>(), ' ');
      auto s = print(args[1]);
      if (!s) return unexpected(s.error());
      std::string out = "\n" + pad;
      for (char c : *s) {
        out.push_back(c);
        if (c == '\n') out += pad;
      }
      return json(out);
    }
    if (head == "int") {
      if (auto ok = want(1); !ok) return unexpected(ok.error());
      if (!args[0].is_number()) return error("int of a value that is not a number");
      return json(static_cast<long long>(args[0].get<double>()));
    }
    if (head == "gt") {
      if (auto ok = want(2); !ok) return unexpected(ok.error());
      if (!args[0].is_number() || !args[1].is_number()) return error("gt compares numbers only");
      return json(args[0].get<double>() > args[1].get<double>());
    }
    return error(fmt::format("function {} is outside the supported template subset", head));
  }

  const RenderContext& ctx_;
  std::map<std::string, json> vars_;
};

inline Expected<void> render_nodes(const std::vector<Node>& nodes, const RenderContext& ctx,
                                   const std::map<std::string, json>& vars, std::string& out) {
  for (const Node& n : nodes) {
    Evaluator ev(ctx, vars);
    switch (n.kind) {
      case Node::Kind::Text:
        out += n.text;
        break;
      case Node::Kind::Output: {
        auto v = ev.eval(n.text);
        if (!v) return error(fmt::format("{{{{ {} }}}}: {}", n.text, v.error().message));
        auto s = print(*v);
        if (!s) return error(fmt::format("{{{{ {} }}}}: {}", n.text, s.error().message));
        out += *s;
        break;
      }
      case Node::Kind::If: {
        auto v = ev.eval(n.text);
        if (!v) return error(fmt::format("{{{{ if {} }}}}: {}", n.text, v.error().message));
        auto ok = render_nodes(truthy(*v) ? n.body : n.otherwise, ctx, vars, out);
        if (!ok) return ok;
        break;
      }
      case Node::Kind::Range: {
        auto v = ev.eval(n.text);
        if (!v) return error(fmt::format("{{{{ range {} }}}}: {}", n.text, v.error().message));
        if (!v->is_object()) return error(fmt::format("range over {}: not a map", n.text));
        for (const auto& [key, value] : v->items()) {  // nlohmann keeps keys sorted
          auto inner = vars;
          inner[n.key_var] = key;
          inner[n.value_var] = value;
          auto ok = render_nodes(n.body, ctx, inner, out);
          if (!ok) return ok;
        }
        break;
      }
    }
  }
  return {};
}

}  // namespace detail

// Renders one template's text.
inline Expected<std::string> render_template(std::string_view tpl, const RenderContext& ctx) {
  auto tokens = detail::tokenize(tpl);
  if (!tokens) return unexpected(tokens.error());
  std::size_t i = 0;
  std::string stop;
  auto nodes = detail::parse(*tokens, i, stop);
  if (!nodes) return unexpected(nodes.error());
  if (!stop.empty()) return error(fmt::format("{{{{ {} }}}} without a matching block", stop));
  std::string out;
  auto ok = detail::render_nodes(*nodes, ctx, {}, out);
  if (!ok) return unexpected(ok.error());
  return out;
}

}  // namespace depl::packaging
