// Kubernetes' rules for names and keys, as apimachinery's validation package states them. The
// operator checks a job's worker fields with them before it makes pods, and the dev cluster
// admits pods with them as kube-apiserver does: both must agree on what a valid name is.
#pragma once

#include <string_view>

namespace depl {

// A lowercase RFC 1123 subdomain: at most 253 of a-z, 0-9, '-' and '.', starting and ending with
// a letter or digit (object names, label key prefixes, resource name domains).
bool is_dns1123_subdomain(std::string_view s);

// The form of a lowercase RFC 1123 label, whatever its length: non-empty, of a-z, 0-9 and '-',
// starting and ending with a letter or digit (a pod's hostname and subdomain). A label is also at
// most 63 characters; callers check that apart, as the API server reports it apart.
bool has_dns1123_label_form(std::string_view s);

// The form of a lowercase RFC 1035 label, whatever its length: as a DNS-1123 label, but starting
// with a letter (Service names). At most 63 characters too, checked apart.
bool has_dns1035_label_form(std::string_view s);

// The name part of a qualified name: 1 to 63 of A-Z, a-z, 0-9, '-', '_' and '.', starting and
// ending with a letter or digit.
bool is_qualified_name_part(std::string_view s);

// A qualified name: an optional DNS-1123 subdomain prefix and '/', then a name part (label keys,
// toleration keys, extended resource names).
bool is_qualified_name(std::string_view s);

// A label value: empty, or a qualified name part.
bool is_label_value(std::string_view s);

// An environment variable name: non-empty, of letters, digits, '_', '-' and '.', not starting
// with a digit.
bool is_env_var_name(std::string_view s);

// A container resource without a domain: cpu, memory, ephemeral-storage or hugepages-<size>.
bool is_standard_container_resource(std::string_view s);

}  // namespace depl
