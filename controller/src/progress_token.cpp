#include "depl/controller/progress_token.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "depl/common/json_fields.hpp"

namespace depl::controller {

using nlohmann::json;

std::optional<ProgressTokenRecord> progress_token_of(const json& job) {
  return decode_progress_token(json_at(job, {"status", "progressToken"}));
}

std::optional<ProgressTokenRecord> decode_progress_token(const json& record) {
  const json& secret = json_member(record, "secret");
  const json& sha256 = json_member(record, "sha256");
  if (!secret.is_string() || !sha256.is_string()) return std::nullopt;
  return ProgressTokenRecord{secret.get<std::string>(), sha256.get<std::string>()};
}

json to_json(const ProgressTokenRecord& record) {
  return json{{"secret", record.secret}, {"sha256", record.sha256}};
}

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return "";
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string new_token_secret_name(const std::string& job) {
  constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[8];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return "";
  std::string suffix;
  for (unsigned char b : bytes) suffix += kAlphabet[b % kAlphabet.size()];
  return job + "-progress-" + suffix;
}

std::string sha256_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) return "";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

}  // namespace depl::controller
