// Shared helpers of the worker tests: temporary directories, hand-made IDX files, and access to
// the real Fashion-MNIST files (loaded once per test binary, a small subset).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "depl/worker/fashion_mnist.hpp"

namespace depl::worker::testing {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("depl-worker-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::uint8_t> idx_bytes(std::uint8_t type,
                                           const std::vector<std::uint32_t>& dims,
                                           const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> out = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    out.push_back(static_cast<std::uint8_t>(d >> 24));
    out.push_back(static_cast<std::uint8_t>(d >> 16));
    out.push_back(static_cast<std::uint8_t>(d >> 8));
    out.push_back(static_cast<std::uint8_t>(d));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes,
                        bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
}

inline bool fashion_mnist_installed() {
  return std::filesystem::exists(std::string(kDefaultFashionMnistDir) +
                                 "/t10k-images-idx3-ubyte.gz");
}

#define DEPL_REQUIRE_FASHION_MNIST()                                                            \
  do {                                                                                          \
    if (!::depl::worker::testing::fashion_mnist_installed()) {                                  \
      GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"; \
    }                                                                                           \
  } while (0)

}  // namespace depl::worker::testing

namespace depl::worker::testing {

// The first 1,000 training and 1,000 test images, read once per test binary.
inline const ImageTable& small_train_table() {
  static const ImageTable table = [] {
    auto t = load_fashion_mnist(kDefaultFashionMnistDir, DataSplit::Train, 1000);
    return t ? std::move(*t) : ImageTable{};
  }();
  return table;
}
inline const ImageTable& small_test_table() {
  static const ImageTable table = [] {
    auto t = load_fashion_mnist(kDefaultFashionMnistDir, DataSplit::Test, 1000);
    return t ? std::move(*t) : ImageTable{};
  }();
  return table;
}

}  // namespace depl::worker::testing
