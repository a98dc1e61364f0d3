#include "runtime/live/client_tokens.hpp"

#include <fmt/format.h>

#include "solvers/input_error.hpp"
#include "runtime/live/identities.hpp"

namespace aryl::live {

std::string change_identities(const std::string& path, const wire::token_request& order, bool cert_only) {
  auto store = identity_store::load(path);
  if (order.action == "list") return describe_identities(store.all());
  if (order.action == "revoke") {
    if (!store.revoke(order.name)) throw input_error(path + ": no identity '" + order.name + "' to revoke");
    store.save(path);
    return fmt::format("revoked {} in {}\n", order.name, path);
  }
  auto r = role_from(order.role.value_or(""));
  if (!r) throw input_error("token create: --role '" + order.role.value_or("") + "' is not one of admin|user|agent|reader");
  std::string token;
  try {
    token = store.create(identity{order.name, *r, "", order.gpu_type.value_or(""), order.pool.value_or(""), false},
                         !cert_only);
  } catch (const input_error& e) {
    throw input_error(path + ": " + e.what());
  }
  store.save(path);
  auto out = fmt::format("created {} (role {}) in {}{}\n", order.name, role_name(*r), path,
                         cert_only ? ": it presents a TLS client certificate with CN=" + order.name
                                   : "; its token is shown this once");
  if (!token.empty()) out += token + "\n";
  return out;
}

} // namespace aryl::live
