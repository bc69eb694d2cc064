// Compact JSON text of a nlohmann::json value, the same bytes as `value.dump()`, faster.
//
// nlohmann's serializer sends every byte of every string through a UTF-8 decoder and every
// character through a virtual output adapter. In the scale bench's burst that was ~10% of the CPU
// (each watch event, each API answer and request body is a pod or a job of a few KB). Here
// strings and keys of printable ASCII without quotes or backslashes (nearly all of Kubernetes
// objects) are copied as they are, integers are written with std::to_chars, and everything else
// (escapes, non-ASCII text and its UTF-8 check, floating-point numbers, binary values) is
// left to nlohmann's own dump() of that one value, so the output cannot differ, and invalid
// UTF-8 throws the same type_error 316.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace depl {

// Appends value.dump() to `out`.
void append_json(std::string& out, const nlohmann::json& value);
// value.dump().
std::string dump_json(const nlohmann::json& value);

}  // namespace depl
