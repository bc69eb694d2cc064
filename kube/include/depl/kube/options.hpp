// Options of each API verb, as plain values mirroring metav1 ListOptions, DeleteOptions,
// PatchOptions... Only what is set is sent; defaults leave the server's defaults in place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace depl::kube {

struct GetOptions {
  std::string resource_version{};  // "" = most recent (quorum read)
};

struct ListOptions {
  std::string label_selector{};  // "app=x,tier!=db"
  std::string field_selector{};  // "metadata.name=x,spec.nodeName=n"
  std::optional<std::int64_t> limit{};
  std::string continue_token{};          // metadata.continue of the previous page
  std::string resource_version{};        // "" most recent, "0" any, else exact/not-older-than
  std::string resource_version_match{};  // "", "NotOlderThan", "Exact"
  std::optional<int> timeout_seconds{};
};

struct WatchOptions {
  std::string label_selector{};
  std::string field_selector{};
  std::string resource_version{};  // usually the list's metadata.resourceVersion
  std::string resource_version_match{};
  bool allow_bookmarks = true;
  bool send_initial_events = false;  // streaming list; needs resource_version_match NotOlderThan
  // Server-side end of the watch; the client's idle timeout is this plus a margin.
  std::optional<int> timeout_seconds{};
};

// create, replace, replace_status.
struct WriteOptions {
  std::string field_manager{};
  bool dry_run = false;            // dryRun=All
  std::string field_validation{};  // "", "Ignore", "Warn", "Strict"
  // false: a successful answer is not decoded and the call returns null, for a caller that
  // needs only to know that the write was applied (a controller creating pods it will see
  // through its informer anyway). Parsing the object the server sends back was a tenth of a
  // busy controller's CPU. Errors are decoded either way.
  bool return_object = true;
};

enum class PatchType {
  Merge,           // application/merge-patch+json (RFC 7386)
  Json,            // application/json-patch+json (RFC 6902); patch is a JSON array
  StrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
  Apply,           // application/apply-patch+yaml (server-side apply; needs field_manager)
};

// The Content-Type of each patch kind.
const char* content_type(PatchType type);

struct PatchOptions {
  std::string field_manager{};  // required for Apply
  bool force = false;           // Apply only: take ownership of conflicting fields
  bool dry_run = false;
  std::string field_validation{};
  std::string subresource{};  // "" or "status"
};

enum class PropagationPolicy { Background, Foreground, Orphan };

struct DeleteOptions {
  std::optional<PropagationPolicy> propagation_policy{};
  std::optional<std::int64_t> grace_period_seconds{};
  std::string precondition_uid{};               // delete only if the object still has this UID
  std::string precondition_resource_version{};  // ... and/or this resourceVersion
  bool dry_run = false;

  // The DeleteOptions body (meta.k8s.io/v1) sent with the DELETE.
  nlohmann::json to_body() const;
};

}  // namespace depl::kube
