// `aryl history` asked of a running serve (runtime/live/gateway_history.cpp, history_answer.cpp):
// the gateway answers a history_request from the state file serve holds, through the journal's
// own connection, a page at a time; paging gives the same rows as one page; the filters reach
// the query; the query never holds the network thread; a serve without --state says so.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <sstream>
#include <string>

#include "runtime/live/client.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/history_answer.hpp"
#include "runtime/live/state_journal.hpp"
#include "solvers/input_error.hpp"

using namespace aryl;
using namespace aryl::live;

namespace {

constexpr int64_t s = 1'000'000;  // µs per second

/// Job `index`: user ana for even ids, bo for odd ones; ended done at submit + 20 s.
saved_job ended_job(uint32_t index) {
  saved_job j;
  j.spec.index = index;
  j.spec.name = "job" + std::to_string(index);
  j.spec.user = index % 2 == 0 ? "ana" : "bo";
  j.spec.gpus = 1;
  j.spec.submit = sim_time::from_us(int64_t{index} * s);
  j.status = saved_status::ended;
  j.workers = 1;
  j.record.index = index;
  j.record.name = j.spec.name;
  j.record.gpus = 1;
  j.record.submit_us = int64_t{index} * s;
  j.record.first_start_us = (int64_t{index} + 10) * s;
  j.record.queued_s = 10;
  j.record.end_us = (int64_t{index} + 20) * s;
  j.record.last_workers = 1;
  j.record.outcome = job_outcome::done;
  j.record.attempts.push_back({j.record.first_start_us, j.record.end_us, job_outcome::done, "0:0", ""});
  return j;
}

/// A state file of `jobs` ended jobs, held by its journal as serve holds it, and a gateway
/// whose history reads it (or, without `answer`, none).
struct history_fixture {
  std::filesystem::path file;
  std::shared_ptr<state_journal> journal;
  std::ostringstream log_text;
  std::unique_ptr<gateway> g;

  explicit history_fixture(uint32_t jobs, std::function<wire::history_reply(const wire::history_request&)> answer = {},
                           bool with_history = true) {
    file = std::filesystem::temp_directory_path() / ("aryl-gateway-history-" + std::to_string(::getpid()) + ".db");
    std::filesystem::remove(file);
    journal = std::make_shared<state_journal>(file.string());
    std::vector<saved_job> all;
    for (uint32_t i = 0; i < jobs; ++i) all.push_back(ended_job(i));
    journal->put_history(all);
    gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/tmp/aryl-gateway-history-test";
    if (answer) o.history = std::move(answer);
    else if (with_history) o.history = [j = journal](const wire::history_request& q) { return answer_history(*j, q); };
    g = std::make_unique<gateway>(o, log_text);
  }
  ~history_fixture() {
    g->close();
    journal.reset();
    std::filesystem::remove(file);
    std::filesystem::remove(file.string() + "-wal");
    std::filesystem::remove(file.string() + "-shm");
  }

  client_options client() const {
    client_options c;
    c.port = g->port();
    c.token = "secret";
    return c;
  }

  /// Every job `q` keeps, page after page; `pages` counts the replies.
  std::vector<uint64_t> ids(wire::history_request q, int* pages = nullptr) const {
    std::vector<uint64_t> out;
    int n = 0;
    ask_each(client(), q, [&](const wire::message& m) -> std::optional<wire::message> {
      auto& r = std::get<wire::history_reply>(m);
      ++n;
      for (auto& j : r.jobs) out.push_back(j.job_id);
      if (!r.next_after) return std::nullopt;
      q.after = r.next_after;
      return q;
    });
    if (pages) *pages = n;
    return out;
  }
};

std::vector<uint64_t> range(uint64_t from, uint64_t to, uint64_t step = 1) {
  std::vector<uint64_t> out;
  for (auto i = from; i < to; i += step) out.push_back(i);
  return out;
}

} // namespace

