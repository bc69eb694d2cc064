// Reads IDX files (the MNIST family's format: a magic number naming the element type and the
// number of dimensions, big-endian dimension sizes, then the data), gzip-compressed or plain.
// Only unsigned-byte data is accepted; every malformed input is an error naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/worker/image_table.hpp"

namespace depl::worker {

struct IdxArray {
  std::vector<std::uint32_t> dimensions;  // as declared in the file; dimensions[0] is the count
  std::vector<std::uint8_t> data;         // the first min(count, max_items) items
};

// Reads at most max_items items (entries of the first dimension); the rest of the file is not
// decompressed, so a small subset of a large file loads quickly.
Expected<IdxArray> read_idx_file(const std::string& path,
                                 std::size_t max_items = std::numeric_limits<std::size_t>::max());

// Reads an image file (3 dimensions) and its label file (1 dimension), checks that they agree
// and that every label is below `classes`.
Expected<ImageTable> read_labeled_images(
    const std::string& images_path, const std::string& labels_path, int classes,
    std::size_t max_items = std::numeric_limits<std::size_t>::max());

}  // namespace depl::worker
