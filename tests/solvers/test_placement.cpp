// Placement: place_one against a sort-based reference and brute-force feasibility,
// place_bfd against sequential place_one, hand cases for each rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "solvers/placement.hpp"

using namespace aryl;

namespace {

const server_slot* by_id(const std::vector<server_slot>& s, int id) {
  for (const auto& x : s)
    if (x.id == id) return &x;
  return nullptr;
}

/// The placement rules written again, directly from their statement with sorts, to compare
/// against the solver.
std::optional<allocation> reference_place(placement_mode mode, std::vector<server_slot>& servers,
                                          const place_request& req) {
  if (req.gpus == 0) return allocation{};
  std::vector<int> types;
  if (req.gpu_type >= 0) {
    types = {req.gpu_type};
  } else {
    for (int id : req.prefer)
      if (auto* s = by_id(servers, id))
        if (std::find(types.begin(), types.end(), s->gpu_type) == types.end())
          types.push_back(s->gpu_type);
    std::set<int> rest;
    for (const auto& s : servers) rest.insert(s.gpu_type);
    for (int t : rest)
      if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  }
  for (int type : types) {
    auto work = servers;
    std::map<int, int> got;
    auto take = [&](server_slot& s, int n) {
      s.free -= n;
      got[s.id] += n;
    };
    auto best_fit = [&](int need) -> server_slot* {
      std::vector<server_slot*> c;
      for (auto& s : work)
        if (s.gpu_type == type && s.free >= need) c.push_back(&s);
      if (c.empty()) return nullptr;
      return *std::min_element(c.begin(), c.end(), [](auto* a, auto* b) {
        return std::pair(a->free, a->id) < std::pair(b->free, b->id);
      });
    };
    auto find = [&](int id) -> server_slot* {
      for (auto& s : work)
        if (s.id == id) return &s;
      return nullptr;
    };
    int remaining = req.gpus;
    bool ok = false;
    if (mode == placement_mode::consolidated) {
      int size = 0;
      for (auto& s : work)
        if (s.gpu_type == type) size = std::max(size, s.gpus);
      if (size == 0) continue;
      if (req.gpus <= size) {
        for (int id : req.prefer) {
          auto* s = find(id);
          if (s && s->gpu_type == type && s->free >= req.gpus) {
            take(*s, req.gpus);
            remaining = 0;
            break;
          }
        }
        if (remaining > 0)
          if (auto* s = best_fit(req.gpus)) {
            take(*s, req.gpus);
            remaining = 0;
          }
      } else {
        std::vector<int> order = req.prefer;
        std::vector<server_slot> sorted = work;
        std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.id < b.id; });
        for (auto& s : sorted) order.push_back(s.id);
        for (int id : order) {
          auto* s = find(id);
          if (s && s->gpu_type == type && s->gpus > 0 && s->free == s->gpus &&
              s->gpus <= remaining) {
            remaining -= s->gpus;
            take(*s, s->gpus);
          }
        }
        if (remaining > 0)
          if (auto* s = best_fit(remaining)) {
            take(*s, remaining);
            remaining = 0;
          }
      }
      ok = remaining == 0;
    } else {
      long total = 0;
      for (auto& s : work)
        if (s.gpu_type == type) total += s.free;
      if (total < req.gpus) continue;
      for (int id : req.prefer) {
        auto* s = find(id);
        if (!s || s->gpu_type != type) continue;
        int n = std::min(s->free, remaining);
        if (n > 0) take(*s, n), remaining -= n;
      }
      if (remaining > 0) {
        if (auto* s = best_fit(remaining)) {
          take(*s, remaining);
          remaining = 0;
        } else {
          std::vector<server_slot*> c;
          for (auto& s : work)
            if (s.gpu_type == type && s.free > 0) c.push_back(&s);
          std::sort(c.begin(), c.end(), [](auto* a, auto* b) {
            return std::pair(-a->free, a->id) < std::pair(-b->free, b->id);
          });
          for (auto* s : c) {
            int n = std::min(s->free, remaining);
            if (n > 0) take(*s, n), remaining -= n;
          }
        }
      }
      ok = remaining == 0;
    }
    if (ok) {
      servers = work;
      return allocation(got.begin(), got.end());
    }
  }
  return std::nullopt;
}

