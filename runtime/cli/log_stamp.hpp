#pragma once
/// Daemon log lines an operator can grep and line up across machines: each line of `serve`'s
/// and `agent`'s log starts with its UTC time, ISO 8601 to the millisecond
/// ("2026-12-02T08:30:01.123Z [serve] ...").
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>

namespace aryl::live {

/// `t` as "YYYY-MM-DDTHH:MM:SS.mmmZ".
inline std::string iso_utc(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[40];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

/// A stream buffer that writes to `target`, putting the wall-clock time before each line.
/// Each thread's characters gather in a line of its own and go out whole, under a lock: lines
/// written by several threads at once (serve's driver and its network thread) never mix,
/// however many statements each writes a line in.
class stamped_log : public std::streambuf {
 public:
  explicit stamped_log(std::streambuf* target) : target_(target) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(m_);
    auto& line = lines_[std::this_thread::get_id()];
    for (std::streamsize i = 0; i < n; ++i) {
      line.push_back(s[i]);
      if (s[i] == '\n') {
        auto stamped = iso_utc(std::chrono::system_clock::now()) + " " + line;
        line.clear();
        target_->sputn(stamped.data(), static_cast<std::streamsize>(stamped.size()));
      }
    }
    return n;
  }
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    xsputn(&ch, 1);
    return c;
  }
  int sync() override {
    std::lock_guard lock(m_);
    return target_->pubsync();
  }

 private:
  std::streambuf* target_;
  std::map<std::thread::id, std::string> lines_;  ///< each thread's unfinished line
  std::mutex m_;
};

} // namespace aryl::live
