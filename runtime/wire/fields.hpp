#pragma once
/// Private to the codec: the body fields of each message, in wire order, described once
/// for both directions (as CAF's inspect()). `a(key, member)` writes or reads one field;
/// std::optional members and maps may be absent on the wire, every other one is required.
#include <concepts>
#include <type_traits>

#include "runtime/wire/messages.hpp"

namespace aryl::wire::detail {

/// T is U or const U: one description serves the encoder (const) and the decoder.
template <class T, class U>
concept is = std::same_as<std::remove_const_t<T>, U>;

template <class A, is<hello> T>
void fields(A& a, T& m) {
  a("role", m.role);
  a("token", m.token);
  a("name", m.name);
}

template <class A, is<hello_ok> T>
void fields(A& a, T& m) {
  a("identity", m.identity);
  a("role", m.role);
}

template <class A, is<running_worker> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("gpus", m.gpus);
  a("pid", m.pid);
  a("exit_code", m.exit_code);
  a("exit_signal", m.exit_signal);
  a("generation", m.generation);
}

template <class A, is<register_> T>
void fields(A& a, T& m) {
  a("server", m.server);
  a("gpu_type", m.gpu_type);
  a("gpus", m.gpus);
  a("pool", m.pool);
  a("workers", m.workers);
  a("address", m.address);
  a("instance", m.instance);
  a("version", m.version);
}

template <class A, is<heartbeat> T>
void fields(A& a, T& m) {
  a("seq", m.seq);
}

template <class A, is<launch> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("world_size", m.world_size);
  a("gpus", m.gpus);
  a("checkpoint_dir", m.checkpoint_dir);
  a("rendezvous", m.rendezvous);
  a("command", m.command);
  a("env", m.env);
  a("work_s", m.work_s);
  a("rate", m.rate);
  a("user", m.user);
  a("generation", m.generation);
}

template <class A, is<stop> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("grace_s", m.grace_s);
}

template <class A, is<progress> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("work_done", m.work_done);
  a("step", m.step);
  a("generation", m.generation);
}

template <class A, is<exit_> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("code", m.code);
  a("signal", m.signal);
  a("generation", m.generation);
  a("reason", m.reason);
}

template <class A, is<submit> T>
void fields(A& a, T& m) {
  a("name", m.name);
  a("gpus", m.gpus);
  a("min_workers", m.min_workers);
  a("max_workers", m.max_workers);
  a("command", m.command);
  a("expected_duration_s", m.expected_duration_s);
  a("gpu_type", m.gpu_type);
  a("tenant", m.tenant);
  a("priority", m.priority);
  a("time_limit_s", m.time_limit_s);
  a("max_retries", m.max_retries);
  a("after", m.after);
  a("array", m.array);
  a("hold", m.hold);
  a("key", m.key);
}

template <class A, is<submit_ok> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("note", m.note);
}

template <class A, is<cancel> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
}

template <class A, is<status_request> T>
void fields(A& a, T& m) {
  a("all", m.all);
}

template <class A, is<job_info> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("name", m.name);
  a("state", m.state);
  a("workers", m.workers);
  a("reason", m.reason);
  a("gpus", m.gpus);
  a("min_workers", m.min_workers);
  a("max_workers", m.max_workers);
  a("gpu_type", m.gpu_type);
  a("run_s", m.run_s);
  a("servers", m.servers);
  a("predicted", m.predicted);
  a("tenant", m.tenant);
  a("outcome", m.outcome);
  a("exits", m.exits);
  a("user", m.user);
  a("held", m.held);
  a("array_job", m.array_job);
  a("array_task", m.array_task);
}

template <class A, is<server_info> T>
void fields(A& a, T& m) {
  a("name", m.name);
  a("gpu_type", m.gpu_type);
  a("gpus", m.gpus);
  a("free", m.free);
  a("pool", m.pool);
  a("state", m.state);
  a("hold", m.hold);
  a("reason", m.reason);
}

template <class A, is<loan_info> T>
void fields(A& a, T& m) {
  a("server", m.server);
  a("state", m.state);
}

template <class A, is<tenant_info> T>
void fields(A& a, T& m) {
  a("name", m.name);
  a("quota", m.quota);
  a("in_use", m.in_use);
  a("lent", m.lent);
  a("borrowed", m.borrowed);
  a("queued", m.queued);
}

template <class A, is<status_reply> T>
void fields(A& a, T& m) {
  a("jobs", m.jobs);
  a("servers", m.servers);
  a("loans", m.loans);
  a("tenants", m.tenants);
}

template <class A, is<demand> T>
void fields(A& a, T& m) {
  a("servers_needed", m.servers_needed);
}

template <class A, is<error> T>
void fields(A& a, T& m) {
  a("reason", m.reason);
  a("code", m.code);
}

template <class A, is<bye> T>
void fields(A&, T&) {}

template <class A, is<show_request> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("array_task", m.array_task);
}