std::vector<server_slot> random_servers(std::mt19937_64& rng, int max_servers = 10) {
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  std::vector<int> ids(static_cast<size_t>(max_servers) * 4);
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);  // ids unrelated to positions
  std::vector<server_slot> s;
  int n = uni(1, max_servers);
  for (int i = 0; i < n; ++i) {
    int gpus = uni(0, 3) == 0 ? 4 : 8;
    int free = uni(0, 2) == 0 ? gpus : uni(0, gpus);
    s.push_back({ids[static_cast<size_t>(i)], uni(0, 2), gpus, free});
  }
  return s;
}

place_request random_request(std::mt19937_64& rng, const std::vector<server_slot>& s, int id) {
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  place_request r;
  r.id = id;
  r.gpus = uni(0, 6) == 0 ? uni(9, 20) : uni(0, 8);
  r.gpu_type = uni(-1, 2);
  int prefer = uni(0, 3);
  for (int i = 0; i < prefer; ++i)  // existing ids, repeats, and an unknown id
    r.prefer.push_back(uni(0, 5) == 0 ? 99 : s[static_cast<size_t>(uni(0, static_cast<int>(s.size()) - 1))].id);
  return r;
}

/// Brute-force feasibility: could the request be placed at all under the mode's rules?
bool feasible(placement_mode mode, const std::vector<server_slot>& s, const place_request& r) {
  if (r.gpus == 0) return true;
  for (int type = 0; type <= 2; ++type) {
    if (r.gpu_type >= 0 && r.gpu_type != type) continue;
    long total = 0;
    int size = 0, max_free = 0;
    for (const auto& x : s)
      if (x.gpu_type == type) total += x.free, size = std::max(size, x.gpus),
                                             max_free = std::max(max_free, x.free);
    if (mode == placement_mode::count && total >= r.gpus) return true;
    if (mode == placement_mode::consolidated && r.gpus <= size && max_free >= r.gpus) return true;
  }
  return false;
}

/// The allocation's contract: sorted ids, GPUs > 0, summing to the request, all on one GPU
/// type (the requested one if any), and subtracted from exactly those servers.
void check_allocation(const std::vector<server_slot>& before, const std::vector<server_slot>& after,
                      const place_request& r, const allocation& a) {
  int sum = 0;
  std::set<int> types;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].second > 0);
    if (i > 0) CHECK(a[i - 1].first < a[i].first);
    sum += a[i].second;
    types.insert(by_id(before, a[i].first)->gpu_type);
  }
  CHECK(sum == r.gpus);
  CHECK(types.size() <= 1);
  if (r.gpu_type >= 0 && !types.empty()) CHECK(*types.begin() == r.gpu_type);
  for (size_t i = 0; i < before.size(); ++i) {
    int used = 0;
    for (auto& [id, n] : a)
      if (id == before[i].id) used = n;
    CHECK(after[i].free == before[i].free - used);
    CHECK(after[i].free >= 0);
  }
}

} // namespace

TEST_CASE("placement: place_one follows the stated rules and fails only when infeasible, on "
          "10,000 random instances per mode") {
  std::mt19937_64 rng(2718);
  for (auto mode : {placement_mode::count, placement_mode::consolidated}) {
    for (int trial = 0; trial < 10000; ++trial) {
      auto servers = random_servers(rng);
      auto req = random_request(rng, servers, 1);
      CAPTURE(trial);
      auto before = servers, ref_servers = servers;
      auto got = place_one(mode, servers, req);
      auto want = reference_place(mode, ref_servers, req);
      REQUIRE(got.has_value() == want.has_value());
      if (!got) {
        CHECK(!feasible(mode, before, req));
        for (size_t i = 0; i < servers.size(); ++i) CHECK(servers[i].free == before[i].free);
        continue;
      }
      CHECK(*got == *want);
      check_allocation(before, servers, req, *got);
      if (mode == placement_mode::count) CHECK(feasible(mode, before, req));
    }
  }
}

