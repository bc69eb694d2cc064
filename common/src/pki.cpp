#include "depl/common/pki.hpp"

#include <memory>
#include <string>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace depl::pki {

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

std::string openssl_error(std::string_view what) {
  std::string out(what);
  unsigned long code = ERR_get_error();
  if (code != 0) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    out += ": ";
    out += buffer;
  }
  ERR_clear_error();
  return out;
}

Owned<EVP_PKEY> new_key() {
  return Owned<EVP_PKEY>(EVP_EC_gen("P-256"));
}

bool add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Owned<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool set_common_fields(X509* cert, EVP_PKEY* key, std::chrono::hours validity) {
  if (X509_set_version(cert, 2) != 1) return false;
  Owned<BIGNUM> serial(BN_new());
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1) return false;
  if (BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert)) == nullptr) return false;
  constexpr long kSkewSeconds = 3600;
  if (X509_gmtime_adj(X509_getm_notBefore(cert), -kSkewSeconds) == nullptr) return false;
  const long seconds = static_cast<long>(validity.count()) * 3600;
  if (X509_gmtime_adj(X509_getm_notAfter(cert), seconds) == nullptr) return false;
  return X509_set_pubkey(cert, key) == 1;
}

bool add_name_entry(X509_NAME* name, const char* field, const std::string& value) {
  return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1,
                                    0) == 1;
}

Expected<std::string> to_pem(X509* cert) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return error(openssl_error("writing PEM"));
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

Expected<std::string> to_pem(EVP_PKEY* key) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return error(openssl_error("writing key PEM"));
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

Expected<CertificateAndKey> finish(X509* cert, EVP_PKEY* key, EVP_PKEY* signer) {
  if (X509_sign(cert, signer, EVP_sha256()) == 0)
    return error(openssl_error("signing certificate"));
  auto cert_pem = to_pem(cert);
  if (!cert_pem) return unexpected(cert_pem.error());
  auto key_pem = to_pem(key);
  if (!key_pem) return unexpected(key_pem.error());
  return CertificateAndKey{std::move(*cert_pem), std::move(*key_pem)};
}

bool looks_like_ip(const std::string& text) {
  ASN1_OCTET_STRING* parsed = a2i_IPADDRESS(text.c_str());
  if (parsed == nullptr) return false;
  ASN1_OCTET_STRING_free(parsed);
  return true;
}

}  // namespace

CertificateSpec localhost_server_spec() {
  CertificateSpec spec;
  spec.common_name = "localhost";
  spec.dns_names = {"localhost"};
  spec.ip_addresses = {"127.0.0.1", "::1"};
  return spec;
}

CertificateSpec client_spec(std::string user, std::vector<std::string> groups) {
  CertificateSpec spec;
  spec.common_name = std::move(user);
  spec.organizations = std::move(groups);
  spec.server_auth = false;
  spec.client_auth = true;
  return spec;
}

Expected<CertificateAndKey> generate_ca(std::string_view common_name, std::chrono::hours validity) {
  if (common_name.empty()) return error("CA certificate: common name is empty");
  if (validity.count() <= 0) return error("CA certificate: validity must be positive");
  Owned<EVP_PKEY> key = new_key();
  if (!key) return error(openssl_error("generating CA key"));
  Owned<X509> cert(X509_new());
  if (!cert || !set_common_fields(cert.get(), key.get(), validity)) {
    return error(openssl_error("building CA certificate"));
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!add_name_entry(name, "CN", std::string(common_name)) ||
      X509_set_issuer_name(cert.get(), name) != 1) {
    return error(openssl_error("CA certificate name"));
  }
  if (!add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !add_extension(cert.get(), cert.get(), NID_key_usage,
                     "critical,keyCertSign,cRLSign,digitalSignature") ||
      !add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash")) {
    return error(openssl_error("CA certificate extensions"));
  }
  return finish(cert.get(), key.get(), key.get());
}

Expected<CertificateAndKey> issue_certificate(const CertificateAndKey& ca,
                                              const CertificateSpec& spec) {
  if (spec.common_name.empty()) return error("certificate: common name is empty");
  if (spec.validity.count() <= 0) return error("certificate: validity must be positive");
  for (const auto& ip : spec.ip_addresses) {
    if (!looks_like_ip(ip))
      return error("certificate: ip_addresses entry \"" + ip + "\" is not an IP address");
  }
  Owned<BIO> ca_cert_bio(
      BIO_new_mem_buf(ca.certificate_pem.data(), static_cast<int>(ca.certificate_pem.size())));
  Owned<X509> ca_cert(PEM_read_bio_X509(ca_cert_bio.get(), nullptr, nullptr, nullptr));
  if (!ca_cert) return error(openssl_error("CA certificate_pem is not a PEM certificate"));
  Owned<BIO> ca_key_bio(
      BIO_new_mem_buf(ca.private_key_pem.data(), static_cast<int>(ca.private_key_pem.size())));
  Owned<EVP_PKEY> ca_key(PEM_read_bio_PrivateKey(ca_key_bio.get(), nullptr, nullptr, nullptr));
  if (!ca_key) return error(openssl_error("CA private_key_pem is not a PEM private key"));
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return error("CA private key does not match the CA certificate");
  }

  Owned<EVP_PKEY> key = new_key();
  if (!key) return error(openssl_error("generating key"));
  Owned<X509> cert(X509_new());
  if (!cert || !set_common_fields(cert.get(), key.get(), spec.validity)) {
    return error(openssl_error("building certificate"));
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& org : spec.organizations) {
    if (!add_name_entry(name, "O", org)) return error(openssl_error("certificate organization"));
  }
  if (!add_name_entry(name, "CN", spec.common_name) ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) != 1) {
    return error(openssl_error("certificate name"));
  }
  std::string usage;
  if (spec.server_auth) usage += "serverAuth";
  if (spec.client_auth) usage += std::string(usage.empty() ? "" : ",") + "clientAuth";
  std::string san;
  for (const auto& dns : spec.dns_names) san += (san.empty() ? "DNS:" : ",DNS:") + dns;
  for (const auto& ip : spec.ip_addresses) san += (san.empty() ? "IP:" : ",IP:") + ip;
  bool ok = add_extension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE") &&
            add_extension(cert.get(), ca_cert.get(), NID_key_usage,
                          "critical,digitalSignature,keyEncipherment") &&
            add_extension(cert.get(), ca_cert.get(), NID_subject_key_identifier, "hash") &&
            add_extension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always");
  if (ok && !usage.empty()) ok = add_extension(cert.get(), ca_cert.get(), NID_ext_key_usage, usage);
  if (ok && !san.empty()) ok = add_extension(cert.get(), ca_cert.get(), NID_subject_alt_name, san);
  if (!ok) return error(openssl_error("certificate extensions"));
  return finish(cert.get(), key.get(), ca_key.get());
}

}  // namespace depl::pki
