#include "runtime/wire/codec.hpp"

// The API version the msgpackc-cxx CMake target selects, also when compiled without it.
#ifndef MSGPACK_DEFAULT_API_VERSION
#define MSGPACK_DEFAULT_API_VERSION 3
#endif
#include <msgpack.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "runtime/wire/fields.hpp"

namespace aryl::wire {

std::string_view pool_name(pool_kind p) { return detail::pool_kind_names[static_cast<size_t>(p)]; }

std::string_view type_of(const message& m) {
  return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::type; }, m);
}

namespace {

using detail::fields;

template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;

template <class T>
inline constexpr bool is_vector_v = false;
template <class T>
inline constexpr bool is_vector_v<std::vector<T>> = true;

using string_map = std::map<std::string, std::string>;

// ---------------------------------------------------------------------------------------
// Encoding

/// `d` as a msgpack float 64, always: msgpack-c's pack_double writes whole values as
/// integers, and peers in typed languages expect a float where the protocol says number.
void put_float64(msgpack::sbuffer& out, double d) {
  const auto bits = std::bit_cast<uint64_t>(d);
  char b[9] = {static_cast<char>(0xcb)};
  for (int i = 0; i < 8; ++i) b[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  out.write(b, sizeof b);
}

/// Writes one msgpack map: fields() calls it once per field, then write_to() emits the map
/// header (whose entry count is only known at the end) followed by the entries.
class map_writer {
 public:
  template <class T>
  void operator()(std::string_view key, const T& value) {
    if constexpr (is_optional_v<T>) {
      if (value) (*this)(key, *value);
    } else if constexpr (std::is_same_v<T, string_map>) {
      if (!value.empty()) write_field(key, value);
    } else {
      write_field(key, value);
    }
  }

  void write_to(msgpack::sbuffer& out) const {
    msgpack::packer<msgpack::sbuffer>(out).pack_map(entries_);
    out.write(buf_.data(), buf_.size());
  }

 private:
  template <class T>
  void write_field(std::string_view key, const T& value) {
    ++entries_;
    put(buf_, key);
    put(buf_, value);
  }

  template <class T>
  static void put(msgpack::sbuffer& out, const T& v) {
    msgpack::packer<msgpack::sbuffer> p(out);
    if constexpr (std::is_same_v<T, bool>) {
      if (v) p.pack_true();
      else p.pack_false();
    } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, uint32_t>) {
      p.pack_uint64(v);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      p.pack_int32(v);
    } else if constexpr (std::is_same_v<T, double>) {
      put_float64(out, v);
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
      p.pack_str(static_cast<uint32_t>(v.size()));
      p.pack_str_body(v.data(), static_cast<uint32_t>(v.size()));
    } else if constexpr (std::is_enum_v<T>) {
      put(out, detail::names_of(v)[static_cast<size_t>(v)]);
    } else if constexpr (is_vector_v<T>) {
      p.pack_array(static_cast<uint32_t>(v.size()));
      for (const auto& x : v) put(out, x);
    } else if constexpr (std::is_same_v<T, string_map>) {
      p.pack_map(static_cast<uint32_t>(v.size()));
      for (const auto& [k, x] : v) {
        put(out, k);
        put(out, x);
      }
    } else {
      map_writer nested;
      fields(nested, v);
      nested.write_to(out);
    }
  }

  msgpack::sbuffer buf_;
  uint32_t entries_ = 0;
};

// ---------------------------------------------------------------------------------------
// Decoding

/// Thrown inside decode_body and caught there: never leaves the codec.
struct failure {
  std::string reason;
};

[[noreturn]] void fail(std::string reason) { throw failure{std::move(reason)}; }

/// `s` made safe for a one-line log: printable ASCII kept, other bytes as '?', at most 64
/// characters.
std::string printable(std::string_view s) {
  constexpr size_t max_chars = 64;
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > max_chars) out += "...";
  return out;
}


