#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/input_error.hpp"

namespace aryl::live {

void gateway::impl::deliver(const std::string& server, wire::message msg) {
  std::shared_ptr<session> agent;
  {
    std::lock_guard lock(m);
    auto& slot = slots.at(server);
    agent = slot.agent.lock();
    if (!agent) {
      slot.backlog.push_back(std::move(msg));
      return;
    }
  }
  send_to(*agent, msg);
}

void gateway::impl::launch_on(const std::string& server, const node_launch& l) {
  {
    std::lock_guard lock(m);
    ++slots.at(server).launches;
  }
  for (size_t i = 0; i < l.gpus.size(); ++i) {
    wire::launch w;
    w.job_id = l.job;
    w.rank = l.rank_offset + static_cast<uint32_t>(i);
    w.world_size = l.world_size;
    w.gpus = {l.gpus[i]};
    w.checkpoint_dir = opts.checkpoint_root + "/job-" + std::to_string(l.job);
    // The workers of one launch meet through a file in the job's folder (torch.distributed's
    // file:// init method); a shared filesystem is what checkpoints need anyway.
    w.rendezvous = "file://" + w.checkpoint_dir + "/rendezvous-" + std::to_string(l.generation);
    w.command = l.command;
    if (l.startup_s > 0) w.env["ARYL_STARTUP_S"] = fmt::format("{:.6f}", l.startup_s);
    w.env["ARYL_JOB_NAME"] = l.job_name;
    if (l.decided_unix_ns > 0) w.env["ARYL_DECIDED_UNIX_NS"] = std::to_string(l.decided_unix_ns);
    w.work_s = l.work_s;
    w.rate = l.rate;
    deliver(server, std::move(w));
  }
  log(fmt::format("launch job {} ranks {}..{} of {} on {}", l.job, l.rank_offset, l.rank_offset + l.gpus.size() - 1,
                  l.world_size, server));
}

void gateway::impl::stop_on(const std::string& server, uint32_t job) { deliver(server, wire::stop{job, opts.stop_grace_s}); }

namespace {

/// A server's machine, reached through the gateway's network thread.
struct remote_node : node_link {
  std::weak_ptr<gateway::impl> g;
  std::string server;
  void launch(const node_launch& l) override {
    // Handlers of the io_context never outlive it, so they hold the gateway by plain pointer.
    if (auto p = g.lock()) asio::post(p->io, [p = p.get(), s = server, l] { p->launch_on(s, l); });
  }
  void stop(uint32_t job) override {
    if (auto p = g.lock()) asio::post(p->io, [p = p.get(), s = server, job] { p->stop_on(s, job); });
  }
};

} // namespace

gateway::gateway(gateway_options o, std::ostream& log) : impl_(std::make_shared<impl>(std::move(o), log)) {
  auto& i = *impl_;
  boost::system::error_code ec;
  auto address = asio::ip::make_address(i.opts.bind, ec);
  if (ec) throw input_error(fmt::format("--bind {}: not an IP address", i.opts.bind));
  tcp::endpoint ep{address, i.opts.port};
  i.acceptor.open(ep.protocol(), ec);
  if (!ec) i.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) i.acceptor.bind(ep, ec);
  if (!ec) i.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw input_error(fmt::format("{}:{}: cannot listen: {}", i.opts.bind, i.opts.port, ec.message()));
  i.reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  i.accept();
  i.thread = std::thread([p = impl_] { p->io.run(); });
}

gateway::~gateway() { close(); }

uint16_t gateway::port() const { return impl_->acceptor.local_endpoint().port(); }

std::shared_ptr<node_link> gateway::add_server(int id, const std::string& server, const std::string& gpu_type,
                                               int gpus, wire::pool_kind pool) {
  {
    std::lock_guard lock(impl_->m);
    impl::server_slot slot;
    slot.id = id;
    slot.gpu_type = gpu_type;
    slot.gpus = gpus;
    slot.pool = pool;
    impl_->slots[server] = std::move(slot);
  }
  auto n = std::make_shared<remote_node>();
  n->g = impl_;
  n->server = server;
  return n;
}

