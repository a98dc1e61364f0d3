// The journal of `aryl serve --state` as the actors use it: a client's submit is answered
// only once the journal holds it, and ended jobs' rows are folded every N ends.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>

#include "actors/admit_refusal.hpp"
#include "actors/journal.hpp"
#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "solvers/input_error.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

/// Stands in for the SQLite journal: what it was told, in order, and what it holds.
struct recording_sink : state_sink {
  std::vector<std::string> calls;
  std::map<uint32_t, saved_job> rows;
  uint32_t next_index = 0;

  void put_job(const saved_job& j) override {
    calls.push_back("job " + std::to_string(j.spec.index) + " " + std::string(to_string(j.status)));
    rows[j.spec.index] = j;
  }
  void put_admitted(const saved_job& j, uint32_t next) override {
    calls.push_back("admitted " + std::to_string(j.spec.index) + " next " + std::to_string(next));
    rows[j.spec.index] = j;
    next_index = next;
  }
  size_t compact() override {
    calls.push_back("compact");
    return 0;
  }
  void put_progress(const std::vector<std::pair<uint32_t, double>>&) override {}
  void put_server_mode(const std::string&, const std::string&) override {}
  void put_next_index(uint32_t next) override { next_index = next; }
  void put_measures(const run_measures&) override {}
  void put_tenants(const std::vector<saved_tenant>&) override {}
  void put_joined(const saved_machine& m) override { calls.push_back("joined " + m.name); }
};

/// What a client learnt, and what the journal held when it learnt it.
struct answer {
  int64_t id = -2;
  bool row_journaled = false;
  uint32_t next_journaled = 0;
};

/// A client's submit, as the live driver asks it.
void submitting_client(caf::event_based_actor* self, scheduler_actor scheduler, job_spec job,
                       std::shared_ptr<recording_sink> sink, std::shared_ptr<answer> out) {
  self->request(scheduler, caf::infinite, admit_atom::value, std::move(job)).then([=](int64_t id) {
    out->id = id;
    auto job = id >= 0 ? std::optional<uint32_t>(static_cast<uint32_t>(id)) : repeated_job(id);
    out->row_journaled = job && sink->rows.count(*job) > 0;
    out->next_journaled = sink->next_index;
  });
}

struct journal_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);
  std::shared_ptr<recording_sink> sink = std::make_shared<recording_sink>();

  journal_actor spawn_journal(uint32_t compact_every) {
    return sys->spawn(journal_behavior, sink, recorder, std::chrono::milliseconds(2000), compact_every);
  }
  /// A journal that takes every write and never answers an admit. (The unused int: CAF 0.17
  /// binds a null reference for a function actor spawned without arguments.)
  journal_actor spawn_silent_journal() {
    return sys->spawn([](journal_actor::pointer, int) -> journal_actor::behavior_type {
      return {
          [](jjob_atom, const saved_job&) {},
          [](jadmit_atom, const saved_job&, uint32_t) -> caf::result<uint32_t> { return caf::skip; },
          [](jprogress_atom, uint32_t, double) {},
          [](jserver_atom, const std::string&, const std::string&) {},
          [](jmeasures_atom, const run_measures&) {},
          [](jtenants_atom, const std::vector<saved_tenant>&) {},
          [](jflush_atom) {},
          [](jretry_atom) {},
          [](jjoined_atom, const saved_machine&) {},
          [](jaudit_atom, const std::string&) {},
          [](jadmits_atom, const std::vector<saved_job>&, uint32_t) -> uint32_t { return 0; },
      };
    }, 0);
  }
  /// One 8-GPU training server; trace jobs 0..first_free-1, clients' jobs numbered after.
  scheduler_actor spawn_scheduler(journal_actor journal, uint32_t first_free) {
    scheduler_setup s;
    s.policy = *find_policy("fifo");
    s.type_names = {"V100"};
    s.params.type_speed = {1.0};
    s.first_free_index = first_free;
    s.journal = journal;
    server_entry e;
    e.name = "t0";
    e.gpus = e.free = 8;
    s.servers.push_back(e);
    std::vector<server_actor> servers{sys->spawn(server_behavior, e.name, 8, static_cast<int>(e.mode), recorder, nullptr)};
    return sys->spawn(scheduler_behavior, s, servers, recorder, tb, throughput_model{});
  }
  std::shared_ptr<answer> submit(const scheduler_actor& s, const std::string& key = "") {
    job_spec j;
    j.key = key;
    j.name = "late";
    j.gpus = j.min_workers = j.max_workers = 4;
    j.duration_s = 100;
    auto out = std::make_shared<answer>();
    sys->spawn(submitting_client, s, j, sink, out);
    return out;
  }
  static saved_job ended(uint32_t index) {
    saved_job j;
    j.spec.index = index;
    j.status = saved_status::ended;
    return j;
  }
};

} // namespace