std::string_view str_of(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

/// Reads the fields of one msgpack map; `path` names the map in error messages ("" for the
/// body, "workers[2]" for a nested one).
class map_reader {
 public:
  map_reader(const msgpack::object& map, std::string path) : map_(map), path_(std::move(path)) {}

  template <class T>
  void operator()(std::string_view key, T& out) {
    const std::string name = field_name(key);
    const msgpack::object* o = find(key, name);
    if constexpr (is_optional_v<T>) {
      if (!o || o->type == msgpack::type::NIL) {
        out.reset();
        return;
      }
      out.emplace();
      read(*o, name, *out);
    } else if constexpr (std::is_same_v<T, string_map>) {
      out.clear();
      if (o && o->type != msgpack::type::NIL) read(*o, name, out);
    } else {
      if (!o) fail("missing field '" + name + "'");
      read(*o, name, out);
    }
  }

  /// The value of `key`, or null; a key present twice is an error.
  const msgpack::object* find(std::string_view key, const std::string& name) const {
    const msgpack::object* found = nullptr;
    for (uint32_t i = 0; i < map_.via.map.size; ++i) {
      const msgpack::object_kv& kv = map_.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR || str_of(kv.key) != key) continue;
      if (found) fail("duplicate field '" + name + "'");
      found = &kv.val;
    }
    return found;
  }

  std::string field_name(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  template <class T>
  static void read(const msgpack::object& o, const std::string& name, T& out) {
    using msgpack::type::object_type;
    if constexpr (std::is_same_v<T, bool>) {
      if (o.type != object_type::BOOLEAN) fail("field '" + name + "' must be true or false");
      out = o.via.boolean;
    } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, uint32_t>) {
      if (o.type != object_type::POSITIVE_INTEGER)
        fail("field '" + name + "' must be an unsigned integer");
      if (o.via.u64 > std::numeric_limits<T>::max())
        fail("field '" + name + "' exceeds " + std::to_string(std::numeric_limits<T>::max()));
      out = static_cast<T>(o.via.u64);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      const bool pos = o.type == object_type::POSITIVE_INTEGER;
      if (!pos && o.type != object_type::NEGATIVE_INTEGER)
        fail("field '" + name + "' must be an integer");
      if ((pos && o.via.u64 > uint64_t{INT32_MAX}) || (!pos && o.via.i64 < INT32_MIN))
        fail("field '" + name + "' is outside the 32-bit signed range");
      out = pos ? static_cast<int32_t>(o.via.u64) : static_cast<int32_t>(o.via.i64);
    } else if constexpr (std::is_same_v<T, double>) {
      if (o.type == object_type::FLOAT32 || o.type == object_type::FLOAT64)
        out = o.via.f64;
      else if (o.type == object_type::POSITIVE_INTEGER)
        out = static_cast<double>(o.via.u64);
      else if (o.type == object_type::NEGATIVE_INTEGER)
        out = static_cast<double>(o.via.i64);
      else
        fail("field '" + name + "' must be a number");
      if (!std::isfinite(out) || out < 0)
        fail("field '" + name + "' must be finite and non-negative");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (o.type != object_type::STR) fail("field '" + name + "' must be a string");
      if (!valid_utf8(str_of(o))) fail("field '" + name + "' is not valid UTF-8");
      out.assign(o.via.str.ptr, o.via.str.size);
    } else if constexpr (std::is_enum_v<T>) {
      const auto& names = detail::names_of(T{});
      std::string allowed;
      if (o.type == object_type::STR)
        for (size_t i = 0; i < std::size(names); ++i)
          if (str_of(o) == names[i]) {
            out = static_cast<T>(i);
            return;
          }
      for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + std::string(n);
      fail("field '" + name + "' must be one of: " + allowed);
    } else if constexpr (is_vector_v<T>) {
      using elem = typename T::value_type;
      if (o.type != object_type::ARRAY) fail("field '" + name + "' must be a list");
      const uint32_t n = o.via.array.size;
      if (std::is_same_v<elem, uint32_t> && n > max_gpu_list)
        fail("field '" + name + "' has " + std::to_string(n) + " entries (limit " +
             std::to_string(max_gpu_list) + ")");
      out.clear();
      out.reserve(n);  // bounded: the unpacker refused arrays above max_list
      for (uint32_t i = 0; i < n; ++i)
        read(o.via.array.ptr[i], name + "[" + std::to_string(i) + "]", out.emplace_back());
    } else if constexpr (std::is_same_v<T, string_map>) {
      if (o.type != object_type::MAP) fail("field '" + name + "' must be a map");
      for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object_kv& kv = o.via.map.ptr[i];
        std::string key;
        read(kv.key, name + " key", key);
        std::string value;
        read(kv.val, name + "." + printable(key), value);
        if (!out.emplace(std::move(key), std::move(value)).second)
          fail("field '" + name + "' has duplicate key '" + printable(str_of(kv.key)) + "'");
      }
    } else {
      if (o.type != object_type::MAP) fail("field '" + name + "' must be a map");
      map_reader nested(o, name);
      fields(nested, out);
    }
  }

 private:
  const msgpack::object& map_;
  std::string path_;
};

/// Decodes a body of type alternative I (or a later one) of `message` named `type`.
template <size_t I = 0>
message decode_as(std::string_view type, map_reader& r) {
  if constexpr (I == std::variant_size_v<message>) {
    fail("unknown message type '" + printable(type) + "'");
  } else {
    using T = std::variant_alternative_t<I, message>;
    if (type != T::type) return decode_as<I + 1>(type, r);
    T m;
    fields(r, m);
    return message(std::in_place_index<I>, std::move(m));
  }
}

/// Lets the unpacked objects point into the caller's buffer instead of copying strings.
bool reference_input(msgpack::type::object_type, size_t, void*) { return true; }

