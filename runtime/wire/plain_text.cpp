#include "runtime/wire/plain_text.hpp"

namespace aryl::net {

bool is_loopback(const boost::asio::ip::address& a) {
  if (a.is_v4()) return a.to_v4().is_loopback();
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).is_loopback();
  return v6.is_loopback();
}

std::string plain_text_refusal(const std::string& host, uint16_t port,
                               const std::vector<boost::asio::ip::address>& addresses, bool insecure) {
  if (insecure) return {};
  const boost::asio::ip::address* outside = nullptr;
  for (const auto& a : addresses)
    if (!is_loopback(a)) {
      outside = &a;
      break;
    }
  if (!addresses.empty() && !outside) return {};
  std::string where = host + ":" + std::to_string(port);
  if (outside && outside->to_string() != host) where += " (" + outside->to_string() + ")";
  // Checked on what the name resolved to: "localhost" may be anything the resolver says.
  return where + (addresses.empty() ? " resolved to no address" : " is not a loopback address") +
         ", and without TLS the cluster token would cross the network in the clear: give --tls-ca FILE (or "
         "ARYL_TLS_CA) to speak TLS and verify the scheduler, or --insecure to send it in plain text anyway";
}

} // namespace aryl::net
