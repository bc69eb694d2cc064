#include "depl/worker/fashion_mnist.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "depl/worker/idx_reader.hpp"

namespace depl::worker {
namespace {

// The package ships gzip files; an unpacked copy (e.g. from the upstream site) works as well.
std::string existing(const std::string& dir, const std::string& stem) {
  const std::filesystem::path gz = std::filesystem::path(dir) / (stem + ".gz");
  if (std::filesystem::exists(gz)) return gz.string();
  const std::filesystem::path plain = std::filesystem::path(dir) / stem;
  if (std::filesystem::exists(plain)) return plain.string();
  return {};
}

}  // namespace

Expected<ImageTable> load_fashion_mnist(const std::string& dir, DataSplit split,
                                        std::size_t max_items) {
  const std::string prefix = split == DataSplit::Train ? "train" : "t10k";
  const std::string images = existing(dir, prefix + "-images-idx3-ubyte");
  const std::string labels = existing(dir, prefix + "-labels-idx1-ubyte");
  if (images.empty() || labels.empty()) {
    return error(
        fmt::format("data directory {}: no {}-images-idx3-ubyte[.gz] / {}-labels-idx1-ubyte[.gz] "
                    "(install the Debian package dataset-fashion-mnist, or pass --data-dir)",
                    dir, prefix, prefix));
  }
  return read_labeled_images(images, labels, kFashionMnistClasses, max_items);
}

}  // namespace depl::worker
