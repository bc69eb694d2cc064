// An open watch: reads the streamed body and yields decoded events one at a time.
#pragma once

#include <memory>
#include <optional>

#include "depl/common/expected.hpp"
#include "depl/kube/api_error.hpp"
#include "depl/kube/http.hpp"
#include "depl/kube/watch_event.hpp"

namespace depl::kube {

class WatchStream {
 public:
  explicit WatchStream(std::unique_ptr<ResponseStream> stream);
  WatchStream(WatchStream&&) noexcept;
  WatchStream& operator=(WatchStream&&) noexcept;
  ~WatchStream();

  // Blocks until the next event. nullopt: the server ended the watch normally (timeoutSeconds
  // elapsed) and the caller re-watches from the last resourceVersion it saw. ERROR events are
  // returned as events (type Error, `error` set; 410 means relist). A transport failure (idle
  // timeout, connection lost, cancel()) or an undecodable line is an ApiError.
  Expected<std::optional<WatchEvent>, ApiError> next();

  // Thread-safe: a blocked next() returns ApiError Cancelled promptly.
  void cancel();

  // Events come without their object's metadata.managedFields (see parse_watch_event).
  void drop_managed_fields(bool on) { decoder_.drop_managed_fields(on); }
  // Objects are built with only what `object_filter` keeps (see parse_watch_event).
  void filter_objects(const FieldFilter* object_filter) { decoder_.filter_objects(object_filter); }

 private:
  std::unique_ptr<ResponseStream> stream_{};
  WatchDecoder decoder_{};
  bool ended_ = false;
};

}  // namespace depl::kube
