#include "server/request_attributes.hpp"

#include <algorithm>
#include <cctype>

namespace depl::devcluster {

namespace {

bool truthy(const std::optional<std::string>& v) {
  return v && (*v == "1" || *v == "true" || *v == "True");
}

// The name a field selector requires exactly (metadata.name=<n> or ==<n>), "" when none.
std::string selected_name(const std::string& selector) {
  std::size_t start = 0;
  while (start <= selector.size()) {
    std::size_t end = selector.find(',', start);
    if (end == std::string::npos) end = selector.size();
    std::string term = selector.substr(start, end - start);
    for (const char* prefix : {"metadata.name==", "metadata.name="}) {
      const std::string p = prefix;
      if (term.rfind(p, 0) == 0 && term.find("!=") == std::string::npos) {
        return term.substr(p.size());
      }
    }
    start = end + 1;
  }
  return "";
}

}  // namespace

RequestAttributes request_attributes(const HttpRequest& request, const ApiPath& path,
                                     UserInfo user) {
  RequestAttributes a;
  a.user = std::move(user);
  a.path = request.path;
  if (path.kind != ApiPath::Kind::Resource) {
    a.resource_request = false;
    a.verb = request.method;
    std::transform(a.verb.begin(), a.verb.end(), a.verb.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return a;
  }
  const ResourceRef& ref = path.ref;
  a.api_group = ref.group;
  a.api_version = ref.version;
  a.resource = ref.plural;
  a.subresource = ref.subresource;
  a.ns = ref.ns;
  a.name = ref.name;
  const std::string& method = request.method;
  if (method == "GET" || method == "HEAD") {
    const bool watch = path.legacy_watch || truthy(request.query_param("watch"));
    if (!ref.name.empty() && !watch) {
      a.verb = "get";
    } else {
      a.verb = watch ? "watch" : "list";
      if (a.name.empty()) a.name = selected_name(request.query_param("fieldSelector").value_or(""));
    }
  } else if (method == "POST") {
    a.verb = "create";
  } else if (method == "PUT") {
    a.verb = "update";
  } else if (method == "PATCH") {
    a.verb = "patch";
  } else if (method == "DELETE") {
    a.verb = ref.name.empty() ? "deletecollection" : "delete";
  } else {
    a.verb = "";
  }
  // The Namespace object itself: /api/v1/namespaces/<name> is in no namespace, but kube-apiserver
  // gives it its own name as namespace.
  if (ref.group.empty() && ref.plural == "namespaces" && !ref.name.empty()) a.ns = ref.name;
  return a;
}

}  // namespace depl::devcluster
