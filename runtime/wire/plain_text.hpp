#pragma once
/// Whether a client or an agent may speak plain TCP to the scheduler: its first frame carries
/// the cluster token, so without TLS it goes only to this machine (serve's listen rule, from
/// the dialling side).
#include <cstdint>
#include <string>
#include <vector>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio/ip/address.hpp>

namespace aryl::net {

/// True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 (IPv4 loopback mapped into IPv6).
bool is_loopback(const boost::asio::ip::address& a);

/// Empty when plain TCP to `host`:`port`, which resolved to `addresses`, is allowed: every
/// address is loopback, or `insecure` (the operator's --insecure) is set. Otherwise the
/// refusal, for a message prefixed by the command: it names the host, the first address that
/// is not loopback, and the two ways out (--tls-ca FILE, or --insecure). No address at all is
/// refused too.
std::string plain_text_refusal(const std::string& host, uint16_t port,
                               const std::vector<boost::asio::ip::address>& addresses, bool insecure);

} // namespace aryl::net
