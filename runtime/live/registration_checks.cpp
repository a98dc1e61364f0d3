#include "runtime/live/registration_checks.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "solvers/control_chars.hpp"
#include "solvers/plural.hpp"

namespace aryl::live {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

std::string name_problem(const char* field, const std::string& v) {
  if (v.empty()) return fmt::format("{} is empty", field);
  if (v.size() > max_node_name_bytes)
    return fmt::format("{} is {} bytes, at most {} are allowed", field, v.size(), max_node_name_bytes);
  for (size_t i = 0; i < v.size(); ++i)
    if (!name_char(v[i])) {
      // Byte by byte, as a name of another alphabet or a control character is refused whole.
      auto byte = static_cast<unsigned char>(v[i]);
      auto shown = byte > 0x20 && byte < 0x7f ? fmt::format("'{}'", v[i]) : fmt::format("byte 0x{:02x}", byte);
      return fmt::format("{} holds {} at byte {}: letters, digits, '.', '_' and '-' only", field, shown, i);
    }
  if (v[0] == '.' || v[0] == '_' || v[0] == '-')
    return fmt::format("{} '{}' must start with a letter or a digit", field, escape_control(v));
  return "";
}

} // namespace

std::string registration_problem(const wire::register_& r) {
  if (auto why = name_problem("server name", r.server); !why.empty()) return why;
  if (auto why = name_problem("gpu_type", r.gpu_type); !why.empty()) return fmt::format("server '{}': {}", r.server, why);
  if (r.gpus == 0 || r.gpus > max_gpus_per_server)
    return fmt::format("server '{}': {} GPUs; a machine registers 1 to {}", r.server, r.gpus, max_gpus_per_server);
  for (auto& w : r.workers)
    for (auto g : w.gpus)
      if (g >= r.gpus)
        return fmt::format("server '{}': job {} rank {} is listed on GPU {}, beyond its {}", r.server, w.job_id,
                           w.rank, g, gpus_text(r.gpus));
  // A host name or an IP address, put in workers' MASTER_ADDR.
  if (r.address) {
    const auto& a = *r.address;
    if (a.empty() || a.size() > 253) return fmt::format("server '{}': address is empty or over 253 bytes", r.server);
    for (char c : a)
      if (!(name_char(c) || c == ':'))
        return fmt::format("server '{}': address '{}' is not a host name or an IP address", r.server,
                           escape_control(a));
  }
  // Printed by show node: no control characters, no spaces, bounded.
  if (r.version) {
    const auto& v = *r.version;
    bool printable = std::all_of(v.begin(), v.end(), [](char c) { return c > ' ' && c < 127; });
    if (v.empty() || v.size() > 64 || !printable)
      return fmt::format("server '{}': version '{}' is not 1 to 64 printable ASCII bytes without spaces", r.server,
                         escape_control(v));
  }
  return "";
}

} // namespace aryl::live
