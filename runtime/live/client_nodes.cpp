#include "runtime/live/client_nodes.hpp"

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {

std::string order_node(const client_options& o, const wire::node_request& order) {
  auto reply = ask(o, order, true);
  auto* r = reply ? std::get_if<wire::node_reply>(&*reply) : nullptr;
  if (!r)
    throw input_error(order.action + ": the scheduler answered '" +
                      std::string(reply ? wire::type_of(*reply) : std::string_view("nothing")) + "'");
  return escape_control(r->text);
}

} // namespace aryl::live