TEST_CASE("placement: place_bfd equals place_one applied by GPUs descending, on 10,000 random "
          "instances per mode") {
  std::mt19937_64 rng(1618);
  for (auto mode : {placement_mode::count, placement_mode::consolidated}) {
    for (int trial = 0; trial < 10000; ++trial) {
      auto servers = random_servers(rng);
      std::vector<place_request> reqs;
      int n = std::uniform_int_distribution<int>(0, 6)(rng);
      for (int i = 0; i < n; ++i) reqs.push_back(random_request(rng, servers, 100 + i));
      CAPTURE(trial);
      auto seq_servers = servers;
      auto got = place_bfd(mode, servers, reqs);
      std::vector<size_t> order(reqs.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return reqs[a].gpus > reqs[b].gpus; });
      placement_result want;
      std::vector<size_t> failed;
      for (size_t i : order) {
        if (auto a = place_one(mode, seq_servers, reqs[i]))
          want.placed.emplace_back(reqs[i].id, *a);
        else
          failed.push_back(i);
      }
      std::sort(failed.begin(), failed.end());
      for (size_t i : failed) want.unplaced.push_back(reqs[i].id);
      CHECK(got.placed == want.placed);
      CHECK(got.unplaced == want.unplaced);
      for (size_t i = 0; i < servers.size(); ++i) CHECK(servers[i].free == seq_servers[i].free);
    }
  }
}

TEST_CASE("placement: place_bfd equals place_one applied by GPUs descending, on 300 instances "
          "of up to 400 servers") {
  // Many servers: place_bfd's index spans several 64-server words.
  std::mt19937_64 rng(141);
  for (auto mode : {placement_mode::count, placement_mode::consolidated}) {
    for (int trial = 0; trial < 150; ++trial) {
      auto servers = random_servers(rng, 400);
      std::vector<place_request> reqs;
      for (int i = 0; i < 200; ++i) reqs.push_back(random_request(rng, servers, i));
      CAPTURE(trial);
      auto seq_servers = servers;
      auto got = place_bfd(mode, servers, reqs);
      std::vector<size_t> order(reqs.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return reqs[a].gpus > reqs[b].gpus; });
      size_t placed = 0;
      for (size_t i : order) {
        auto a = place_one(mode, seq_servers, reqs[i]);
        if (!a) continue;
        REQUIRE(placed < got.placed.size());
        CHECK(got.placed[placed].first == reqs[i].id);
        CHECK(got.placed[placed].second == *a);
        ++placed;
      }
      CHECK(placed == got.placed.size());
      for (size_t i = 0; i < servers.size(); ++i) CHECK(servers[i].free == seq_servers[i].free);
    }
  }
}

TEST_CASE("placement: consolidated puts a small request on the feasible server with fewest free") {
  // Free 8 / 3 / 5 on servers 1 / 2 / 3; a 3-GPU request fits exactly on server 2.
  std::vector<server_slot> s{{1, 0, 8, 8}, {2, 0, 8, 3}, {3, 0, 8, 5}};
  auto a = place_one(placement_mode::consolidated, s, {10, 3, 0, {}});
  CHECK(*a == allocation{{2, 3}});
  CHECK(s[1].free == 0);
}

TEST_CASE("placement: best-fit ties go to the lowest server id") {
  // Servers 5 and 2 both have 4 free: id 2 wins although it comes second.
  std::vector<server_slot> s{{5, 0, 8, 4}, {2, 0, 8, 4}};
  CHECK(*place_one(placement_mode::consolidated, s, {1, 4, 0, {}}) == allocation{{2, 4}});
  std::vector<server_slot> t{{5, 0, 8, 4}, {2, 0, 8, 4}};
  CHECK(*place_one(placement_mode::count, t, {1, 4, 0, {}}) == allocation{{2, 4}});
}

TEST_CASE("placement: consolidated large request takes whole free servers plus a best-fit rest") {
  // 12 GPUs on 8-GPU servers: the lowest-id completely free server (1; server 3 is also
  // free) takes 8, the remaining 4 go best-fit: server 2 (5 free) over server 3 (8 free).
  std::vector<server_slot> s{{3, 0, 8, 8}, {1, 0, 8, 8}, {2, 0, 8, 5}};
  auto a = place_one(placement_mode::consolidated, s, {1, 12, 0, {}});
  CHECK(*a == allocation{{1, 8}, {2, 4}});
  // Ledger after: server 3 still 8 free, server 1 0, server 2 1.
  CHECK(s[0].free == 8);
  CHECK(s[1].free == 0);
  CHECK(s[2].free == 1);
}

