// ApiStore's public surface (locking and after-lock effects), reads, lists, watches and deletes;
// the other writes are in store_write_path.cpp.
#include "depl/devcluster/api_store.hpp"

#include <fmt/format.h>

#include "builtin_types.hpp"
#include "depl/common/base64.hpp"
#include "store_impl.hpp"

namespace depl::devcluster {

using nlohmann::json;

std::optional<PatchType> patch_type_from_content_type(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  if (media == "application/merge-patch+json") return PatchType::Merge;
  if (media == "application/json-patch+json") return PatchType::Json;
  if (media == "application/strategic-merge-patch+json") return PatchType::Strategic;
  if (media == "application/apply-patch+yaml" || media == "application/apply-patch+json") {
    return PatchType::Apply;
  }
  return std::nullopt;
}

namespace {

struct ContinueToken {
  std::uint64_t rv = 0;
  std::string start_after;
};

std::string encode_continue(const ContinueToken& token) {
  std::string raw = json{{"rv", token.rv}, {"start", token.start_after}}.dump();
  std::string encoded = depl::base64_encode(raw);  // URL-safe, unpadded: it goes in a query
  for (auto& c : encoded) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
  return encoded;
}

std::optional<ContinueToken> decode_continue(const std::string& text) {
  std::string standard = text;
  for (auto& c : standard) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  auto raw = depl::base64_decode(standard);
  if (!raw) return std::nullopt;
  json parsed = json::parse(*raw, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("rv") || !parsed["rv"].is_number_unsigned() ||
      !parsed.contains("start") || !parsed["start"].is_string()) {
    return std::nullopt;
  }
  return ContinueToken{parsed["rv"].get<std::uint64_t>(), parsed["start"].get<std::string>()};
}

std::optional<std::uint64_t> parse_rv(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoull(text);
}

// Parses the selectors of a list/watch and checks that the type supports the fields.
Expected<std::pair<LabelSelector, FieldSelector>, ApiResult> parse_selectors(
    const ResourceType& type, const std::string& label_text, const std::string& field_text) {
  auto labels = LabelSelector::parse(label_text);
  if (!labels) return unexpected(bad_request(labels.error().message));
  auto fields = FieldSelector::parse(field_text);
  if (!fields) return unexpected(bad_request(fields.error().message));
  if (type.group == "events.k8s.io") {
    fields->rename_prefix("regarding.", "involvedObject.");
    fields->rename_prefix("reportingController", "reportingComponent");
    fields->rename_prefix("deprecatedSource", "source");
  }
  for (const auto& req : fields->requirements()) {
    if (!field_selector_supported(type, req.field)) {
      return unexpected(bad_request(fmt::format("field label not supported: {}", req.field)));
    }
  }
  return std::make_pair(std::move(*labels), std::move(*fields));
}

ApiResult too_old(std::uint64_t requested, std::uint64_t oldest) {
  return status_error(410, "Expired",
                      fmt::format("too old resource version: {} ({})", requested, oldest));
}

}  // namespace

ApiStore::ApiStore(StoreOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  // The namespaces every cluster starts with, each with its default service account.
  WriteOptions write;
  write.field_manager = "kube-apiserver";
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    create({"", "v1", "namespaces", "", "", ""},
           json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}},
           write);
  }
}

ApiStore::~ApiStore() {
  close_all_watches();
}

std::vector<ResourceType> ApiStore::resource_types() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<ResourceType> out;
  for (const auto& t : impl_->types) out.push_back(*t);
  return out;
}

std::shared_ptr<const ResourceType> ApiStore::find_type(const std::string& group,
                                                        const std::string& version,
                                                        const std::string& plural) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->shared_type(group, version, plural);
}

std::uint64_t ApiStore::registry_generation() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->registry_generation;
}

ApiResult ApiStore::get(const ResourceRef& ref) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->get(ref);
}

ApiResult ApiStore::list(const ResourceRef& ref, const ListOptions& options) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->list(ref, options);
}

ApiResult ApiStore::remove(const ResourceRef& ref, const DeleteOptions& options) {
  return locked(*impl_, [&] {
    const auto type = impl_->shared_type(ref.group, ref.version, ref.plural);
    if (!type) return unknown_resource();
    return impl_->remove(*type, ref, options);
  });
}

ApiResult ApiStore::remove_collection(const ResourceRef& ref, const ListOptions& selection,
                                      const DeleteOptions& options) {
  return locked(*impl_, [&] {
    const auto type = impl_->shared_type(ref.group, ref.version, ref.plural);
    if (!type) return unknown_resource();
    const ResourceType& t = *type;
    ListOptions all = selection;
    all.limit = 0;
    all.continue_token.clear();
    ApiResult listed = impl_->list(ref, all);
    if (!listed.ok()) return listed;
    json deleted = json::array();
    for (const auto& item : listed.body["items"]) {
      ResourceRef one = ref;
      one.ns = item.value("/metadata/namespace"_json_pointer, std::string());
      one.name = item.value("/metadata/name"_json_pointer, std::string());
      ApiResult r = impl_->remove(t, one, options);
      if (r.ok() && r.body.value("kind", "") != "Status") deleted.push_back(r.body);
    }
    listed.body["items"] = deleted;
    listed.body["metadata"]["resourceVersion"] = std::to_string(impl_->rv);
    return listed;
  });
}

