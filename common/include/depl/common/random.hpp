// Seeded randomness: components that jitter (backoff, watch timeouts, lease retries) take a
// `RandomSource&` so a test fixes the seed and replays the exact same sequence.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

namespace depl {

// A thread-safe wrapper around std::mt19937_64. Production seeds it from std::random_device.
class RandomSource {
 public:
  explicit RandomSource(std::uint64_t seed) : engine_(seed) {}
  static RandomSource from_entropy() {
    std::random_device device;
    return RandomSource((static_cast<std::uint64_t>(device()) << 32) ^ device());
  }
  RandomSource(const RandomSource& other) : engine_(other.engine_) {}

  // Uniform in [0, 1).
  double uniform() {
    std::lock_guard lock(mutex_);
    return std::uniform_real_distribution<double>(0.0, 1.0)(engine_);
  }
  // Uniform integer in [lo, hi].
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
    std::lock_guard lock(mutex_);
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }
  // client-go's wait.Jitter: base + uniform[0, factor) * base.
  template <typename Rep, typename Period>
  std::chrono::duration<Rep, Period> jitter(std::chrono::duration<Rep, Period> base,
                                            double factor) {
    const double extra = uniform() * factor * static_cast<double>(base.count());
    return base + std::chrono::duration<Rep, Period>(static_cast<Rep>(extra));
  }

 private:
  std::mutex mutex_;
  std::mt19937_64 engine_;
};

}  // namespace depl
