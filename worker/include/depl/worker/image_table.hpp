// Images and their labels as read from IDX files: raw bytes, one row per image. Kept as bytes (the
// whole Fashion-MNIST training set is 47 MB this way, 188 MB as floats); batches are scaled to
// [0, 1] floats when they are gathered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace depl::worker {

struct ImageTable {
  int count = 0;                     // number of images
  int pixels = 0;                    // bytes per image (28 * 28 for Fashion-MNIST)
  std::vector<std::uint8_t> images;  // count * pixels, row after row
  std::vector<std::uint8_t> labels;  // count class indices

  const std::uint8_t* image(int i) const {
    return images.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(pixels);
  }
};

}  // namespace depl::worker
