// How writes hold the store lock. A write reads what it needs under the lock (the type, the
// current object, the time), computes the object it stores with the lock released (patching,
// defaults, admission, managedFields: most of a write's work) and takes the lock again to store
// it, only if the object and its type are still the ones it read. Otherwise it runs once more with
// the lock held throughout, so it needs no third try and never stores an object computed from a
// state that is gone. Storing (resourceVersion, history, watch events, write records) stays under
// the lock, in one order.
#include <cassert>

#include <fmt/format.h>

#include "depl/devcluster/api_store.hpp"
#include "store_impl.hpp"

#if __has_include("depl/common/yaml_json.hpp")
#include "depl/common/yaml_json.hpp"
#define DEPL_DEVCLUSTER_HAVE_YAML 1
#endif

namespace depl::devcluster {

using nlohmann::json;

namespace {

// What a write read under the lock.
struct Snapshot {
  std::shared_ptr<const ResourceType> type;  // null: not served
  ObjectPtr current;                         // null: no such object
  std::string now;
};

// Lock held.
Snapshot read_snapshot(const ApiStore::Impl& impl, const ResourceRef& ref) {
  Snapshot s;
  s.type = impl.shared_type(ref.group, ref.version, ref.plural);
  if (!s.type) return s;
  s.current = impl.lookup(s.type->storage_key,
                          ApiStore::Impl::object_key(s.type->namespaced ? ref.ns : "", ref.name));
  s.now = impl.now_text();
  return s;
}

// Lock held. Pointer equality: a stored object is never modified, only replaced, and the
// snapshot's reference keeps the old one alive, so its address cannot come back.
bool still_current(const ApiStore::Impl& impl, const ResourceRef& ref, const Snapshot& s) {
  if (impl.shared_type(ref.group, ref.version, ref.plural) != s.type) return false;
  return impl.lookup(s.type->storage_key,
                     ApiStore::Impl::object_key(s.type->namespaced ? ref.ns : "", ref.name)) ==
         s.current;
}

Expected<json, ApiResult> parse_patch(PatchType patch_type, std::string_view body) {
  json patch = json::parse(body, nullptr, false);
  if (!patch.is_discarded()) return patch;
  if (patch_type != PatchType::Apply) {
    return unexpected(bad_request("error decoding patch: the body is not valid JSON"));
  }
#ifdef DEPL_DEVCLUSTER_HAVE_YAML
  auto parsed = yaml_to_json(body);
  if (!parsed) {
    return unexpected(bad_request(fmt::format("error decoding YAML: {}", parsed.error().message)));
  }
  return std::move(*parsed);
#else
  return unexpected(bad_request("apply patch body must be JSON (YAML support is not built in)"));
#endif
}

// A write to an existing object (update, patch, pods/binding). `prepare(type, current, now,
// last)` computes it; `last` is false on the unlocked try (whose arguments must stay usable for
// a second one) and true on the locked one.
template <typename Prepare>
ApiResult write_existing(ApiStore::Impl& impl, const ResourceRef& ref, const WriteOptions& options,
                         bool binding, Prepare&& prepare) {
  const Snapshot s = [&] {
    std::lock_guard lock(impl.mutex);
    return read_snapshot(impl, ref);
  }();
  if (!s.type) return unknown_resource();
  PreparedWrite prepared = prepare(*s.type, s.current, s.now, false);
  if (prepared.kind == PreparedWrite::Kind::Answer) return std::move(prepared.answer);
  if (prepared.kind == PreparedWrite::Kind::Replace) {
    if (impl.options.before_commit) impl.options.before_commit(ref);
    ObjectPtr stored;
    const bool committed = locked(impl, [&] {
      if (!still_current(impl, ref, s)) return false;
      if (binding) {
        impl.commit_bind(*s.type, ref, s.current, prepared, options);
      } else {
        stored = impl.commit_replace(*s.type, ref, s.current, prepared, options);
      }
      return true;
    });
    if (committed && binding) return std::move(prepared.answer);
    if (committed) {
      return ApiStore::Impl::object_answer(200, *s.type, stored, options,
                                           std::move(prepared.warnings));
    }
  }
  // Changed meanwhile, or a create: again, with the lock held since the object is read.
  return locked(impl, [&] {
    const Snapshot again = read_snapshot(impl, ref);
    if (!again.type) return unknown_resource();
    PreparedWrite last = prepare(*again.type, again.current, again.now, true);
    if (binding) {
      if (last.kind == PreparedWrite::Kind::Replace) {
        impl.commit_bind(*again.type, ref, again.current, last, options);
      }
      return std::move(last.answer);
    }
    return impl.finish_locked(*again.type, ref, again.current, std::move(last), options);
  });
}

}  // namespace

ApiResult ApiStore::create(const ResourceRef& ref, json body, const WriteOptions& options) {
  if (ref.subresource == "binding") {
    return write_existing(
        *impl_, ref, options, true,
        [&](const ResourceType& type, const ObjectPtr& current, const std::string& now, bool last) {
          if (!type.group.empty() || type.plural != "pods") {
            PreparedWrite refused;
            refused.answer = method_not_supported(type, "create");
            return refused;
          }
          return impl_->prepare_bind(type, ref, current, last ? std::move(body) : json(body),
                                     options, now);
        });
  }
  std::shared_ptr<const ResourceType> type;  // held for the request: CRD writes replace types
  std::string now;
  {
    std::lock_guard lock(impl_->mutex);
    type = impl_->shared_type(ref.group, ref.version, ref.plural);
    if (type) now = impl_->now_text();
  }
  if (!type) return unknown_resource();
  if (!ref.subresource.empty()) return method_not_supported(*type, "create");
  auto create_locked = [&] {
    return locked(*impl_, [&] {
      const auto current_type = impl_->shared_type(ref.group, ref.version, ref.plural);
      if (!current_type) return unknown_resource();
      return impl_->create(*current_type, ref, std::move(body), options);
    });
  };
  if (!Impl::can_prepare_create(*type, body)) return create_locked();
  // Only a CRD write replaces a type, and only a custom resource's: a built-in create never needs
  // its body twice.
  std::optional<json> original;
  if (type->custom) original = body;
  PreparedCreate prepared = impl_->prepare_create(*type, ref, std::move(body), options, now);
  if (prepared.answer) return std::move(*prepared.answer);
  if (impl_->options.before_commit) impl_->options.before_commit(ref);
  ObjectPtr created;
  bool stale = false;
  ApiResult result = locked(*impl_, [&] {
    if (impl_->shared_type(ref.group, ref.version, ref.plural) != type) {
      stale = true;
      return ApiResult{};
    }
    return impl_->commit_create(*type, ref, std::move(prepared), options, now, created);
  });
  if (stale) {
    assert(original && "built-in types are never replaced");
    body = std::move(*original);
    return create_locked();
  }
  if (created) {
    return Impl::object_answer(result.code, *type, created, options, std::move(result.warnings));
  }
  return result;
}

ApiResult ApiStore::update(const ResourceRef& ref, json body, const WriteOptions& options) {
  return write_existing(
      *impl_, ref, options, false,
      [&](const ResourceType& type, const ObjectPtr& current, const std::string& now, bool last) {
        return impl_->prepare_update(type, ref, current, last ? std::move(body) : json(body),
                                     options, now);
      });
}

ApiResult ApiStore::patch(const ResourceRef& ref, PatchType patch_type, std::string_view body,
                          const WriteOptions& options) {
  const Expected<json, ApiResult> patch = parse_patch(patch_type, body);
  return write_existing(
      *impl_, ref, options, false,
      [&](const ResourceType& type, const ObjectPtr& current, const std::string& now, bool) {
        return impl_->prepare_patch(type, ref, current, patch_type, patch, options, now);
      });
}

}  // namespace depl::devcluster
