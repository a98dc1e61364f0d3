#include "runtime/live/gateway_session.hpp"

#include <fmt/format.h>

#include "solvers/control_chars.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/live/client_replies.hpp"
#include "runtime/live/gateway_access.hpp"
#include "runtime/live/registration_checks.hpp"

// What a peer says, once connected: its hello (who it is), an agent's register and reports, a
// client's requests, each checked against the peer's role (docs/security.md).
namespace aryl::live {

/// The most of a worker's start failure an exit carries on (the agent's words about one argv).
constexpr size_t max_exit_reason_bytes = 1024;

using wire::pool_name;

void session::submitted(uint64_t job) {
  if (pending_audit_) pending_audit_->target = fmt::format("job-{} ({})", job, pending_audit_->target);
}

void session::handle(const wire::message& msg) {
  switch (stage_) {
    case stage::hello: return on_hello(msg);
    case stage::registering: return on_register(msg);
    case stage::agent: return on_agent(msg);
    case stage::client: return on_client(msg);
  }
}

void session::on_hello(const wire::message& msg) {
  auto* h = std::get_if<wire::hello>(&msg);
  if (!h) return refuse_hello(fmt::format("expected hello first, got '{}'", wire::type_of(msg)));
  const auto certificate = stream_->peer_common_name();
  auto v = authenticate(g_->opts.identities.get(), g_->opts.token, *h, certificate);
  if (!v.who) {
    if (!v.named.empty()) audit(v.named, "", "hello", "", "refused: " + v.refusal);
    return refuse_hello(v.refusal);
  }
  // Names are shown in logs, tables and error frames, one line each.
  if (find_control(h->name) != std::string::npos)
    return refuse_hello("hello: name '" + h->name + "' holds " + describe_control(h->name));
  who_ = *v.who;
  credential_hash_ = v.credential_hash;
  if (g_->opts.identities) id_version_ = g_->opts.identities->version();
  name_ = h->name;
  peer_ += " " + (h->role == wire::peer_role::agent ? std::string("agent ") : std::string("client ")) + h->name;
  if (!who_.cluster_token) peer_ += fmt::format(" as {} ({})", who_.name, role_name(who_.who));
  else if (!certificate.empty()) peer_ += " (certificate " + certificate + ")";
  stage_ = h->role == wire::peer_role::agent ? stage::registering : stage::client;
  hello_deadline_.cancel();
  g_->hello_taken(id_);
  wire::hello_ok ok;
  if (!who_.cluster_token) {
    ok.identity = who_.name;
    ok.role = std::string(role_name(who_.who));
  }
  send(ok);
}

void session::on_register(const wire::message& msg) {
  auto* r = std::get_if<wire::register_>(&msg);
  if (!r) return close(fmt::format("expected register after hello, got '{}'", wire::type_of(msg)));
  if (find_control(r->server) != std::string::npos)
    return close("register: server '" + r->server + "' holds " + describe_control(r->server));
  if (auto why = registration_problem(*r); !why.empty()) return close("register: " + why);
  if (auto why = register_refusal(g_->opts.identities.get(), who_, *r); !why.empty()) {
    audit("register", r->server, "refused: " + why);
    g_->log(fmt::format("{}: refused: {}", peer_, why));
    return close("register: " + why);
  }
  auto now = g_->join_late(shared_from_this(), *r);
  if (!now) {  // a machine joining: registers once the scheduler has taken it
    awaiting_answer_ = true;
    return;
  }
  if (!now->empty()) return close(*now);
  take_register(*r);
}

void session::take_register(const wire::register_& reg) {
  auto* r = &reg;
  std::shared_ptr<session> replaced;
  std::vector<wire::message> backlog;
  bool returning = false;
  std::set<uint32_t> stop_jobs;
  {
    std::lock_guard lock(g_->m);
    auto it = g_->slots.find(r->server);
    if (it == g_->slots.end() && g_->joining) {
      // An agent the cluster cannot take is told why and left out: the others still join.
      if (auto why = g_->opts.join_problem ? g_->opts.join_problem(r->server, r->gpu_type) : std::string{};
          !why.empty()) {
        g_->join_refused[r->server] = why;
        g_->registered_cv.notify_all();
        return close("may not join: " + why);
      }
      // A live inventory: the machine joins with what it has; its id comes at the start.
      gateway::impl::server_slot joined;
      joined.id = -1;
      joined.gpu_type = r->gpu_type;
      joined.gpus = static_cast<int>(r->gpus);
      joined.pool = r->pool;
      it = g_->slots.emplace(r->server, std::move(joined)).first;
      g_->join_order.push_back(r->server);
    }
    if (it == g_->slots.end()) {
      std::string known;
      for (auto& [name, s] : g_->slots) known += (known.empty() ? "" : ", ") + name;
      return close(fmt::format("unknown server '{}' (this cluster has: {}{})", r->server, known,
                               g_->opts.join ? "; a training machine may join once the run has started" : ""));
    }
    auto& slot = it->second;
    if (r->gpu_type != slot.gpu_type || static_cast<int>(r->gpus) != slot.gpus || r->pool != slot.pool)
      return close(fmt::format("server '{}' is configured as {} x {} ({}), the agent says {} x {} ({})", r->server,
                               slot.gpus, slot.gpu_type, pool_name(slot.pool), r->gpus, r->gpu_type,
                               pool_name(r->pool)));
    replaced = slot.agent.lock();
    // The same agent process on a new connection (its old one not yet seen to close) takes
    // its name back; another process does not while the name's holder is heard, and is told
    // so by code: it stops the workers it runs under that name (they are not the scheduler's).
    const bool same_process = r->instance && !r->instance->empty() && replaced && replaced->instance_ == *r->instance;
    if (replaced && replaced.get() != this && !same_process && replaced->silent_for_s() < g_->opts.name_held_s &&
        !replaced->peer_closed()) {
      audit("register", r->server, "refused: held by a connected agent");
      return close(fmt::format("server '{}' is held by a connected agent ({}, heard {:.1f} s ago): a second agent "
                               "may not register under its name",
                               r->server, replaced->peer(), replaced->silent_for_s()),
                   "name_held");
    }
    instance_ = r->instance.value_or("");
    slot.agent = shared_from_this();
    returning = slot.registered;
    slot.registered = true;
    slot.address = r->address.value_or(address_);
    slot.agent_version = r->version.value_or("");
    ++slot.registrations;
    server_id_ = slot.id;
    backlog.swap(slot.backlog);
    launches_seen_ = slot.launches;
    // A launched worker neither listed nor still to be sent will report nothing: its record goes.
    if (returning) {
      std::set<std::pair<uint32_t, uint32_t>> there;
      for (auto& w : r->workers) there.emplace(static_cast<uint32_t>(w.job_id), w.rank);
      for (auto& m : backlog)
        if (auto* l = std::get_if<wire::launch>(&m)) there.emplace(static_cast<uint32_t>(l->job_id), l->rank);
      std::erase_if(slot.generations, [&](const auto& e) { return !there.count(e.first); });
    }
    if (!returning && g_->opts.hold_found_workers) slot.listed = r->workers;
    else if (!returning && g_->opts.stop_found_workers)
      for (auto& w : r->workers) {
        if (w.exit_code) continue;  // nothing to stop: its exit follows
        slot.found.emplace(static_cast<uint32_t>(w.job_id), w.rank);
        stop_jobs.insert(static_cast<uint32_t>(w.job_id));
      }
  }
  // What runs there once the kept launches are sent; reconciled at the first heartbeat, when
  // the exits the agent kept while away have been passed on (it sends them before).
  if (returning) {
    reconcile_ = std::vector<std::pair<uint32_t, uint32_t>>{};
    for (auto& w : r->workers)
      if (!w.exit_code) reconcile_->emplace_back(static_cast<uint32_t>(w.job_id), w.rank);
    for (auto& m : backlog)
      if (auto* l = std::get_if<wire::launch>(&m)) reconcile_->emplace_back(static_cast<uint32_t>(l->job_id), l->rank);
  }
  name_ = r->server;
  stage_ = stage::agent;
  heard();  // from now on silent for the detection grace at most
  g_->registered_cv.notify_all();
  if (replaced && replaced.get() != this) replaced->close("replaced by a new connection of the same agent");
  g_->log(fmt::format("{}: registered server {} ({} x {}, {}), running {} workers; {} kept messages sent", peer_,
                      r->server, r->gpus, r->gpu_type, pool_name(r->pool), r->workers.size(), backlog.size()));
  audit("register", r->server, "ok");
  for (auto& m : backlog) send(m);
  if (stop_jobs.empty()) return;
  std::string jobs;
  for (auto j : stop_jobs) jobs += (jobs.empty() ? "" : ", ") + std::to_string(j);
  g_->log(fmt::format("{}: its {} workers (jobs {}) are from before this serve started: stopped", peer_,
                      r->workers.size(), jobs));
  for (auto j : stop_jobs) send(wire::stop{j, g_->opts.stop_grace_s});
}

void session::on_agent(const wire::message& msg) {
  if (lapsed(wire::type_of(msg))) return;
  if (auto* h = std::get_if<wire::heartbeat>(&msg)) {
    if (reconcile_) reconciled();
    // Answered, so that the agent can tell a scheduler it no longer hears (fencing).
    send(wire::heartbeat{h->seq});
    return;
  }
  if (auto* p = std::get_if<wire::progress>(&msg)) {
    if (stale(p->job_id, p->rank, p->generation, false)) return;
    g_->with_router([&](worker_router& r) {
      if (r.progress) r.progress(server_id_, static_cast<uint32_t>(p->job_id), p->rank, p->work_done);
    });
    return;
  }
  if (auto* e = std::get_if<wire::exit_>(&msg)) {
    if (stale(e->job_id, e->rank, e->generation, true)) {
      // Its successor runs (or waits to) there: that one's exit is the rank's, not this one.
      g_->log(fmt::format("{}: job {} rank {} of generation {} exited (code {}, signal {}): a worker of an earlier "
                          "launch, its report dropped",
                          peer_, e->job_id, e->rank, *e->generation, e->code, e->signal));
      return;
    }
    if (reconcile_)  // ended since it registered: no longer running there
      std::erase(*reconcile_, std::pair<uint32_t, uint32_t>{static_cast<uint32_t>(e->job_id), e->rank});
    g_->log(fmt::format("{}: job {} rank {} exited (code {}, signal {})", peer_, e->job_id, e->rank, e->code,
                        e->signal));
    // After the line above: a serve waiting for this exit logs only after it. One locked
    // section, so an exit is either passed on or kept for the router, never both.
    bool routed = false, kept = false;
    {
      std::lock_guard lock(g_->m);
      auto& slot = g_->slots.at(name_);
      std::pair<uint32_t, uint32_t> worker{static_cast<uint32_t>(e->job_id), e->rank};
      if (slot.found.erase(worker) && slot.found.empty()) g_->registered_cv.notify_all();
      // Still listed, as exited: a job whose workers all ended while the scheduler was away
      // is adopted and its exits passed on (plan_adoption), not run again.
      bool was_listed = false;
      for (auto& w : slot.listed)
        if (w.job_id == e->job_id && w.rank == e->rank) {
          w.exit_code = e->code;
          w.exit_signal = e->signal;
          was_listed = true;
        }
      if (g_->router.exit) {
        // Shown by `aryl show` and kept in the journal: one line, of a bounded length, cut
        // between UTF-8 characters (the journal's JSON takes no other).
        std::string_view said = e->reason ? std::string_view(*e->reason) : std::string_view();
        size_t cut = std::min(said.size(), max_exit_reason_bytes);
        while (cut < said.size() && cut > 0 && (static_cast<unsigned char>(said[cut]) & 0xC0) == 0x80) --cut;
        auto reason = escape_control(said.substr(0, cut));
        g_->router.exit(server_id_, worker.first, worker.second, e->code, static_cast<int>(e->signal), reason);
        routed = true;
      } else if (was_listed || slot.held.count(worker)) {
        g_->early_exits.emplace_back(server_id_, worker.first, worker.second, e->code, static_cast<int>(e->signal));
        kept = true;
      }
    }
    if (!routed && !kept) g_->log(fmt::format("{}: no run in progress: exit of job {} dropped", peer_, e->job_id));
    return;
  }
  if (auto* c = std::get_if<wire::log_chunk>(&msg)) return relay_log(*c);
  if (std::holds_alternative<wire::bye>(msg)) return close("the agent said bye");
  close(fmt::format("unexpected message '{}' from an agent", wire::type_of(msg)));
}

bool session::stale(uint64_t job, uint32_t rank, const std::optional<uint64_t>& generation, bool last) {
  if (!generation) return false;
  std::lock_guard lock(g_->m);
  auto& gens = g_->slots.at(name_).generations;
  auto it = gens.find({static_cast<uint32_t>(job), rank});
  if (it == gens.end()) return false;  // not launched by this serve (adopted, found): no successor
  if (it->second != *generation) return true;
  if (last) gens.erase(it);
  return false;
}

void session::reconciled() {
  std::vector<uint32_t> jobs, ranks;
  for (auto& [j, r] : *reconcile_) {
    jobs.push_back(j);
    ranks.push_back(r);
  }
  reconcile_.reset();
  bool routed = false;
  g_->with_router([&](worker_router& r) {
    if (!r.reconcile || !r.back) return;
    r.reconcile(server_id_, jobs, ranks, launches_seen_);
    r.back(server_id_);
    routed = true;
  });
  if (routed) g_->log(fmt::format("{}: back; reconciled with the {} workers it still runs", peer_, jobs.size()));
}

void session::on_client(const wire::message& msg) {
  if (lapsed(wire::type_of(msg))) return;
  // Status, show, submit, cancel and node orders are answered when the scheduler's answer
  // is in (answered); meanwhile nothing more is read.
  if (auto* q = std::get_if<wire::status_request>(&msg)) {
    if (!allowed(action::status, "")) return;
    awaiting_answer_ = true;
    using kind = gateway::impl::status_wait::kind;
    return g_->ask_status({shared_from_this(), q->all.value_or(false) ? kind::status_all : kind::status, 0});
  }
  if (auto* q = std::get_if<wire::show_request>(&msg)) {
    auto job = task_index(q->job_id, q->array_task);
    if (!job) return;
    if (!allowed_on_job(action::show, *job)) return;
    awaiting_answer_ = true;
    return g_->ask_status({shared_from_this(), gateway::impl::status_wait::kind::show, *job});
  }
  if (auto* q = std::get_if<wire::show_node_request>(&msg)) {
    if (!allowed(action::show_node, q->server)) return;
    awaiting_answer_ = true;
    return g_->ask_status({shared_from_this(), gateway::impl::status_wait::kind::show_node, 0, q->server});
  }
  if (auto* q = std::get_if<wire::history_request>(&msg)) {
    if (!allowed(action::history, "")) return;
    awaiting_answer_ = true;
    return g_->history_for(shared_from_this(), *q);
  }
  if (auto* q = std::get_if<wire::logs_request>(&msg)) {
    auto job = task_index(q->job_id, q->array_task);
    if (!job || !allowed_on_job(action::logs, *job)) return;
    return ask_log({*job, q->rank, q->offset});
  }
  if (auto* q = std::get_if<wire::node_request>(&msg)) {
    if (!allowed(action::node_order, q->server)) return;
    pending_audit_ = entry(std::string(action_name(action::node_order)) + " " + q->action, q->server);
    awaiting_answer_ = true;
    return g_->node_for(shared_from_this(), *q);
  }
  if (auto* d = std::get_if<wire::demand>(&msg)) {
    if (!allowed(action::demand, "")) return;
    bool taken = false;
    g_->with_router([&](worker_router& r) {
      if (!r.demand) return;
      r.demand(static_cast<int>(std::min<uint32_t>(d->servers_needed, 1'000'000)));
      taken = true;
    });
    audit("demand", fmt::format("{} servers", d->servers_needed), taken ? "ok" : "refused: no run in progress");
    if (!taken) return close("no run in progress");
    g_->log(fmt::format("{}: inference demand {} servers", peer_, d->servers_needed));
    return;
  }
  if (auto* j = std::get_if<wire::submit>(&msg)) {
    if (find_control(j->name) != std::string::npos) {
      auto why = "submit: job name '" + j->name + "' holds " + describe_control(j->name);
      g_->log(fmt::format("{}: submit refused: {}", peer_, why));
      return close(why);
    }
    if (auto bad = j->key ? submit_key_problem(*j->key) : std::string(); !bad.empty()) {
      auto why = "submit: key: " + bad;
      g_->log(fmt::format("{}: submit refused: {}", peer_, why));
      return close(why);
    }
    if (!allowed(action::submit, j->name)) return;
    auto choice = choose_tenant(g_->opts.tenants, who_, j->tenant, j->priority.value_or(0));
    if (choice.refusal.empty() && !who_.cluster_token && who_.name == "root" && !g_->opts.allow_root_jobs)
      choice.refusal = "jobs as root are refused: set live.allow_root_jobs (and agent --allow-root-jobs)";
    if (!choice.refusal.empty()) {
      g_->log(fmt::format("{}: refused: {}", peer_, choice.refusal));
      audit("submit", j->name, "refused: " + choice.refusal);
      return send(wire::error{escape_control(choice.refusal)});
    }
    auto spec = spec_of(*j, g_->opts.default_estimate_s);
    spec.tenant = choice.tenant.value_or("");
    if (!who_.cluster_token) spec.user = who_.name;  // the job runs as its submitter
    pending_audit_ = entry("submit", j->name);
    awaiting_answer_ = true;
    return g_->submit_for(shared_from_this(), std::move(spec));
  }
  if (auto* x = std::get_if<wire::cancel>(&msg)) {
    if (!allowed_on_job(action::cancel, x->job_id)) return;
    pending_audit_ = entry("cancel", fmt::format("job-{}", x->job_id));
    awaiting_answer_ = true;
    return g_->cancel_for(shared_from_this(), x->job_id);
  }
  if (auto* q = std::get_if<wire::job_request>(&msg)) return on_job_request(*q);
  if (auto* t = std::get_if<wire::token_request>(&msg)) {
    if (!allowed(action::tokens, t->name)) return;
    return on_tokens(*t);
  }
  // A client's bye is its normal end: no log line, no error frame.
  if (std::holds_alternative<wire::bye>(msg)) return quiet_close();
  close(fmt::format("a client cannot send '{}'", wire::type_of(msg)));
}

std::optional<uint64_t> session::task_index(uint64_t job, std::optional<uint32_t> task) {
  if (!task) return job;
  auto index = g_->opts.book && job <= UINT32_MAX ? g_->opts.book->task_index(static_cast<uint32_t>(job), *task)
                                                  : std::nullopt;
  if (!index) close(fmt::format("job {}_{}: no such array task", job, *task));
  return index;
}

void session::on_job_request(const wire::job_request& q) {
  const auto a = q.action == "hold"      ? action::hold
                 : q.action == "release" ? action::release
                 : q.action == "update"  ? action::update
                 : q.action == "cancel"  ? action::cancel
                                         : action::register_node;
  if (a == action::register_node)
    return close(fmt::format("job_request: action '{}': not hold, release, update or cancel", q.action));
  if (!allowed_on_job(a, q.job_id)) return;
  pending_audit_ = entry(q.action, q.array_task ? fmt::format("job-{}_{}", q.job_id, *q.array_task)
                                                 : fmt::format("job-{}", q.job_id));
  awaiting_answer_ = true;
  g_->job_for(shared_from_this(), q, who_.cluster_token ? std::string() : who_.name);
}

void session::on_tokens(const wire::token_request& q) {
  auto act = fmt::format("token {}", q.action);
  auto a = answer_tokens(g_->opts.identities.get(), q);
  if (!a.reply) {
    audit(act, q.name, "refused: " + a.refusal);
    return send(wire::error{escape_control(a.refusal)});
  }
  if (q.action != "list") {
    audit(act, q.name, "ok");
    g_->log(fmt::format("{}: {}", peer_, a.reply->text));
  }
  send(*a.reply);
}

audit_entry session::entry(const std::string& act, const std::string& target) const {
  return {who_.name, std::string(role_name(who_.who)), endpoint_, act, target, ""};
}

void session::audit(const std::string& act, const std::string& target, const std::string& result) {
  auto e = entry(act, target);
  e.result = result;
  g_->audit(e);
}

void session::audit(const std::string& identity_name, const std::string& role_text, const std::string& act,
                    const std::string& target, const std::string& result) {
  g_->audit({identity_name, role_text, endpoint_, act, target, result});
}

bool session::allowed(action a, const std::string& target, const std::string& owner, bool known) {
  auto why = refusal(who_, a, owner, known);
  if (why.empty()) return true;
  g_->log(fmt::format("{}: refused: {}", peer_, why));
  audit(std::string(action_name(a)), target, "refused: " + why);
  send(wire::error{escape_control(why)});
  return false;
}

bool session::allowed_on_job(action a, uint64_t job) {
  std::optional<std::string> owner;
  if (g_->opts.book && job <= UINT32_MAX) owner = g_->opts.book->owner(static_cast<uint32_t>(job));
  return allowed(a, fmt::format("job-{}", job), owner.value_or(""), owner.has_value());
}

bool session::lapsed(std::string_view what) {
  if (who_.cluster_token || !g_->opts.identities) return false;
  auto version = g_->opts.identities->version();
  if (version == id_version_) return false;
  auto why = credential_lapsed(*g_->opts.identities, who_, credential_hash_);
  if (why.empty()) {
    id_version_ = version;
    return false;
  }
  audit(std::string(what), "", "refused: " + why);
  close(why);
  return true;
}

void session::ask_log(const wire::logs_request& q) {
  auto what = fmt::format("job {} rank {}", q.job_id, q.rank);
  auto server = g_->logs.server_of(q.job_id, q.rank);
  if (server.empty()) return close(what + ": no worker of it was launched");
  std::shared_ptr<session> agent;
  {
    std::lock_guard lock(g_->m);
    agent = g_->slots.at(server).agent.lock();
  }
  if (!agent) return close(what + ": its log is on " + server + ", whose agent is not connected");
  // Held by its request, as a status wait holds its asker: a client paused for its answers
  // has no read pending to hold it.
  auto me = shared_from_this();
  ++logs_asked_;
  auto fetch = g_->logs.ask(q, server,
                            {[me](const wire::message& m) { me->log_answered(m); },
                             [me](const std::string& why) { me->close(why); },
                             [me] { return !me->closing_; }});
  if (fetch) agent->send(*fetch);  // else it waits for one of that agent's to be answered
}

void session::log_answered(const wire::message& m) {
  send(m);
  if (logs_asked_-- < log_relay::max_requests_per_client) return;
  // Not from within the agent's handler that answers: the client's frames are handled on
  // their own turn.
  asio::post(g_->io, [self = shared_from_this()] { self->drain(); });
}

void session::relay_log(const wire::log_chunk& c) {
  auto next = g_->logs.answered(name_, c, [book = g_->opts.book](uint32_t job) { return !(book && book->has_ended(job)); });
  if (next) send(*next);
}

} // namespace aryl::live
