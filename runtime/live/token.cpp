#include "runtime/live/token.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "solvers/input_error.hpp"

namespace aryl::live {

std::string read_token_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw input_error(path + ": cannot read token file: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw input_error(path + ": token file is not a regular file");
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw input_error(path + ": token file is open to its group or others (mode " + mode +
                      "); make it readable by its owner only: chmod 600 " + path);
  }
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
  if (text.size() < min_token_bytes)
    throw input_error(path + ": token is " + std::to_string(text.size()) + " bytes; at least " +
                      std::to_string(min_token_bytes) + " are required (e.g. head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \\n')");
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
