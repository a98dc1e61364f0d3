#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/inputs/torchrun_command.hpp"
#include "solvers/input_error.hpp"

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
  if (l.torchrun) return launch_node(server, l);
  {
    std::lock_guard lock(m);
    auto& slot = slots.at(server);
    ++slot.launches;
    for (size_t i = 0; i < l.gpus.size(); ++i) slot.generations[{l.job, l.rank_offset + static_cast<uint32_t>(i)}] = l.generation;
  }
  for (size_t i = 0; i < l.gpus.size(); ++i) logs.launched(l.job, l.rank_offset + static_cast<uint32_t>(i), server);
  // What every worker of the launch on this machine shares; each adds its own ranks.
  auto env = launch_environment(l);
  if (l.startup_s > 0) env["ARYL_STARTUP_S"] = fmt::format("{:.6f}", l.startup_s);
  env["ARYL_JOB_NAME"] = l.job_name;
  if (l.decided_unix_ns > 0) env["ARYL_DECIDED_UNIX_NS"] = std::to_string(l.decided_unix_ns);
  // An array task's place in its array (Slurm's SLURM_ARRAY_*).
  if (l.array_job >= 0) {
    env["ARYL_ARRAY_JOB_ID"] = std::to_string(l.array_job);
    env["ARYL_ARRAY_TASK_ID"] = std::to_string(l.array_task);
    env["ARYL_ARRAY_TASK_COUNT"] = std::to_string(l.array_count);
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
    w.env = env;
    w.env["RANK"] = std::to_string(w.rank);
    w.env["LOCAL_RANK"] = std::to_string(i);
    w.work_s = l.work_s;
    w.rate = l.rate;
    w.generation = l.generation;
    // With identities a job runs as the user who submitted it; in cluster-token mode as the
    // agent's own user (a trace's user names are no accounts).
    if (opts.identities && !l.user.empty()) w.user = l.user;
    deliver(server, std::move(w));
  }
  log(fmt::format("launch job {} ranks {}..{} of {} on {}", l.job, l.rank_offset, l.rank_offset + l.gpus.size() - 1,
                  l.world_size, server));
}

void gateway::impl::audit(const audit_entry& e) {
  if (!opts.audit) return;
  auto line = opts.audit->record(e);
  line.pop_back();  // its newline: the journal keeps lines
  // Posted: a caller may hold the lock with_router takes (posts keep their order).
  asio::post(io, [this, line = std::move(line)]() mutable {
    with_router([&](worker_router& r) {
      if (r.audit) return r.audit(std::move(line));
      audit_backlog.push_back(std::move(line));
      if (audit_backlog.size() > max_audit_backlog) audit_backlog.pop_front();
    });
  });
}

uint16_t gateway::impl::master_port_for(uint32_t job, uint64_t generation, const std::string& server) {
  if (auto it = master_ports.find(job); it != master_ports.end()) {
    if (it->second.generation == generation && it->second.server == server) return it->second.port;
    master_ports.erase(it);  // an earlier launch's: free now
  }
  if (opts.book) std::erase_if(master_ports, [&](const auto& e) { return opts.book->has_ended(e.first); });
  std::set<uint16_t> used;
  for (auto& [j, m] : master_ports)
    if (m.server == server) used.insert(m.port);
  // All taken (more jobs mastered on one machine than ports): spread by job id.
  auto port = static_cast<uint16_t>(opts.master_port_first + job % std::max<uint16_t>(opts.master_port_count, 1));
  for (uint32_t k = 0; k < opts.master_port_count; ++k)
    if (!used.count(static_cast<uint16_t>(opts.master_port_first + k))) {
      port = static_cast<uint16_t>(opts.master_port_first + k);
      break;
    }
  master_ports[job] = {generation, server, port};
  return port;
}

std::pair<std::string, std::string> gateway::impl::server_address(int id) {
  std::lock_guard lock(m);
  for (auto& [name, s] : slots)
    if (s.id == id) return {name, s.address};
  return {};
}

