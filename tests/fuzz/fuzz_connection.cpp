// libFuzzer target: a whole connection to the gateway (runtime/live/gateway*), on loopback.
// The first byte picks the role (even: a client, odd: an agent of server t0); the target says
// hello (and registers the agent), then writes the rest of the input as the stream of frames
// that follows, and ends its side. Checks, beyond "no crash, no leak, no UB":
//  - the gateway closes the connection within 5 s of the peer's end (no hang, no lost peer);
//  - every byte it sends is a well-formed frame, and an error frame's reason is one line;
//  - it still takes a new client's hello afterwards (one peer cannot stop the listener).
// Seeds in corpus/connection/: a role byte, then frames as a peer would send them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/live/gateway.hpp"
#include "runtime/wire/codec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace aryl;

/// Keeps the gateway's last 64 KiB of log, for a finding to show.
struct tail_buffer : std::streambuf {
  std::mutex m;
  std::string text;
  int overflow(int c) override {
    std::lock_guard lock(m);
    text.push_back(static_cast<char>(c));
    if (text.size() > 131072) text.erase(0, 65536);
    return c;
  }
  std::string last() {
    std::lock_guard lock(m);
    return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
  }
};
tail_buffer* log_tail = nullptr;

struct world {
  tail_buffer tail;
  std::ostream log{&tail};
  std::unique_ptr<live::gateway> g;
  world() {
    live::gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/nonexistent";
    log_tail = &tail;
    g = std::make_unique<live::gateway>(o, log);
    g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
    g->add_server(1, "i0", "T4", 4, wire::pool_kind::inference);
    worker_router r;
    r.progress = [](int, uint32_t, uint32_t, double) {};
    r.exit = [](int, uint32_t, uint32_t, int, int, const std::string&) {};
    r.lost = [](int) {};
    r.status = [] {
      cluster_status s;
      s.jobs = {{1, "j1", true, 4, "", 0, 0, 0, "", -1, "", true, ""},
                {2, "j2", false, 0, "waiting for 8 GPUs", 0, 0, 0, "", -1, "", true, ""}};
      s.servers = {{"t0", "V100", 8, 4, false, "training", "up", ""}, {"i0", "T4", 4, 4, true, "loaned", "up", ""}};
      return s;
    };
    r.demand = [](int) {};
    r.submit = [](job_spec j, std::function<void(submit_result)> reply) {
      reply(j.gpus > 8 ? submit_result{-1, "job too large", {}} : submit_result{7, "", {}});
    };
    r.cancel = [](uint32_t job, std::function<void(std::string)> reply) {
      reply(job == 7 ? std::string() : "job " + std::to_string(job) + ": no such job");
    };
    r.back = [](int) {};
    r.reconcile = [](int, std::vector<uint32_t>, std::vector<uint32_t>, uint64_t) {};
    g->set_router(r);
  }
};

int dial(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  // From a different loopback address each time: two connections an input, tens of
  // thousands a minute, would otherwise reuse the ports of connections the gateway still
  // holds in TIME_WAIT, and the kernel then delays or drops the new one.
  static uint32_t next = 0;
  ++next;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl(0x7f000000u | (1 + next % 0xfffffe));
  if (fd >= 0) bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0) fuzz::finding(std::string("cannot make a socket: ") + std::strerror(errno));
  int failed = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
  if (failed == EINTR) {  // a signal (as in readable_within): the connection goes on; SO_ERROR tells its outcome
    pollfd p{fd, POLLOUT, 0};
    while (poll(&p, 1, 5000) < 0 && errno == EINTR) {
    }
    socklen_t size = sizeof failed;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &failed, &size) != 0) failed = errno;
  }
  if (failed != 0) fuzz::finding(std::string("cannot connect to the gateway: ") + std::strerror(failed));
  return fd;
}

void write_all(int fd, const std::vector<uint8_t>& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // a signal, as in readable_within
    if (n <= 0) return;  // closed by the gateway: the rest is not read
    sent += static_cast<size_t>(n);
  }
}

/// Whether `fd` became readable within `limit`. A signal (libFuzzer's timer, every few seconds)
/// ends poll() early with EINTR: that is no answer, so it polls again for the time left.
bool readable_within(int fd, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready > 0) return true;
    if (ready == 0 || errno != EINTR) return false;
  }
}

/// Reads until the gateway closes; checks every frame. Returns the messages.
std::vector<wire::message> read_to_close(int fd, std::chrono::seconds within) {
  wire::frame_decoder d;
  std::vector<wire::message> out;
  auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (!readable_within(fd, left)) {
      // Stuck, or only slow (a loaded machine)? Said in the finding.
      bool later = readable_within(fd, std::chrono::seconds(20));
      fuzz::finding("the gateway did not close the connection within " + std::to_string(within.count()) +
                    " s of the peer's end (" + (later ? "it did within 20 s more" : "nor within 20 s more") +
                    "); the gateway's log ends:\n" + (log_tail ? log_tail->last() : ""));
    }
    uint8_t buf[16384];
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    d.feed(buf, static_cast<size_t>(n));
    for (;;) {
      auto step = d.next();
      if (std::holds_alternative<wire::need_more>(step)) break;
      if (auto* e = std::get_if<wire::decode_error>(&step)) fuzz::finding("the gateway sent a bad frame: " + e->reason);
      auto& m = std::get<wire::message>(step);
      if (auto* e = std::get_if<wire::error>(&m))
        fuzz::require(find_control(e->reason) == std::string::npos,
                      "an error frame's reason holds a control character: " + escape_control(e->reason));
      out.push_back(std::move(m));
    }
  }
  fuzz::require(d.buffered() == 0, "the gateway closed in the middle of a frame");
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static world w;
  if (size == 0) return 0;
  const bool agent = data[0] & 1;
  int fd = dial(w.g->port());
  std::vector<uint8_t> bytes =
      wire::encode_frame(wire::hello{agent ? wire::peer_role::agent : wire::peer_role::client, "secret", "fuzz"});
  if (agent) {
    auto r = wire::encode_frame(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}});
    bytes.insert(bytes.end(), r.begin(), r.end());
  }
  bytes.insert(bytes.end(), data + 1, data + size);
  write_all(fd, bytes);
  shutdown(fd, SHUT_WR);
  auto got = read_to_close(fd, std::chrono::seconds(5));
  close(fd);
  fuzz::require(!got.empty() && std::holds_alternative<wire::hello_ok>(got.front()), "no hello_ok for a good hello");

  int again = dial(w.g->port());
  write_all(again, wire::encode_frame(wire::hello{wire::peer_role::client, "secret", "after"}));
  shutdown(again, SHUT_WR);
  auto after = read_to_close(again, std::chrono::seconds(5));
  close(again);
  fuzz::require(!after.empty() && std::holds_alternative<wire::hello_ok>(after.front()),
                "the gateway no longer takes a hello after that connection");
  return 0;
}
