// depl/common/pki.hpp: the certificates verify with OpenSSL against their CA and carry the
// names and usages asked for; bad input is a clear error.
#include "depl/common/pki.hpp"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <gtest/gtest.h>

#include <memory>

namespace depl {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr parse(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

bool verifies(const std::string& ca_pem, const std::string& leaf_pem) {
  X509Ptr ca = parse(ca_pem);
  X509Ptr leaf = parse(leaf_pem);
  if (!ca || !leaf) return false;
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  X509_STORE_add_cert(store.get(), ca.get());
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr);
  return X509_verify_cert(ctx.get()) == 1;
}

TEST(Pki, ServerCertificateVerifiesAndNamesLocalhost) {
  auto ca = pki::generate_ca("depl-dev-ca");
  ASSERT_TRUE(ca) << ca.error().message;
  EXPECT_NE(ca->private_key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  auto server = pki::issue_certificate(*ca, pki::localhost_server_spec());
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_TRUE(verifies(ca->certificate_pem, server->certificate_pem));
  X509Ptr cert = parse(server->certificate_pem);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
  EXPECT_NE(X509_check_host(cert.get(), "example.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_check_ca(parse(ca->certificate_pem).get()), 1);
}

TEST(Pki, ClientCertificateCarriesUserAndGroups) {
  auto ca = pki::generate_ca("depl-dev-ca");
  ASSERT_TRUE(ca);
  auto client = pki::issue_certificate(*ca, pki::client_spec("alice", {"system:masters", "ml"}));
  ASSERT_TRUE(client) << client.error().message;
  EXPECT_TRUE(verifies(ca->certificate_pem, client->certificate_pem));
  X509Ptr cert = parse(client->certificate_pem);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  char cn[64] = {0};
  X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "alice");
  EXPECT_EQ(X509_NAME_entry_count(subject), 3);  // O=system:masters, O=ml, CN=alice
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_NE(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
}

TEST(Pki, AnotherCaDoesNotVerify) {
  auto ca = pki::generate_ca("a");
  auto other = pki::generate_ca("b");
  ASSERT_TRUE(ca && other);
  auto server = pki::issue_certificate(*ca, pki::localhost_server_spec());
  ASSERT_TRUE(server);
  EXPECT_FALSE(verifies(other->certificate_pem, server->certificate_pem));
}

TEST(Pki, BadInputIsAClearError) {
  auto ca = pki::generate_ca("a");
  ASSERT_TRUE(ca);
  EXPECT_FALSE(pki::generate_ca(""));
  auto bad_ip = pki::issue_certificate(*ca, {.common_name = "x", .ip_addresses = {"not-an-ip"}});
  ASSERT_FALSE(bad_ip);
  EXPECT_EQ(bad_ip.error().message,
            "certificate: ip_addresses entry \"not-an-ip\" is not an IP address");
  auto bad_ca =
      pki::issue_certificate({"garbage", ca->private_key_pem}, pki::localhost_server_spec());
  ASSERT_FALSE(bad_ca);
  EXPECT_NE(bad_ca.error().message.find("CA certificate_pem"), std::string::npos);
  auto other = pki::generate_ca("b");
  auto mismatched = pki::issue_certificate({ca->certificate_pem, other->private_key_pem},
                                           pki::localhost_server_spec());
  ASSERT_FALSE(mismatched);
  EXPECT_EQ(mismatched.error().message, "CA private key does not match the CA certificate");
  EXPECT_FALSE(pki::issue_certificate(*ca, {.common_name = ""}));
}

}  // namespace
}  // namespace depl
