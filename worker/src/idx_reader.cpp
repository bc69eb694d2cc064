#include "depl/worker/idx_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <memory>

#include <fmt/format.h>

namespace depl::worker {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes; returns how many were read (fewer at end of file), or -1 on error.
long long read_fully(gzFile file, std::uint8_t* out, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
    const int n = gzread(file, out + done, chunk);
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<long long>(done);
}

std::string gz_error(gzFile file) {
  int code = 0;
  const char* message = gzerror(file, &code);
  return message != nullptr ? message : "unknown zlib error";
}

}  // namespace

Expected<IdxArray> read_idx_file(const std::string& path, std::size_t max_items) {
  // gzopen reads plain files transparently, so one code path serves both forms.
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) return error(fmt::format("{}: cannot open the IDX file", path));

  std::array<std::uint8_t, 4> magic{};
  const long long got = read_fully(file.get(), magic.data(), magic.size());
  if (got < 0) return error(fmt::format("{}: cannot read: {}", path, gz_error(file.get())));
  if (got < 4) return error(fmt::format("{}: too short for an IDX header ({} bytes)", path, got));
  if (magic[0] != 0 || magic[1] != 0) {
    return error(fmt::format("{}: not an IDX file (magic number starts {:02x} {:02x}, want 00 00)",
                             path, magic[0], magic[1]));
  }
  if (magic[2] != 0x08) {
    return error(
        fmt::format("{}: IDX element type 0x{:02x} is not supported (only 0x08, unsigned byte)",
                    path, magic[2]));
  }
  const int rank = magic[3];
  if (rank < 1 || rank > 4) {
    return error(fmt::format("{}: IDX file declares {} dimensions (want 1 to 4)", path, rank));
  }

  IdxArray array;
  std::size_t item_bytes = 1;
  for (int d = 0; d < rank; ++d) {
    std::array<std::uint8_t, 4> b{};
    if (read_fully(file.get(), b.data(), b.size()) != 4) {
      return error(fmt::format("{}: truncated IDX header (dimension {} of {})", path, d + 1, rank));
    }
    const std::uint32_t size = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                               (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
    array.dimensions.push_back(size);
    if (d > 0) {
      if (size == 0) return error(fmt::format("{}: dimension {} has size 0", path, d + 1));
      item_bytes *= size;
      if (item_bytes > (std::size_t{1} << 28)) {
        return error(fmt::format("{}: items of {} bytes are implausibly large", path, item_bytes));
      }
    }
  }
  const std::size_t items = std::min<std::size_t>(array.dimensions[0], max_items);
  array.data.resize(items * item_bytes);
  const long long data = read_fully(file.get(), array.data.data(), array.data.size());
  if (data < 0) return error(fmt::format("{}: cannot read: {}", path, gz_error(file.get())));
  if (static_cast<std::size_t>(data) != array.data.size()) {
    return error(
        fmt::format("{}: truncated: the header declares {} items of {} bytes, the file "
                    "holds {} bytes of data",
                    path, array.dimensions[0], item_bytes, data));
  }
  return array;
}

Expected<ImageTable> read_labeled_images(const std::string& images_path,
                                         const std::string& labels_path, int classes,
                                         std::size_t max_items) {
  auto images = read_idx_file(images_path, max_items);
  if (!images) return unexpected(images.error());
  auto labels = read_idx_file(labels_path, max_items);
  if (!labels) return unexpected(labels.error());
  if (images->dimensions.size() != 3) {
    return error(
        fmt::format("{}: an image file needs 3 dimensions (count, rows, columns), it has {}",
                    images_path, images->dimensions.size()));
  }
  if (labels->dimensions.size() != 1) {
    return error(fmt::format("{}: a label file needs 1 dimension, it has {}", labels_path,
                             labels->dimensions.size()));
  }
  if (images->dimensions[0] != labels->dimensions[0]) {
    return error(fmt::format("{} holds {} images but {} holds {} labels", images_path,
                             images->dimensions[0], labels_path, labels->dimensions[0]));
  }
  ImageTable table;
  table.pixels = static_cast<int>(images->dimensions[1] * images->dimensions[2]);
  table.count = static_cast<int>(labels->data.size());
  for (std::size_t i = 0; i < labels->data.size(); ++i) {
    if (labels->data[i] >= classes) {
      return error(fmt::format("{}: label {} of item {} is not below the number of classes ({})",
                               labels_path, labels->data[i], i, classes));
    }
  }
  table.images = std::move(images->data);
  table.labels = std::move(labels->data);
  return table;
}

}  // namespace depl::worker
