#pragma once
/// Why the scheduler's admit answers no job index. The answer crosses as an int64_t: an index
/// (0 or more), one of these (-1 to -4), or a repeat of a keyed submit (repeat_answer).
#include <cstdint>
#include <optional>
#include <string_view>

namespace aryl {

/// stopping: the run is stopping. no_answer: the scheduler did not answer (the asker's own
/// verdict, never the scheduler's). not_journaled: the state file could not take the job.
/// bad_array: the spec's array does not parse (a client that skipped the vet).
enum class admit_refusal : int64_t { stopping = -1, no_answer = -2, not_journaled = -3, bad_array = -4 };

constexpr int64_t answer_of(admit_refusal r) { return static_cast<int64_t>(r); }

/// A repeat of a keyed submit (job_spec::key) took no job: it is answered the first's id `job`
/// so, below every refusal, for the asker to tell it from a new job.
constexpr int64_t repeat_answer(uint32_t job) { return -1000 - static_cast<int64_t>(job); }
/// The first's id, if `answer` answers a repeat.
constexpr std::optional<uint32_t> repeated_job(int64_t answer) {
  if (answer > -1000) return std::nullopt;
  return static_cast<uint32_t>(-1000 - answer);
}

/// The refusal in words, for the submitter.
constexpr std::string_view to_string(admit_refusal r) {
  switch (r) {
    case admit_refusal::stopping: return "the run is stopping";
    case admit_refusal::no_answer:
      return "the scheduler did not answer in 2 s; the job may have been taken (a submit with --key can be "
             "repeated safely)";
    case admit_refusal::not_journaled:
      return "the state file cannot be written (see serve's log); submits are refused until it can, running jobs go "
             "on";
    case admit_refusal::bad_array: return "its --array is not a list of task ids";
  }
  return "the scheduler did not answer";
}

/// The refusal an answer below 0 stands for; an unknown one counts as no answer.
constexpr admit_refusal refusal_of(int64_t answer) {  // (answer < 0, not a repeat)
  return answer >= answer_of(admit_refusal::bad_array) && answer <= answer_of(admit_refusal::stopping)
             ? static_cast<admit_refusal>(answer)
             : admit_refusal::no_answer;
}

} // namespace aryl
