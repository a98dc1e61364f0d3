#include "runtime/wire/tls_stream.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <optional>

#include "solvers/input_error.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/small_file.hpp"

namespace aryl::net {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

struct tls_context {
  explicit tls_context(ssl::context::method m) : ctx(m) {}
  ssl::context ctx;
  std::string cert_file;  ///< of the certificate it presents; empty: none
};

ssl::context& asio_context(tls_context& c) { return c.ctx; }

void byte_stream::close() {
  boost::system::error_code ec;
  socket().shutdown(tcp::socket::shutdown_both, ec);
  socket().close(ec);
}

namespace {

/// TLS 1.2 and later only: older versions have known breaks.
void modern_only(ssl::context& c) {
  c.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  SSL_CTX_set_min_proto_version(c.native_handle(), TLS1_2_VERSION);
}

/// OpenSSL's reason for the last failure, for an error naming a file.
std::string openssl_reason(const boost::system::error_code& ec) {
  unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e != 0) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    return buf.data();
  }
  return ec.message();
}

class plain final : public byte_stream {
 public:
  explicit plain(tcp::socket s) : s_(std::move(s)) {}
  tcp::socket& socket() override { return s_; }
  void async_handshake(handshake_handler done) override { done(""); }
  void async_read_some(asio::mutable_buffer b, io_handler h) override { s_.async_read_some(b, std::move(h)); }
  void async_write(asio::const_buffer b, io_handler h) override { asio::async_write(s_, b, std::move(h)); }

 private:
  tcp::socket s_;
};

