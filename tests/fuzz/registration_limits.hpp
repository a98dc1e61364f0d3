#pragma once
/// The limits docs/protocol.md ("register") gives an agent's registration, written from the
/// document and apart from runtime/live/registration_checks.cpp, so that the fuzz targets can
/// hold the gateway's checks to them.
#include <cstdint>
#include <string_view>

#include "runtime/wire/messages.hpp"

namespace aryl::fuzz {

inline constexpr std::string_view letters_digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `server` and `gpu_type`: 1 to 63 bytes of letters, digits, '.', '_' and '-', starting with a
/// letter or digit.
inline bool documented_name(std::string_view v) {
  if (v.empty() || v.size() > 63 || letters_digits.find(v.front()) == std::string_view::npos) return false;
  for (char c : v)
    if (letters_digits.find(c) == std::string_view::npos && c != '.' && c != '_' && c != '-') return false;
  return true;
}

/// A machine's name, GPU type and count as the protocol allows them (count 1 to 1024).
inline bool documented_machine(std::string_view server, std::string_view gpu_type, int64_t gpus) {
  return documented_name(server) && documented_name(gpu_type) && gpus >= 1 && gpus <= 1024;
}

/// All of a register's limits: the machine, each listed worker's GPU indices below its count,
/// and an address of 1 to 253 bytes of letters, digits, '.', '_', '-' and ':'.
inline bool documented_register(const wire::register_& r) {
  if (!documented_machine(r.server, r.gpu_type, r.gpus)) return false;
  for (const auto& w : r.workers)
    for (auto g : w.gpus)
      if (g >= r.gpus) return false;
  if (!r.address) return true;
  if (r.address->empty() || r.address->size() > 253) return false;
  for (char c : *r.address)
    if (letters_digits.find(c) == std::string_view::npos && c != '.' && c != '_' && c != '-' && c != ':') return false;
  return true;
}

} // namespace aryl::fuzz
