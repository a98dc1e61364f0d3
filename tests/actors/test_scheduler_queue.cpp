// Scheduler actor: holds, updates, dependencies and arrays of queued jobs
// (actors/scheduler_queue.cpp), through the messages live mode's clients send.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <variant>

#include "actors/admit_refusal.hpp"
#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

struct queue_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);

  /// Training servers t0..t{n-1} of `gpus` V100 each, fifo.
  scheduler_actor spawn_scheduler(int servers, int gpus = 8) {
    scheduler_setup s;
    s.policy = *find_policy("fifo");
    s.planner.placement = placement_mode::consolidated;
    s.type_names = {"V100"};
    s.params.type_speed = {1.0};
    s.params.restart_overhead_s = 0;
    std::vector<server_actor> handles;
    for (int i = 0; i < servers; ++i) {
      server_entry e;
      e.id = i;
      e.name = "t" + std::to_string(i);
      e.gpus = e.free = gpus;
      handles.push_back(sys->spawn(server_behavior, e.name, gpus, static_cast<int>(e.mode), recorder, nullptr));
      s.servers.push_back(e);
    }
    return sys->spawn(scheduler_behavior, s, handles, recorder, tb, throughput_model{});
  }
  static job_spec spec(int gpus, double duration, const std::string& after = "", bool held = false) {
    job_spec j;
    j.name = "j";
    j.gpus = j.min_workers = j.max_workers = gpus;
    j.duration_s = duration;
    j.after = after;
    j.held = held;
    return j;
  }
  template <class Answer, class... Ts>
  std::optional<Answer> ask(const scheduler_actor& s, Ts... xs) {
    auto answer = std::make_shared<std::optional<Answer>>();
    sys->spawn(
        [=](caf::event_based_actor* self, int) -> caf::behavior {
          self->request(s, caf::infinite, xs...).then([=](const Answer& a) { *answer = a; });
          return {};
        },
        0);
    drain();
    return *answer;
  }
  /// A client's submit: vetted, then admitted; the job's (or array's) id, or the refusal.
  std::variant<int64_t, std::string> submit(const scheduler_actor& s, const job_spec& j) {
    auto why = ask<std::string>(s, vet_atom::value, j);
    REQUIRE(why);
    if (!why->empty()) return *why;
    auto id = ask<int64_t>(s, admit_atom::value, j);
    REQUIRE(id);
    return *id;
  }
  uint32_t admit(const scheduler_actor& s, const job_spec& j) {
    auto id = submit(s, j);
    REQUIRE(std::holds_alternative<int64_t>(id));
    REQUIRE(std::get<int64_t>(id) >= 0);
    return static_cast<uint32_t>(std::get<int64_t>(id));
  }
  node_answer order(const scheduler_actor& s, job_order o) {
    auto a = ask<node_answer>(s, jobctl_atom::value, o);
    REQUIRE(a);
    return *a;
  }
  static job_order act(uint32_t job, const std::string& action) {
    job_order o;
    o.job = job;
    o.action = action;
    o.by = "alice";
    return o;
  }
  cluster_status status(const scheduler_actor& s) {
    auto st = ask<cluster_status>(s, status_atom::value);
    REQUIRE(st);
    return *st;
  }
  static const active_job* job(const cluster_status& st, uint32_t id) {
    for (auto& j : st.jobs)
      if (j.job == id) return &j;
    return nullptr;
  }
  /// The jobs started, in order (each once, at its first start).
  std::vector<uint32_t> starts() const {
    std::vector<uint32_t> out;
    for (auto& e : rec->events)
      if (e.event == "start") {
        auto id = static_cast<uint32_t>(std::stoul(e.detail.substr(4)));
        if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
      }
    return out;
  }
  const job_record* record(uint32_t id) const {
    for (auto& r : rec->jobs)
      if (r.index == id) return &r;
    return nullptr;
  }
  void run_out() {
    drain();
    while (step()) {
    }
  }
};

} // namespace

