// A torchrun job's --nnodes and --nproc-per-node must ask for the job's workers
// (runtime/inputs/torchrun_command.hpp).
#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/inputs/torchrun_command.hpp"

using namespace aryl;

namespace {

job_spec with(std::vector<std::string> command, int min_workers, int max_workers) {
  job_spec j;
  j.name = "t";
  j.min_workers = j.gpus = min_workers;
  j.max_workers = max_workers;
  j.elastic = min_workers != max_workers;
  j.command = std::move(command);
  return j;
}

} // namespace

TEST_CASE("torchrun: nodes x processes per node that match the job's min and max workers pass") {
  CHECK(torchrun_problem(with({"torchrun", "--nnodes=1:2", "--nproc-per-node=4", "train.py"}, 4, 8)).empty());
  CHECK(torchrun_problem(with({"/usr/bin/torchrun", "--nnodes", "2", "--nproc_per_node", "4", "t.py"}, 8, 8)).empty());
  CHECK(torchrun_problem(with({"python3", "-m", "torch.distributed.run", "--nnodes=3", "t.py"}, 3, 3)).empty());
  // Options after the script are the script's.
  CHECK(torchrun_problem(with({"torchrun", "--standalone", "--nnodes=1", "t.py", "--nnodes=9"}, 1, 1)).empty());
}

TEST_CASE("torchrun: a command that is not torchrun, or leaves --nnodes or the per-node count to it, is not checked") {
  CHECK(torchrun_problem(with({"python3", "train.py", "--nnodes=1:9"}, 4, 4)).empty());
  CHECK(torchrun_problem(with({"torchrun", "--nproc-per-node=8", "t.py"}, 4, 4)).empty());
  CHECK(torchrun_problem(with({"torchrun", "--nnodes=1:4", "--nproc-per-node=gpu", "t.py"}, 4, 4)).empty());
  CHECK(torchrun_problem(with({}, 4, 4)).empty());
}

TEST_CASE("torchrun: min or max workers that disagree with --nnodes x --nproc-per-node are refused, naming both") {
  auto why = torchrun_problem(with({"torchrun", "--nnodes=1:4", "--nproc-per-node=2", "t.py"}, 2, 4));
  CHECK(why == "its torchrun command runs 1..4 node(s) x 2 process(es) (--nnodes, --nproc-per-node) = 2..8 workers, "
               "but the job has 2..4 (its min and max workers)");
  CHECK(!torchrun_problem(with({"torchrun", "--nnodes", "2", "t.py"}, 4, 4)).empty());
  CHECK(!torchrun_problem(with({"python", "-m", "torch.distributed.run", "--nnodes=2:2", "t.py"}, 1, 2)).empty());
}

TEST_CASE("torchrun: an --nnodes that is not N or MIN:MAX is refused") {
  for (auto* bad : {"--nnodes=0", "--nnodes=a", "--nnodes=4:2", "--nnodes=1:", "--nnodes=:2", "--nnodes=-1"})
    CHECK(torchrun_problem(with({"torchrun", bad, "t.py"}, 1, 1)).find("is not N or MIN:MAX") != std::string::npos);
}

TEST_CASE("torchrun: a node's command puts aryl's rendezvous, node count and per-node workers in place of the user's") {
  torchrun_node n;
  n.nproc = 3;
  n.max_nodes = 4;
  n.endpoint = "10.0.0.1:29400";
  n.store_outside = true;
  n.rdzv_id = "aryl-job-7-2";
  auto got = torchrun_node_command({"python3", "-m", "torch.distributed.run", "--nnodes=1:2", "--nproc-per-node", "2",
                                    "--rdzv-backend=etcd", "--standalone", "--log_dir", "/tmp/l", "--tee", "0",
                                    "train.py", "--nnodes=9", "--lr", "0.1"},
                                   n);
  CHECK(got == std::vector<std::string>{"python3", "-m", "torch.distributed.run", "--log_dir", "/tmp/l",
                                        "--nnodes=1:4", "--nproc_per_node=3", "--rdzv_backend=c10d",
                                        "--rdzv_endpoint=10.0.0.1:29400", "--rdzv_id=aryl-job-7-2",
                                        "--rdzv_conf=is_host=false,last_call_timeout=5", "--max_restarts=100",
                                        "--monitor_interval=1", "--redirects=1", "--tee=1", "train.py", "--nnodes=9",
                                        "--lr", "0.1"});
}

TEST_CASE("torchrun: a node whose store its first server hosts lets torchrun decide who hosts it") {
  torchrun_node n;
  n.endpoint = "127.0.0.1:29500";
  n.rdzv_id = "r";
  auto got = torchrun_node_command({"/usr/bin/torchrun", "t.py"}, n);
  CHECK(std::find(got.begin(), got.end(), "--rdzv_conf=last_call_timeout=5") != got.end());
  CHECK(got.front() == "/usr/bin/torchrun");
  CHECK(got.back() == "t.py");
  CHECK(is_torchrun({"/usr/bin/torchrun", "t.py"}));
  CHECK(!is_torchrun({"/usr/bin/python3", "t.py"}));
}