TEST_CASE_FIXTURE(journal_fixture, "a client's submit is answered only once the journal holds the job and the id counter") {
  auto s = spawn_scheduler(spawn_journal(0), 5);
  auto got = submit(s);
  drain();
  // Ledger: job 5 queued (its round waits for the clock); the journal holds it, counter 6.
  CHECK(got->id == 5);
  CHECK(got->row_journaled);
  CHECK(got->next_journaled == 6);
  // One transaction for both: a kill between two writes cannot keep the id without the job.
  REQUIRE_FALSE(sink->calls.empty());
  CHECK(sink->calls.front() == "admitted 5 next 6");
  CHECK(sink->rows.at(5).status == saved_status::queued);
  CHECK(sink->rows.at(5).spec.name == "late");
}

TEST_CASE_FIXTURE(journal_fixture, "a submitted job is scheduled while its journal write is pending") {
  // A journal that never answers: the client waits, the scheduler does not.
  auto silent = spawn_silent_journal();
  auto s = spawn_scheduler(silent, 0);
  auto got = submit(s);
  drain();
  step();
  // Ledger after the round: t0 holds job-0 (4 GPUs); its client has no answer yet.
  CHECK(got->id == -2);
  auto starts = 0;
  for (auto& e : rec->events) starts += e.event == "start";
  CHECK(starts == 1);
  // A journal gone before it committed: the client gets no id. (Also ends the cycle between
  // the scheduler's handle and the journal's pending request.)
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
  drain();
  CHECK(got->id == -3);
}

TEST_CASE_FIXTURE(journal_fixture, "without a journal a client's submit is answered at once") {
  auto s = spawn_scheduler({}, 2);
  auto got = submit(s);
  drain();
  CHECK(got->id == 2);
  CHECK(sink->calls.empty());
}

TEST_CASE_FIXTURE(journal_fixture, "the journal folds ended jobs' rows every N ended jobs, and only then") {
  auto journal = spawn_journal(3);
  saved_job running;
  running.spec.index = 9;
  running.status = saved_status::running;
  for (uint32_t i = 0; i < 7; ++i) {
    caf::anon_send(journal, jjob_atom::value, ended(i));
    caf::anon_send(journal, jjob_atom::value, running);  // not an end: does not count
  }
  drain();
  std::vector<size_t> compactions;
  for (size_t i = 0; i < sink->calls.size(); ++i)
    if (sink->calls[i] == "compact") compactions.push_back(i);
  // After the 3rd and the 6th end (each end is followed by job 9's running row).
  REQUIRE(compactions.size() == 2);
  CHECK(sink->calls[compactions[0] - 1] == "job 2 ended");
  CHECK(sink->calls[compactions[1] - 1] == "job 5 ended");
}

TEST_CASE_FIXTURE(journal_fixture, "with a compaction interval of 0 the journal never folds while running") {
  auto journal = spawn_journal(0);
  for (uint32_t i = 0; i < 10; ++i) caf::anon_send(journal, jjob_atom::value, ended(i));
  drain();
  CHECK(std::count(sink->calls.begin(), sink->calls.end(), "compact") == 0);
  CHECK(sink->calls.size() == 10);
}

namespace {

/// Fails every write while `failing` is set, as a full disk does; remembers the troubles told.
struct flaky_sink : recording_sink {
  bool failing = true;
  std::vector<std::string> troubles;
  int recoveries = 0;
  void check() const {
    if (failing) throw input_error("state.db: database or disk is full");
  }
  void put_job(const saved_job& j) override {
    check();
    recording_sink::put_job(j);
  }
  void put_admitted(const saved_job& j, uint32_t next) override {
    check();
    recording_sink::put_admitted(j, next);
  }
  void put_server_mode(const std::string& server, const std::string& mode) override {
    check();
    calls.push_back("server " + server + " " + mode);
  }
  void put_audit(const std::string& line) override {
    check();
    calls.push_back("audit " + line);
  }
  void trouble(const std::string& what) override { troubles.push_back(what); }
  void recovered() override { ++recoveries; }
};

} // namespace

TEST_CASE_FIXTURE(journal_fixture, "a submit the journal cannot record is refused and its job cancelled, and the run goes on") {
  auto flaky = std::make_shared<flaky_sink>();
  sink = flaky;
  auto s = spawn_scheduler(spawn_journal(0), 0);
  auto got = submit(s);
  drain();
  CHECK(got->id == -3);
  CHECK(rec->failures.empty());
  REQUIRE(!flaky->troubles.empty());
  CHECK(flaky->troubles[0] == "state.db: database or disk is full");
  // Space returns: the admitted row (the id counter past it) and the job's cancelled end are
  // written, in that order, at the next retry.
  flaky->failing = false;
  for (int i = 0; i < 20 && flaky->recoveries == 0 && step(); ++i) {}
  CHECK(flaky->recoveries == 1);
  CHECK(flaky->next_index == 1);
  REQUIRE(flaky->rows.count(0) == 1);
  CHECK(flaky->rows[0].status == saved_status::ended);
  CHECK(rec->failures.empty());
}

