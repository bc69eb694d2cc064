#include "depl/kube/watch_stream.hpp"

namespace depl::kube {

WatchStream::WatchStream(std::unique_ptr<ResponseStream> stream) : stream_(std::move(stream)) {}
WatchStream::WatchStream(WatchStream&&) noexcept = default;
WatchStream& WatchStream::operator=(WatchStream&&) noexcept = default;
WatchStream::~WatchStream() = default;

Expected<std::optional<WatchEvent>, ApiError> WatchStream::next() {
  while (true) {
    if (auto event = decoder_.next()) {
      if (!event->has_value()) return unexpected(std::move(*event).error());
      return std::optional<WatchEvent>(std::move(**event));
    }
    if (ended_) return std::optional<WatchEvent>();
    auto bytes = stream_->read();
    if (!bytes) return unexpected(std::move(bytes).error());
    if (bytes->empty()) {
      ended_ = true;
      decoder_.finish();
      continue;
    }
    decoder_.feed(*bytes);
  }
}

void WatchStream::cancel() {
  if (stream_) stream_->cancel();
}

}  // namespace depl::kube