std::vector<std::string> gateway::wait_for_agents(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->m);
  auto missing = [&] {
    std::vector<std::string> out;
    for (auto& [name, s] : impl_->slots)
      if (!s.registered) out.push_back(name);
    return out;
  };
  impl_->registered_cv.wait_for(lock, timeout, [&] { return missing().empty(); });
  return missing();
}

std::vector<std::string> gateway::wait_for_found_workers(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->m);
  auto running = [&] {
    std::vector<std::string> out;
    for (auto& [name, s] : impl_->slots)
      for (auto& [job, rank] : s.found) out.push_back(fmt::format("{} job {} rank {}", name, job, rank));
    return out;
  };
  impl_->registered_cv.wait_for(lock, timeout, [&] { return running().empty(); });
  return running();
}

std::map<std::string, std::vector<wire::running_worker>> gateway::found_workers() {
  std::lock_guard lock(impl_->m);
  std::map<std::string, std::vector<wire::running_worker>> out;
  for (auto& [name, s] : impl_->slots)
    if (!s.listed.empty()) out[name] = s.listed;
  return out;
}

void gateway::settle_found_workers(const std::set<uint32_t>& adopted) {
  std::map<std::string, std::set<uint32_t>> stop;
  {
    std::lock_guard lock(impl_->m);
    for (auto& [name, s] : impl_->slots) {
      for (auto& w : s.listed) {
        std::pair<uint32_t, uint32_t> worker{static_cast<uint32_t>(w.job_id), w.rank};
        if (adopted.count(worker.first)) {
          s.held.insert(worker);
        } else {
          s.found.insert(worker);
          stop[name].insert(worker.first);
        }
      }
      s.listed.clear();
    }
    // Early exits of workers now stopped are the stop's business, not the run's.
    std::erase_if(impl_->early_exits, [&](auto& e) { return !adopted.count(std::get<1>(e)); });
  }
  for (auto& [name, jobs] : stop) {
    std::string list;
    for (auto j : jobs) list += (list.empty() ? "" : ", ") + std::to_string(j);
    impl_->log(fmt::format("server {}: stopping the workers of jobs {}, from before this serve started", name, list));
    for (auto j : jobs) asio::post(impl_->io, [p = impl_.get(), s = name, j] { p->stop_on(s, j); });
  }
}

void gateway::set_router(worker_router r) {
  std::lock_guard lock(impl_->m);
  // An ask of the run that ends is answered by nobody: its waiting clients are told.
  if (!r.status_async && !r.status)
    asio::post(impl_->io, [p = impl_.get()] { p->status_ready(p->status_asks, std::nullopt); });
  impl_->router = std::move(r);
  if (!impl_->router.exit) return;
  // Adopted workers that exited before the run could hear of it.
  for (auto& [server, job, rank, code, signal] : impl_->early_exits) impl_->router.exit(server, job, rank, code, signal);
  impl_->early_exits.clear();
  for (auto& [name, s] : impl_->slots) s.held.clear();
}

std::optional<cluster_status> gateway::status() {
  std::optional<cluster_status> out;
  impl_->with_router([&](worker_router& r) {
    if (r.status) out = r.status();
  });
  return out;
}

int gateway::agents_connected() {
  std::lock_guard lock(impl_->m);
  int n = 0;
  for (auto& [name, s] : impl_->slots) n += s.agent.lock() ? 1 : 0;
  return n;
}

void gateway::close() {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [p = impl_.get()] {
    boost::system::error_code ec;
    p->acceptor.close(ec);
    p->accept_retry.cancel();
    p->io.stop();
  });
  impl_->thread.join();
  if (impl_->reserve_fd >= 0) ::close(impl_->reserve_fd);
  impl_->reserve_fd = -1;
}

} // namespace aryl::live
