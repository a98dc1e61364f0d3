// libFuzzer target: a whole connection to the gateway (runtime/live/gateway*), on loopback.
// The first byte picks the peer; the target says hello, then writes the rest of the input as the
// stream of frames that follows, and ends its side:
//  - bit 0 clear: a client;
//  - bit 0 set: an agent; the target registers it as t0 first, unless
//  - bit 1 is set too: the input's first frame is the register (any server, any fields), and
//  - with bit 2 as well, another agent of t0 (instance "fuzz-holder") holds the name meanwhile.
// Checks, beyond "no crash, no leak, no UB":
//  - the gateway closes the connection within 5 s of the peer's end (no hang, no lost peer);
//  - every byte it sends is a well-formed frame, and an error frame's reason is one line;
//  - a registration is taken exactly when docs/protocol.md says it is (within the limits, the
//    server's configuration, a name not held; a new training machine joins when the fake
//    scheduler takes it), else refused by an error frame right after hello_ok (`name_held` for
//    a held name); every machine that reaches the scheduler's join is within the limits;
//  - a name taken is free again once its connection ended: a new agent registers it;
//  - it still takes a new client's hello afterwards (one peer cannot stop the listener).
// Seeds in corpus/connection/ (made by make_connection_seeds.py): a role byte, then frames as a
// peer would send them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/live/gateway.hpp"
#include "runtime/live/job_book.hpp"
#include "runtime/wire/codec.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/registration_limits.hpp"

