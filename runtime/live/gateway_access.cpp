#include "runtime/live/gateway_access.hpp"

#include <fmt/format.h>

#include "runtime/live/token.hpp"

namespace aryl::live {

namespace {

std::string pool_text(wire::pool_kind p) { return p == wire::pool_kind::training ? "training" : "inference"; }

} // namespace

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
  if (!id->pool.empty() && id->pool != pool_text(r.pool))
    return fmt::format("{} was enrolled in the {} pool, not {}", who.name, id->pool, pool_text(r.pool));
  return {};
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
