#include "runtime/live/listen_policy.hpp"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio/ip/address.hpp>

#include "solvers/input_error.hpp"

namespace aryl::live {

void check_listen_policy(const std::string& bind, const std::string& tls_cert, const std::string& tls_key,
                         bool insecure, bool identities) {
  if (tls_cert.empty() != tls_key.empty())
    throw input_error(std::string("serve: --tls-cert and --tls-key go together: ") +
                      (tls_cert.empty() ? "--tls-cert" : "--tls-key") + " is missing");
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(bind, ec);
  if (ec) throw input_error("serve: --bind " + bind + ": not an IP address");
  if (address.is_loopback()) return;
  if (!tls_cert.empty() || insecure) {
    if (identities) return;
    throw input_error("serve: --bind " + bind +
                      " is not a loopback address: the cluster token (--token-file) is one secret that lets every "
                      "holder do everything, for a loopback testbed only; give --identities FILE instead "
                      "(docs/security.md: a credential and role per user, node and operator)");
  }
  throw input_error("serve: --bind " + bind +
                    " is not a loopback address, and without TLS the cluster token and every frame cross the "
                    "network in the clear: give --tls-cert FILE --tls-key FILE (agents and clients then verify "
                    "serve with --tls-ca), or --insecure to listen in plain text anyway");
}

} // namespace aryl::live