namespace {

using namespace aryl;

/// The hello name of the target's agents: their log lines say "agent fuzz-agent: ...".
constexpr std::string_view agent_label = "fuzz-agent";
/// The instance of the agent that holds t0 while an input registers (bit 2).
constexpr std::string_view holder_instance = "fuzz-holder";

/// Keeps the gateway's last 64 KiB of log, for a finding to show, and the servers it logged
/// as registered by the target's agents: what tells an accepted registration from a refused one.
struct tail_buffer : std::streambuf {
  std::mutex m;
  std::string text;
  std::string line;
  std::vector<std::string> registered;
  int overflow(int c) override {
    std::lock_guard lock(m);
    text.push_back(static_cast<char>(c));
    if (text.size() > 131072) text.erase(0, 65536);
    if (c != '\n') {
      if (line.size() < 4096) line.push_back(static_cast<char>(c));
      return c;
    }
    // "[serve] connection N (address) agent fuzz-agent: registered server t0 (8 x V100, ...": only
    // right after the peer, so a name quoted in another line cannot forge one.
    const std::string said = ") agent " + std::string(agent_label) + ": registered server ";
    if (line.starts_with("[serve] connection ")) {
      auto peer_end = line.find(')');
      if (peer_end != std::string::npos && line.compare(peer_end, said.size(), said) == 0) {
        auto name = line.substr(peer_end + said.size());
        registered.push_back(name.substr(0, name.find(' ')));
      }
    }
    line.clear();
    return c;
  }
  std::string last() {
    std::lock_guard lock(m);
    return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
  }
  std::vector<std::string> take_registered() {
    std::lock_guard lock(m);
    return std::exchange(registered, {});
  }
};
tail_buffer* log_tail = nullptr;

/// A machine as the gateway is to check an agent's register against.
struct machine {
  std::string gpu_type;
  uint32_t gpus = 0;
  wire::pool_kind pool = wire::pool_kind::training;
};

/// Whether the fake scheduler takes a new training machine: j0..j9 of V100s (a bounded set, so
/// the gateway's inventory stays small over millions of inputs), as a real one refuses a GPU
/// type it has no speed for.
bool joins(const std::string& server, const std::string& gpu_type) {
  return server.size() == 2 && server[0] == 'j' && server[1] >= '0' && server[1] <= '9' && gpu_type == "V100";
}

struct world {
  tail_buffer tail;
  std::ostream log{&tail};
  std::unique_ptr<live::gateway> g;
  std::mutex m;
  /// Every machine the gateway should take a register of: the configured ones, then the joined.
  std::map<std::string, machine> machines{{"t0", {"V100", 8, wire::pool_kind::training}},
                                          {"i0", {"T4", 4, wire::pool_kind::inference}}};
  world() {
    live::gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/nonexistent";
    // Held while the input registers, however loaded the machine: a holder heard 3 s ago
    // would be replaced, not refused.
    o.name_held_s = 60;
    o.book = std::make_shared<live::job_book>();
    job_spec j1;
    j1.index = 1;
    j1.name = "j1";
    j1.gpus = 4;
    j1.duration_s = 600;
    o.book->spec(j1);
    log_tail = &tail;
    g = std::make_unique<live::gateway>(o, log);
    for (auto& [name, c] : machines)
      g->add_server(name == "t0" ? 0 : 1, name, c.gpu_type, static_cast<int>(c.gpus), c.pool);
    worker_router r;
    r.progress = [](int, uint32_t, uint32_t, double) {};
    r.exit = [](int, uint32_t, uint32_t, int, int, const std::string&) {};
    r.lost = [](int) {};
    r.status = [] {
      cluster_status s;
      s.jobs = {{1, "j1", true, 4, "", 0, 0, 0, "", -1, "", true, ""},
                {2, "j2", false, 0, "waiting for 8 GPUs", 0, 0, 0, "", -1, "", true, ""}};
      s.servers = {{"t0", "V100", 8, 4, false, "training", hold_state::up, ""}, {"i0", "T4", 4, 4, true, "loaned", hold_state::up, ""}};
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
    r.node = [](node_order o, std::function<void(node_answer)> reply) {
      if (o.server == "t0" || o.server == "i0") reply(node_answer{true, o.server + ": " + o.action});
      else reply(node_answer{false, "no training server " + o.server});
    };
    r.join = [this](node_join j, std::shared_ptr<node_link>, std::function<void(join_answer)> reply) {
      fuzz::require(fuzz::documented_machine(j.server, j.gpu_type, j.gpus),
                    "a machine beyond the protocol's limits reached the scheduler's join: '" +
                        escape_control(j.server) + "', '" + escape_control(j.gpu_type) + "', " +
                        std::to_string(j.gpus) + " GPUs");
      if (!joins(j.server, j.gpu_type))
        return reply(join_answer{-1, "server '" + j.server + "': this scheduler takes j0..j9 of V100s only"});
      {
        std::lock_guard lock(m);
        machines[j.server] = {j.gpu_type, static_cast<uint32_t>(j.gpus), wire::pool_kind::training};
      }
      reply(join_answer{10 + (j.server[1] - '0'), ""});
    };
    g->set_router(r);
  }
  std::map<std::string, machine> known() {
    std::lock_guard lock(m);
    return machines;
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

/// One of the target's connections to the gateway, and every frame the gateway sent on it.
struct peer {
  int fd = -1;
  wire::frame_decoder d;
  std::vector<wire::message> got;

  explicit peer(int f) : fd(f) {}
  peer(const peer&) = delete;
  peer& operator=(const peer&) = delete;
  ~peer() {
    if (fd >= 0) close(fd);
  }

  /// Reads, checking every frame, until `enough()` or the gateway closes; a finding if neither
  /// within `within`. True when the gateway closed.
  bool read(std::chrono::seconds within, const std::function<bool()>& enough, const std::string& awaited) {
    auto deadline = std::chrono::steady_clock::now() + within;
    for (;;) {
      if (enough && enough()) return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (!readable_within(fd, left)) {
        // Stuck, or only slow (a loaded machine)? Said in the finding.
        bool later = readable_within(fd, std::chrono::seconds(20));
        fuzz::finding("the gateway did not " + awaited + " (" +
                      (later ? "it did within 20 s more" : "nor within 20 s more") + "); the gateway's log ends:\n" +
                      (log_tail ? log_tail->last() : ""));
      }
      uint8_t buf[16384];
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;
      d.feed(buf, static_cast<size_t>(n));
      for (;;) {
        auto step = d.next();
        if (std::holds_alternative<wire::need_more>(step)) break;
        if (auto* e = std::get_if<wire::decode_error>(&step))
          fuzz::finding("the gateway sent a bad frame: " + e->reason);
        auto& m = std::get<wire::message>(step);
        if (auto* e = std::get_if<wire::error>(&m))
          fuzz::require(find_control(e->reason) == std::string::npos,
                        "an error frame's reason holds a control character: " + escape_control(e->reason));
        got.push_back(std::move(m));
      }
    }
  }

  /// Ends this side and reads to the gateway's close, which must come within 5 s.
  void finish() {
    shutdown(fd, SHUT_WR);
    read(std::chrono::seconds(5), nullptr, "close the connection within 5 s of the peer's end");
    fuzz::require(d.buffered() == 0, "the gateway closed in the middle of a frame");
    close(fd);
    fd = -1;
  }

  template <class M>
  const M* first_after_hello() const {
    return got.size() >= 2 ? std::get_if<M>(&got[1]) : nullptr;
  }
};

std::vector<uint8_t> hello_frame(wire::peer_role role, std::string_view name) {
  return wire::encode_frame(wire::hello{role, "secret", std::string(name)});
}

void append(std::vector<uint8_t>& to, const std::vector<uint8_t>& bytes) {
  to.insert(to.end(), bytes.begin(), bytes.end());
}

/// An agent of t0 that stays connected, heard, while the input's agent registers.
std::unique_ptr<peer> hold_t0(uint16_t port) {
  auto p = std::make_unique<peer>(dial(port));
  auto bytes = hello_frame(wire::peer_role::agent, agent_label);
  append(bytes, wire::encode_frame(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}, std::nullopt,
                                                   std::string(holder_instance)}));
  // Answered only once the register is taken: the input's then meets a held name.
  append(bytes, wire::encode_frame(wire::heartbeat{1}));
  write_all(p->fd, bytes);
  auto answered = [&] {
    return std::any_of(p->got.begin(), p->got.end(),
                       [](auto& m) { return std::holds_alternative<wire::heartbeat>(m); });
  };
  p->read(std::chrono::seconds(5), answered, "answer the holder's heartbeat within 5 s");
  fuzz::require(answered(), "the holder of t0 was not registered");
  return p;
}

/// The register the input's stream starts with, if its first frame is one.
std::optional<wire::register_> first_register(const uint8_t* data, size_t size) {
  wire::frame_decoder d;
  d.feed(data, size);
  auto step = d.next();
  auto* m = std::get_if<wire::message>(&step);
  auto* r = m ? std::get_if<wire::register_>(m) : nullptr;
  return r ? std::optional<wire::register_>(*r) : std::nullopt;
}

/// Whether docs/protocol.md ("register") has the gateway take `r`, given the machines it knows
/// and whether the holder keeps t0.
bool taken_by_protocol(const wire::register_& r, const std::map<std::string, machine>& known, bool held) {
  if (!fuzz::documented_register(r)) return false;
  auto it = known.find(r.server);
  if (it == known.end()) return r.pool == wire::pool_kind::training && joins(r.server, r.gpu_type);
  const auto& c = it->second;
  if (r.gpu_type != c.gpu_type || r.gpus != c.gpus || r.pool != c.pool) return false;
  return !(held && r.server == "t0") || r.instance == holder_instance;
}

std::string shown(const wire::register_& r) {
  return "'" + escape_control(r.server) + "' " + std::to_string(r.gpus) + " x '" + escape_control(r.gpu_type) +
         "' (" + std::string(wire::pool_name(r.pool)) + ", " + std::to_string(r.workers.size()) + " workers" +
         (r.address ? ", address '" + escape_control(*r.address) + "'" : "") +
         (r.instance ? ", instance '" + escape_control(*r.instance) + "'" : "") + ")";
}

/// What the gateway did with the connection's registration, against what the protocol says.
void check_registration(const std::optional<wire::register_>& reg, bool expected, bool held, const peer& p,
                        const std::vector<std::string>& registered) {
  fuzz::require(registered.size() <= 1, "the gateway registered " + std::to_string(registered.size()) +
                                            " servers on one connection");
  const bool taken = !registered.empty();
  if (taken && !reg)
    fuzz::finding("the gateway registered '" + escape_control(registered.front()) +
                  "' though the first frame was no register");
  if (!reg) return;
  if (taken && registered.front() != reg->server)
    fuzz::finding("the gateway registered '" + escape_control(registered.front()) + "' for " + shown(*reg));
  auto* refusal = p.first_after_hello<wire::error>();
  fuzz::require(taken == expected, std::string(taken ? "the gateway took " : "the gateway refused ") + shown(*reg) +
                                       (refusal ? "; it answered: error '" + refusal->reason + "'" : std::string()));
  if (taken) return;
  fuzz::require(refusal != nullptr, "a refused registration got no error frame right after hello_ok: " + shown(*reg));
  // Held, and otherwise one it takes: the agent must be told by code to stop its workers.
  if (held && reg->server == "t0" && taken_by_protocol(*reg, {{"t0", {"V100", 8, wire::pool_kind::training}}}, false))
    fuzz::require(refusal->code == "name_held", "a register of a held name was refused without code name_held: " +
                                                    refusal->reason);
}

/// A new agent of `r`'s machine must be taken once `r`'s connection has ended.
void register_again(uint16_t port, tail_buffer& tail, const wire::register_& r) {
  peer p(dial(port));
  auto bytes = hello_frame(wire::peer_role::agent, agent_label);
  append(bytes, wire::encode_frame(wire::register_{r.server, r.gpu_type, r.gpus, r.pool, {}}));
  append(bytes, wire::encode_frame(wire::bye{}));
  write_all(p.fd, bytes);
  p.finish();
  auto registered = tail.take_registered();
  fuzz::require(registered.size() == 1 && registered.front() == r.server,
                "server '" + r.server + "' was not free for a new agent after its agent's connection ended");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static world w;
  if (size == 0) return 0;
  const bool agent = data[0] & 1;
  const bool registers = agent && (data[0] & 2);
  const bool held = registers && (data[0] & 4);
  const uint16_t port = w.g->port();

  auto holder = held ? hold_t0(port) : nullptr;
  w.tail.take_registered();
  std::optional<wire::register_> reg;
  if (agent)
    reg = registers ? first_register(data + 1, size - 1)
                    : wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}};
  const bool expected = reg && taken_by_protocol(*reg, w.known(), held);

