#include "runtime/inputs/small_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "solvers/input_error.hpp"

namespace aryl {
namespace {

/// What a file that is not a regular one is, for an error.
const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// Closes the descriptor on every way out.
struct fd_guard {
  int fd;
  ~fd_guard() { ::close(fd); }
};

} // namespace

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

void refuse_open_to_others(const std::string& path, const std::string& what, const struct stat& st) {
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    throw input_error(path + ": " + what + " is open to its group or others (mode " + mode_text(st.st_mode) +
                      "); make it readable by its owner only: chmod 600 " + path);
}

std::string read_small_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const file_check& check) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, before fstat
  // could tell what it is.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw input_error(path + ": cannot read " + what + ": " + std::strerror(errno));
  fd_guard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw input_error(path + ": cannot read " + what + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw input_error(path + ": " + what + " is not a regular file (" + file_type(st.st_mode) + ")");
  if (check) check(st);
  const auto too_large = [&] {
    return input_error(path + ": " + what + " is larger than " + std::to_string(max_bytes) + " bytes");
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) throw too_large();
  std::string text;
  char buf[8192];
  for (;;) {
    // The file may grow after fstat: the limit holds on what is read.
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw input_error(path + ": cannot read " + what + ": " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) throw too_large();
  }
  return text;
}

} // namespace aryl
