#include "runtime/live/token.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "runtime/input_error.hpp"

namespace aryl::live {

std::string read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path + ": cannot read token file: " + std::strerror(errno));
  std::string text;
  char buf[1024];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_token_file_bytes)
      throw input_error(path + ": token file is larger than " +
                        std::to_string(max_token_file_bytes) + " bytes");
  }
  if (in.bad()) throw input_error(path + ": cannot read token file");
  while (!text.empty() && std::strchr(" \t\r\n", text.back()) != nullptr) text.pop_back();
  if (text.empty()) throw input_error(path + ": token file is empty");
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
