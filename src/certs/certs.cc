#include "certs/certs.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "util/error.hh"

namespace tracemod::certs {
namespace {

constexpr long kDay = 24 * 60 * 60;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// OpenSSL's reason for the last failure, for a one-line error.
std::string ssl_reason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

void check_ssl(bool ok, const std::string& what) {
  if (!ok) throw Error(what + ": " + ssl_reason());
}

PkeyPtr new_p256_key() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  check_ssl(key != nullptr, "EC P-256 key");
  return key;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, n);
}

std::string random_hex(int bytes) {
  unsigned char buf[32];
  check_ssl(RAND_bytes(buf, bytes) == 1, "random bytes");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < bytes; ++i) out += {kHex[buf[i] >> 4], kHex[buf[i] & 15]};
  return out;
}

// A random positive 128-bit serial: browsers reject two certificates from one issuer with one serial.
void set_random_serial(X509* x) {
  BIGNUM* bn = BN_new();
  check_ssl(bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
                BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != nullptr,
            "certificate serial");
  BN_free(bn);
}

void add_extension(X509* x, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check_ssl(ext != nullptr && X509_add_ext(x, ext, -1) == 1, "certificate extension " + value);
  X509_EXTENSION_free(ext);
}

// A certificate for SUBJECT_CN with KEY's public half, valid from a day ago (clocks differ) for DAYS; not signed.
X509Ptr new_certificate(const std::string& subject_cn, EVP_PKEY* key, long days) {
  X509Ptr x(X509_new());
  check_ssl(x != nullptr && X509_set_version(x.get(), 2) == 1, "new certificate");
  set_random_serial(x.get());
  X509_NAME* name = X509_get_subject_name(x.get());
  // A CN is limited to 64 bytes; the SAN carries the name anyway, so a longer one goes without.
  if (subject_cn.size() <= 64)
    check_ssl(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                         reinterpret_cast<const unsigned char*>(subject_cn.c_str()), -1, -1, 0) == 1,
              "certificate name " + subject_cn);
  check_ssl(X509_gmtime_adj(X509_getm_notBefore(x.get()), -kDay) != nullptr &&
                X509_gmtime_adj(X509_getm_notAfter(x.get()), days * kDay) != nullptr &&
                X509_set_pubkey(x.get(), key) == 1,
            "certificate validity");
  return x;
}

void sign(X509* x, EVP_PKEY* key) {
  check_ssl(X509_sign(x, key, EVP_sha256()) > 0, "signing a certificate");
}

bool is_ip_literal(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

// SAN DNS:NAME or IP:NAME, built as a value rather than as config text, so a recorded name with a comma cannot
// add names of its own.
void add_subject_alt_name(X509* x, const std::string& name) {
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  GENERAL_NAME* one =
      a2i_GENERAL_NAME(nullptr, nullptr, nullptr, is_ip_literal(name) ? GEN_IPADD : GEN_DNS, name.c_str(), 0);
  const bool ok = names && one && sk_GENERAL_NAME_push(names, one) > 0 &&
                  X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1;
  if (!ok && one && sk_GENERAL_NAME_num(names) == 0) GENERAL_NAME_free(one);
  GENERAL_NAMES_free(names);
  check_ssl(ok, "subject alternative name " + name);
}

// Writes TEXT to a new file PATH with MODE, failing if it exists: the key is never readable by others, not even
// between its creation and a chmod.
void write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw_errno("create " + path, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      throw_errno("write " + path, err);
    }
    done += n;
  }
  if (close(fd) < 0) throw_errno("write " + path, errno);
}

BioPtr open_file(const std::string& path) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) {
    ERR_clear_error();
    throw_errno("read " + path, errno);
  }
  return bio;
}

X509Ptr read_certificate(const std::string& path) {
  BioPtr bio = open_file(path);
  X509Ptr x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!x) throw Error(path + ": not a PEM certificate: " + ssl_reason());
  return x;
}

