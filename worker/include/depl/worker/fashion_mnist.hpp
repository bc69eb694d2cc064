// Where Fashion-MNIST lives and how to load a split of it: the Debian package
// dataset-fashion-mnist installs the four IDX files under /usr/share/datasets/fashion-mnist.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include "depl/common/expected.hpp"
#include "depl/worker/image_table.hpp"

namespace depl::worker {

inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistClasses = 10;
inline constexpr int kFashionMnistTrainImages = 60000;

enum class DataSplit { Train, Test };

// Loads the first max_items images of a split from `dir` (files `train-*` or `t10k-*`, with or
// without `.gz`).
Expected<ImageTable> load_fashion_mnist(
    const std::string& dir, DataSplit split,
    std::size_t max_items = std::numeric_limits<std::size_t>::max());

}  // namespace depl::worker
