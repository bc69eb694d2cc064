// Reading the repository's packaging files (chart, manifests, CRD, examples) for the packaging
// tests, and rendering the chart with its default values the way `helm template` would for
// release `depl-operator` in namespace `depl-system`.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/common/yaml_json.hpp"
#include "depl/packaging/chart_template.hpp"

namespace depl::packaging {

inline const std::filesystem::path kRepo = DEPL_SOURCE_DIR;
inline const std::filesystem::path kChart = kRepo / "charts" / "depl-operator";
inline constexpr const char* kReleaseName = "depl-operator";
inline constexpr const char* kReleaseNamespace = "depl-system";

inline Expected<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(fmt::format("cannot read {}", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The non-empty documents of a YAML file.
inline Expected<std::vector<nlohmann::json>> read_yaml_documents(
    const std::filesystem::path& path) {
  auto text = read_text(path);
  if (!text) return unexpected(text.error());
  auto docs = yaml_documents_to_json(*text, path.string());
  if (!docs) return unexpected(docs.error());
  std::vector<nlohmann::json> out;
  for (auto& d : *docs)
    if (!d.is_null()) out.push_back(std::move(d));
  return out;
}

inline Expected<nlohmann::json> read_yaml(const std::filesystem::path& path) {
  auto docs = read_yaml_documents(path);
  if (!docs) return unexpected(docs.error());
  if (docs->size() != 1) return error(fmt::format("{}: expected one document", path.string()));
  return docs->front();
}

// Files of `dir` with extension `ext`, sorted by name (Helm renders templates in name order).
inline std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir,
                                                   const std::string& ext) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

inline Expected<RenderContext> default_context() {
  auto values = read_yaml(kChart / "values.yaml");
  if (!values) return unexpected(values.error());
  auto chart = read_yaml(kChart / "Chart.yaml");
  if (!chart) return unexpected(chart.error());
  RenderContext ctx;
  ctx.values = *values;
  ctx.release = {{"Name", kReleaseName}, {"Namespace", kReleaseNamespace}, {"Service", "Helm"}};
  ctx.chart = {{"Name", chart->value("name", "")},
               {"Version", chart->value("version", "")},
               {"AppVersion", chart->value("appVersion", "")}};
  return ctx;
}

// The objects `helm install` creates: the chart's CRDs, then every rendered template.
inline Expected<std::vector<nlohmann::json>> render_chart(const RenderContext& ctx) {
  std::vector<nlohmann::json> objects;
  for (const auto& path : files_in(kChart / "crds", ".yaml")) {
    auto docs = read_yaml_documents(path);
    if (!docs) return unexpected(docs.error());
    objects.insert(objects.end(), docs->begin(), docs->end());
  }
  for (const auto& path : files_in(kChart / "templates", ".yaml")) {
    auto text = read_text(path);
    if (!text) return unexpected(text.error());
    auto rendered = render_template(*text, ctx);
    if (!rendered)
      return error(fmt::format("{}: {}", path.filename().string(), rendered.error().message));
    auto docs = yaml_documents_to_json(*rendered, path.filename().string());
    if (!docs) return unexpected(docs.error());
    for (auto& d : *docs)
      if (!d.is_null()) objects.push_back(std::move(d));
  }
  return objects;
}

// The chart as one YAML stream, the way `helm template` prints it: each CRD file and each rendered
// template after a "# Source:" comment, comments and key order kept.
inline Expected<std::string> render_chart_text(const RenderContext& ctx) {
  std::string out;
  for (const auto& path : files_in(kChart / "crds", ".yaml")) {
    auto text = read_text(path);
    if (!text) return unexpected(text.error());
    out += fmt::format("---\n# Source: depl-operator/crds/{}\n{}", path.filename().string(), *text);
  }
  for (const auto& path : files_in(kChart / "templates", ".yaml")) {
    auto text = read_text(path);
    if (!text) return unexpected(text.error());
    auto rendered = render_template(*text, ctx);
    if (!rendered)
      return error(fmt::format("{}: {}", path.filename().string(), rendered.error().message));
    if (detail::trim(*rendered).empty()) continue;  // e.g. a disabled ServiceMonitor
    std::string body = *rendered;
    while (body.starts_with("\n")) body.erase(0, 1);
    if (!body.ends_with("\n")) body += "\n";
    out += fmt::format("---\n# Source: depl-operator/templates/{}\n{}", path.filename().string(),
                       body);
  }
  return out;
}

inline std::string object_id(const nlohmann::json& o) {
  const auto& m = o.value("metadata", nlohmann::json::object());
  return fmt::format("{}/{}/{}", o.value("kind", "?"), m.value("namespace", ""),
                     m.value("name", "?"));
}

}  // namespace depl::packaging
