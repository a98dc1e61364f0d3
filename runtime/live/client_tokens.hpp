#pragma once
/// `aryl token ... --identities FILE`: an admin's change to an identities file made directly,
/// with serve stopped (the first admin of a cluster is made so).
#include <string>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// Does `order` (create, revoke or list) on the file at `path` and returns what to print: for a
/// create, a line and the new token (none with `cert_only`). Throws aryl::input_error naming
/// the file or what is wrong.
std::string change_identities(const std::string& path, const wire::token_request& order, bool cert_only);

} // namespace aryl::live
