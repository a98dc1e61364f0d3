#include "runtime/live/identities.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "solvers/input_error.hpp"
#include "runtime/inputs/small_file.hpp"
#include "runtime/inputs/user_name.hpp"
#include "runtime/live/token.hpp"

namespace aryl::live {

namespace {

constexpr std::string_view role_names[] = {"admin", "user", "agent", "reader"};
constexpr uint64_t max_store_bytes = 4 << 20;

std::string hex(const unsigned char* p, size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

bool is_hash(std::string_view s) {
  constexpr std::string_view prefix = "sha256:";
  if (s.size() != prefix.size() + 64 || s.substr(0, prefix.size()) != prefix) return false;
  for (char c : s.substr(prefix.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

/// Why `id`'s enrolment cannot be ("" if it can): only agents have one, of a known pool, and a
/// GPU type that fits the file's words.
std::string enrolment_problem(const identity& id) {
  if (id.who != role::agent && !(id.gpu_type.empty() && id.pool.empty()))
    return "only an agent is enrolled with a GPU type and pool";
  if (!id.pool.empty() && id.pool != "training" && id.pool != "inference")
    return "pool '" + id.pool + "' is not one of training|inference";
  if (id.gpu_type.find_first_of(" \t\r\n#=") != std::string::npos)
    return "GPU type '" + id.gpu_type + "' holds a space, '#' or '='";
  return {};
}

} // namespace

std::string_view role_name(role r) { return role_names[static_cast<size_t>(r)]; }

std::optional<role> role_from(std::string_view name) {
  for (size_t i = 0; i < std::size(role_names); ++i)
    if (role_names[i] == name) return static_cast<role>(i);
  return std::nullopt;
}

std::string hash_token(std::string_view token) {
  std::array<unsigned char, 32> digest{};
  unsigned int n = 0;
  if (EVP_Digest(token.data(), token.size(), digest.data(), &n, EVP_sha256(), nullptr) != 1 || n != digest.size())
    throw std::runtime_error("SHA-256 failed");
  return "sha256:" + hex(digest.data(), digest.size());
}

std::string new_token() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw std::runtime_error("no random bytes for a token (OpenSSL RAND_bytes failed)");
  return "aryl_" + hex(bytes.data(), bytes.size());
}

std::string describe_identities(const std::vector<identity>& ids) {
  std::string out;
  for (auto& id : ids) {
    out += id.name + " " + std::string(role_name(id.who)) + (id.token_hash.empty() ? " cert" : " token");
    if (!id.gpu_type.empty()) out += " gpu_type=" + id.gpu_type;
    if (!id.pool.empty()) out += " pool=" + id.pool;
    out += id.revoked ? " revoked\n" : "\n";
  }
  return out;
}

identity_store identity_store::load(const std::string& path) {
  identity_store s;
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return s;
  auto text = read_small_file(path, "identities file", max_store_bytes,
                              [&](const struct stat& st) { refuse_open_to_others(path, "identities file", st); });
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto where = path + ":" + std::to_string(n) + ": ";
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    identity id;
    std::string r, credential, extra;
    if (!(words >> id.name)) continue;
    if (!(words >> r >> credential)) throw input_error(where + "expected NAME ROLE CREDENTIAL, got '" + line + "'");
    if (auto why = user_name_problem(id.name); !why.empty()) throw input_error(where + why);
    auto parsed = role_from(r);
    if (!parsed) throw input_error(where + "role '" + r + "' is not one of admin|user|agent|reader");
    id.who = *parsed;
    if (credential != "cert" && !is_hash(credential))
      throw input_error(where + "credential is neither 'cert' nor sha256: and 64 lowercase hex digits");
    if (credential != "cert") id.token_hash = credential;
    while (words >> extra) {
      if (extra == "revoked") {
        id.revoked = true;
        continue;
      }
      auto eq = extra.find('=');
      auto key = extra.substr(0, eq);
      if (id.who != role::agent || eq == std::string::npos || (key != "gpu_type" && key != "pool"))
        throw input_error(where + "'" + extra + "': only an agent takes gpu_type=T and pool=training|inference");
      (key == "gpu_type" ? id.gpu_type : id.pool) = extra.substr(eq + 1);
    }
    if (auto why = enrolment_problem(id); !why.empty()) throw input_error(where + why);
    if (s.by_name(id.name)) throw input_error(where + "'" + id.name + "' is listed twice");
    s.ids_.push_back(std::move(id));
  }
  return s;
}

void identity_store::save(const std::string& path) const {
  std::string text = "# aryl identities: name role credential [gpu_type=T pool=P]; written by aryl token\n";
  for (auto& id : ids_) {
    text += id.name + " " + std::string(role_name(id.who)) + " " + (id.token_hash.empty() ? "cert" : id.token_hash);
    if (!id.gpu_type.empty()) text += " gpu_type=" + id.gpu_type;
    if (!id.pool.empty()) text += " pool=" + id.pool;
    if (id.revoked) text += " revoked";
    text += '\n';
  }
  const auto tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw input_error(tmp + ": cannot write the identities: " + std::strerror(errno));
  bool ok = ::fchmod(fd, 0600) == 0;
  for (size_t done = 0; ok && done < text.size();) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const auto why = std::strerror(ok ? errno : err);
    ::unlink(tmp.c_str());
    throw input_error(path + ": cannot write the identities: " + why);
  }
}

const identity* identity_store::by_token(std::string_view token) const {
  const auto h = hash_token(token);
  const identity* found = nullptr;
  for (auto& id : ids_)  // every entry compared, constant time each
    if (!id.token_hash.empty() && tokens_equal(h, id.token_hash)) found = &id;
  return found;
}

const identity* identity_store::by_name(std::string_view name) const {
  for (auto& id : ids_)
    if (id.name == name) return &id;
  return nullptr;
}

std::string identity_store::create(identity id, bool with_token) {
  if (auto why = user_name_problem(id.name); !why.empty()) throw input_error(why);
  if (auto* old = by_name(id.name); old && !old->revoked)
    throw input_error("'" + id.name + "' exists already: revoke it first to give it a new credential");
  if (auto why = enrolment_problem(id); !why.empty()) throw input_error(why);
  std::erase_if(ids_, [&](const identity& old) { return old.name == id.name; });
  std::string token;
  if (with_token) {
    token = new_token();
    id.token_hash = hash_token(token);
  } else {
    id.token_hash.clear();
  }
  ids_.push_back(std::move(id));
  ++version_;
  return token;
}

bool identity_store::revoke(std::string_view name) {
  for (auto& id : ids_)
    if (id.name == name && !id.revoked) {
      id.revoked = true;
      ++version_;
      return true;
    }
  return false;
}

identity_registry::identity_registry(std::string path) : path_(std::move(path)), store_(identity_store::load(path_)) {}

std::optional<identity> identity_registry::by_token(std::string_view token) const {
  std::lock_guard lock(m_);
  if (auto* id = store_.by_token(token)) return *id;
  return std::nullopt;
}

std::optional<identity> identity_registry::by_name(std::string_view name) const {
  std::lock_guard lock(m_);
  if (auto* id = store_.by_name(name)) return *id;
  return std::nullopt;
}

std::vector<identity> identity_registry::all() const {
  std::lock_guard lock(m_);
  return store_.all();
}

std::string identity_registry::create(identity id, bool with_token) {
  std::lock_guard lock(m_);
  auto next = store_;
  auto token = next.create(std::move(id), with_token);
  next.save(path_);
  store_ = std::move(next);
  version_.store(store_.version(), std::memory_order_release);
  return token;
}

bool identity_registry::revoke(std::string_view name) {
  std::lock_guard lock(m_);
  auto next = store_;
  if (!next.revoke(name)) return false;
  next.save(path_);
  store_ = std::move(next);
  version_.store(store_.version(), std::memory_order_release);
  return true;
}

} // namespace aryl::live
