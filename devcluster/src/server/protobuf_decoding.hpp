// Decodes the protobuf request bodies client-go sends for built-in kinds
// (application/vnd.kubernetes.protobuf: the magic "k8s\0", then a runtime.Unknown holding the
// apiVersion, the kind and the object's message) into the object's JSON form, driven by the
// field tags of the built-in schemas (core/builtin_schemas.hpp). kubectl's imperative commands
// (create namespace|configmap|secret|deployment|serviceaccount|token, auth can-i|whoami) send
// their bodies this way.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::devcluster {

// The object, with apiVersion and kind set; an error naming what could not be read (a kind the
// schemas do not describe, a field number they do not know, a truncated message).
Expected<nlohmann::json> decode_protobuf_object(std::string_view body);

}  // namespace depl::devcluster