  peer p(dial(port));
  auto bytes = hello_frame(agent ? wire::peer_role::agent : wire::peer_role::client, agent ? agent_label : "fuzz");
  if (agent && !registers) append(bytes, wire::encode_frame(*reg));
  bytes.insert(bytes.end(), data + 1, data + size);
  write_all(p.fd, bytes);
  p.finish();
  fuzz::require(!p.got.empty() && std::holds_alternative<wire::hello_ok>(p.got.front()),
                "no hello_ok for a good hello");
  const auto registered = w.tail.take_registered();
  if (agent) check_registration(reg, expected, held, p, registered);

  if (holder) {
    holder->finish();
    if (!registered.empty() && registered.front() == "t0")
      fuzz::require(std::any_of(holder->got.begin(), holder->got.end(),
                                [](auto& m) { return std::holds_alternative<wire::error>(m); }),
                    "the holder of t0 was replaced without an error frame");
  }
  if (registers && !registered.empty()) register_again(port, w.tail, *reg);

  peer again(dial(port));
  write_all(again.fd, hello_frame(wire::peer_role::client, "after"));
  again.finish();
  fuzz::require(!again.got.empty() && std::holds_alternative<wire::hello_ok>(again.got.front()),
                "the gateway no longer takes a hello after that connection");
  return 0;
}
