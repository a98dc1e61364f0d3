#include "runtime/cli/queue_commands.hpp"

#include <fmt/format.h>

#include <charconv>

#include "runtime/live/job_file.hpp"
#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"

namespace aryl::cli {

namespace {

std::string ask_job(const live::client_options& co, const wire::job_request& q) {
  auto reply = live::ask(co, q, true);
  auto* r = reply ? std::get_if<wire::job_reply>(&*reply) : nullptr;
  if (!r)
    throw input_error(q.action + ": the scheduler answered '" +
                      std::string(reply ? wire::type_of(*reply) : std::string_view("nothing")) + "'");
  return escape_control(r->text);
}

} // namespace

job_ref parse_job_ref(const std::string& what, const std::string& text) {
  job_ref out;
  auto under = text.find('_');
  auto whole = [](std::string_view s, auto& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
  };
  std::string_view t = text;
  uint32_t task = 0;
  if (!whole(t.substr(0, under), out.job) || (under != std::string::npos && !whole(t.substr(under + 1), task)))
    throw input_error(what + ": '" + text + "' is not a job id (JOB, or JOB_TASK for a task of an array)");
  if (under != std::string::npos) out.task = task;
  return out;
}

void add_queue_commands(CLI::App& app, queue_commands& q, const std::function<void(CLI::App*)>& client_flags) {
  q.hold = app.add_subcommand("hold", "live mode: keep a queued job from starting until released (as scontrol hold); "
                                      "an array's id holds each of its queued tasks");
  q.release = app.add_subcommand("release", "live mode: a held job goes back to the queue where it was (as scontrol "
                                            "release)");
  q.update = app.add_subcommand("update", "live mode: change a job not yet started (as scontrol update); give at "
                                          "least one of the flags");
  for (auto* c : {q.hold, q.release, q.update}) {
    client_flags(c);
    c->add_option("job", q.job, "JOB (as `aryl submit` printed it), or JOB_TASK for one task of an array")->required();
  }
  q.update->add_option("--priority", q.priority, "its new class: higher goes first and may preempt lower");
  q.update->add_option("--time-limit", q.time_limit,
                       "its new time limit, as submit's (90, M:SS, H:MM:SS, D-H:MM:SS, 30s, 10m, 2h, 1d; 0 or none: no limit)");
  q.update->add_option("--min-workers", q.min_workers, "its new fewest workers (at most its --gpus)");
  q.update->add_option("--max-workers", q.max_workers, "its new most workers (at least its --gpus)");
  q.update->add_option("--duration", q.duration, "its new expected run time at its --gpus workers, seconds");
  q.update->add_option("--after", q.after,
                       "its new dependencies, as submit's --after (JOB[:ok|any|notok][,JOB...]); none: no dependency");
}

bool run_queue_commands(queue_commands& q, const std::function<void(CLI::App*)>& connect_to,
                        const live::client_options& co, std::ostream& out) {
  CLI::App* given = *q.hold ? q.hold : *q.release ? q.release : *q.update ? q.update : nullptr;
  if (!given) return false;
  wire::job_request r;
  r.action = given->get_name();
  auto ref = parse_job_ref(r.action, q.job);
  r.job_id = ref.job;
  r.array_task = ref.task;
  if (given == q.update) {
    auto given_flag = [&](const char* flag) { return given->count(flag) > 0; };
    if (given_flag("--priority")) r.priority = q.priority;
    if (given->count("--time-limit") > 0)
      r.time_limit_s = q.time_limit == "0" || q.time_limit == "none" ? 0.0
                                                                     : live::time_limit_of("update: --time-limit", q.time_limit);
    if (given_flag("--min-workers")) r.min_workers = q.min_workers;
    if (given_flag("--max-workers")) r.max_workers = q.max_workers;
    if (given_flag("--duration")) {
      if (!(q.duration > 0)) throw input_error("update: --duration must be more than 0 seconds");
      r.expected_duration_s = q.duration;
    }
    if (given->count("--after") > 0) r.after = q.after == "none" ? std::string() : q.after;
    if ((r.min_workers && *r.min_workers == 0) || (r.max_workers && *r.max_workers == 0))
      throw input_error("update: --min-workers and --max-workers must be at least 1");
    if (r.min_workers && r.max_workers && *r.max_workers < *r.min_workers)
      throw input_error(fmt::format("update: --max-workers {} is below --min-workers {}", *r.max_workers, *r.min_workers));
    if (!r.priority && !r.time_limit_s && !r.min_workers && !r.max_workers && !r.expected_duration_s && !r.after)
      throw input_error("update: give what to change: --priority, --time-limit, --min-workers, --max-workers, "
                        "--duration or --after");
  }
  connect_to(given);
  out << ask_job(co, r) << '\n';
  return true;
}

std::string cancel_task(const live::client_options& co, const job_ref& ref) {
  wire::job_request r;
  r.action = "cancel";
  r.job_id = ref.job;
  r.array_task = ref.task;
  return ask_job(co, r);
}

} // namespace aryl::cli
