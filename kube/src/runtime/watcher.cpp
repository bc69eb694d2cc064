// The watcher state machine; the transitions are drawn in the header.
#include "depl/kube/runtime/watcher.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

namespace depl::kube {

const char* to_string(WatcherEvent::Type type) {
  switch (type) {
    case WatcherEvent::Type::InitStarted:
      return "InitStarted";
    case WatcherEvent::Type::InitApply:
      return "InitApply";
    case WatcherEvent::Type::InitDone:
      return "InitDone";
    case WatcherEvent::Type::Apply:
      return "Apply";
    case WatcherEvent::Type::Delete:
      return "Delete";
  }
  return "Unknown";
}

Watcher::Watcher(Client& client, ResourceType type, WatcherOptions options, Clock& clock,
                 RandomSource& random)
    : client_(client),
      type_(std::move(type)),
      options_(std::move(options)),
      clock_(clock),
      random_(random) {
  if (options_.prefilter) {
    object_filter_ = *options_.prefilter;
    object_filter_->keep({"metadata", "name"});
    object_filter_->keep({"metadata", "namespace"});
    object_filter_->keep({"metadata", "resourceVersion"});
  }
}

Watcher::~Watcher() = default;

std::optional<WatcherEvent> Watcher::next(std::stop_token stop) {
  while (!stop.stop_requested()) {
    if (backoff_due_) {
      backoff_due_ = false;
      if (!back_off(stop)) return std::nullopt;
    }
    if (auto event = step(stop)) return event;
  }
  return std::nullopt;
}

std::optional<WatcherEvent> Watcher::step(std::stop_token stop) {
  switch (state_) {
    case State::Empty:
      continue_token_.clear();
      pending_.clear();
      list_complete_ = false;
      state_ = State::Listing;
      return WatcherEvent{WatcherEvent::Type::InitStarted, {}};
    case State::Listing:
      return step_list();
    case State::Listed:
      step_open_watch();
      return std::nullopt;
    case State::Watching:
      return step_watch(stop);
  }
  return std::nullopt;
}

std::optional<WatcherEvent> Watcher::step_list() {
  if (!pending_.empty()) {
    WatcherEvent event{WatcherEvent::Type::InitApply, std::move(pending_.front())};
    pending_.pop_front();
    return event;
  }
  if (list_complete_) {
    list_complete_ = false;
    watch_made_progress_ = false;
    state_ = State::Listed;
    return WatcherEvent{WatcherEvent::Type::InitDone, {}};
  }

  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  if (options_.page_size > 0) list_options.limit = options_.page_size;
  list_options.continue_token = continue_token_;
  auto page = client_.list(type_, options_.namespace_, list_options,
                           object_filter_ ? &*object_filter_ : nullptr);
  if (!page) {
    if (page.error().is_gone()) {
      // The continue token expired (default lifetime 5 min): start the list over.
      spdlog::info("msg=\"list continue token expired, relisting\" resource={} error=\"{}\"",
                   type_.resource, page.error().to_string());
      relist();
      return std::nullopt;
    }
    ++stats_.errors;
    spdlog::warn("msg=\"list failed\" resource={} error=\"{}\"", type_.resource,
                 page.error().to_string());
    backoff_due_ = true;
    return std::nullopt;
  }
  // A successful list does not reset the backoff: only events from a watch prove the server
  // healthy (a server that lists fine but 410s every watch must still be backed off).
  ++stats_.lists;

  nlohmann::json& list = *page;
  if (auto items = list.find("items"); items != list.end() && items->is_array()) {
    for (nlohmann::json& item : *items) {
      if (!item.is_object()) continue;
      // List items of built-in types come without apiVersion/kind; consumers (owner mapping,
      // events) want them, and the watcher knows them.
      if (!item.contains("kind")) item["kind"] = type_.kind;
      if (!item.contains("apiVersion")) item["apiVersion"] = type_.api_version();
      pending_.push_back(std::move(item));
    }
  }
  std::string next_token;
  std::string list_version;
  if (auto metadata = list.find("metadata"); metadata != list.end() && metadata->is_object()) {
    next_token = metadata->value("continue", "");
    list_version = metadata->value("resourceVersion", "");
  }
  if (!next_token.empty()) {
    continue_token_ = std::move(next_token);
  } else {
    continue_token_.clear();
    list_complete_ = true;
    // Every page carries the list's version; the one on the last page is the one to watch from.
    resource_version_ = std::move(list_version);
    stats_.resource_version = resource_version_;
  }
  return step_list();
}

void Watcher::step_open_watch() {
  WatchOptions watch_options;
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.resource_version = resource_version_;
  watch_options.allow_bookmarks = true;
  const auto min_seconds = std::max<std::int64_t>(1, options_.watch_timeout_min.count());
  watch_options.timeout_seconds =
      static_cast<int>(min_seconds + random_.uniform_int(0, min_seconds - 1));
  auto opened = client_.watch(type_, options_.namespace_, watch_options);
  if (!opened) {
    if (opened.error().is_gone()) {
      spdlog::info("msg=\"watch resourceVersion too old, relisting\" resource={} rv={}",
                   type_.resource, resource_version_);
      relist();
      return;
    }
    ++stats_.errors;
    spdlog::warn("msg=\"watch failed\" resource={} rv={} error=\"{}\"", type_.resource,
                 resource_version_, opened.error().to_string());
    backoff_due_ = true;
    return;
  }
  ++stats_.watches;
  stream_ = std::make_unique<WatchStream>(std::move(*opened));
  stream_->drop_managed_fields(options_.drop_managed_fields);
  if (object_filter_) stream_->filter_objects(&*object_filter_);
  events_on_stream_ = 0;
  state_ = State::Watching;
}

std::optional<WatcherEvent> Watcher::step_watch(std::stop_token stop) {
  Expected<std::optional<WatchEvent>, ApiError> read = [&] {
    std::stop_callback cancel_on_stop(stop, [this] { stream_->cancel(); });
    return stream_->next();
  }();
  if (stop.stop_requested()) return std::nullopt;
  if (!read) {
    if (read.error().is_gone()) {
      relist();
      return std::nullopt;
    }
    ++stats_.errors;
    spdlog::warn("msg=\"watch stream failed, reconnecting\" resource={} rv={} error=\"{}\"",
                 type_.resource, resource_version_, read.error().to_string());
    stream_.reset();
    state_ = State::Listed;
    backoff_due_ = true;
    return std::nullopt;
  }
  if (!read->has_value()) {
    // The server ended the watch (timeoutSeconds): resume from the last version. A stream that
    // ended without a single event is treated like a failure so a misbehaving server cannot
    // make us reconnect in a tight loop.
    stream_.reset();
    state_ = State::Listed;
    if (events_on_stream_ == 0) backoff_due_ = true;
    return std::nullopt;
  }
  WatchEvent& event = **read;
  ++events_on_stream_;
  switch (event.type) {
    case WatchEventType::Error: {
      const ApiError error = event.error.value_or(ApiError::from_status(event.object));
      if (error.is_gone()) {
        spdlog::info("msg=\"watch resourceVersion expired, relisting\" resource={} rv={}",
                     type_.resource, resource_version_);
        relist();
        return std::nullopt;
      }
      // No resourceVersion in an ERROR: keep the last good one and re-watch after a backoff.
      ++stats_.errors;
      spdlog::warn("msg=\"watch ERROR event\" resource={} rv={} error=\"{}\"", type_.resource,
                   resource_version_, error.to_string());
      stream_.reset();
      state_ = State::Listed;
      backoff_due_ = true;
      return std::nullopt;
    }
    case WatchEventType::Bookmark: {
      ++stats_.bookmarks;
      std::string version = event.resource_version();
      if (!version.empty()) resource_version_ = std::move(version);
      stats_.resource_version = resource_version_;
      watch_made_progress_ = true;
      return std::nullopt;
    }
    case WatchEventType::Added:
    case WatchEventType::Modified:
    case WatchEventType::Deleted: {
      std::string version = event.resource_version();
      if (!version.empty()) resource_version_ = std::move(version);
      stats_.resource_version = resource_version_;
      watch_made_progress_ = true;
      reset_backoff();
      const auto type = event.type == WatchEventType::Deleted ? WatcherEvent::Type::Delete
                                                              : WatcherEvent::Type::Apply;
      return WatcherEvent{type, std::move(event.object)};
    }
  }
  return std::nullopt;
}

void Watcher::relist() {
  ++stats_.relists;
  // A 410 straight after a fresh list (nothing delivered since) means something is wrong on the
  // server side; back off instead of list-watch-410 at full speed.
  if (!watch_made_progress_) {
    ++stats_.errors;
    backoff_due_ = true;
  }
  stream_.reset();
  resource_version_.clear();
  stats_.resource_version.clear();
  state_ = State::Empty;
}

bool Watcher::back_off(std::stop_token stop) {
  const double base = static_cast<double>(options_.backoff_initial.count()) *
                      std::pow(2.0, std::min(failures_, 30));
  const double capped = std::min(base, static_cast<double>(options_.backoff_max.count()));
  ++failures_;
  const auto delay = random_.jitter(std::chrono::milliseconds(static_cast<std::int64_t>(capped)),
                                    options_.backoff_jitter);
  return clock_.sleep_for(delay, std::move(stop));
}

}  // namespace depl::kube