message decode_or_throw(const uint8_t* data, size_t size) {
  if (size == 0) fail("body is empty");
  const msgpack::unpack_limit limit(max_list, max_map, max_string_bytes, max_string_bytes,
                                    max_string_bytes, max_depth);
  size_t off = 0;
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(reinterpret_cast<const char*>(data), size, off, reference_input,
                             nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    fail("msgpack body ends before its last value");
  } catch (const msgpack::array_size_overflow&) {
    fail("a list exceeds the " + std::to_string(max_list) + "-entry limit");
  } catch (const msgpack::map_size_overflow&) {
    fail("a map exceeds the " + std::to_string(max_map) + "-entry limit");
  } catch (const msgpack::str_size_overflow&) {
    fail("a string exceeds the " + std::to_string(max_string_bytes) + "-byte limit");
  } catch (const msgpack::bin_size_overflow&) {
    fail("a binary value exceeds the " + std::to_string(max_string_bytes) + "-byte limit");
  } catch (const msgpack::ext_size_overflow&) {
    fail("an ext value exceeds the " + std::to_string(max_string_bytes) + "-byte limit");
  } catch (const msgpack::depth_size_overflow&) {
    fail("nesting deeper than " + std::to_string(max_depth) + " levels");
  } catch (const msgpack::unpack_error&) {
    fail("malformed msgpack body");
  }
  const msgpack::object& body = handle.get();
  if (body.type != msgpack::type::MAP) fail("body is not a msgpack map");
  if (off != size) fail("trailing bytes in frame");

  map_reader r(body, "");
  uint64_t version = 0;
  r("v", version);
  if (version != protocol_version)
    fail("protocol version " + std::to_string(version) + " not supported (this is " +
         std::to_string(protocol_version) + ")");
  std::string type;
  r("type", type);
  return decode_as(type, r);
}

} // namespace

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

std::vector<uint8_t> encode_body(const message& m) {
  msgpack::sbuffer out;
  std::visit(
      [&](const auto& x) {
        map_writer w;
        w("v", protocol_version);
        w("type", std::decay_t<decltype(x)>::type);
        fields(w, x);
        w.write_to(out);
      },
      m);
  return {reinterpret_cast<const uint8_t*>(out.data()),
          reinterpret_cast<const uint8_t*>(out.data()) + out.size()};
}

std::vector<uint8_t> encode_frame(const message& m) {
  std::vector<uint8_t> body = encode_body(m);
  if (body.size() > std::numeric_limits<uint32_t>::max())
    throw std::length_error("aryl::wire: message body exceeds 4 GiB - 1");
  const auto n = static_cast<uint32_t>(body.size());
  std::vector<uint8_t> frame(4 + body.size());
  frame[0] = static_cast<uint8_t>(n >> 24);
  frame[1] = static_cast<uint8_t>(n >> 16);
  frame[2] = static_cast<uint8_t>(n >> 8);
  frame[3] = static_cast<uint8_t>(n);
  std::copy(body.begin(), body.end(), frame.begin() + 4);
  return frame;
}

body_result decode_body(const uint8_t* data, size_t size) {
  try {
    return decode_or_throw(data, size);
  } catch (const failure& f) {
    return decode_error{f.reason};
  } catch (const std::bad_alloc&) {
    return decode_error{"out of memory while decoding a body"};
  } catch (...) {
    return decode_error{"internal error while decoding a body"};
  }
}

frame_decoder::frame_decoder(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

void frame_decoder::feed(const uint8_t* data, size_t size) {
  if (failed_ || size == 0) return;
  try {
    // Drop consumed bytes: all of them when nothing is left, else once they are at least
    // half of the buffer (amortized linear in the bytes fed).
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    } else if (pos_ >= 4096 && pos_ * 2 >= buf_.size()) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
      pos_ = 0;
    }
    buf_.insert(buf_.end(), data, data + size);
    check_length();
  } catch (...) {
    fail("out of memory while buffering input");
  }
}

void frame_decoder::check_length() {
  if (failed_ || buffered() < 4) return;
  const uint8_t* p = buf_.data() + pos_;
  const uint32_t n = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) |
                     uint32_t{p[3]};
  if (n > max_frame_bytes_)
    fail("frame of " + std::to_string(n) + " bytes exceeds the " +
         std::to_string(max_frame_bytes_) + "-byte limit");
}

std::optional<size_t> frame_decoder::next_length() const {
  if (failed_ || buffered() < 4) return std::nullopt;
  const uint8_t* p = buf_.data() + pos_;
  return (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
}

decode_step frame_decoder::fail(std::string reason) {
  if (!failed_) {
    failed_ = true;
    error_.reason = std::move(reason);
    buf_.clear();
    buf_.shrink_to_fit();
    pos_ = 0;
  }
  return error_;
}

decode_step frame_decoder::next() {
  try {
    check_length();
    if (failed_) return error_;
    if (buffered() < 4) return need_more{};
    const uint8_t* p = buf_.data() + pos_;
    const size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
    if (buffered() - 4 < n) return need_more{};
    pos_ += 4 + n;
    body_result r = decode_body(p + 4, n);
    if (auto* e = std::get_if<decode_error>(&r)) return fail(std::move(e->reason));
    return std::get<message>(std::move(r));
  } catch (...) {
    return fail("internal error while decoding a frame");
  }
}

} // namespace aryl::wire
