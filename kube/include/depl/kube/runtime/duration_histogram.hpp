// A fixed-bucket latency histogram in the shape Prometheus expects (cumulative buckets, sum,
// count), shared by the work-queue and controller metrics. Buckets are client-go's workqueue
// buckets: 10 ns to 1000 s, one per decade.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace depl::kube {

struct DurationHistogram {
  static constexpr std::array<double, 12> kUpperBoundsSeconds = {
      1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0};

  // counts[i]: observations <= kUpperBoundsSeconds[i] (not cumulative; the exporter sums them);
  // observations above the last bound only show in `count`.
  std::array<std::uint64_t, kUpperBoundsSeconds.size()> counts{};
  std::uint64_t count = 0;
  double sum_seconds = 0;

  void observe(std::chrono::nanoseconds duration) {
    const double seconds = std::chrono::duration<double>(duration).count();
    ++count;
    sum_seconds += seconds;
    for (std::size_t i = 0; i < kUpperBoundsSeconds.size(); ++i) {
      if (seconds <= kUpperBoundsSeconds[i]) {
        ++counts[i];
        break;
      }
    }
  }
};

}  // namespace depl::kube
