#pragma once
/// The byte stream under live mode's frames: plain TCP, or TLS over it (OpenSSL through
/// Boost.Asio's ssl layer). Only tls_stream.cpp sees the OpenSSL headers, so the files of
/// the gateway, the agent and the client compile as before. Shared by both sides of live
/// mode (serve's listener and client commands; the node agent).
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace aryl::net {

/// The result of one read or write: as Asio's handlers get it.
using io_handler = std::function<void(const boost::system::error_code&, size_t)>;
/// The end of a handshake: empty, or why it failed (one line, for a log or an error).
using handshake_handler = std::function<void(const std::string& error)>;

/// One connection's bytes. Callers keep at most one read and one write in flight (as with
/// a socket), on the io_context's thread.
class byte_stream {
 public:
  virtual ~byte_stream() = default;
  /// The TCP socket under it: to connect it, read its endpoints, set options.
  virtual boost::asio::ip::tcp::socket& socket() = 0;
  /// TLS: the handshake (a client verifies the server's certificate and name; a server
  /// refuses a peer whose first byte is not a TLS handshake record). Plain: `done` with no
  /// error, called at once.
  virtual void async_handshake(handshake_handler done) = 0;
  virtual void async_read_some(boost::asio::mutable_buffer b, io_handler h) = 0;
  /// Writes all of `b`.
  virtual void async_write(boost::asio::const_buffer b, io_handler h) = 0;
  /// TLS, after a handshake that verified the peer's certificate: its subject's common name
  /// (the identity it names, docs/security.md); else empty.
  virtual std::string peer_common_name() { return {}; }
  /// Closes the TCP connection now (TLS: without a close_notify; the peer reads end of
  /// stream).
  void close();
};

/// An OpenSSL context: a server's certificate and key, or the CA a client trusts.
struct tls_context;
/// Its Asio context, for a listener that speaks another protocol over TLS (the metrics port).
boost::asio::ssl::context& asio_context(tls_context& c);

/// The context of a TLS listener. With `client_ca_file`, every peer must present a
/// certificate that chains to a CA in it (mutual TLS). Throws aryl::input_error naming the
/// file that cannot be read, is not a regular file or is larger than max_tls_file_bytes, holds
/// no usable certificate or key, a key its group or others may read or write (naming the
/// chmod that fixes it), or a key that does not match the certificate.
std::shared_ptr<tls_context> tls_server_context(const std::string& cert_file, const std::string& key_file,
                                                const std::string& client_ca_file = "");
/// The context of a client that trusts the CA (or self-signed certificate) in `ca_file`
/// (PEM) and nothing else; with `cert_file` and `key_file`, it presents that certificate
/// when the server asks for one. Throws aryl::input_error naming the file, as
/// tls_server_context does.
std::shared_ptr<tls_context> tls_client_context(const std::string& ca_file, const std::string& cert_file = "",
                                                const std::string& key_file = "");

/// Why the certificate `ctx` presents is outside its validity period now (expired, or not
/// valid yet), naming its file and the date, for a warning at start; empty when it is valid
/// or the context presents none.
std::string certificate_validity_problem(const tls_context& ctx);

/// A plain TCP stream over an accepted socket, or a new socket on `io` to connect.
std::unique_ptr<byte_stream> plain_stream(boost::asio::ip::tcp::socket s);
std::unique_ptr<byte_stream> plain_stream(boost::asio::io_context& io);
/// The server side of TLS over an accepted socket. A peer whose first byte is not a TLS
/// handshake (a plain-text client) gets `plain_refusal` written to it in plain text, best
/// effort, and the handshake fails saying so.
std::unique_ptr<byte_stream> tls_server_stream(boost::asio::ip::tcp::socket s, std::shared_ptr<tls_context> ctx,
                                               std::vector<uint8_t> plain_refusal);
/// The client side of TLS on a new socket on `io` (connect socket() first). The server's
/// certificate must chain to the context's CA and name `server_name` (a DNS name, or an IP
/// address matched against the certificate's IP addresses).
std::unique_ptr<byte_stream> tls_client_stream(boost::asio::io_context& io, std::shared_ptr<tls_context> ctx,
                                               const std::string& server_name);
/// tls_client_stream with `ctx`, or plain_stream without one.
std::unique_ptr<byte_stream> client_stream(boost::asio::io_context& io, const std::shared_ptr<tls_context>& ctx,
                                           const std::string& server_name);

} // namespace aryl::net