class tls final : public byte_stream {
 public:
  tls(tcp::socket s, std::shared_ptr<tls_context> ctx, std::vector<uint8_t> refusal)
      : ctx_(std::move(ctx)), raw_(std::move(s)), server_(true), refusal_(std::move(refusal)) {}
  tls(asio::io_context& io, std::shared_ptr<tls_context> ctx, const std::string& name)
      : ctx_(std::move(ctx)), raw_(io), server_(false) {
    s_.emplace(std::move(raw_), ctx_->ctx);
    SSL* h = s_->native_handle();
    boost::system::error_code ec;
    asio::ip::make_address(name, ec);
    if (!ec) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(h), name.c_str());
    } else {
      SSL_set_tlsext_host_name(h, name.c_str());  // SNI, for a server with several names
      SSL_set1_host(h, name.c_str());
    }
    s_->set_verify_mode(ssl::verify_peer);
  }

  tcp::socket& socket() override { return s_ ? s_->next_layer() : raw_; }

  void async_handshake(handshake_handler done) override {
    if (!server_)
      return s_->async_handshake(ssl::stream_base::client,
                                [this, done](const boost::system::error_code& ec) { done(describe(ec)); });
    // A TLS client's first record is a handshake (content type 22). Anything else is a peer
    // speaking plain text: it is told so in its own language instead of getting TLS alerts.
    socket().async_wait(tcp::socket::wait_read, [this, done](const boost::system::error_code& ec) {
      if (ec) return done(ec.message());
      uint8_t first = 0;
      boost::system::error_code e;
      size_t n = socket().receive(asio::buffer(&first, 1), tcp::socket::message_peek, e);
      if (e == asio::error::eof || (!e && n == 0)) return done("the peer closed the connection");
      if (e) return done(e.message());
      if (first != 22) {
        refuse_plain();
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", first);
        return done(std::string("the peer does not speak TLS (its first byte is ") + hex +
                    ", not a TLS handshake): a plain-text client? It was told, in plain text, to use TLS");
      }
      // Made only now: a TLS stream holds two record buffers and OpenSSL's state (about 57 KiB),
      // which a connection that has sent nothing need not cost.
      s_.emplace(std::move(raw_), ctx_->ctx);
      s_->async_handshake(ssl::stream_base::server,
                          [this, done](const boost::system::error_code& ec2) { done(describe(ec2)); });
    });
  }

  void async_read_some(asio::mutable_buffer b, io_handler h) override {
    // A peer that closes without a close_notify ends the stream as a plain one would.
    s_->async_read_some(b, [h = std::move(h)](const boost::system::error_code& ec, size_t n) {
      h(ec == ssl::error::stream_truncated ? boost::system::error_code(asio::error::eof) : ec, n);
    });
  }

  void async_write(asio::const_buffer b, io_handler h) override { asio::async_write(*s_, b, std::move(h)); }
  std::string peer_common_name() override {
    if (!s_) return {};
    SSL* h = s_->native_handle();
    if (SSL_get_verify_result(h) != X509_V_OK) return {};
    X509* cert = SSL_get0_peer_certificate(h);
    if (cert == nullptr) return {};
    char cn[256] = {};
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
    // A name holding a NUL would read as a shorter one: taken as no name.
    if (n <= 0 || static_cast<size_t>(n) != std::strlen(cn)) return {};
    return std::string(cn, static_cast<size_t>(n));
  }

 private:
  /// Reads what the peer sent (so that closing sends no reset ahead of the answer), then
  /// writes the refusal; without waiting.
  void refuse_plain() {
    auto& sock = socket();
    boost::system::error_code e;
    sock.non_blocking(true, e);
    std::array<uint8_t, 8192> sink{};
    sock.read_some(asio::buffer(sink), e);
    asio::write(sock, asio::buffer(refusal_), e);
    sock.shutdown(tcp::socket::shutdown_send, e);
  }

  /// The handshake's failure in one line: OpenSSL's reason, and for a certificate refused
  /// the verifier's (unknown CA, wrong name, expired).
  std::string describe(const boost::system::error_code& ec) {
    if (!ec) return "";
    if (ec == ssl::error::stream_truncated || ec == asio::error::eof)
      return server_ ? "the peer closed the connection during the TLS handshake"
                     : "the server closed the connection during the TLS handshake (does it serve TLS?)";
    std::string why = ec.message();
    long verify = s_ ? SSL_get_verify_result(s_->native_handle()) : X509_V_OK;
    if (!server_ && verify != X509_V_OK)
      why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
    if (ec.category() == asio::error::get_ssl_category() && ERR_GET_REASON(ec.value()) == SSL_R_WRONG_VERSION_NUMBER)
      why += server_ ? "" : " (the server does not speak TLS?)";
    ERR_clear_error();
    return why;
  }

  std::shared_ptr<tls_context> ctx_;  ///< outlives s_, which uses it
  tcp::socket raw_;                   ///< the connection until s_ takes it
  std::optional<ssl::stream<tcp::socket>> s_;  ///< a server's from its peer's first byte
  bool server_;
  std::vector<uint8_t> refusal_;
};

} // namespace

namespace {

/// The PEM file a flag names, read whole: a FIFO or a device would hang or never end the
/// loader, and a key its group or others may read is no secret (the token file's rule).
std::string read_pem(const std::string& path, const std::string& flag, bool secret) {
  return read_small_file(path, flag + " file", max_tls_file_bytes, [&](const struct stat& st) {
    if (secret) refuse_open_to_others(path, flag + " file (a private key)", st);
  });
}

void use_certificate(tls_context& t, const std::string& cert_file, const std::string& key_file) {
  auto& c = t.ctx;
  boost::system::error_code ec;
  auto cert = read_pem(cert_file, "--tls-cert", false);
  c.use_certificate_chain(asio::buffer(cert), ec);
  if (ec) throw input_error(cert_file + ": --tls-cert: cannot use it as a PEM certificate chain: " + openssl_reason(ec));
  auto key = read_pem(key_file, "--tls-key", true);
  c.use_private_key(asio::buffer(key), ssl::context::pem, ec);
  OPENSSL_cleanse(key.data(), key.size());
  if (ec) throw input_error(key_file + ": --tls-key: cannot use it as a PEM private key: " + openssl_reason(ec));
  if (SSL_CTX_check_private_key(c.native_handle()) != 1) {
    ERR_clear_error();
    throw input_error(key_file + ": --tls-key: does not match the certificate in " + cert_file);
  }
  t.cert_file = cert_file;
}

void trust(ssl::context& c, const std::string& ca_file) {
  boost::system::error_code ec;
  c.add_certificate_authority(asio::buffer(read_pem(ca_file, "--tls-ca", false)), ec);
  if (ec) throw input_error(ca_file + ": --tls-ca: cannot load it as PEM CA certificates: " + openssl_reason(ec));
}

} // namespace

