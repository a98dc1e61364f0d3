#pragma once
/// What `aryl serve` may listen on: a cluster token crosses the network in every hello, so
/// plain TCP is for loopback only unless the operator says otherwise.
#include <string>

namespace aryl::live {

/// Throws aryl::input_error, before anything binds, when `bind` is not an IP address, or is
/// not a loopback address while `tls` is false and `insecure` is false; the message names the
/// address and the flags that allow it (--tls-cert/--tls-key, or --insecure). `tls_cert` and
/// `tls_key` must be given both or neither (naming the one missing). Beyond loopback the
/// peers must have credentials of their own (`identities`): one shared cluster token is for
/// a loopback testbed.
void check_listen_policy(const std::string& bind, const std::string& tls_cert, const std::string& tls_key,
                         bool insecure, bool identities);

} // namespace aryl::live
