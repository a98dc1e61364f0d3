// libFuzzer target: arbitrary bytes as a connection's byte stream into wire::frame_decoder.
// Checks, besides "no crash, no leak, no UB" under the sanitizers:
//  - the results do not depend on how the stream is chunked (all at once vs. chunk sizes
//    drawn from a PRNG seeded by the input, including 1-byte chunks);
//  - every decoded message re-encodes to a frame that decodes to the same message;
//  - an error is final.
// The input is the stream itself, so the seeds in corpus/wire_frame/ are plain frames.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "runtime/wire/codec.hpp"

namespace {

using namespace aryl::wire;

/// Everything next() returns until it wants more bytes or fails, appended to `out`.
/// Returns false once the decoder failed.
bool drain(frame_decoder& d, std::vector<decode_step>& out) {
  while (true) {
    decode_step s = d.next();
    if (std::holds_alternative<need_more>(s)) return true;
    const bool failed = std::holds_alternative<decode_error>(s);
    out.push_back(std::move(s));
    if (failed) return false;
  }
}

void check(bool ok) {
  if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // FNV-1a of the input: seeds the chunking and picks the frame limit.
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  const size_t limit = (h & 3) == 0 ? 64 + (h >> 8) % 512 : default_max_frame_bytes;

  frame_decoder whole(limit);
  whole.feed(data, size);
  std::vector<decode_step> expected;
  drain(whole, expected);

  frame_decoder chunked(limit);
  std::vector<decode_step> got;
  uint64_t rng = h | 1;
  for (size_t pos = 0; pos < size;) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const size_t n = (rng & 7) == 0 ? 1 + rng % 4096 : 1 + (rng >> 3) % 9;
    const size_t take = n < size - pos ? n : size - pos;
    chunked.feed(data + pos, take);
    pos += take;
    if (!drain(chunked, got)) break;
  }
  check(got == expected);
  check(whole.failed() == chunked.failed());

  for (const auto& s : expected) {
    const message* m = std::get_if<message>(&s);
    if (!m) {
      // An error is final: asking again gives it again.
      check(whole.next() == s);
      continue;
    }
    const std::vector<uint8_t> frame = encode_frame(*m);
    frame_decoder again;
    again.feed(frame.data(), frame.size());
    const decode_step r = again.next();
    check(std::holds_alternative<message>(r) && std::get<message>(r) == *m);
    check(again.buffered() == 0);
  }
  return 0;
}
