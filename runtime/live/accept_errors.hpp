#pragma once
/// What a listener does when an accept fails: out of descriptors or kernel memory, the pending
/// connection stays in the backlog until one is freed, so the listener backs off and accepts
/// again; any other error is the peer's (it left before it was accepted). Shared by the
/// gateway's listener and the metrics endpoint.
#include <chrono>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>

namespace aryl::live {

inline bool out_of_resources(const boost::system::error_code& ec) {
  namespace asio = boost::asio;
  return ec == asio::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

/// The first and the longest wait before accepting again after out_of_resources.
inline constexpr std::chrono::milliseconds accept_first_backoff{10}, accept_last_backoff{1000};

} // namespace aryl::live
