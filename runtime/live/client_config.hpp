#pragma once
/// The client config file: where client commands (`aryl status`, `submit`, ...) find the
/// scheduler, its token and the CA that signs its certificate when neither a flag nor the
/// environment says. Precedence: flags, then ARYL_ADDR / ARYL_TOKEN_FILE / ARYL_TLS_CA, then
/// this file. YAML, every key optional:
///
///     addr: 10.0.0.5:7000          # HOST:PORT, as ARYL_ADDR
///     token_file: token            # as ARYL_TOKEN_FILE
///     tls_ca: ca.pem               # as ARYL_TLS_CA
///     tls_cert: me.pem             # as ARYL_TLS_CERT (a serve started with --tls-ca asks)
///     tls_key: me.key              # as ARYL_TLS_KEY
///
/// Relative paths are taken from the file's folder.
#include <functional>
#include <string>

namespace aryl::live {

/// A variable's value, or nullptr when unset (std::getenv's shape).
using env_lookup = std::function<const char*(const char*)>;

struct client_config {
  std::string path;  ///< the file read; empty: none
  std::string addr, token_file, tls_ca, tls_cert, tls_key;  ///< empty: not set
};

/// The file at `path`. Throws aryl::input_error naming the file (and line and key) when it
/// cannot be read or parsed, is not a regular file, is larger than max_client_config_bytes,
/// may be written by its group or others, lies in a folder anyone may write without the
/// sticky bit (naming the mode and the chmod that fixes it), is not a map, holds a key other than the five above, a value
/// that is not a single string, or an addr that is not HOST:PORT with a port in 1..65535.
client_config read_client_config(const std::string& path);

/// The file $ARYL_CONFIG names (an error if it cannot be read); else
/// $XDG_CONFIG_HOME/aryl/client.yaml or, without XDG_CONFIG_HOME, $HOME/.config/aryl/client.yaml
/// when that file exists; else none (an empty config).
client_config find_client_config(const env_lookup& env);

/// Looks ARYL_ADDR, ARYL_TOKEN_FILE, ARYL_TLS_CA, ARYL_TLS_CERT and ARYL_TLS_KEY up in `env`,
/// and where unset (or empty) in `file`; any other name in `env` only. Keeps references to
/// both.
env_lookup with_client_config(const env_lookup& env, const client_config& file);

} // namespace aryl::live
