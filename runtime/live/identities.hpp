#pragma once
/// Who may speak to `aryl serve` (docs/security.md): each identity has a name, a role and a
/// credential, a token kept only as its SHA-256 hash or a TLS client certificate whose
/// subject CN is the name. The store is a text file, one identity per line:
///
///     # name  role   credential            enrolment (agents only, optional)
///     alice   user   sha256:9f86d08...
///     t0      agent  sha256:60303ae...     gpu_type=V100 pool=training
///     ops     admin  cert
///     bob     user   sha256:2c26b46...     revoked
///
/// A token is 32 random bytes: a hash of it cannot be guessed back, so no slow key
/// derivation is needed (as for API keys, unlike passwords).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aryl::live {

/// admin: everything; user: submit, and show, logs and cancel of its own jobs, status;
/// agent: register its own node, report its workers; reader: status and metrics.
enum class role { admin, user, agent, reader };

std::string_view role_name(role r);
std::optional<role> role_from(std::string_view name);

struct identity {
  std::string name;
  role who = role::user;
  /// "sha256:<64 hex>" of its token; empty: it authenticates with a certificate only.
  std::string token_hash;
  /// Agents: the GPU type and pool its node may register with; empty: any.
  std::string gpu_type, pool;
  /// Revoked: kept (its line ends in `revoked`) so that a refusal still names who it was.
  bool revoked = false;
};

/// The token's hash as stored: "sha256:" and 64 lowercase hex digits.
std::string hash_token(std::string_view token);
/// A new token: "aryl_" and 64 hex digits of 32 random bytes (OpenSSL's RAND_bytes).
std::string new_token();

/// A line per identity: name, role, `token` or `cert`, enrolment, `revoked`; never a token or
/// its hash (`aryl token list`).
std::string describe_identities(const std::vector<identity>& ids);

class identity_store {
 public:
  /// The identities in `path`; a file that does not exist is an empty store. Throws
  /// aryl::input_error naming the file and line of what is wrong, or a file others may read.
  static identity_store load(const std::string& path);
  /// Writes the store to `path` whole (a temporary file renamed over it, mode 0600). Throws
  /// aryl::input_error naming the file when it cannot.
  void save(const std::string& path) const;

  /// The identity whose token is `token` (compared by hash, in time independent of where it
  /// matches), or null. Lookups find revoked identities too: callers refuse them by name.
  const identity* by_token(std::string_view token) const;
  const identity* by_name(std::string_view name) const;
  const std::vector<identity>& all() const { return ids_; }
  /// Bumped by every create and revoke: a session checks its identity again when it changed.
  uint64_t version() const { return version_; }

  /// Adds `id` with a new token (returned) or, `with_token` false, a certificate-only one.
  /// Throws aryl::input_error for a bad name, a name taken (a revoked one is replaced), or
  /// enrolment on a non-agent.
  std::string create(identity id, bool with_token = true);
  /// Marks `name` revoked; false if there was none not revoked yet.
  bool revoke(std::string_view name);

 private:
  std::vector<identity> ids_;
  uint64_t version_ = 0;
};

/// The store `aryl serve --identities FILE` answers from: read by the network and metrics
/// threads, changed by an admin's `aryl token` (each change written to FILE before it is
/// answered). Lookups return copies.
class identity_registry {
 public:
  /// Loads `path` (identity_store::load).
  explicit identity_registry(std::string path);
  std::optional<identity> by_token(std::string_view token) const;
  std::optional<identity> by_name(std::string_view name) const;
  std::vector<identity> all() const;
  /// Read without the lock: sessions ask it at every frame they get.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  /// As identity_store::create, then saved; on a failed save nothing changes. Throws
  /// aryl::input_error.
  std::string create(identity id, bool with_token = true);
  /// As identity_store::revoke, then saved. Throws aryl::input_error when it cannot save.
  bool revoke(std::string_view name);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  mutable std::mutex m_;
  identity_store store_;
  std::atomic<uint64_t> version_{0};  ///< store_'s, published after each change
};

} // namespace aryl::live