PkeyPtr read_key(const std::string& path) {
  BioPtr bio = open_file(path);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) throw Error(path + ": not a PEM private key: " + ssl_reason());
  return key;
}

bool exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

}  // namespace

std::string pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check_ssl(bio && PEM_write_bio_X509(bio.get(), cert) == 1, "PEM certificate");
  return bio_text(bio.get());
}

std::string pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check_ssl(bio && PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1, "PEM key");
  return bio_text(bio.get());
}

CertificateAuthority::CertificateAuthority(std::string dir, X509Ptr cert, PkeyPtr key)
    : dir_(std::move(dir)), cert_(std::move(cert)), key_(std::move(key)), leaf_key_(new_p256_key()) {}

namespace {

// DIR and every directory above it that is missing, each 0700 (a state directory's mode, XDG's too).
void make_directories(const std::string& dir) {
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string part = dir.substr(0, at);
    if (!part.empty() && mkdir(part.c_str(), 0700) < 0 && errno != EEXIST) throw_errno(part, errno);
    if (at == std::string::npos) return;
  }
}

}  // namespace

CertificateAuthority CertificateAuthority::load_or_create(const std::string& dir) {
  const std::string cert_path = dir + "/ca.pem", key_path = dir + "/ca.key";
  const bool have_cert = exists(cert_path), have_key = exists(key_path);
  if (have_cert || have_key) {
    if (!have_cert) throw Error(cert_path + ": missing (beside " + key_path + ")");
    if (!have_key) throw Error(key_path + ": missing (beside " + cert_path + ")");
    X509Ptr cert = read_certificate(cert_path);
    PkeyPtr key = read_key(key_path);
    if (X509_check_private_key(cert.get(), key.get()) != 1)
      throw Error(key_path + ": not the key of " + cert_path + ": " + ssl_reason());
    return CertificateAuthority(dir, std::move(cert), std::move(key));
  }
  make_directories(dir);
  PkeyPtr key = new_p256_key();
  X509Ptr cert = new_certificate("tracemod web replay CA " + random_hex(4), key.get(), 3650);
  check_ssl(X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) == 1, "CA issuer");
  add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  sign(cert.get(), key.get());
  // The key first: a ca.pem beside no key would make the next run fail rather than start over.
  write_new_file(key_path, pem(key.get()), 0600);
  write_new_file(cert_path, pem(cert.get()), 0644);
  return CertificateAuthority(dir, std::move(cert), std::move(key));
}

X509* CertificateAuthority::leaf(const std::string& name) {
  std::lock_guard<std::mutex> lock(*mutex_);
  X509Ptr& slot = leaves_[name];
  if (slot) return slot.get();
  X509Ptr x = new_certificate(name, leaf_key_.get(), 365);
  check_ssl(X509_set_issuer_name(x.get(), X509_get_subject_name(cert_.get())) == 1, "leaf issuer");
  add_extension(x.get(), cert_.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(x.get(), cert_.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(x.get(), cert_.get(), NID_ext_key_usage, "serverAuth");
  add_subject_alt_name(x.get(), name);
  add_extension(x.get(), cert_.get(), NID_authority_key_identifier, "keyid");
  sign(x.get(), key_.get());
  slot = std::move(x);
  return slot.get();
}

std::string CertificateAuthority::leaf_spki_sha256_base64() const {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(leaf_key_.get(), &der);
  check_ssl(n > 0, "leaf public key");
  unsigned char digest[32];
  unsigned int digest_len = 0;
  const bool ok = EVP_Digest(der, n, digest, &digest_len, EVP_sha256(), nullptr) == 1;
  OPENSSL_free(der);
  check_ssl(ok, "SHA-256");
  unsigned char b64[64];
  const int len = EVP_EncodeBlock(b64, digest, digest_len);
  return std::string(reinterpret_cast<char*>(b64), len);
}

}  // namespace tracemod::certs