TEST_CASE_FIXTURE(queue_fixture, "a held job is passed over by every round, and its release puts it back where it was") {
  auto s = spawn_scheduler(1);
  auto r = admit(s, spec(8, 100));
  auto a = admit(s, spec(8, 100));
  auto b = admit(s, spec(8, 100));
  auto c = admit(s, spec(8, 100));
  CHECK(order(s, act(a, "hold")).ok);
  auto st = status(s);
  REQUIRE(job(st, a));
  CHECK(job(st, a)->held);
  CHECK(job(st, a)->reason == "held by alice");
  // A running job cannot be held; a job not held cannot be released.
  step();
  auto refused = order(s, act(r, "hold"));
  CHECK_FALSE(refused.ok);
  CHECK(refused.text.find("is running") != std::string::npos);
  CHECK_FALSE(order(s, act(b, "release")).ok);
  // r ends: b goes first, a stays held until released, then goes before c (submitted after it).
  while (starts().size() < 2 && step()) {
  }
  CHECK(starts() == std::vector<uint32_t>{r, b});
  CHECK(order(s, act(a, "release")).ok);
  run_out();
  CHECK(starts() == std::vector<uint32_t>{r, b, a, c});
  for (auto id : {r, a, b, c}) {
    REQUIRE(record(id));
    CHECK(record(id)->outcome == job_outcome::done);
  }
}

TEST_CASE_FIXTURE(queue_fixture, "an update of a pending job takes, and one that breaks a rule or comes late is refused") {
  auto s = spawn_scheduler(1);
  auto r = admit(s, spec(8, 100));
  auto e = admit(s, spec(4, 100));
  step();
  auto max_below_min = act(e, "update");
  max_below_min.min_workers = 4;
  max_below_min.max_workers = 2;
  auto a = order(s, max_below_min);
  CHECK_FALSE(a.ok);
  CHECK(a.text == fmt::format("job {}: --max-workers 2 is below --min-workers 4", e));
  auto grow = act(e, "update");
  grow.max_workers = 8;
  grow.min_workers = 2;
  grow.set_priority = true;
  grow.priority = 3;
  grow.time_limit_s = 3600;
  CHECK(order(s, grow).ok);
  auto st = status(s);
  REQUIRE(job(st, e));
  // Its minimum as the config's elastic floor has it (request, by default: its --gpus).
  CHECK(job(st, e)->min_workers == 4);
  CHECK(job(st, e)->max_workers == 8);
  auto late = act(r, "update");
  late.set_priority = true;
  late.priority = 1;
  a = order(s, late);
  CHECK_FALSE(a.ok);
  CHECK(a.text.find("has started") != std::string::npos);
  bool logged = false;
  for (auto& ev : rec->events) logged |= ev.event == "update" && ev.why == "updated by alice";
  CHECK(logged);
}

TEST_CASE_FIXTURE(queue_fixture, "a dependency chain runs in order, and a dependency never met ends its job so") {
  auto s = spawn_scheduler(2);
  auto a = admit(s, spec(8, 100));
  auto b = admit(s, spec(8, 100, std::to_string(a)));                     // afterok a
  auto c = admit(s, spec(8, 100, fmt::format("{}:any", b)));              // afterany b
  auto d = admit(s, spec(8, 100, fmt::format("{}:notok", a)));            // afternotok a: a ends done
  auto e = admit(s, spec(8, 100, fmt::format("{}:notok,{}:ok", c, a)));   // afternotok c: c ends done
  step();
  auto st = status(s);
  REQUIRE(job(st, b));
  CHECK(job(st, b)->reason == fmt::format("dependency (afterok:{})", a));
  // Two servers, yet only a runs: the others wait for it.
  CHECK(starts() == std::vector<uint32_t>{a});
  run_out();
  CHECK(starts() == std::vector<uint32_t>{a, b, c});
  REQUIRE(record(d));
  CHECK(record(d)->outcome == job_outcome::dependency_never_met);
  CHECK(record(d)->attempts.back().why ==
        fmt::format("its dependency afternotok:{} can never be met: job {} ended done", a, a));
  REQUIRE(record(e));
  CHECK(record(e)->outcome == job_outcome::dependency_never_met);
  REQUIRE(record(c));
  CHECK(record(c)->outcome == job_outcome::done);
}

