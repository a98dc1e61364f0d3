#include "runtime/node/worker_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace aryl::live {

namespace {

/// Length of the valid UTF-8 character at `s[i]`, 0 if none starts there (or it is cut).
size_t char_length(std::string_view s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1fu) : n == 3 ? (b & 0x0fu) : (b & 0x07u);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3fu);
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

} // namespace

int open_worker_log(const std::string& work_dir, uint64_t job, uint32_t rank, const std::string& user,
                    std::string& error) {
  namespace fs = std::filesystem;
  const fs::path log = fs::path(work_dir) / "logs" / (std::to_string(job) + "-" + std::to_string(rank) + ".log");
  const fs::path owner = log.string() + ".user";
  std::string last;
  std::error_code ec;
  const bool had_log = fs::exists(log, ec);
  if (std::ifstream in(owner); in) std::getline(in, last);
  if (had_log && last != user) {
    auto aside = log.string() + "." + std::to_string(::time(nullptr));
    fs::rename(log, aside, ec);
    if (ec) {
      error = "cannot set aside " + log.string() + " (another user's): " + ec.message();
      return -1;
    }
  }
  if (!had_log || last != user) {
    std::ofstream out(owner, std::ios::trunc);
    out << user << '\n';
    if (!out.flush()) {
      error = "cannot write " + owner.string();
      return -1;
    }
  }
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, user.empty() ? 0644 : 0600);
  // A log made before, with another mode, is another user's output no longer: made private.
  if (fd >= 0 && !user.empty() && ::fchmod(fd, 0600) != 0) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) error = "cannot open " + log.string() + ": " + std::strerror(errno);
  return fd;
}

std::string utf8_or_marks(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t n = char_length(bytes, i);
    if (n == 0) {
      out += '?';
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

wire::log_chunk read_worker_log(const std::string& work_dir, const std::string& server, const wire::log_fetch& f) {
  wire::log_chunk out;
  out.request = f.request;
  auto path = std::filesystem::path(work_dir) / "logs" / (std::to_string(f.job_id) + "-" + std::to_string(f.rank) + ".log");
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) {
    out.error = "job " + std::to_string(f.job_id) + " rank " + std::to_string(f.rank) + ": no log on " + server;
    return out;
  }
  out.size = size;
  if (f.offset >= size) return out;
  // Under the string limit, with room for the rest of the frame.
  uint64_t want = std::min<uint64_t>({f.max_bytes, size - f.offset, wire::max_string_bytes - 1024});
  std::string bytes(want, '\0');
  in.seekg(static_cast<std::streamoff>(f.offset));
  in.read(bytes.data(), static_cast<std::streamsize>(want));
  bytes.resize(static_cast<size_t>(in.gcount()));
  // A character cut at the end is read whole by the next fetch.
  for (size_t back = 1; back <= 3 && back <= bytes.size(); ++back) {
    auto b = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((b & 0xc0) == 0x80) continue;  // a continuation byte: look further back
    size_t n = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 1;
    if (n > back && bytes.size() + f.offset < size) bytes.resize(bytes.size() - back);
    break;
  }
  out.text = utf8_or_marks(bytes);
  return out;
}

wire::log_chunk answer_log_fetch(const std::string& work_dir, const std::string& server, const wire::log_fetch& f,
                                 size_t unsent_bytes) {
  if (unsent_bytes <= max_unsent_bytes_for_logs) return read_worker_log(work_dir, server, f);
  wire::log_chunk busy;
  busy.request = f.request;
  busy.error = "job " + std::to_string(f.job_id) + " rank " + std::to_string(f.rank) + ": the agent of " + server +
               " holds more than " + std::to_string(max_unsent_bytes_for_logs >> 20) +
               " MiB unsent to the scheduler; ask again";
  return busy;
}

} // namespace aryl::live
