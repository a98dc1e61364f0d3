#pragma once
/// Encoding and decoding of live mode's frames (docs/protocol.md). A frame is a 4-byte
/// big-endian body length N, then N bytes holding one msgpack map. Pure: no I/O, no clock;
/// decoding never throws, and never allocates more than a bounded multiple of the bytes
/// fed (an announced length is checked against the limit before anything is buffered for
/// it).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/wire/messages.hpp"

namespace aryl::wire {

/// Why a body or frame was refused: one line naming the problem (and the field, if any),
/// e.g. "field 'workers[1].gpus' must be a list of unsigned integers".
struct decode_error {
  std::string reason;
  bool operator==(const decode_error&) const = default;
};

/// frame_decoder::next() has no complete frame yet: feed more bytes.
struct need_more {
  bool operator==(const need_more&) const = default;
};

/// The outcome of decoding one body.
using body_result = std::variant<message, decode_error>;
/// The outcome of frame_decoder::next().
using decode_step = std::variant<need_more, message, decode_error>;

/// A pool's name on the wire: "training" or "inference".
std::string_view pool_name(pool_kind p);

/// True when `s` is strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF),
/// as Python's decoder requires: what every msgpack str on the wire must be.
bool valid_utf8(std::string_view s);

/// The msgpack map of `m`, with "v" and "type" first, then its fields; optional fields
/// that are absent (and an empty launch.env) are left out.
std::vector<uint8_t> encode_body(const message& m);

/// encode_body(m) behind its 4-byte big-endian length. Throws std::length_error only if
/// the body exceeds 4 GiB - 1 (the limits of docs/protocol.md are the caller's to keep).
std::vector<uint8_t> encode_frame(const message& m);

/// Decodes one body (without the length prefix): a msgpack map of `size` bytes, nothing
/// after it. Checks the version, the type, each known field's presence and type, and the
/// limits of messages.hpp; ignores unknown fields. Never throws.
body_result decode_body(const uint8_t* data, size_t size);

/// Splits a byte stream into frames and decodes them. Feed bytes as they arrive, in any
/// chunking; call next() until it returns need_more. The first error is final: every later
/// next() returns it again and feed() ignores its bytes; the connection is to be closed.
class frame_decoder {
 public:
  /// `max_frame_bytes`: largest body accepted; a larger announced length is an error as
  /// soon as the 4 length bytes are in, before any of the body is buffered.
  explicit frame_decoder(size_t max_frame_bytes = default_max_frame_bytes);

  /// Appends bytes to the stream. Memory: what was fed and not yet consumed by next().
  void feed(const uint8_t* data, size_t size);

  /// The next message, need_more if the next frame is incomplete, or the error. Never
  /// throws.
  decode_step next();

  /// True once an error was found.
  bool failed() const { return failed_; }

  /// Bytes fed and not yet consumed.
  size_t buffered() const { return buf_.size() - pos_; }

  /// The body length the next frame announces, once its 4 length bytes are in: a caller
  /// bounding what a peer may buffer can judge a frame before its body comes.
  std::optional<size_t> next_length() const;

 private:
  /// Checks the announced length of the frame at pos_, once its 4 bytes are in.
  void check_length();
  decode_step fail(std::string reason);

  size_t max_frame_bytes_;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;  ///< start of the first unconsumed byte in buf_
  bool failed_ = false;
  decode_error error_;
};

} // namespace aryl::wire
