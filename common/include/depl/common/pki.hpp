// Generates X.509 certificates with OpenSSL for development and tests: a self-signed CA, and
// server (SANs for localhost/127.0.0.1) or client (CN = user, O = groups) certificates it signs.
// Keys are ECDSA P-256. Everything is returned as PEM text; nothing touches the disk.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "depl/common/expected.hpp"

namespace depl::pki {

struct CertificateAndKey {
  std::string certificate_pem{};
  std::string private_key_pem{};  // PKCS#8 "BEGIN PRIVATE KEY"
};

struct CertificateSpec {
  std::string common_name{};
  std::vector<std::string> organizations{};  // for client certificates: the user's groups
  std::vector<std::string> dns_names{};      // subjectAltName DNS entries
  std::vector<std::string> ip_addresses{};   // subjectAltName IP entries ("127.0.0.1", "::1")
  bool server_auth = true;                   // extendedKeyUsage serverAuth
  bool client_auth = false;                  // extendedKeyUsage clientAuth
  std::chrono::hours validity{24 * 365};     // valid from one hour ago (clock skew) for this long
};

// A server certificate for local use: CN "localhost", SANs localhost, 127.0.0.1 and ::1.
CertificateSpec localhost_server_spec();
// A client certificate identifying `user` with `groups` (Kubernetes reads CN and O).
CertificateSpec client_spec(std::string user, std::vector<std::string> groups = {});

// A self-signed CA certificate (basicConstraints CA:TRUE, keyCertSign).
Expected<CertificateAndKey> generate_ca(std::string_view common_name,
                                        std::chrono::hours validity = std::chrono::hours(24 * 365));

// A leaf certificate for `spec`, signed by `ca`. Errors name what is wrong (unparsable CA PEM,
// an IP SAN that is not an address, an empty common name).
Expected<CertificateAndKey> issue_certificate(const CertificateAndKey& ca,
                                              const CertificateSpec& spec);

}  // namespace depl::pki
