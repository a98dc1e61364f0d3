#include "runtime/live/client_config.hpp"

#include <sys/stat.h>

#include <filesystem>

#include "solvers/input_error.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/small_file.hpp"
#include "runtime/inputs/yaml_file.hpp"

namespace aryl::live {

namespace {

bool is_host_port(const std::string& a) {
  auto colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == a.size() || a.size() - colon > 6) return false;
  unsigned long p = 0;
  for (size_t i = colon + 1; i < a.size(); ++i) {
    if (a[i] < '0' || a[i] > '9') return false;
    p = p * 10 + static_cast<unsigned long>(a[i] - '0');
  }
  return p >= 1 && p <= 65535;
}

/// The file says where the token goes (addr) and which CA to trust: whoever may write it, or
/// replace it in its folder, may take the token. The token file's rule, for writers.
void refuse_writable_by_others(const std::string& path, const struct stat& st) {
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    throw input_error(path + ": client config file may be written by its group or others (mode " +
                      mode_text(st.st_mode) + "); it says where the token is sent: chmod go-w " + path);
  auto folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) == 0 && (dir.st_mode & S_IWOTH) != 0 && (dir.st_mode & S_ISVTX) == 0)
    throw input_error(path + ": client config file is in " + folder.string() +
                      ", a folder anyone may write without the sticky bit (mode " + mode_text(dir.st_mode) +
                      "), where anyone could replace it: chmod o-w " + folder.string());
}

} // namespace

client_config read_client_config(const std::string& path) {
  client_config c;
  c.path = path;
  auto root = parse_yaml(path,
                         read_small_file(path, "client config file", max_client_config_bytes,
                                         [&](const struct stat& st) { refuse_writable_by_others(path, st); }),
                         "client config file");
  if (!root || root.IsNull()) return c;  // an empty file sets nothing
  if (!root.IsMap())
    throw input_error(yaml_where(path, root.Mark()) +
                      ": client config file: expected a map of keys addr, token_file, tls_ca, tls_cert, tls_key");
  const auto folder = std::filesystem::path(path).parent_path();
  for (const auto& kv : root) {
    const auto key = kv.first.Scalar();
    const auto where = yaml_where(path, kv.first.Mark());
    std::string* field = key == "addr"       ? &c.addr
                         : key == "token_file" ? &c.token_file
                         : key == "tls_ca"     ? &c.tls_ca
                         : key == "tls_cert"   ? &c.tls_cert
                         : key == "tls_key"    ? &c.tls_key
                                               : nullptr;
    if (!field)
      throw input_error(where + ": unknown key '" + key +
                        "' (a client config file has addr, token_file, tls_ca, tls_cert, tls_key)");
    if (!kv.second.IsScalar() || kv.second.Scalar().empty())
      throw input_error(where + ": " + key + ": expected a non-empty string");
    *field = kv.second.Scalar();
    if (key == "addr" && !is_host_port(*field))
      throw input_error(where + ": addr: '" + *field + "' is not HOST:PORT (e.g. 10.0.0.5:7000)");
    if (key != "addr" && std::filesystem::path(*field).is_relative()) *field = (folder / *field).string();
  }
  return c;
}

client_config find_client_config(const env_lookup& env) {
  if (const char* named = env("ARYL_CONFIG"); named && *named) return read_client_config(named);
  std::filesystem::path dir;
  if (const char* xdg = env("XDG_CONFIG_HOME"); xdg && *xdg) dir = xdg;
  else if (const char* home = env("HOME"); home && *home) dir = std::filesystem::path(home) / ".config";
  else return {};
  auto file = dir / "aryl" / "client.yaml";
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return {};  // none: flags and the environment only
  return read_client_config(file.string());
}

env_lookup with_client_config(const env_lookup& env, const client_config& file) {
  return [&env, &file](const char* name) -> const char* {
    if (const char* v = env(name); v && *v) return v;
    const std::string n = name;
    const std::string* from = n == "ARYL_ADDR"         ? &file.addr
                              : n == "ARYL_TOKEN_FILE" ? &file.token_file
                              : n == "ARYL_TLS_CA"     ? &file.tls_ca
                              : n == "ARYL_TLS_CERT"   ? &file.tls_cert
                              : n == "ARYL_TLS_KEY"    ? &file.tls_key
                                                       : nullptr;
    return from && !from->empty() ? from->c_str() : nullptr;
  };
}

} // namespace aryl::live
