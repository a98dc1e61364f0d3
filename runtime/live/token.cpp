#include "runtime/live/token.hpp"

#include <cstring>

#include "solvers/input_error.hpp"
#include "runtime/inputs/small_file.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {

std::string read_token_file(const std::string& path) {
  auto text = read_small_file(path, "token file", max_token_file_bytes,
                              [&](const struct stat& st) { refuse_open_to_others(path, "token file", st); });
  while (!text.empty() && std::strchr(" \t\r\n", text.back()) != nullptr) text.pop_back();
  if (text.empty()) throw input_error(path + ": token file is empty");
  if (text.size() < min_token_bytes)
    throw input_error(path + ": token is " + std::to_string(text.size()) + " bytes; at least " +
                      std::to_string(min_token_bytes) + " are required (e.g. head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \\n')");
  // A hello's token is a msgpack str, which must be UTF-8: any other token would pass here
  // and then have every hello refused.
  if (!wire::valid_utf8(text))
    throw input_error(path + ": token is not valid UTF-8 text (e.g. head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \\n' "
                      "makes one of hex digits)");
  return text;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  // Every byte up to the longer length is compared; a missing byte reads as 0 and the
  // length difference is folded in, so the loop's work and branches never depend on data.
  volatile unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

} // namespace aryl::live