TEST_CASE_FIXTURE(queue_fixture, "afterok of a cancelled job is never met, and afternotok of it is") {
  auto s = spawn_scheduler(1);
  auto a = admit(s, spec(8, 100, "", true));
  auto ok = admit(s, spec(8, 100, std::to_string(a)));
  auto notok = admit(s, spec(8, 50, fmt::format("{}:notok", a)));
  auto answer = ask<std::string>(s, cancel_atom::value, a);
  REQUIRE(answer);
  CHECK(answer->empty());
  run_out();
  REQUIRE(record(ok));
  CHECK(record(ok)->outcome == job_outcome::dependency_never_met);
  CHECK(record(ok)->attempts.back().why ==
        fmt::format("its dependency afterok:{} can never be met: job {} ended cancelled", a, a));
  REQUIRE(record(notok));
  CHECK(record(notok)->outcome == job_outcome::done);
  // Once ended, a submit that waits on it so is refused at once.
  auto late = submit(s, spec(8, 10, std::to_string(a)));
  REQUIRE(std::holds_alternative<std::string>(late));
  CHECK(std::get<std::string>(late) ==
        fmt::format("--after: afterok:{} can never be met: job {} ended other than done", a, a));
}

TEST_CASE_FIXTURE(queue_fixture, "a dependency on an unknown job, on itself or closing a cycle is refused") {
  auto s = spawn_scheduler(1);
  auto a = admit(s, spec(8, 100, "", true));
  auto b = admit(s, spec(8, 100, std::to_string(a)));
  auto c = admit(s, spec(8, 100, std::to_string(b)));
  auto unknown = submit(s, spec(8, 100, "99"));
  REQUIRE(std::holds_alternative<std::string>(unknown));
  CHECK(std::get<std::string>(unknown) == "--after: job 99: no such job");
  auto self_wait = act(a, "update");
  self_wait.set_after = true;
  self_wait.after = std::to_string(a);
  CHECK(order(s, self_wait).text == fmt::format("job {} cannot wait for itself", a));
  // a -> c closes a -> c -> b -> a.
  auto cycle = act(a, "update");
  cycle.set_after = true;
  cycle.after = std::to_string(c);
  auto refused = order(s, cycle);
  CHECK_FALSE(refused.ok);
  CHECK(refused.text.find("a cycle") != std::string::npos);
  auto malformed = submit(s, spec(8, 100, fmt::format("{}:maybe", a)));
  REQUIRE(std::holds_alternative<std::string>(malformed));
  CHECK(std::get<std::string>(malformed) ==
        fmt::format("after: '{}:maybe': give JOB, JOB:ok, JOB:any or JOB:notok", a));
}

TEST_CASE_FIXTURE(queue_fixture, "an array with %K never has more than K tasks queued or running, and all run") {
  auto s = spawn_scheduler(4);
  auto j = spec(1, 100);
  j.array = "0-9%3";
  auto id = admit(s, j);
  size_t most = 0;
  auto count = [&] {
    auto st = status(s);
    size_t running = 0, tasks = 0;
    for (auto& x : st.jobs) {
      if (x.array_job != static_cast<int64_t>(id)) continue;
      ++tasks;
      if (x.running) ++running;
      if (!x.running && x.reason.starts_with("array limit")) CHECK(x.reason == "array limit (at most 3 of its tasks at once)");
    }
    most = std::max(most, running);
    return tasks;
  };
  drain();
  CHECK(count() == 10);
  while (step()) count();
  CHECK(most == 3);
  size_t done = 0;
  for (auto& r : rec->jobs) done += r.outcome == job_outcome::done;
  CHECK(done == 10);
  // Tasks take indices from the array's id, in task order.
  CHECK(starts().front() == id);
}

TEST_CASE_FIXTURE(queue_fixture, "a task is named by its array and id, and cancelling the array ends every task") {
  auto s = spawn_scheduler(1);
  auto j = spec(8, 100);
  j.array = "1,3,5-7%2";
  auto id = admit(s, j);
  auto later = admit(s, spec(8, 10, std::to_string(id)));
  auto one = act(id, "cancel");
  one.task = 5;
  auto a = order(s, one);
  CHECK(a.ok);
  CHECK(a.text == fmt::format("cancelled job {}_5", id));
  one.task = 4;
  a = order(s, one);
  CHECK_FALSE(a.ok);
  CHECK(a.text == fmt::format("array {} has no task 4 (its tasks: 1,3,5-7)", id));
  auto why = ask<std::string>(s, cancel_atom::value, id);
  REQUIRE(why);
  CHECK(why->empty());
  run_out();
  size_t cancelled = 0;
  for (auto& r : rec->jobs) cancelled += r.outcome == job_outcome::cancelled;
  CHECK(cancelled == 5);
  // afterok of an array: of every task; one cancelled, so never met.
  REQUIRE(record(later));
  CHECK(record(later)->outcome == job_outcome::dependency_never_met);
}