TEST_CASE("placement: a failed request leaves every server unchanged") {
  // 20 GPUs consolidated: whole server 1 (8) is taken tentatively, but the other servers
  // cannot hold the remaining 12 whole or on one server: undone.
  std::vector<server_slot> s{{1, 0, 8, 8}, {2, 0, 8, 6}, {3, 0, 8, 7}};
  auto before = s;
  CHECK(!place_one(placement_mode::consolidated, s, {1, 20, 0, {}}));
  for (size_t i = 0; i < s.size(); ++i) CHECK(s[i].free == before[i].free);
  CHECK(!place_one(placement_mode::count, s, {1, 22, 0, {}}));  // 21 free in total
  for (size_t i = 0; i < s.size(); ++i) CHECK(s[i].free == before[i].free);
}

TEST_CASE("placement: count spills from the servers with the most free GPUs first") {
  // Free 3 / 5 / 2: 9 GPUs fit on no single server; take 5 (server 2), 3 (server 1), then 1
  // of server 3's 2.
  std::vector<server_slot> s{{1, 0, 8, 3}, {2, 0, 8, 5}, {3, 0, 8, 2}};
  CHECK(*place_one(placement_mode::count, s, {1, 9, 0, {}}) ==
        allocation{{1, 3}, {2, 5}, {3, 1}});
}

TEST_CASE("placement: preferred servers are filled first, in the given order") {
  // Count: prefer server 3 then 1: 2 from 3 (all its free), 3 from 1; none from the best fit.
  std::vector<server_slot> s{{1, 0, 8, 8}, {2, 0, 8, 3}, {3, 0, 8, 2}};
  CHECK(*place_one(placement_mode::count, s, {1, 5, 0, {3, 1}}) == allocation{{1, 3}, {3, 2}});
  // Consolidated: preferred server 1 fits 3, though best fit would pick server 2.
  std::vector<server_slot> t{{1, 0, 8, 8}, {2, 0, 8, 3}};
  CHECK(*place_one(placement_mode::consolidated, t, {1, 3, 0, {1}}) == allocation{{1, 3}});
}

TEST_CASE("placement: an untyped request uses one type, lowest type id that fits") {
  // Type 1 server listed first; both types fit: type 0 wins.
  std::vector<server_slot> s{{1, 1, 8, 8}, {2, 0, 8, 4}};
  CHECK(*place_one(placement_mode::count, s, {1, 4, -1, {}}) == allocation{{2, 4}});
  // 6 GPUs: type 0 has 0 left now, so type 1; never split across types.
  CHECK(*place_one(placement_mode::count, s, {2, 6, -1, {}}) == allocation{{1, 6}});
  // 3 more: type 1 has 2 left and type 0 none: it does not fit.
  CHECK(!place_one(placement_mode::count, s, {3, 3, -1, {}}));
}

TEST_CASE("placement: an untyped request tries its preferred servers' type first") {
  // Job already on type-1 server 1: its extra workers stay on type 1 though type 0 fits.
  std::vector<server_slot> s{{1, 1, 8, 4}, {2, 0, 8, 8}};
  CHECK(*place_one(placement_mode::count, s, {1, 2, -1, {1}}) == allocation{{1, 2}});
}

TEST_CASE("placement: zero GPUs place trivially, negative GPUs never") {
  std::vector<server_slot> s{{1, 0, 8, 0}};
  CHECK(place_one(placement_mode::count, s, {1, 0, 0, {}})->empty());
  CHECK(!place_one(placement_mode::count, s, {1, -1, 0, {}}));
}

TEST_CASE("placement: best-fit decreasing places larger requests first") {
  // One server with 8 free; requests 2 then 8 GPUs: 8 goes first and fills it, 2 waits.
  std::vector<server_slot> s{{1, 0, 8, 8}};
  auto r = place_bfd(placement_mode::consolidated, s, {{10, 2, 0, {}}, {11, 8, 0, {}}});
  REQUIRE(r.placed.size() == 1);
  CHECK(r.placed[0].first == 11);
  CHECK(r.unplaced == std::vector<int>{10});
}
