// The recording's certificate authority: a CA kept in a directory across runs (so a browser told to trust it once
// keeps trusting it), and the leaf certificates it issues on demand, one per name the replay serves.
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tracemod::certs {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

class CertificateAuthority {
 public:
  // Loads DIR/ca.pem and DIR/ca.key, or creates both (EC P-256, 10 years; the key 0600 from its first byte) if
  // neither exists. DIR is created if missing. Throws Error naming the file that is unreadable or corrupt.
  static CertificateAuthority load_or_create(const std::string& dir);

  X509* certificate() const { return cert_.get(); }
  std::string certificate_path() const { return dir_ + "/ca.pem"; }

  // The certificate for NAME, a DNS name or an IP literal (SAN and CN), signed by this CA for 365 days; issued on
  // first use, then cached. Thread-safe. Every leaf shares leaf_key(), made fresh for each run.
  X509* leaf(const std::string& name);
  EVP_PKEY* leaf_key() const { return leaf_key_.get(); }
  // Base64 of the SHA-256 of leaf_key()'s SubjectPublicKeyInfo: what Chromium's
  // --ignore-certificate-errors-spki-list takes, instead of trusting the CA.
  std::string leaf_spki_sha256_base64() const;

 private:
  CertificateAuthority(std::string dir, X509Ptr cert, PkeyPtr key);

  std::string dir_;
  X509Ptr cert_;
  PkeyPtr key_;
  PkeyPtr leaf_key_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();  // in a pointer: the CA moves
  std::map<std::string, X509Ptr> leaves_;
};

// PEM text of a certificate or private key (for tests, benches and servers that read files).
std::string pem(X509* cert);
std::string pem(EVP_PKEY* key);

}  // namespace tracemod::certs