void gateway::impl::launch_node(const std::string& server, const node_launch& l) {
  {
    std::lock_guard lock(m);
    auto& slot = slots.at(server);
    ++slot.launches;
    slot.generations[{l.job, l.rank_offset}] = l.generation;
  }
  logs.launched(l.job, l.rank_offset, server);
  torchrun_node n;
  n.nproc = static_cast<uint32_t>(l.gpus.size());
  n.max_nodes = std::max<uint32_t>(l.max_nodes, 1);
  n.rdzv_id = fmt::format("aryl-job-{}-{}", l.job, l.rdzv_epoch);
  n.last_call_s = opts.rdzv_last_call_s;
  node_launch plain = l;
  plain.master_server = -1;  // torchrun sets its workers' MASTER_ADDR and MASTER_PORT itself
  auto env = launch_environment(plain);
  if (!opts.rdzv_endpoint.empty()) {
    n.endpoint = opts.rdzv_endpoint;
    n.store_outside = true;
  } else if (auto [host, address] = server_address(l.master_server); !address.empty()) {
    // Hosted by the torchrun on the job's first server of this rendezvous, which the others
    // reach at its address: it ends with that server.
    n.endpoint = fmt::format("{}:{}", address, master_port_for(l.job, l.rdzv_epoch, host));
  }
  wire::launch w;
  w.job_id = l.job;
  w.rank = l.rank_offset;
  w.world_size = l.world_size;
  w.gpus = l.gpus;
  w.checkpoint_dir = opts.checkpoint_root + "/job-" + std::to_string(l.job);
  w.command = torchrun_node_command(l.command, n);
  w.env = std::move(env);
  w.env["ARYL_JOB_NAME"] = l.job_name;
  if (l.decided_unix_ns > 0) w.env["ARYL_DECIDED_UNIX_NS"] = std::to_string(l.decided_unix_ns);
  // torchrun writes its workers' lines (--tee) to a file, the agent's log: unbuffered, they
  // reach `aryl logs` as they come rather than 8 KiB at a time.
  w.env["PYTHONUNBUFFERED"] = "1";
  w.work_s = l.work_s;
  w.rate = l.rate;
  w.generation = l.generation;
  if (opts.identities && !l.user.empty()) w.user = l.user;
  deliver(server, std::move(w));
  log(fmt::format("launch job {} torchrun node {} ({} worker(s), rendezvous {} at {}) on {}", l.job, l.rank_offset,
                  l.gpus.size(), n.rdzv_id, n.endpoint.empty() ? "?" : n.endpoint, server));
}

std::map<std::string, std::string> gateway::impl::launch_environment(const node_launch& l) {
  auto [master, address] = server_address(l.master_server);
  // torch.distributed's env:// and torchrun's worker variables; every worker of the launch on
  // this machine sees its GPUs, LOCAL_RANK picking its own, as torchrun's workers do.
  std::map<std::string, std::string> env;
  if (!address.empty()) {
    env["MASTER_ADDR"] = address;
    env["MASTER_PORT"] = std::to_string(master_port_for(l.job, l.generation, master));
  }
  env["WORLD_SIZE"] = std::to_string(l.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(l.gpus.size());
  env["GROUP_RANK"] = std::to_string(l.group_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(l.group_count);
  std::string devices;
  for (auto g : l.gpus) devices += (devices.empty() ? "" : ",") + std::to_string(g);
  env["CUDA_VISIBLE_DEVICES"] = devices;
  return env;
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
  if (!i.opts.tls_cert_file.empty() || !i.opts.tls_key_file.empty()) {
    i.tls = net::tls_server_context(i.opts.tls_cert_file, i.opts.tls_key_file, i.opts.tls_client_ca_file);
    // Served all the same: the operator may be renewing it, and a client's check says why.
    if (auto why = net::certificate_validity_problem(*i.tls); !why.empty()) i.log("warning: " + why);
  }
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
  i.joining = i.opts.join;
  i.accept();
  i.thread = std::thread([p = impl_] { p->io.run(); });
}

gateway::~gateway() { close(); }

uint16_t gateway::port() const { return impl_->acceptor.local_endpoint().port(); }

std::shared_ptr<node_link> gateway::add_server(int id, const std::string& server, const std::string& gpu_type,
                                               int gpus, wire::pool_kind pool) {
  {
    std::lock_guard lock(impl_->m);
    auto it = impl_->slots.find(server);
    if (it != impl_->slots.end() && it->second.id < 0) {
      // Joined: its agent is registered already; its connection learns the id.
      it->second.id = id;
      asio::post(impl_->io, [agent = it->second.agent, id] {
        if (auto a = agent.lock()) set_server_id(*a, id);
      });
    } else {
      impl::server_slot slot;
      slot.id = id;
      slot.gpu_type = gpu_type;
      slot.gpus = gpus;
      slot.pool = pool;
      impl_->slots[server] = std::move(slot);
    }
  }
  return impl_->link_to(server);
}

std::shared_ptr<node_link> gateway::impl::link_to(const std::string& server) {
  auto n = std::make_shared<remote_node>();
  n->g = weak_from_this();
  n->server = server;
  return n;
}

void gateway::send_shutdown(const std::string& reason, std::chrono::milliseconds limit) {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [p = impl_.get(), reason] {
    std::vector<std::shared_ptr<session>> agents;
    {
      std::lock_guard lock(p->m);
      for (auto& [name, s] : p->slots)
        if (auto a = s.agent.lock()) agents.push_back(std::move(a));
    }
    for (auto& a : agents) bid_farewell(*a, reason);
    std::lock_guard lock(p->m);
    p->farewells_told = true;
    p->farewell_cv.notify_all();
  });
  std::unique_lock lock(impl_->m);
  impl_->farewell_cv.wait_for(lock, limit, [&] { return impl_->farewells_told && impl_->farewells <= 0; });
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
  // A page being read finishes; none begins. Its answer goes nowhere: the io has stopped.
  if (impl_->history_pool) {
    impl_->history_pool->stop();
    impl_->history_pool->join();
  }
  if (impl_->reserve_fd >= 0) ::close(impl_->reserve_fd);
  impl_->reserve_fd = -1;
}

} // namespace aryl::live
