#include "runtime/node/worker.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "runtime/node/progress_line.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {

namespace {

volatile sig_atomic_t g_terminate = 0;

extern "C" void on_terminate(int) { g_terminate = 1; }

/// Installs on_terminate for SIGTERM and SIGINT (no SA_RESTART: a sleep ends early) and
/// restores the previous handlers on destruction.
class terminate_handlers {
 public:
  terminate_handlers() {
    g_terminate = 0;
    struct sigaction sa {};
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, &old_term_);
    ::sigaction(SIGINT, &sa, &old_int_);
  }
  ~terminate_handlers() {
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
  }
  terminate_handlers(const terminate_handlers&) = delete;
  terminate_handlers& operator=(const terminate_handlers&) = delete;

 private:
  struct sigaction old_term_ {};
  struct sigaction old_int_ {};
};

std::string format_double(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size() && std::isfinite(out);
}

template <class T>
bool parse_unsigned(std::string_view s, T& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

std::string required(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') throw input_error(std::string(name) + ": missing");
  return v;
}

[[noreturn]] void invalid(const char* name, const std::string& value, const char* what) {
  throw input_error(std::string(name) + ": '" + value + "' is not " + what);
}

template <class T>
T env_unsigned(const char* name) {
  const std::string v = required(name);
  T x{};
  if (!parse_unsigned(v, x)) invalid(name, v, "an unsigned integer");
  return x;
}

double env_number(const char* name, bool positive) {
  const std::string v = required(name);
  double x = 0;
  if (!parse_double(v, x) || x < 0 || (positive && x == 0))
    invalid(name, v, positive ? "a positive number" : "a number >= 0");
  return x;
}

std::string checkpoint_path(const std::string& dir) {
  return (std::filesystem::path(dir) / emulated_checkpoint_name).string();
}

void print_progress(const worker_checkpoint& c) {
  std::cout << format_progress_line(c.work_done, c.step) << std::endl;
}

} // namespace

worker_options worker_options_from_env() {
  worker_options o;
  o.job_id = env_unsigned<uint64_t>("ARYL_JOB_ID");
  o.rank = env_unsigned<uint32_t>("ARYL_RANK");
  o.world_size = env_unsigned<uint32_t>("ARYL_WORLD_SIZE");
  if (o.world_size == 0) invalid("ARYL_WORLD_SIZE", "0", "at least 1");
  if (o.rank >= o.world_size)
    invalid("ARYL_RANK", std::to_string(o.rank),
            ("below ARYL_WORLD_SIZE " + std::to_string(o.world_size)).c_str());
  o.checkpoint_dir = required("ARYL_CHECKPOINT_DIR");
  o.work_s = env_number("ARYL_WORK_S", false);
  o.rate = env_number("ARYL_RATE", true);
  if (const char* v = std::getenv("ARYL_CHECKPOINT_INTERVAL_S"); v != nullptr && *v != '\0')
    o.checkpoint_interval_s = env_number("ARYL_CHECKPOINT_INTERVAL_S", true);
  if (const char* v = std::getenv("ARYL_STARTUP_S"); v != nullptr && *v != '\0')
    o.startup_s = env_number("ARYL_STARTUP_S", false);
  return o;
}

worker_checkpoint read_worker_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path);
  if (!in) throw input_error(path + ": cannot read checkpoint");
  worker_checkpoint c;
  bool have_work = false, have_step = false;
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    const std::string_view key = std::string_view(line).substr(0, eq);
    const std::string_view value =
        eq == std::string::npos ? std::string_view{} : std::string_view(line).substr(eq + 1);
    if (key == "work_done") have_work = parse_double(value, c.work_done) && c.work_done >= 0;
    else if (key == "step") have_step = parse_unsigned(value, c.step);
  }
  if (!have_work || !have_step)
    throw input_error(path + ": checkpoint needs lines work_done=<number >= 0> and step=<integer>");
  return c;
}

void write_worker_checkpoint(const std::string& dir, const worker_checkpoint& c) {
  const std::string path = checkpoint_path(dir);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "work_done=" << format_double(c.work_done) << "\nstep=" << c.step << '\n';
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": cannot write checkpoint");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot rename checkpoint into place");
  }
}

int run_worker(std::ostream& log) {
  using clock = std::chrono::steady_clock;
  worker_options o;
  worker_checkpoint c;
  try {
    o = worker_options_from_env();
    c = read_worker_checkpoint(o.checkpoint_dir);
  } catch (const input_error& e) {
    log << "aryl worker: " << e.what() << std::endl;
    return worker_usage_exit;
  }
  terminate_handlers handlers;
  const bool writer = o.rank == 0;
  try {
    const double base = c.work_done;
    const auto start = clock::now() + std::chrono::duration_cast<clock::duration>(
                                          std::chrono::duration<double>(o.startup_s));
    const auto due_at = start + std::chrono::duration_cast<clock::duration>(
                                    std::chrono::duration<double>((o.work_s - base) / o.rate));
    auto last_print = start;
    auto last_checkpoint = start;
    const auto checkpoint_every = std::chrono::duration<double>(o.checkpoint_interval_s);
    // A step is printed once per run: a reader tells a new run by a step that does not grow
    // (a resumed run starts at its checkpoint's step), so a final line repeating the last
    // tick's would read as a second launch. And a checkpoint's step is printed before the
    // checkpoint is written: a run resumed from a step never printed would read as the same
    // launch going on.
    auto printed_step = c.step;
    if (writer) print_progress(c);
    const auto print_unprinted = [&] {
      if (c.step == printed_step) return;
      print_progress(c);
      printed_step = c.step;
    };
    const auto final_report = [&] {
      print_unprinted();
      write_worker_checkpoint(o.checkpoint_dir, c);
    };
    for (;;) {
      if (c.work_done >= o.work_s) {
        if (writer) final_report();
        return 0;
      }
      if (g_terminate != 0) {
        if (writer) final_report();
        return worker_preempted_exit;
      }
      // Ticks of 50 ms, the last one ending when the work is due, so the exit is as punctual
      // as the simulated completion. One nanosleep, not sleep_for: a signal ends it early.
      // The due time is fixed at the start: counted from the work done so far as well as from
      // the start, it came at half the work, and every tick after it slept 0 s (a spin). At
      // least 1 ms, should rounding leave the work a hair short at the due time.
      double due = std::chrono::duration<double>(due_at - clock::now()).count();
      double wait = std::clamp(due, 0.001, 0.05);
      timespec tick{0, static_cast<long>(wait * 1e9)};
      ::nanosleep(&tick, nullptr);
      const auto now = clock::now();
      const double elapsed = std::max(0.0, std::chrono::duration<double>(now - start).count());
      c.work_done = std::min(o.work_s, std::max(c.work_done, base + o.rate * elapsed));
      ++c.step;
      if (!writer) continue;
      if (now - last_print >= std::chrono::milliseconds(100)) {
        print_progress(c);
        printed_step = c.step;
        last_print = now;
      }
      if (now - last_checkpoint >= checkpoint_every) {
        print_unprinted();
        write_worker_checkpoint(o.checkpoint_dir, c);
        last_checkpoint = now;
      }
    }
  } catch (const std::exception& e) {
    log << "aryl worker: " << e.what() << std::endl;
    return 1;
  }
}

} // namespace aryl::live