TEST_CASE("history over the wire: pages of any size give every job once, in id order, as the file holds them") {
  history_fixture f(2500);
  int pages = 0;
  CHECK(f.ids({}, &pages) == range(0, 2500));
  CHECK(pages == 3);  // serve's own page: history_page_rows jobs
  wire::history_request small;
  small.limit = 7;
  CHECK(f.ids(small, &pages) == range(0, 2500));
  CHECK(pages == 358);  // 357 full pages, and the last short one (1 job)
  wire::history_request huge;
  huge.limit = 1'000'000;  // capped by serve: no frame beyond its page
  CHECK(f.ids(huge, &pages) == range(0, 2500));
  CHECK(pages == 3);
}

TEST_CASE("history over the wire: a page of one job moves on from job 0") {
  history_fixture f(5);
  wire::history_request one;
  one.limit = 1;
  int pages = 0;
  CHECK(f.ids(one, &pages) == range(0, 5));
  CHECK(pages == 6);  // a job a page, then an empty last one
}

TEST_CASE("history over the wire: a page carries the row's fields on the wall clock, and no command") {
  history_fixture f(3);
  auto reply = ask(f.client(), wire::history_request{}, true);
  auto& r = std::get<wire::history_reply>(*reply);
  REQUIRE(r.jobs.size() == 3);
  CHECK_FALSE(r.next_after.has_value());
  auto& j = r.jobs[1];
  CHECK(j.job_id == 1);
  CHECK(j.name == "job1");
  CHECK(j.user == "bo");
  CHECK(j.state == "ended");
  CHECK(j.outcome == "done");
  CHECK(j.submit_us == uint64_t{1} * s);  // a file with no run record: its clock starts at 1970
  CHECK(j.start_us == uint64_t{11} * s);
  CHECK(j.end_us == uint64_t{21} * s);
  CHECK(j.wait_s == doctest::Approx(10));
  CHECK(j.exits == "0:0");
  CHECK(j.attempts == 1);
}

TEST_CASE("history over the wire: the filters reach the query, page by page") {
  history_fixture f(100);
  wire::history_request q;
  q.users = {"bo"};
  q.limit = 6;
  CHECK(f.ids(q) == range(1, 100, 2));
  q.users.clear();
  q.since_us = 90 * s;  // ended at or after 90 s: submitted at 70 s or later
  q.until_us = 80 * s;  // submitted at or before 80 s
  CHECK(f.ids(q) == range(70, 81));
  wire::history_request bad;
  bad.outcomes = {"crashed"};
  CHECK_THROWS_WITH_AS(ask(f.client(), bad, true),
                       doctest::Contains("history: outcome 'crashed' is not one of done, failed"), input_error);
}

TEST_CASE("history over the wire: serve without --state says history needs it") {
  history_fixture f(1, {}, false);
  CHECK_THROWS_WITH_AS(ask(f.client(), wire::history_request{}, true),
                       doctest::Contains("refused: history needs serve --state"), input_error);
}

TEST_CASE("history over the wire: a slow query holds no other client") {
  std::promise<void> release;
  auto released = release.get_future().share();
  std::promise<void> entered;
  history_fixture f(0, [&, released](const wire::history_request&) {
    entered.set_value();
    released.wait();
    return wire::history_reply{};
  });
  auto slow = std::async(std::launch::async, [&] { return ask(f.client(), wire::history_request{}, true); });
  REQUIRE(entered.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  // The network thread answers another client meanwhile (no run: a status is refused at once).
  auto c = f.client();
  c.timeout_s = 2;
  CHECK_THROWS_WITH_AS(ask(c, wire::status_request{}, true), doctest::Contains("no run in progress"), input_error);
  release.set_value();
  auto reply = slow.get();
  REQUIRE(reply.has_value());
  CHECK(std::holds_alternative<wire::history_reply>(*reply));
}
