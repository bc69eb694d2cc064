// Informer: applies watcher events to the store, then tells the handlers what changed.
#include "depl/kube/runtime/informer.hpp"

#include <spdlog/spdlog.h>

namespace depl::kube {

Informer::Informer(Client& client, ResourceType type, WatcherOptions options, Clock& clock,
                   RandomSource& random, std::map<std::string, IndexFunction, std::less<>> indexes)
    : watcher_(client, std::move(type), std::move(options), clock, random),
      store_(std::move(indexes)) {}

void Informer::add_handlers(ResourceEventHandlers handlers) {
  std::lock_guard lock(handlers_mutex_);
  handlers_.push_back(std::move(handlers));
}

void strip_managed_fields(nlohmann::json& object) {
  if (!object.is_object()) return;
  auto meta = object.find("metadata");
  if (meta != object.end() && meta->is_object()) meta->erase("managedFields");
}

void Informer::set_transform(ObjectTransform transform) {
  transform_ = std::move(transform);
}

ObjectPtr Informer::make_object(nlohmann::json&& object) const {
  if (transform_) transform_(object);
  return std::make_shared<const nlohmann::json>(std::move(object));
}

void Informer::run(std::stop_token stop) {
  spdlog::info("msg=\"informer starting\" resource={}", watcher_.type().resource);
  while (auto event = watcher_.next(stop)) apply(std::move(*event));
  spdlog::info("msg=\"informer stopped\" resource={}", watcher_.type().resource);
}

void Informer::apply(WatcherEvent event) {
  switch (event.type) {
    case WatcherEvent::Type::InitStarted:
      relist_buffer_.clear();
      return;
    case WatcherEvent::Type::InitApply:
      relist_buffer_.push_back(make_object(std::move(event.object)));
      return;
    case WatcherEvent::Type::InitDone: {
      ReplaceResult changes = store_.replace(std::move(relist_buffer_));
      relist_buffer_.clear();
      for (const ObjectPtr& object : changes.deleted) notify_delete(object);
      for (const ObjectPtr& object : changes.added) notify_add(object);
      for (const auto& [old_object, new_object] : changes.updated) {
        notify_update(old_object, new_object);
      }
      return;
    }
    case WatcherEvent::Type::Apply: {
      ObjectPtr object = make_object(std::move(event.object));
      ObjectPtr previous = store_.apply(object);
      if (previous) {
        notify_update(previous, object);
      } else {
        notify_add(object);
      }
      return;
    }
    case WatcherEvent::Type::Delete: {
      store_.remove(ObjectKey::of(event.object));
      // Deliver the final state from the event (it may be newer than what the store held).
      notify_delete(make_object(std::move(event.object)));
      return;
    }
  }
}

void Informer::notify_add(const ObjectPtr& object) {
  std::lock_guard lock(handlers_mutex_);
  for (const auto& handlers : handlers_) {
    if (handlers.on_add) handlers.on_add(object);
  }
}

void Informer::notify_update(const ObjectPtr& old_object, const ObjectPtr& new_object) {
  std::lock_guard lock(handlers_mutex_);
  for (const auto& handlers : handlers_) {
    if (handlers.on_update) handlers.on_update(old_object, new_object);
  }
}

void Informer::notify_delete(const ObjectPtr& object) {
  std::lock_guard lock(handlers_mutex_);
  for (const auto& handlers : handlers_) {
    if (handlers.on_delete) handlers.on_delete(object);
  }
}

}  // namespace depl::kube
