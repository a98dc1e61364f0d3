#pragma once
/// `aryl cordon`, `aryl drain`, `aryl resume`: an operator's order about one training server.
#include <string>

#include "runtime/live/client.hpp"

namespace aryl::live {

/// Sends the order and returns what the scheduler did, one line ("t1: draining: no new work;
/// 2 jobs run on there until they end"). Throws aryl::input_error with the scheduler's reason
/// (naming the server) if it refuses.
std::string order_node(const client_options& o, const wire::node_request& order);

} // namespace aryl::live