template <class A, is<history_entry> T>
void fields(A& a, T& m) {
  a("t_s", m.t_s);
  a("event", m.event);
  a("detail", m.detail);
  a("why", m.why);
}

template <class A, is<attempt_info> T>
void fields(A& a, T& m) {
  a("start_s", m.start_s);
  a("end_s", m.end_s);
  a("outcome", m.outcome);
  a("exits", m.exits);
  a("why", m.why);
}

template <class A, is<show_reply> T>
void fields(A& a, T& m) {
  a("job", m.job);
  a("command", m.command);
  a("expected_duration_s", m.expected_duration_s);
  a("submit_s", m.submit_s);
  a("end_s", m.end_s);
  a("history", m.history);
  a("time_limit_s", m.time_limit_s);
  a("max_retries", m.max_retries);
  a("attempts", m.attempts);
  a("after", m.after);
}

template <class A, is<shutdown> T>
void fields(A& a, T& m) {
  a("reason", m.reason);
}

template <class A, is<logs_request> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("offset", m.offset);
  a("array_task", m.array_task);
}

template <class A, is<log_fetch> T>
void fields(A& a, T& m) {
  a("request", m.request);
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("offset", m.offset);
  a("max_bytes", m.max_bytes);
}

template <class A, is<log_chunk> T>
void fields(A& a, T& m) {
  a("request", m.request);
  a("text", m.text);
  a("size", m.size);
  a("error", m.error);
}

template <class A, is<logs_reply> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("rank", m.rank);
  a("server", m.server);
  a("offset", m.offset);
  a("text", m.text);
  a("size", m.size);
  a("active", m.active);
}

template <class A, is<node_request> T>
void fields(A& a, T& m) {
  a("server", m.server);
  a("action", m.action);
  a("reason", m.reason);
  a("now", m.now);
}

template <class A, is<node_reply> T>
void fields(A& a, T& m) {
  a("server", m.server);
  a("text", m.text);
}

template <class A, is<token_request> T>
void fields(A& a, T& m) {
  a("action", m.action);
  a("name", m.name);
  a("role", m.role);
  a("gpu_type", m.gpu_type);
  a("pool", m.pool);
}

template <class A, is<token_reply> T>
void fields(A& a, T& m) {
  a("text", m.text);
  a("token", m.token);
}

template <class A, is<show_node_request> T>
void fields(A& a, T& m) {
  a("server", m.server);
}

template <class A, is<node_job> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("name", m.name);
  a("workers", m.workers);
  a("ranks", m.ranks);
}

template <class A, is<show_node_reply> T>
void fields(A& a, T& m) {
  a("node", m.node);
  a("mode", m.mode);
  a("jobs", m.jobs);
  a("heard_s", m.heard_s);
  a("address", m.address);
  a("agent_version", m.agent_version);
}

template <class A, is<job_request> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("array_task", m.array_task);
  a("action", m.action);
  a("priority", m.priority);
  a("time_limit_s", m.time_limit_s);
  a("min_workers", m.min_workers);
  a("max_workers", m.max_workers);
  a("expected_duration_s", m.expected_duration_s);
  a("after", m.after);
}

template <class A, is<job_reply> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("text", m.text);
}

template <class A, is<history_request> T>
void fields(A& a, T& m) {
  a("since_us", m.since_us);
  a("until_us", m.until_us);
  a("users", m.users);
  a("tenants", m.tenants);
  a("outcomes", m.outcomes);
  a("after", m.after);
  a("limit", m.limit);
}

template <class A, is<history_job> T>
void fields(A& a, T& m) {
  a("job_id", m.job_id);
  a("name", m.name);
  a("user", m.user);
  a("tenant", m.tenant);
  a("state", m.state);
  a("outcome", m.outcome);
  a("submit_us", m.submit_us);
  a("start_us", m.start_us);
  a("end_us", m.end_us);
  a("wait_s", m.wait_s);
  a("gpus", m.gpus);
  a("exits", m.exits);
  a("attempts", m.attempts);
}

template <class A, is<history_reply> T>
void fields(A& a, T& m) {
  a("jobs", m.jobs);
  a("next_after", m.next_after);
}

/// Wire names of enum values, indexed by the enum's value.
inline constexpr std::string_view peer_role_names[] = {"agent", "client"};
inline constexpr std::string_view pool_kind_names[] = {"training", "inference"};
inline constexpr std::string_view job_state_names[] = {"queued", "running", "done", "failed",
                                                       "cancelled"};
inline constexpr std::string_view loan_state_names[] = {"loaned", "reclaiming"};
inline constexpr std::string_view server_state_names[] = {"up", "unreachable", "lost"};

constexpr const auto& names_of(peer_role) { return peer_role_names; }
constexpr const auto& names_of(pool_kind) { return pool_kind_names; }
constexpr const auto& names_of(job_state) { return job_state_names; }
constexpr const auto& names_of(loan_state) { return loan_state_names; }
constexpr const auto& names_of(server_state) { return server_state_names; }

} // namespace aryl::wire::detail