Expected<std::shared_ptr<WatchSubscription>, ApiResult> ApiStore::watch(
    const ResourceRef& ref, const WatchOptions& options) {
  return locked(*impl_, [&] { return impl_->watch(ref, options); });
}

void ApiStore::send_bookmarks() {
  locked(*impl_, [&] {
    std::string rv = std::to_string(impl_->rv);
    for (auto& w : impl_->watchers) {
      if (!w.bookmarks || w.subscription->closed()) continue;
      json bookmark = {{"kind", w.type.kind},
                       {"apiVersion", w.type.api_version()},
                       {"metadata", {{"resourceVersion", rv}}}};
      w.subscription->push({"BOOKMARK", std::make_shared<const json>(std::move(bookmark))});
      impl_->pending.notify.push_back(w.subscription);
    }
    return 0;
  });
}

void ApiStore::compact() {
  std::deque<HistoryEvent> forgotten;  // freed after the lock is released
  std::lock_guard lock(impl_->mutex);
  forgotten.swap(impl_->history);
  impl_->compacted_rv = impl_->rv;
  impl_->continue_compacted_rv = impl_->rv;
}

void ApiStore::close_all_watches() {
  std::list<Watcher> closing;
  {
    std::lock_guard lock(impl_->mutex);
    closing.swap(impl_->watchers);
  }
  for (auto& w : closing) w.subscription->close();
}

void ApiStore::close_client_watches() {
  std::list<Watcher> closing;
  {
    std::lock_guard lock(impl_->mutex);
    auto& watchers = impl_->watchers;
    for (auto it = watchers.begin(); it != watchers.end();) {
      auto next = std::next(it);
      if (!it->observer) closing.splice(closing.end(), watchers, it);
      it = next;
    }
  }
  for (auto& w : closing) w.subscription->close();
}

std::string ApiStore::resource_version() const {
  std::lock_guard lock(impl_->mutex);
  return std::to_string(impl_->rv);
}

void ApiStore::set_write_recorder(std::function<void(const WriteRecord&)> recorder) {
  std::lock_guard lock(impl_->mutex);
  impl_->recorder = std::move(recorder);
}

// ---- Impl: reads ---------------------------------------------------------------------------

ApiResult ApiStore::Impl::get(const ResourceRef& ref) const {
  const ResourceType* type = find_type(ref.group, ref.version, ref.plural);
  if (!type) return unknown_resource();
  if (!ref.subresource.empty() && !(ref.subresource == "status" && type->has_status_subresource)) {
    return unknown_resource();
  }
  ObjectPtr stored =
      lookup(type->storage_key, object_key(type->namespaced ? ref.ns : "", ref.name));
  if (!stored) return not_found(type->qualified_resource(), ref.name);
  return ApiResult{200, *present(*type, stored), {}};
}

ApiResult ApiStore::Impl::list(const ResourceRef& ref, const ListOptions& options) const {
  const ResourceType* type = find_type(ref.group, ref.version, ref.plural);
  if (!type) return unknown_resource();
  auto selectors = parse_selectors(*type, options.label_selector, options.field_selector);
  if (!selectors) return selectors.error();
  const auto& [labels, fields] = *selectors;

  std::uint64_t list_rv = rv;
  std::string start_after;
  if (!options.continue_token.empty()) {
    auto token = decode_continue(options.continue_token);
    if (!token) {
      return bad_request("continue key is not valid: the token is malformed");
    }
    if (token->rv < continue_compacted_rv) {
      return status_error(
          410, "Expired",
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter, or use the continue token in "
          "this response to retrieve the remainder of the results. Continuing with the provided "
          "token results in an inconsistent list - objects that were created, modified, or "
          "deleted between the time the first chunk was returned and now may show up in the "
          "list.");
    }
    list_rv = token->rv;
    start_after = token->start_after;
  } else if (!options.resource_version.empty() && options.resource_version != "0") {
    auto requested = parse_rv(options.resource_version);
    if (!requested) {
      return bad_request(fmt::format("invalid resource version \"{}\"", options.resource_version));
    }
    if (*requested > rv) {
      return status_error(
          504, "Timeout",
          fmt::format("Too large resource version: {}, current: {}", *requested, rv),
          json{{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                        {"message", "Too large resource version"}}})},
               {"retryAfterSeconds", 1}});
    }
    if (options.resource_version_match == "Exact" && *requested != rv) {
      // Only the current state is kept; older exact snapshots are gone.
      return too_old(*requested, rv);
    }
  }

  std::string ns = type->namespaced ? ref.ns : "";
  json items = json::array();
  std::string last_key;
  std::int64_t remaining = 0;
  auto s = storage.find(type->storage_key);
  if (s != storage.end()) {
    auto it = start_after.empty()
                  ? (ns.empty() ? s->second.begin() : s->second.lower_bound(ns + "/"))
                  : s->second.upper_bound(start_after);
    for (; it != s->second.end(); ++it) {
      if (!ns.empty() && it->first.compare(0, ns.size() + 1, ns + "/") != 0) break;
      const ObjectPtr& stored = it->second;
      if (!fields.matches(*stored)) continue;
      if (!labels.matches(stored->value("/metadata/labels"_json_pointer, json()))) continue;
      if (options.limit > 0 && static_cast<std::int64_t>(items.size()) >= options.limit) {
        ++remaining;
        continue;
      }
      items.push_back(*present(*type, stored));
      last_key = it->first;
    }
  }
  json metadata = {{"resourceVersion", std::to_string(list_rv)}};
  if (remaining > 0) {
    metadata["continue"] = encode_continue({list_rv, last_key});
    metadata["remainingItemCount"] = remaining;
  }
  return ApiResult{200,
                   {{"kind", type->list_kind},
                    {"apiVersion", type->api_version()},
                    {"metadata", metadata},
                    {"items", std::move(items)}},
                   {}};
}