std::shared_ptr<tls_context> tls_server_context(const std::string& cert_file, const std::string& key_file,
                                                const std::string& client_ca_file) {
  auto c = std::make_shared<tls_context>(ssl::context::tls_server);
  modern_only(c->ctx);
  // OpenSSL's record buffers go back to the allocator while a connection has nothing in flight:
  // most connections are idle most of the time.
  SSL_CTX_set_mode(c->ctx.native_handle(), SSL_MODE_RELEASE_BUFFERS);
  use_certificate(*c, cert_file, key_file);
  if (!client_ca_file.empty()) {
    trust(c->ctx, client_ca_file);
    c->ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return c;
}

std::shared_ptr<tls_context> tls_client_context(const std::string& ca_file, const std::string& cert_file,
                                                const std::string& key_file) {
  auto c = std::make_shared<tls_context>(ssl::context::tls_client);
  modern_only(c->ctx);
  trust(c->ctx, ca_file);
  c->ctx.set_verify_mode(ssl::verify_peer);
  if (!cert_file.empty() || !key_file.empty()) use_certificate(*c, cert_file, key_file);
  return c;
}

std::unique_ptr<byte_stream> plain_stream(tcp::socket s) { return std::make_unique<plain>(std::move(s)); }

std::unique_ptr<byte_stream> plain_stream(asio::io_context& io) { return std::make_unique<plain>(tcp::socket(io)); }

std::unique_ptr<byte_stream> tls_server_stream(tcp::socket s, std::shared_ptr<tls_context> ctx,
                                               std::vector<uint8_t> plain_refusal) {
  return std::make_unique<tls>(std::move(s), std::move(ctx), std::move(plain_refusal));
}

std::unique_ptr<byte_stream> tls_client_stream(asio::io_context& io, std::shared_ptr<tls_context> ctx,
                                               const std::string& server_name) {
  return std::make_unique<tls>(io, std::move(ctx), server_name);
}

std::unique_ptr<byte_stream> client_stream(asio::io_context& io, const std::shared_ptr<tls_context>& ctx,
                                           const std::string& server_name) {
  return ctx ? tls_client_stream(io, ctx, server_name) : plain_stream(io);
}

std::string certificate_validity_problem(const tls_context& t) {
  // Asio's native_handle() is not const, though reading the certificate changes nothing.
  X509* cert = SSL_CTX_get0_certificate(const_cast<ssl::context&>(t.ctx).native_handle());
  if (!cert) return "";
  const bool early = X509_cmp_current_time(X509_get0_notBefore(cert)) > 0;
  const ASN1_TIME* end = X509_get0_notAfter(cert);
  const bool expired = X509_cmp_current_time(end) < 0;
  if (!early && !expired) return "";
  const ASN1_TIME* when = early ? X509_get0_notBefore(cert) : end;
  std::string date = "?";
  if (BIO* b = BIO_new(BIO_s_mem())) {
    if (ASN1_TIME_print(b, when) == 1) {
      char* text = nullptr;
      long n = BIO_get_mem_data(b, &text);
      if (n > 0) date.assign(text, static_cast<size_t>(n));
    }
    BIO_free(b);
  }
  ERR_clear_error();
  return t.cert_file + ": --tls-cert: the certificate " + (early ? "is not valid before " : "expired on ") + date +
         ": peers that check it will refuse the handshake";
}

} // namespace aryl::net
