#include "runtime/live/gateway_access.hpp"

#include <fmt/format.h>

#include "solvers/control_chars.hpp"
#include "runtime/live/token.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {

hello_verdict authenticate(const identity_registry* ids, const std::string& cluster_token, const wire::hello& h,
                           const std::string& certificate_name) {
  hello_verdict v;
  if (!ids) {
    if (!tokens_equal(h.token, cluster_token)) v.refusal = "wrong cluster token";
    else v.who = principal{"cluster-token", role::admin, true};
    return v;
  }
  std::optional<identity> by_cert, by_token;
  if (!certificate_name.empty()) {
    by_cert = ids->by_name(certificate_name);
    if (!by_cert) {
      v.refusal = fmt::format("certificate for '{}': no such identity in this cluster", certificate_name);
      return v;
    }
  }
  if (!h.token.empty()) {
    by_token = ids->by_token(h.token);
    if (!by_token) {
      v.refusal = "unknown token";
      return v;
    }
  }
  if (by_cert && by_token && by_cert->name != by_token->name) {
    v.refusal = fmt::format("the certificate names '{}' and the token '{}'", by_cert->name, by_token->name);
    v.named = by_cert->name;
    return v;
  }
  auto id = by_cert ? by_cert : by_token;
  if (!id) {
    v.refusal = "no credential: present a token (--token-file) or a client certificate";
    return v;
  }
  v.named = id->name;
  if (id->revoked) {
    v.refusal = fmt::format("the credential of {} was revoked", id->name);
    return v;
  }
  const bool agent_hello = h.role == wire::peer_role::agent;
  if (agent_hello != (id->who == role::agent)) {
    v.refusal = agent_hello ? fmt::format("{} (role {}) may not register a node", id->name, role_name(id->who))
                            : fmt::format("{} (role agent) may only register its node", id->name);
    return v;
  }
  v.who = principal{id->name, id->who, false};
  if (by_token) v.credential_hash = by_token->token_hash;
  v.named.clear();
  return v;
}

std::string credential_lapsed(const identity_registry& ids, const principal& who, const std::string& credential_hash) {
  auto id = ids.by_name(who.name);
  if (!id || id->revoked) return fmt::format("the credential of {} was revoked", who.name);
  if (id->who != who.who || (!credential_hash.empty() && id->token_hash != credential_hash))
    return fmt::format("the credential of {} was replaced", who.name);
  return {};
}

std::string register_refusal(const identity_registry* ids, const principal& who, const wire::register_& r) {
  if (!ids || who.cluster_token) return {};
  if (r.server != who.name)
    return fmt::format("{} (role agent) may register only node {}, not {}", who.name, who.name, r.server);
  auto id = ids->by_name(who.name);
  if (!id) return fmt::format("the credential of {} was revoked", who.name);
  if (!id->gpu_type.empty() && id->gpu_type != r.gpu_type)
    return fmt::format("{} was enrolled with GPU type {}, not {}", who.name, id->gpu_type, r.gpu_type);
  if (!id->pool.empty() && id->pool != wire::pool_name(r.pool))
    return fmt::format("{} was enrolled in the {} pool, not {}", who.name, id->pool, wire::pool_name(r.pool));
  return {};
}

token_answer answer_tokens(identity_registry* ids, const wire::token_request& q, bool with_token) {
  token_answer a;
  if (!ids) {
    a.refusal = "this scheduler runs in cluster-token mode: start it with --identities FILE to have identities";
    return a;
  }
  wire::token_reply reply;
  try {
    if (q.action == "create") {
      auto r = role_from(q.role.value_or(""));
      if (!r) {
        a.refusal = fmt::format("token create {}: role '{}' is not one of admin|user|agent|reader", q.name,
                                escape_control(q.role.value_or("")));
        return a;
      }
      auto token = ids->create(identity{q.name, *r, "", q.gpu_type.value_or(""), q.pool.value_or(""), false},
                               with_token);
      if (with_token) reply.token = token;
      reply.text = fmt::format("created {} (role {}); {}", q.name, role_name(*r),
                               with_token ? "its token is shown this once"
                                          : "it presents a TLS client certificate with CN=" + q.name);
    } else if (q.action == "revoke") {
      if (!ids->revoke(q.name)) {
        a.refusal = fmt::format("token revoke: no identity '{}' to revoke", escape_control(q.name));
        return a;
      }
      reply.text = fmt::format("revoked {}: its next request is refused", q.name);
    } else if (q.action == "list") {
      reply.text = describe_identities(ids->all());
    } else {
      a.refusal = fmt::format("token: action '{}' is not create, revoke or list", escape_control(q.action));
      return a;
    }
  } catch (const std::exception& e) {  // a bad name, a name taken, the file not written
    a.refusal = e.what();
    return a;
  }
  a.reply = std::move(reply);
  return a;
}

std::string metrics_refusal(const identity_registry& ids, std::string_view token) {
  if (token.empty()) return "a bearer token is required (Authorization: Bearer TOKEN of a reader or an admin)";
  auto id = ids.by_token(token);
  if (!id) return "unknown token";
  if (id->revoked) return fmt::format("the credential of {} was revoked", id->name);
  if (id->who != role::reader && id->who != role::admin)
    return fmt::format("{} (role {}) may not read metrics", id->name, role_name(id->who));
  return {};
}

} // namespace aryl::live
