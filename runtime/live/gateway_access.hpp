#pragma once
/// Who a connection of the gateway speaks for, and what it may do (docs/security.md): the
/// decisions the session asks at hello, at register and at each request. No Asio, no session:
/// plain values in and out.
#include <optional>
#include <string>

#include "runtime/live/access.hpp"
#include "runtime/live/identities.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// What a hello authenticates as.
struct hello_verdict {
  std::optional<principal> who;  ///< taken; else refused
  /// Token-authenticated: the hash it matched (a later revocation or new token no longer
  /// matches); certificate-authenticated: empty.
  std::string credential_hash;
  std::string refusal;
  /// Refused, but the credential named an identity (revoked, wrong role): it, for the audit.
  std::string named;
};

/// `ids` null: cluster-token mode, `cluster_token` checked. Else the certificate's common name
/// (`certificate_name`, "" for none) and the hello's token each name an identity, which must
/// agree, be enrolled, not revoked, and fit the hello's role (an agent credential only
/// registers; any other only speaks as a client).
hello_verdict authenticate(const identity_registry* ids, const std::string& cluster_token, const wire::hello& h,
                           const std::string& certificate_name);

/// Whether `who`, authenticated with `credential_hash`, still holds that credential ("" if
/// so, else why not): it may have been revoked or replaced since.
std::string credential_lapsed(const identity_registry& ids, const principal& who, const std::string& credential_hash);

/// Why an agent authenticated as `who` may not register `r` ("" if it may): its credential
/// names one node, enrolled with a GPU type and pool.
std::string register_refusal(const identity_registry* ids, const principal& who, const wire::register_& r);

/// What an admin's token_request does to `ids` (null: cluster-token mode, which has none): the
/// reply (a created token in it), or why it is refused. `with_token` false: a create makes a
/// certificate-only identity (`aryl token create --cert`, on the file directly).
struct token_answer {
  std::optional<wire::token_reply> reply;
  std::string refusal;
};
token_answer answer_tokens(identity_registry* ids, const wire::token_request& q, bool with_token = true);

/// Why a request bearing `token` may not read /metrics or /healthz ("" if it may): a reader's
/// or an admin's token, not revoked.
std::string metrics_refusal(const identity_registry& ids, std::string_view token);

} // namespace aryl::live
