#pragma once
// Hand-built msgpack values for the codec tests, so that a test can write any body a peer
// might send, well-formed or not: mp::map({{"v", mp::uint(1)}, {"type", mp::str("bye")}}).
#include <msgpack.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "runtime/wire/codec.hpp"

namespace aryl::wire::test {

/// The encoding of one msgpack value.
struct mp {
  std::vector<uint8_t> bytes;

  template <class F>
  static mp packed(F&& pack) {
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> p(b);
    pack(p);
    return {{reinterpret_cast<const uint8_t*>(b.data()),
             reinterpret_cast<const uint8_t*>(b.data()) + b.size()}};
  }
  static mp uint(uint64_t v) {
    return packed([&](auto& p) { p.pack_uint64(v); });
  }
  static mp integer(int64_t v) {
    return packed([&](auto& p) { p.pack_int64(v); });
  }
  /// Always a float 64 (msgpack-c's pack_double writes whole values as integers).
  static mp f64(double v) {
    const auto bits = std::bit_cast<uint64_t>(v);
    mp out{{0xcb}};
    for (int i = 0; i < 8; ++i) out.bytes.push_back(static_cast<uint8_t>(bits >> (56 - 8 * i)));
    return out;
  }
  static mp nil() {
    return packed([&](auto& p) { p.pack_nil(); });
  }
  static mp boolean(bool v) {
    return packed([&](auto& p) { v ? p.pack_true() : p.pack_false(); });
  }
  static mp str(const std::string& s) {
    return packed([&](auto& p) {
      p.pack_str(static_cast<uint32_t>(s.size()));
      p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
    });
  }
  static mp array(const std::vector<mp>& items) {
    mp out = packed([&](auto& p) { p.pack_array(static_cast<uint32_t>(items.size())); });
    for (const auto& x : items) out.append(x);
    return out;
  }
  /// A map with any keys (strings, integers, ...), in the order given.
  static mp map_of(const std::vector<std::pair<mp, mp>>& entries) {
    mp out = packed([&](auto& p) { p.pack_map(static_cast<uint32_t>(entries.size())); });
    for (const auto& [k, v] : entries) {
      out.append(k);
      out.append(v);
    }
    return out;
  }
  /// A map with string keys, in the order given.
  static mp map(const std::vector<std::pair<std::string, mp>>& entries) {
    std::vector<std::pair<mp, mp>> e;
    for (const auto& [k, v] : entries) e.emplace_back(str(k), v);
    return map_of(e);
  }
  void append(const mp& x) { bytes.insert(bytes.end(), x.bytes.begin(), x.bytes.end()); }
};

/// A body map: "v" 1, "type" `type`, then `fields`.
inline mp body(const std::string& type, std::vector<std::pair<std::string, mp>> fields) {
  fields.insert(fields.begin(), {{"v", mp::uint(1)}, {"type", mp::str(type)}});
  return mp::map(fields);
}

/// `b` behind its 4-byte big-endian length.
inline std::vector<uint8_t> framed(const std::vector<uint8_t>& b) {
  const auto n = static_cast<uint32_t>(b.size());
  std::vector<uint8_t> f(4 + b.size());
  f[0] = static_cast<uint8_t>(n >> 24);
  f[1] = static_cast<uint8_t>(n >> 16);
  f[2] = static_cast<uint8_t>(n >> 8);
  f[3] = static_cast<uint8_t>(n);
  std::copy(b.begin(), b.end(), f.begin() + 4);
  return f;
}

} // namespace aryl::wire::test
