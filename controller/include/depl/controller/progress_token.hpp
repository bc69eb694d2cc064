// A job's progress token. The controller makes a random token when the job first gets workers,
// puts it in a Secret of the job's namespace that it creates (under a name with a random part, so
// no Secret made beforehand can pass for it), and records in the job's status only the Secret's
// name and the token's SHA-256 (status.progressToken). Workers get the token from the Secret
// through secretKeyRef; the progress endpoint checks a report's bearer token against the hash in
// the status. The controller never reads a Secret, so it needs no read access to Secrets at all.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace depl::controller {

struct ProgressTokenRecord {
  std::string secret;  // the Secret's name, in the job's namespace
  std::string sha256;  // lowercase hex of the token's SHA-256
  friend bool operator==(const ProgressTokenRecord&, const ProgressTokenRecord&) = default;
};

// status.progressToken of a job object; nothing when absent or not of that shape.
std::optional<ProgressTokenRecord> progress_token_of(const nlohmann::json& job);
// A status.progressToken value; nothing when it is not of that shape.
std::optional<ProgressTokenRecord> decode_progress_token(const nlohmann::json& record);
nlohmann::json to_json(const ProgressTokenRecord& record);

// 32 bytes from OpenSSL's RAND_bytes, hex-encoded; "" if the generator fails.
std::string random_token();
// "<job>-progress-<8 random characters of a-z and 0-9>": a name nobody could have taken before.
std::string new_token_secret_name(const std::string& job);
// Lowercase hex SHA-256.
std::string sha256_hex(std::string_view text);

}  // namespace depl::controller