Expected<std::shared_ptr<WatchSubscription>, ApiResult> ApiStore::Impl::watch(
    const ResourceRef& ref, const WatchOptions& options) {
  const ResourceType* type = find_type(ref.group, ref.version, ref.plural);
  if (!type) return unexpected(unknown_resource());
  // A watch on one object (/namespaces/x/pods/name?watch=1) is a watch with a name selector.
  std::string field_text = options.field_selector;
  if (!ref.name.empty()) {
    if (!field_text.empty()) field_text.push_back(',');
    field_text.append("metadata.name=").append(ref.name);
  }
  auto selectors = parse_selectors(*type, options.label_selector, field_text);
  if (!selectors) return unexpected(selectors.error());
  auto subscription = std::make_shared<WatchSubscription>();
  Watcher watcher{subscription,
                  *type,
                  type->namespaced ? ref.ns : "",
                  std::move(selectors->first),
                  std::move(selectors->second),
                  options.allow_bookmarks,
                  options.observer};

  auto matches = [&](const ObjectPtr& stored) {
    if (!watcher.ns.empty() &&
        stored->value("/metadata/namespace"_json_pointer, std::string()) != watcher.ns) {
      return false;
    }
    return watcher.labels.matches(stored->value("/metadata/labels"_json_pointer, json())) &&
           watcher.fields.matches(*stored);
  };

  if (options.resource_version.empty() || options.resource_version == "0") {
    auto s = storage.find(type->storage_key);
    if (s != storage.end()) {
      for (const auto& [key, stored] : s->second) {
        if (matches(stored)) subscription->push({"ADDED", present(*type, stored)});
      }
    }
    if (options.send_initial_events && options.allow_bookmarks) {
      json bookmark = {{"kind", type->kind},
                       {"apiVersion", type->api_version()},
                       {"metadata",
                        {{"resourceVersion", std::to_string(rv)},
                         {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
      subscription->push({"BOOKMARK", std::make_shared<const json>(std::move(bookmark))});
    }
  } else {
    auto requested = parse_rv(options.resource_version);
    if (!requested) {
      return unexpected(
          bad_request(fmt::format("invalid resource version \"{}\"", options.resource_version)));
    }
    if (*requested < compacted_rv) {
      ApiResult gone = too_old(*requested, compacted_rv + 1);
      subscription->push({"ERROR", std::make_shared<const json>(gone.body)});
      subscription->close();
      return subscription;
    }
    // Replay what happened after the requested version, with the same selector transitions as
    // live events.
    Watcher replay = watcher;
    for (const auto& event : history) {
      if (event.rv <= *requested || event.storage_key != type->storage_key) continue;
      ObjectPtr now = present(*type, event.object);
      bool now_matches = matches(event.object);
      if (event.type == "MODIFIED" && event.previous) {
        bool before_matches = matches(event.previous);
        if (now_matches && before_matches) {
          subscription->push({"MODIFIED", now});
        } else if (now_matches) {
          subscription->push({"ADDED", now});
        } else if (before_matches) {
          json gone = *present(*type, event.previous);
          gone["metadata"]["resourceVersion"] = std::to_string(event.rv);
          subscription->push({"DELETED", std::make_shared<const json>(std::move(gone))});
        }
      } else if (now_matches) {
        subscription->push({event.type, now});
      }
    }
  }
  watchers.push_back(std::move(watcher));
  return subscription;
}

}  // namespace depl::devcluster
