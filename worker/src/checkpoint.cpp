#include "depl/worker/checkpoint.hpp"

#include <zlib.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace depl::worker {
namespace {

static_assert(std::endian::native == std::endian::little,
              "checkpoints are little-endian float32; a big-endian port must byte-swap");

constexpr char kMagic[8] = {'D', 'E', 'P', 'L', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kMaxHeaderBytes = 1 << 16;

std::uint32_t crc_of(std::span<const float> a, std::span<const float> b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // crc32() with a null buffer returns the initial value, so empty spans must be skipped.
  for (std::span<const float> part : {a, b}) {
    if (part.empty()) continue;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(part.data()),
                static_cast<uInt>(part.size_bytes()));
  }
  return static_cast<std::uint32_t>(crc);
}

void put_u32(std::string& out, std::uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::string checkpoint_path(const std::string& dir) {
  return (std::filesystem::path(dir) / kCheckpointFileName).string();
}

Expected<void> write_checkpoint(const std::string& path, const Checkpoint& c) {
  const MlpShape& s = c.parameters.shape();
  const auto params = c.parameters.values();
  const nlohmann::json header = {
      {"variant", c.variant},
      {"width", c.width},
      {"inputs", s.inputs},
      {"hidden", s.hidden},
      {"classes", s.classes},
      {"epoch", c.epoch},
      {"step", c.step},
      {"trainLossSum", c.train_loss_sum},
      {"parameterCount", params.size()},
      {"velocityCount", c.velocity.size()},
      {"crc32", crc_of(params, c.velocity)},
  };
  const std::string header_text = header.dump();
  std::string prefix(kMagic, sizeof kMagic);
  put_u32(prefix, kCheckpointVersion);
  put_u32(prefix, static_cast<std::uint32_t>(header_text.size()));
  prefix += header_text;

  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) {
    return error(fmt::format("checkpoint {}: cannot create directory: {}", path, ec.message()));
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return error(fmt::format("checkpoint {}: cannot open for writing", temporary));
    out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    out.write(reinterpret_cast<const char*>(params.data()),
              static_cast<std::streamsize>(params.size_bytes()));
    out.write(reinterpret_cast<const char*>(c.velocity.data()),
              static_cast<std::streamsize>(c.velocity.size() * sizeof(float)));
    out.flush();
    if (!out) return error(fmt::format("checkpoint {}: write failed (disk full?)", temporary));
  }
  std::filesystem::rename(temporary, target, ec);
  if (ec)
    return error(fmt::format("checkpoint {}: cannot rename into place: {}", path, ec.message()));
  return {};
}

Expected<Checkpoint> read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(fmt::format("checkpoint {}: cannot open", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  auto fail = [&](const std::string& what) {
    return error(fmt::format("checkpoint {}: {}", path, what));
  };

  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return fail("not a depl checkpoint (bad magic)");
  }
  const std::uint32_t version = get_u32(bytes.data() + 8);
  if (version != 1 && version != kCheckpointVersion) {
    return fail(fmt::format("format version {} is not supported (this worker reads 1 to {})",
                            version, kCheckpointVersion));
  }
  const std::uint32_t header_size = get_u32(bytes.data() + 12);
  if (header_size > kMaxHeaderBytes || 16 + std::size_t{header_size} > bytes.size()) {
    return fail(fmt::format("header length {} does not fit the file ({} bytes)", header_size,
                            bytes.size()));
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(16, header_size));
  } catch (const nlohmann::json::exception& e) {
    return fail(fmt::format("header is not valid JSON: {}", e.what()));
  }
  Checkpoint c;
  MlpShape shape;
  std::size_t parameter_count = 0;
  std::size_t velocity_count = 0;
  std::uint32_t crc = 0;
  try {
    c.variant = header.at("variant").get<std::string>();
    c.width = header.at("width").get<double>();
    shape.inputs = header.at("inputs").get<int>();
    shape.hidden = header.at("hidden").get<int>();
    shape.classes = header.at("classes").get<int>();
    c.epoch = header.at("epoch").get<int>();
    if (version >= 2) {
      c.step = header.at("step").get<int>();
      c.train_loss_sum = header.at("trainLossSum").get<double>();
    }
    parameter_count = header.at("parameterCount").get<std::size_t>();
    velocity_count = header.at("velocityCount").get<std::size_t>();
    crc = header.at("crc32").get<std::uint32_t>();
  } catch (const nlohmann::json::exception& e) {
    return fail(fmt::format("header field missing or of the wrong type: {}", e.what()));
  }
  if (shape.inputs <= 0 || shape.hidden <= 0 || shape.classes <= 0 || c.epoch < 0 ||
      c.step < 0 || !std::isfinite(c.train_loss_sum) || !(c.width > 0.0 && c.width <= 1.0)) {
    return fail("header holds an impossible shape, width, epoch or step");
  }
  if (parameter_count != shape.parameter_count()) {
    return fail(fmt::format("parameterCount {} does not match the shape ({} expected)",
                            parameter_count, shape.parameter_count()));
  }
  if (velocity_count != 0 && velocity_count != parameter_count) {
    return fail(fmt::format("velocityCount {} must be 0 or {}", velocity_count, parameter_count));
  }
  const std::size_t payload = (parameter_count + velocity_count) * sizeof(float);
  if (bytes.size() != 16 + header_size + payload) {
    return fail(fmt::format("truncated or padded: {} bytes of floats, {} expected",
                            bytes.size() - 16 - header_size, payload));
  }
  c.parameters = MlpParameters(shape);
  c.velocity.resize(velocity_count);
  const char* data = bytes.data() + 16 + header_size;
  std::memcpy(c.parameters.values().data(), data, parameter_count * sizeof(float));
  if (velocity_count > 0) {  // memcpy from or to a null pointer is undefined, even for 0 bytes
    std::memcpy(c.velocity.data(), data + parameter_count * sizeof(float),
                velocity_count * sizeof(float));
  }
  if (crc_of(c.parameters.values(), c.velocity) != crc) {
    return fail("CRC-32 mismatch: the payload is corrupt");
  }
  return c;
}

}  // namespace depl::worker
