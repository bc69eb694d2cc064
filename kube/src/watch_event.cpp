#include "depl/kube/watch_event.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace depl::kube {

using nlohmann::json;

const char* to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::Added:
      return "ADDED";
    case WatchEventType::Modified:
      return "MODIFIED";
    case WatchEventType::Deleted:
      return "DELETED";
    case WatchEventType::Bookmark:
      return "BOOKMARK";
    case WatchEventType::Error:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::string WatchEvent::resource_version() const {
  if (type == WatchEventType::Error || !object.is_object()) return {};
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  auto rv = metadata->find("resourceVersion");
  return (rv != metadata->end() && rv->is_string()) ? rv->get<std::string>() : std::string();
}

bool WatchEvent::is_initial_events_end() const {
  if (type != WatchEventType::Bookmark) return false;
  const json::json_pointer pointer("/metadata/annotations/k8s.io~1initial-events-end");
  return object.contains(pointer) && object.at(pointer) == "true";
}

static Unexpected<ApiError> decode_error(std::string message) {
  return unexpected(ApiError::transport(ApiError::kDecodeError, std::move(message)));
}

static std::string excerpt(std::string_view line) {
  constexpr std::size_t kMax = 120;
  std::string out(line.substr(0, kMax));
  if (line.size() > kMax) out += "...";
  return out;
}

Expected<WatchEvent, ApiError> parse_watch_event(std::string_view line) {
  json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    std::string why;
    try {
      json ignored = json::parse(line);
      (void)ignored;
    } catch (const json::exception& e) {
      why = e.what();
    }
    return decode_error("watch event is not valid JSON (" + why + "): " + excerpt(line));
  }
  if (!parsed.is_object())
    return decode_error("watch event is not a JSON object: " + excerpt(line));
  auto type = parsed.find("type");
  if (type == parsed.end() || !type->is_string()) {
    return decode_error("watch event has no string \"type\": " + excerpt(line));
  }
  auto object = parsed.find("object");
  if (object == parsed.end() || !object->is_object()) {
    return decode_error("watch event has no \"object\" object: " + excerpt(line));
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = WatchEventType::Added;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::Modified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::Deleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::Bookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::Error;
  } else {
    return decode_error("watch event has unknown type \"" + name + "\"");
  }
  event.object = std::move(*object);
  if (event.type == WatchEventType::Error) event.error = ApiError::from_status(event.object);
  return event;
}

void WatchDecoder::feed(std::string_view bytes) {
  // Drop consumed bytes once they dominate the buffer, keeping appends amortised O(1).
  if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    scanned_ -= consumed_;
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

void WatchDecoder::finish() {
  finished_ = true;
}

std::optional<Expected<WatchEvent, ApiError>> WatchDecoder::next() {
  while (consumed_ < buffer_.size()) {
    std::size_t from = std::max(consumed_, scanned_);
    const void* found = std::memchr(buffer_.data() + from, '\n', buffer_.size() - from);
    std::size_t end;
    std::size_t after;
    if (found != nullptr) {
      end = static_cast<std::size_t>(static_cast<const char*>(found) - buffer_.data());
      after = end + 1;
    } else if (finished_) {
      end = buffer_.size();
      after = end;
    } else {
      scanned_ = buffer_.size();
      return std::nullopt;
    }
    std::string_view line(buffer_.data() + consumed_, end - consumed_);
    consumed_ = after;
    scanned_ = after;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    return parse_watch_event(line);
  }
  return std::nullopt;
}

}  // namespace depl::kube