TEST_CASE_FIXTURE(journal_fixture, "while journal writes fail, every change is kept, the latest per job and server, and written once they succeed") {
  auto flaky = std::make_shared<flaky_sink>();
  sink = flaky;
  auto journal = spawn_journal(2);
  saved_job running;
  running.spec.index = 4;
  running.status = saved_status::running;
  caf::anon_send(journal, jjob_atom::value, running);
  caf::anon_send(journal, jserver_atom::value, std::string("i0"), std::string("loaned"));
  caf::anon_send(journal, jjob_atom::value, ended(4));  // replaces job 4's running row
  caf::anon_send(journal, jjob_atom::value, ended(5));
  caf::anon_send(journal, jserver_atom::value, std::string("i0"), std::string("reclaiming"));
  drain();
  CHECK(flaky->calls.empty());
  REQUIRE(step());  // a retry, still failing
  CHECK(flaky->calls.empty());
  CHECK(flaky->troubles.size() >= 2);
  CHECK(flaky->recoveries == 0);
  flaky->failing = false;
  REQUIRE(step());
  CHECK(flaky->calls == std::vector<std::string>{"job 4 ended", "job 5 ended", "server i0 reclaiming"});
  CHECK(flaky->recoveries == 1);
  CHECK(rec->failures.empty());
  // Written as they come again.
  caf::anon_send(journal, jjob_atom::value, ended(6));
  drain();
  CHECK(flaky->calls.back() == "job 6 ended");
}

TEST_CASE_FIXTURE(journal_fixture, "audit lines are journaled in order, and while writes fail they are kept, the oldest giving "
                                   "way past the cap with a count of those lost, and written once writes succeed") {
  auto flaky = std::make_shared<flaky_sink>();
  flaky->failing = false;
  sink = flaky;
  auto journal = spawn_journal(0);
  caf::anon_send(journal, jaudit_atom::value, std::string("a"));
  drain();
  CHECK(flaky->calls == std::vector<std::string>{"audit a"});
  flaky->failing = true;
  for (size_t i = 0; i < journal_state::max_unwritten_audit + 2; ++i)
    caf::anon_send(journal, jaudit_atom::value, "line " + std::to_string(i));
  drain();
  CHECK(flaky->calls.size() == 1);
  flaky->failing = false;
  REQUIRE(step());
  REQUIRE(flaky->calls.size() == 1 + 1 + journal_state::max_unwritten_audit);
  CHECK(flaky->calls[1] == R"(audit {"lost":2,"why":"the state file could not be written; audit.jsonl has them"})");
  CHECK(flaky->calls[2] == "audit line 2");
  CHECK(flaky->calls.back() == "audit line " + std::to_string(journal_state::max_unwritten_audit + 1));
  CHECK(flaky->recoveries == 1);
}

TEST_CASE_FIXTURE(journal_fixture, "a keyed submit repeated before the first is journaled hears the first's id once the "
                                   "journal holds it") {
  auto s = spawn_scheduler(spawn_journal(0), 5);
  // Both asked before the scheduler or the journal handles anything.
  auto first = submit(s, "k");
  auto repeat = submit(s, "k");
  drain();
  CHECK(first->id == 5);
  CHECK(repeated_job(repeat->id) == 5u);
  CHECK(repeat->row_journaled);
  CHECK(sink->rows.size() == 1);
  size_t resubmits = 0;
  for (auto& e : rec->events) resubmits += e.event == "resubmit";
  CHECK(resubmits == 1);
}

TEST_CASE_FIXTURE(journal_fixture, "a keyed submit the journal never took is refused to its repeats too, and its key "
                                   "is free again") {
  auto silent = spawn_silent_journal();
  auto s = spawn_scheduler(silent, 0);
  auto first = submit(s, "k");
  drain();
  auto repeat = submit(s, "k");
  drain();
  CHECK(first->id == -2);  // both wait for the journal
  CHECK(repeat->id == -2);
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
  drain();
  CHECK(first->id == -3);
  CHECK(repeat->id == -3);
  // Freed: a later submit with the key is a new job (job 1, refused too: the journal is gone),
  // not a repeat of job 0.
  auto again = submit(s, "k");
  drain();
  CHECK(again->id == -3);
  size_t resubmits = 0;
  for (auto& e : rec->events) resubmits += e.event == "resubmit";
  CHECK(resubmits == 1);
  CHECK(std::any_of(rec->jobs.begin(), rec->jobs.end(), [](auto& r) { return r.index == 1; }));
}
