// A minimal XML reader for the tests of the SVG plot: checks that tags nest and close, that
// attribute values are quoted and that text holds no bare '<' or '&'; collects the elements with
// their attributes so tests can look at what was drawn. Not a general XML parser.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace depl::cli::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // direct text content (entities left as written)
};

struct XmlCheck {
  bool ok = true;
  std::string error;
  std::vector<XmlElement> elements;  // in document order
};

inline XmlCheck check_xml(const std::string& doc) {
  XmlCheck out;
  auto fail = [&](const std::string& why, std::size_t at) {
    out.ok = false;
    out.error = why + " at offset " + std::to_string(at);
    return out;
  };
  std::vector<std::size_t> open;  // indices into out.elements
  std::size_t i = 0;
  bool seen_root = false;
  while (i < doc.size()) {
    if (doc[i] != '<') {
      if (open.empty()) {
        if (!std::isspace(static_cast<unsigned char>(doc[i]))) return fail("text outside root", i);
        ++i;
        continue;
      }
      if (doc[i] == '&') {
        const std::size_t semi = doc.find(';', i);
        if (semi == std::string::npos || semi - i > 8) return fail("bare &", i);
      }
      out.elements[open.back()].text += doc[i];
      ++i;
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0) {
      const std::size_t end = doc.find("-->", i);
      if (end == std::string::npos) return fail("unterminated comment", i);
      i = end + 3;
      continue;
    }
    if (doc.compare(i, 2, "</") == 0) {
      const std::size_t end = doc.find('>', i);
      if (end == std::string::npos) return fail("unterminated end tag", i);
      const std::string name = doc.substr(i + 2, end - i - 2);
      if (open.empty() || out.elements[open.back()].name != name) {
        return fail("mismatched </" + name + ">", i);
      }
      open.pop_back();
      i = end + 1;
      continue;
    }
    // Start tag.
    std::size_t j = i + 1;
    while (j < doc.size() && (std::isalnum(static_cast<unsigned char>(doc[j])) || doc[j] == '-' ||
                              doc[j] == ':' || doc[j] == '_')) {
      ++j;
    }
    XmlElement element;
    element.name = doc.substr(i + 1, j - i - 1);
    if (element.name.empty()) return fail("empty tag name", i);
    if (open.empty() && seen_root) return fail("second root element", i);
    bool self_closing = false;
    while (true) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size()) return fail("unterminated tag", i);
      if (doc[j] == '>') {
        ++j;
        break;
      }
      if (doc.compare(j, 2, "/>") == 0) {
        self_closing = true;
        j += 2;
        break;
      }
      const std::size_t eq = doc.find('=', j);
      if (eq == std::string::npos) return fail("attribute without value", j);
      const std::string key = doc.substr(j, eq - j);
      if (key.empty() || key.find_first_of(" <>\"") != std::string::npos) {
        return fail("bad attribute name", j);
      }
      if (eq + 1 >= doc.size() || doc[eq + 1] != '"') return fail("unquoted attribute", eq);
      const std::size_t close = doc.find('"', eq + 2);
      if (close == std::string::npos) return fail("unterminated attribute", eq);
      const std::string value = doc.substr(eq + 2, close - eq - 2);
      if (value.find('<') != std::string::npos) return fail("'<' in attribute", eq);
      if (element.attributes.count(key) != 0) return fail("duplicate attribute " + key, j);
      element.attributes[key] = value;
      j = close + 1;
    }
    seen_root = true;
    out.elements.push_back(element);
    if (!self_closing) open.push_back(out.elements.size() - 1);
    i = j;
  }
  if (!open.empty()) return fail("unclosed <" + out.elements[open.back()].name + ">", doc.size());
  if (!seen_root) return fail("no root element", 0);
  return out;
}

}  // namespace depl::cli::testing
