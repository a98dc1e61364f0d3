// The shortcuts a round takes for allocations listed by server (servers_spanned counts in
// one pass, merge_into sorts only a list out of order) against their definitions written
// plainly, on seeded random lists: sorted, with repeated servers, out of order, with zero and
// negative workers, short and wide; and the ledger's widest server, kept with its index,
// against a pass over the servers.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "solvers/placement.hpp"
#include "solvers/round/work_view.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;

namespace {

/// Distinct servers with at least one worker, by a set.
int reference_spanned(const allocation& a) {
  std::set<int> ids;
  for (auto& [sid, w] : a)
    if (w > 0) ids.insert(sid);
  return static_cast<int>(ids.size());
}

/// merge_into as first written: add each of `b`'s entries to the first entry of `a` on its
/// server (or append it), then sort.
void reference_merge(allocation& a, const allocation& b) {
  for (auto& [sid, w] : b) {
    auto it = std::find_if(a.begin(), a.end(), [sid = sid](auto& p) { return p.first == sid; });
    if (it == a.end()) a.emplace_back(sid, w);
    else it->second += w;
  }
  std::sort(a.begin(), a.end());
}

/// A random list of `n` entries on servers 0..`servers`-1 of shape `shape`: 0 ascending
/// with each server once, 1 ascending with repeats, 2 in any order. Workers in -1..8 when
/// `any_workers`, else 1..8.
allocation random_list(std::mt19937_64& rng, size_t n, int servers, int shape, bool any_workers) {
  std::uniform_int_distribution<int> sid(0, servers - 1), w(any_workers ? -1 : 1, 8);
  allocation a;
  if (shape == 0) {
    std::set<int> ids;
    while (ids.size() < std::min<size_t>(n, static_cast<size_t>(servers))) ids.insert(sid(rng));
    for (int id : ids) a.emplace_back(id, w(rng));
    return a;
  }
  for (size_t i = 0; i < n; ++i) a.emplace_back(sid(rng), w(rng));
  if (shape == 1) std::sort(a.begin(), a.end(), [](auto& x, auto& y) { return x.first < y.first; });
  return a;
}

} // namespace

TEST_CASE("servers_spanned equals a set count on 20,000 random lists, sorted or not, short or wide") {
  std::mt19937_64 rng(8128);
  std::uniform_int_distribution<size_t> len(0, 60);
  std::uniform_int_distribution<int> shape(0, 2), servers(1, 80);
  int sorted_seen = 0, other_seen = 0;
  for (int i = 0; i < 20000; ++i) {
    const int sh = shape(rng);
    const auto a = random_list(rng, len(rng), servers(rng), sh, i % 2 == 0);
    (sh == 0 ? sorted_seen : other_seen)++;
    REQUIRE(servers_spanned(a) == reference_spanned(a));
  }
  CHECK(sorted_seen > 1000);
  CHECK(other_seen > 1000);
  CHECK(servers_spanned({}) == 0);
  CHECK(servers_spanned({{3, 0}, {3, 2}, {3, 1}, {5, -1}}) == 1);
  CHECK(servers_spanned({{7, 1}, {2, 1}, {7, 3}}) == 2);
}

TEST_CASE("merge_into equals adding then sorting on 20,000 random pairs of lists") {
  std::mt19937_64 rng(6174);
  std::uniform_int_distribution<size_t> len(0, 12);
  std::uniform_int_distribution<int> shape(0, 2), servers(1, 20);
  int both_sorted = 0;
  for (int i = 0; i < 20000; ++i) {
    const int n = servers(rng);
    // Mostly lists as allocations are (each server once, ascending), as rounds merge them.
    const int sa = i % 4 == 0 ? shape(rng) : 0, sb = i % 4 == 1 ? shape(rng) : 0;
    allocation a = random_list(rng, len(rng), n, sa, i % 3 == 0);
    const allocation b = random_list(rng, len(rng), n, sb, i % 3 == 0);
    both_sorted += sa == 0 && sb == 0;
    allocation want = a;
    reference_merge(want, b);
    detail::merge_into(a, b);
    REQUIRE(a == want);
  }
  CHECK(both_sorted > 10000);
  allocation a{{1, 2}, {4, 1}};
  detail::merge_into(a, {{0, 1}, {4, 2}, {9, 3}});
  CHECK(a == allocation{{0, 1}, {1, 2}, {4, 3}, {9, 3}});
}

TEST_CASE("the ledger's widest server is the most GPUs of any server, also after one joins") {
  auto l = test::make_ledger(3, 2);
  auto widest = [&] {
    int w = 0;
    for (auto& s : l.servers) w = std::max(w, s.gpus);
    return w;
  };
  CHECK(l.widest_server() == 8);
  CHECK(l.widest_server() == widest());
  server_entry big;
  big.id = static_cast<int>(l.servers.size());
  big.name = "t-big";
  big.gpu_type = 1;
  big.gpus = big.free = 16;
  l.servers.push_back(big);  // joins as a machine does: indexed again when next read
  CHECK(l.widest_server() == 16);
  CHECK(l.widest_server() == widest());
  CHECK(cluster_ledger{}.widest_server() == 0);
}
