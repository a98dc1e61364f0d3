// The files behind TLS (runtime/wire/tls_stream): checked as the token file is, a private key
// its group or others may read refused, a FIFO refused without waiting for a writer, and a
// certificate out of its validity period told at start; and a connection that has sent nothing
// holds no TLS state.
#include <doctest/doctest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "solvers/input_error.hpp"
#include "runtime/wire/tls_stream.hpp"

using namespace aryl;
namespace fs = std::filesystem;

namespace {

struct temp_folder {
  fs::path path = fs::temp_directory_path() / ("aryl-tls-files-" + std::to_string(::getpid()));
  temp_folder() { fs::create_directories(path); }
  ~temp_folder() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// The message of the input_error `f` throws on a thread of its own, "" if none, or "(still
/// running after 5 s)" when `f` hangs (a FIFO's open waits for a writer): the test fails
/// instead of hanging with it.
template <class F>
std::string error_within(F f) {
  auto done = std::make_shared<std::promise<std::string>>();
  auto result = done->get_future();
  std::thread t([f, done] {
    try {
      f();
      done->set_value("");
    } catch (const input_error& e) {
      done->set_value(e.what());
    }
  });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    t.detach();  // hung: the check fails; the process ends with it
    return "(still running after 5 s)";
  }
  // Joined, not left to end on its own: its OpenSSL thread state must be freed before the
  // process's own cleanup at exit (a double free under AddressSanitizer otherwise).
  t.join();
  return result.get();
}

/// A self-signed P-256 certificate valid from `from_days` to `to_days` after now, written to
/// `cert_path`, and its key to `key_path` with `key_mode`.
void write_certificate(const std::string& cert_path, const std::string& key_path, long from_days, long to_days,
                       mode_t key_mode) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  REQUIRE(key);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  REQUIRE(cert);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), to_days * 86400);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("aryl test"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  REQUIRE(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0);
  FILE* out = std::fopen(cert_path.c_str(), "w");
  REQUIRE(out);
  PEM_write_X509(out, cert.get());
  std::fclose(out);
  out = std::fopen(key_path.c_str(), "w");
  REQUIRE(out);
  PEM_write_PrivateKey(out, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(out);
  REQUIRE(::chmod(key_path.c_str(), key_mode) == 0);
}

} // namespace

TEST_CASE("tls files: a private key its group or others may read is refused naming the mode and the chmod") {
  temp_folder dir;
  auto cert = dir.file("cert.pem"), key = dir.file("key.pem");
  write_certificate(cert, key, -1, 30, 0600);
  CHECK(net::tls_server_context(cert, key));
  CHECK(net::tls_client_context(cert, cert, key));
  for (mode_t mode : {0644, 0640, 0604, 0660}) {
    REQUIRE(::chmod(key.c_str(), mode) == 0);
    char shown[8];
    std::snprintf(shown, sizeof shown, "%04o", static_cast<unsigned>(mode));
    for (auto msg : {error_within([=] { net::tls_server_context(cert, key); }),
                     error_within([=] { net::tls_client_context(cert, cert, key); })}) {
      CHECK_MESSAGE(msg.find(key + ": --tls-key file (a private key) is open to its group or others (mode " + shown) !=
                        std::string::npos,
                    msg);
      CHECK_MESSAGE(msg.find("chmod 600 " + key) != std::string::npos, msg);
    }
  }
}

TEST_CASE("tls files: a FIFO or a device as a certificate, key or CA is refused naming the file, without waiting") {
  temp_folder dir;
  auto cert = dir.file("cert.pem"), key = dir.file("key.pem"), fifo = dir.file("ca.fifo");
  write_certificate(cert, key, -1, 30, 0600);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto msg = error_within([=] { net::tls_client_context(fifo); });
  CHECK_MESSAGE(msg.find(fifo + ": --tls-ca file is not a regular file (a FIFO)") != std::string::npos, msg);
  msg = error_within([=] { net::tls_server_context(cert, key, fifo); });
  CHECK_MESSAGE(msg.find(fifo + ": --tls-ca file is not a regular file (a FIFO)") != std::string::npos, msg);
  msg = error_within([=] { net::tls_server_context(fifo, key); });
  CHECK_MESSAGE(msg.find(fifo + ": --tls-cert file is not a regular file (a FIFO)") != std::string::npos, msg);
  msg = error_within([=] { net::tls_server_context(cert, "/dev/zero"); });
  CHECK_MESSAGE(msg.find("/dev/zero: --tls-key file is not a regular file (a character device)") != std::string::npos,
                msg);
}

TEST_CASE("tls files: a certificate that expired or is not valid yet is told naming the file, and a valid one is not") {
  temp_folder dir;
  auto cert = dir.file("cert.pem"), key = dir.file("key.pem");
  write_certificate(cert, key, -1, 30, 0600);
  CHECK(net::certificate_validity_problem(*net::tls_server_context(cert, key)).empty());
  write_certificate(cert, key, -10, -2, 0600);
  auto why = net::certificate_validity_problem(*net::tls_server_context(cert, key));
  CHECK_MESSAGE(why.find(cert + ": --tls-cert: the certificate expired on ") == 0, why);
  write_certificate(cert, key, 2, 30, 0600);
  why = net::certificate_validity_problem(*net::tls_server_context(cert, key));
  CHECK_MESSAGE(why.find(cert + ": --tls-cert: the certificate is not valid before ") == 0, why);
  // A client presents none of its own unless given one.
  CHECK(net::certificate_validity_problem(*net::tls_client_context(cert)).empty());
}

TEST_CASE("tls stream: a server's stream holds no TLS state until its peer's first byte") {
  temp_folder dir;
  auto cert = dir.file("cert.pem"), key = dir.file("key.pem");
  write_certificate(cert, key, -1, 30, 0600);
  auto ctx = net::tls_server_context(cert, key);
  boost::asio::io_context io;
  std::vector<std::unique_ptr<net::byte_stream>> streams;
  streams.reserve(200);
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 200; ++i) streams.push_back(net::tls_server_stream(boost::asio::ip::tcp::socket(io), ctx, {}));
  const size_t after = mallinfo2().uordblks;
  const size_t per_stream = after > before ? (after - before) / streams.size() : 0;
  // Made at once, a TLS stream holds two 17 KiB record buffers and OpenSSL's session (57 KiB a
  // connection measured in serve); a plain socket's bookkeeping is well under 2 KiB.
  CHECK_MESSAGE(per_stream < 2048, per_stream << " bytes per idle TLS stream");
}