TEST_CASE_FIXTURE(queue_fixture, "a restarted scheduler keeps ended tasks in their array: a dependency on it waits for them") {
  auto s = spawn_scheduler(1);
  // Array 0 of tasks 0 and 1, both ended before the restart (task 1 failed); job 2 waits for
  // the array (afterok: every task done), so it can never run.
  std::vector<saved_job> rows;
  for (uint32_t t = 0; t < 2; ++t) {
    saved_job row;
    row.spec = spec(8, 100);
    row.spec.index = row.record.index = t;
    row.spec.array_job = 0;
    row.spec.array_task = t;
    row.spec.array_count = 2;
    row.status = saved_status::ended;
    row.record.outcome = t == 0 ? job_outcome::done : job_outcome::failed;
    rows.push_back(row);
  }
  saved_job waiter;
  waiter.spec = spec(8, 100, "0");
  waiter.spec.index = waiter.record.index = 2;
  waiter.status = saved_status::queued;
  // Taken first: the array's ended tasks must be known before it.
  rows.insert(rows.begin(), waiter);
  auto restored = ask<int>(s, restore_atom::value, rows);
  REQUIRE(restored);
  CHECK(*restored == 3);
  run_out();
  CHECK(starts().empty());
  REQUIRE(record(2));
  CHECK(record(2)->outcome == job_outcome::dependency_never_met);
  CHECK(record(2)->attempts.back().why == "its dependency afterok:1 can never be met: job 1 ended failed");
  // The array's id still names the array.
  auto why = ask<std::string>(s, cancel_atom::value, uint32_t{0});
  REQUIRE(why);
  CHECK(*why == "array 0 (j) has already ended");
}

TEST_CASE_FIXTURE(queue_fixture, "a submit repeated with its key gets the first one's id and no second job, "
                                 "also after a restart, and another user's key is their own") {
  auto s = spawn_scheduler(1);
  auto keyed = [](const std::string& user, const std::string& key, const std::string& array = "") {
    auto j = spec(8, 100);
    j.user = user;
    j.key = key;
    j.array = array;
    return j;
  };
  // A repeat is answered as one (below every refusal), naming the first's id.
  auto repeat_of = [&](const job_spec& j) {
    auto id = submit(s, j);
    REQUIRE(std::holds_alternative<int64_t>(id));
    return repeated_job(std::get<int64_t>(id));
  };
  auto a = admit(s, keyed("alice", "k1"));
  auto b = admit(s, spec(8, 100));
  CHECK(repeat_of(keyed("alice", "k1")) == a);
  auto other = admit(s, keyed("bob", "k1"));
  CHECK(other != a);
  auto arr = admit(s, keyed("alice", "sweep", "0-2"));
  CHECK(repeat_of(keyed("alice", "sweep", "0-2")) == arr);
  CHECK(repeat_of(keyed("alice", "sweep")) == arr);  // other flags: still the first's
  run_out();
  // a, b, bob's job and the array's 3 tasks: 6 jobs, each run once.
  CHECK(rec->jobs.size() == 6);
  size_t resubmits = 0;
  for (auto& e : rec->events) resubmits += e.event == "resubmit";
  CHECK(resubmits == 3);
  (void)b;

  // A restarted scheduler knows the keys its journal has, of ended jobs too.
  auto t = spawn_scheduler(1);
  saved_job row;
  row.spec = keyed("alice", "k1");
  row.spec.index = row.record.index = 5;
  row.status = saved_status::ended;
  row.record.outcome = job_outcome::done;
  auto restored = ask<int>(t, restore_atom::value, std::vector<saved_job>{row});
  REQUIRE(restored);
  auto again = submit(t, keyed("alice", "k1"));
  REQUIRE(std::holds_alternative<int64_t>(again));
  CHECK(repeated_job(std::get<int64_t>(again)) == 5u);
  CHECK(admit(t, keyed("alice", "k2")) != 5);
}
