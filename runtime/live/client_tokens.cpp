#include "runtime/live/client_tokens.hpp"

#include "solvers/input_error.hpp"
#include "runtime/live/gateway_access.hpp"
#include "runtime/live/identities.hpp"

namespace aryl::live {

std::string change_identities(const std::string& path, const wire::token_request& order, bool cert_only) {
  identity_registry ids(path);
  auto a = answer_tokens(&ids, order, !cert_only);
  if (!a.reply) throw input_error(path + ": " + a.refusal);
  auto out = a.reply->text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (a.reply->token) out += *a.reply->token + "\n";
  return out;
}

} // namespace aryl::live
