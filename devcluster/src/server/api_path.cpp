#include "server/api_path.hpp"

#include <vector>

namespace depl::devcluster {

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    const auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// `rest` follows /api/v1 or /apis/<g>/<v>: [watch/] [namespaces/<ns>/] <plural> [<name> [<sub>]]
bool parse_resource(const std::vector<std::string>& parts, size_t i, ApiPath& out) {
  if (i < parts.size() && parts[i] == "watch") {
    out.legacy_watch = true;
    ++i;
  }
  const size_t n = parts.size() - i;
  if (n == 0) return false;
  // namespaces/<ns>/<plural>... addresses objects in a namespace, except that
  // namespaces/<name>/status and namespaces/<name>/finalize are the Namespace's subresources.
  if (parts[i] == "namespaces" && n >= 3 &&
      !(n == 3 && (parts[i + 2] == "status" || parts[i + 2] == "finalize") &&
        out.ref.group.empty())) {
    out.ref.ns = parts[i + 1];
    i += 2;
  }
  const size_t m = parts.size() - i;
  if (m == 0 || m > 3) return false;
  out.ref.plural = parts[i];
  if (m >= 2) out.ref.name = parts[i + 1];
  if (m == 3) out.ref.subresource = parts[i + 2];
  out.kind = ApiPath::Kind::Resource;
  return true;
}

}  // namespace

ApiPath parse_api_path(std::string_view path) {
  ApiPath out;
  const auto parts = split_path(path);
  if (parts.empty()) return out;
  const std::string& head = parts[0];
  if (head == "version" && parts.size() == 1) {
    out.kind = ApiPath::Kind::Version;
  } else if (head == "healthz" || head == "readyz" || head == "livez") {
    out.kind = ApiPath::Kind::Health;
  } else if (head == "openapi") {
    if (parts.size() == 2 && parts[1] == "v2") {
      out.kind = ApiPath::Kind::OpenApiV2;
    } else if (parts.size() == 2 && parts[1] == "v3") {
      out.kind = ApiPath::Kind::OpenApiV3Index;
    } else if (parts.size() >= 3 && parts[1] == "v3") {
      std::string rest;
      for (size_t i = 2; i < parts.size(); ++i) rest += (i > 2 ? "/" : "") + parts[i];
      out.kind = ApiPath::Kind::OpenApiV3Document;
      out.openapi_path = rest;
    }
  } else if (head == "swagger.json" && parts.size() == 1) {
    out.kind = ApiPath::Kind::OpenApiV2;
  } else if (head == "api") {
    if (parts.size() == 1) {
      out.kind = ApiPath::Kind::CoreVersions;
    } else {
      out.ref.version = parts[1];
      if (parts.size() == 2) {
        out.kind = ApiPath::Kind::ResourceList;
      } else if (!parse_resource(parts, 2, out)) {
        out = ApiPath{};
      }
    }
  } else if (head == "apis") {
    if (parts.size() == 1) {
      out.kind = ApiPath::Kind::GroupList;
    } else {
      out.ref.group = parts[1];
      if (parts.size() == 2) {
        out.kind = ApiPath::Kind::Group;
      } else {
        out.ref.version = parts[2];
        if (parts.size() == 3) {
          out.kind = ApiPath::Kind::ResourceList;
        } else if (!parse_resource(parts, 3, out)) {
          out = ApiPath{};
        }
      }
    }
  }
  return out;
}

}  // namespace depl::devcluster
