#pragma once
// One message of each type with non-default field values, in `message` order. The Python
// interop test expects exactly these (EXPECTED in tests/wire/python_roundtrip.py).
#include <vector>

#include "runtime/wire/messages.hpp"

namespace aryl::wire::test {

inline std::vector<message> sample_messages() {
  register_ reg{.server = "node-07", .gpu_type = "a100", .gpus = 8, .pool = pool_kind::inference,
                .workers = {{.job_id = 42, .rank = 3, .gpus = {0, 1}, .pid = 12345, .exit_code = std::nullopt,
                             .exit_signal = std::nullopt},
                            {.job_id = 43, .rank = 0, .gpus = {7}, .pid = std::nullopt, .exit_code = 0,
                             .exit_signal = 9}},
                .address = "node-07.example",
                .version = "0.14.0"};
  launch go{.job_id = 9'000'000'000,
            .rank = 2,
            .world_size = 4,
            .gpus = {4, 5},
            .checkpoint_dir = "/ckpt/job-9",
            .rendezvous = "10.0.0.7:29500",
            .command = {"python3", "train.py", "--lr=0.1"},
            .env = {{"NCCL_DEBUG", "INFO"}, {"ARYL_JOB", "9"}},
            .work_s = 3600.0,
            .rate = 1.25,
            .user = "alice"};
  submit job{.name = "r\u00e9sum\u00e9-\u03bb",
             .gpus = 8,
             .min_workers = 2,
             .max_workers = 16,
             .command = {"bash", "-c", "echo hi"},
             .expected_duration_s = 7200.25,
             .gpu_type = "v100",
             .tenant = "vision",
             .priority = -3,
             .time_limit_s = std::nullopt,
             .max_retries = std::nullopt,
             .after = "3:ok,4:any",
             .array = "0-99%10",
             .hold = true,
             .key = "nightly-2026-12-06"};
  // Jobs are built field by field: most of job_info's fields are optional.
  auto job_of = [](uint64_t id, const char* name, job_state state, uint32_t workers) {
    job_info j;
    j.job_id = id;
    j.name = name;
    j.state = state;
    j.workers = workers;
    return j;
  };
  status_reply status{
      .jobs = {job_of(1, "a", job_state::running, 4), job_of(2, "b", job_state::queued, 0)},
      .servers = {{.name = "node-01", .gpu_type = "a100", .gpus = 8, .free = 2,
                   .pool = pool_kind::training, .state = server_state::up, .hold = std::nullopt,
                   .reason = std::nullopt},
                  {.name = "node-02", .gpu_type = "a100", .gpus = 8, .free = 0,
                   .pool = pool_kind::training, .state = server_state::lost, .hold = std::nullopt,
                   .reason = std::nullopt},
                  {.name = "node-03", .gpu_type = "a100", .gpus = 8, .free = 0,
                   .pool = pool_kind::training, .state = server_state::up, .hold = "draining",
                   .reason = "disk swap"},
                  {.name = "inf-01", .gpu_type = "t4", .gpus = 4, .free = 4,
                   .pool = pool_kind::inference, .state = std::nullopt, .hold = std::nullopt,
                   .reason = std::nullopt}},
      .loans = {{.server = "inf-01", .state = loan_state::reclaiming}},
      .tenants = std::vector<tenant_info>{{.name = "vision", .quota = 8, .in_use = 4, .lent = 0, .borrowed = 0, .queued = 1},
                                          {.name = "", .quota = std::nullopt}}};
  status.jobs[1].reason = "behind job 1 in queue order (aryl)";
  status.jobs[0].gpus = 4;
  status.jobs[0].min_workers = 2;
  status.jobs[0].max_workers = 8;
  status.jobs[0].gpu_type = "a100";
  status.jobs[0].run_s = 61.5;
  status.jobs[0].servers = "node-01:4";
  status.jobs[0].predicted = false;
  status.jobs[0].tenant = "vision";
  status.jobs[0].user = "alice";
  status.jobs[1].held = true;
  status.jobs[1].array_job = 2;
  status.jobs[1].array_task = 7;
  show_reply show{.job = job_of(5, "c", job_state::cancelled, 0),
                  .command = {"train.sh"},
                  .expected_duration_s = 3600.0,
                  .submit_s = 12.25,
                  .end_s = 99.5,
                  .history = {{.t_s = 12.25, .event = "submit", .detail = "gpus=2 elastic=0 name=c", .why = ""},
                              {.t_s = 13.0, .event = "start", .detail = "workers=2 a100 [node-01:2]",
                               .why = "fits its base demand"}}};
  show.job.predicted = true;
  return {
      hello{.role = peer_role::client, .token = "s3cr3t-token", .name = "cli-\u03bb"},
      hello_ok{.identity = "alice", .role = "user"},
      reg,
      heartbeat{.seq = uint64_t{1} << 40},
      go,
      stop{.job_id = 77, .grace_s = 30.5},
      progress{.job_id = 77, .rank = 1, .work_done = 1234.75, .step = 5000},
      exit_{.job_id = 77, .rank = 1, .code = -2, .signal = 9},
      job,
      submit_ok{.job_id = 123, .note = "runs on at least 4 workers"},
      cancel{.job_id = 124},
      status_request{.all = true},
      status,
      demand{.servers_needed = 3},
      error{.reason = "token rejected"},
      bye{},
      show_request{.job_id = 5, .array_task = 3},
      show,
      shutdown{.reason = "the run is over"},
      logs_request{.job_id = 5, .rank = 1, .offset = 4096, .array_task = 2},
      log_fetch{.request = 77, .job_id = 5, .rank = 1, .offset = 4096, .max_bytes = 60000},
      log_chunk{.request = 77, .text = "step=10 loss=0.5\n", .size = 4113, .error = std::nullopt},
      logs_reply{.job_id = 5, .rank = 1, .server = "node-01", .offset = 4096, .text = "step=10 loss=0.5\n",
                 .size = 4113, .active = true},
      node_request{.server = "node-03", .action = "drain", .reason = "disk swap", .now = true},
      node_reply{.server = "node-03", .text = "node-03: draining: no new work; 1 job runs on there until it ends"},
      token_request{.action = "create", .name = "node-07", .role = "agent", .gpu_type = "a100", .pool = "training"},
      token_reply{.text = "created node-07 (agent)", .token = "aryl_0123456789abcdef"},
      show_node_request{.server = "node-03"},
      show_node_reply{.node = status.servers[2],
                      .mode = "training",
                      .jobs = {{.job_id = 1, .name = "a", .workers = 2, .ranks = {0, 3}}},
                      .heard_s = 0.5,
                      .address = "10.0.0.3",
                      .agent_version = "0.14.0"},
      job_request{.job_id = 42, .array_task = 7, .action = "update", .priority = 2, .time_limit_s = 3600.0,
                  .min_workers = 2, .max_workers = 8, .expected_duration_s = 1800.5, .after = "41:notok"},
      job_reply{.job_id = 42, .text = "job 42_7 updated"},
      history_request{.since_us = 1'790'000'000'000'000,
                      .until_us = std::nullopt,
                      .users = {"alice", "bob"},
                      .tenants = {},
                      .outcomes = {"done", "running"},
                      .after = 4096,
                      .limit = 500},
      history_reply{.jobs = {{.job_id = 7,
                              .name = "bert",
                              .user = "alice",
                              .tenant = "vision",
                              .state = "ended",
                              .outcome = "failed",
                              .submit_us = 1'790'000'000'000'000,
                              .start_us = 1'790'000'030'000'000,
                              .end_us = 1'790'000'090'500'000,
                              .wait_s = 30.0,
                              .gpus = 4,
                              .exits = "0:1 1:sig15",
                              .attempts = 2},
                             {.job_id = 9,
                              .name = "queued-one",
                              .user = "",
                              .tenant = "",
                              .state = "queued",
                              .outcome = std::nullopt,
                              .submit_us = 1'790'000'100'000'000,
                              .start_us = std::nullopt,
                              .end_us = std::nullopt,
                              .wait_s = 12.5,
                              .gpus = 2,
                              .exits = "",
                              .attempts = 0}},
                    .next_after = 9},
  };
}

} // namespace aryl::wire::test
