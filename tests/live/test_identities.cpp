// Identities, roles and the audit log (docs/security.md): the identities file, the role table
// against an independent statement of it, what a hello authenticates as, and what a gateway
// with identities lets each peer do, over raw sockets.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/live/access.hpp"
#include "runtime/live/audit_log.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/gateway_access.hpp"
#include "runtime/inputs/user_name.hpp"
#include "runtime/live/identities.hpp"
#include "solvers/input_error.hpp"
#include "tests/input_test_support.hpp"
#include "tests/live/gateway_peer.hpp"

using namespace aryl;
using namespace aryl::live;
using namespace std::chrono_literals;
using aryl::test::peer;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

std::string temp_path(const std::string& name) {
  // One folder per test process, removed when the process ends, so runs leave nothing behind.
  struct folder {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("aryl-identities-test-" + std::to_string(::getpid()));
    ~folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static folder dir;
  std::filesystem::create_directories(dir.path);
  return (dir.path / name).string();
}

void write_file(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path, std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

} // namespace

TEST_CASE("identities: a created token is found by its hash only, a revoked one is still named, and the file "
          "holds no token") {
  const auto path = temp_path("ids-roundtrip");
  std::filesystem::remove(path);
  identity_store s = identity_store::load(path);  // no file yet: empty
  CHECK(s.all().empty());
  auto alice = s.create({"alice", role::user, "", "", "", false});
  auto t0 = s.create({"t0", role::agent, "", "V100", "training", false});
  auto ops = s.create({"ops", role::admin, "", "", "", false}, false);
  CHECK(alice.rfind("aryl_", 0) == 0);
  CHECK(alice.size() == 5 + 64);
  CHECK(alice != t0);
  CHECK(ops.empty());
  s.save(path);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find(alice) == std::string::npos);
  CHECK(text.find(hash_token(alice)) != std::string::npos);

  auto back = identity_store::load(path);
  REQUIRE(back.by_token(alice));
  CHECK(back.by_token(alice)->name == "alice");
  CHECK(back.by_token(t0)->gpu_type == "V100");
  CHECK(back.by_token(t0)->pool == "training");
  CHECK(back.by_name("ops")->token_hash.empty());
  CHECK_FALSE(back.by_token(alice + "x"));
  CHECK_FALSE(back.by_token(""));
  CHECK(back.revoke("alice"));
  CHECK_FALSE(back.revoke("alice"));
  back.save(path);
  auto revoked = identity_store::load(path);
  REQUIRE(revoked.by_token(alice));
  CHECK(revoked.by_token(alice)->revoked);
  // A revoked name may be given a new credential; the old token then finds nothing.
  auto again = revoked.create({"alice", role::user, "", "", "", false});
  CHECK_FALSE(revoked.by_token(alice));
  CHECK(revoked.by_token(again)->name == "alice");
  CHECK(error_of([&] { revoked.create({"alice", role::user, "", "", "", false}); }).find("exists already") !=
        std::string::npos);
}

TEST_CASE("identities: a bad file is refused naming the file and the line") {
  const auto path = temp_path("ids-bad");
  const std::string hash = "sha256:" + std::string(64, 'a');
  struct bad {
    std::string text, says;
  };
  for (const auto& [text, says] : std::vector<bad>{
           {"alice user\n", ":1: expected NAME ROLE CREDENTIAL"},
           {"# c\nalice boss " + hash + "\n", ":2: role 'boss' is not one of admin|user|agent|reader"},
           {"alice user sha256:abc\n", ":1: credential is neither 'cert' nor sha256:"},
           {"Alice user cert\n", ":1: 'Alice' holds a character outside"},
           {"alice user cert gpu_type=V100\n", ":1: 'gpu_type=V100': only an agent"},
           {"t0 agent cert pool=gpu\n", ":1: pool 'gpu' is not one of training|inference"},
           {"a user cert\na admin cert\n", ":2: 'a' is listed twice"},
       }) {
    write_file(path, text);
    auto msg = error_of([&] { identity_store::load(path); });
    CHECK_MESSAGE(msg.find(path + says) != std::string::npos, msg);
  }
  write_file(path, "ops admin cert\n", 0644);
  CHECK(error_of([&] { identity_store::load(path); }).find("chmod") != std::string::npos);
}

TEST_CASE("identities: names follow the rules of Unix user names") {
  for (auto ok : {"alice", "t0", "node-07.rack_2", "a"}) CHECK_MESSAGE(user_name_problem(ok).empty(), ok);
  for (auto bad : {"", "-x", ".x", "Root", "a b", "a/b", "a:b", "abcdefghijabcdefghijabcdefghijabc"})
    CHECK_MESSAGE(!user_name_problem(bad).empty(), bad);
}

TEST_CASE("roles: every role and action, against the table of docs/security.md") {
  // admin: all but register; user: submit, status, show node, own cancel/show/logs/hold/
  // release/update; agent: register; reader: status, show node. History: whoever may read status.
  const std::map<role, std::set<action>> may = {
      {role::admin, {action::submit, action::cancel, action::show, action::logs, action::status, action::node_order,
                     action::demand, action::tokens, action::show_node, action::hold, action::release, action::update,
                     action::history}},
      {role::user, {action::submit, action::cancel, action::show, action::logs, action::status, action::show_node,
                    action::hold, action::release, action::update, action::history}},
      {role::agent, {action::register_node}},
      {role::reader, {action::status, action::show_node, action::history}},
  };
  for (auto r : {role::admin, role::user, role::agent, role::reader})
    for (int a = 0; a <= static_cast<int>(action::history); ++a) {
      auto act = static_cast<action>(a);
      principal p{"alice", r, false};
      const bool allowed = may.at(r).count(act) > 0;
      INFO(role_name(r) << " " << action_name(act));
      CHECK(refusal(p, act, "alice", true).empty() == allowed);
      if (allowed) {
        const bool own_only = r == role::user && (act == action::cancel || act == action::show || act == action::logs ||
                                                  act == action::hold || act == action::release || act == action::update);
        CHECK(refusal(p, act, "bob", true).empty() == !own_only);
        CHECK(refusal(p, act, "", false).empty() == !own_only);
      } else {
        auto why = refusal(p, act, "alice", true);
        CHECK(why.rfind("alice (role " + std::string(role_name(r)) + ") may not ", 0) == 0);
      }
      CHECK(refusal(principal{"x", r, true}, act, "bob", false).empty());  // cluster-token mode
    }
  // Someone else's job and no job read alike.
  principal alice{"alice", role::user, false};
  CHECK(refusal(alice, action::show, "bob", true) == refusal(alice, action::show, "", false));
}

TEST_CASE("tenants bound to users: a user submits only for its tenants, its only one by default, within the "
          "tenant's priority cap, and admins and cluster-token mode are not bound") {
  tenant_binding b;
  b.users = {{"vision", {"alice", "bob"}}, {"nlp", {"bob"}}};
  b.max_priority = {{"vision", 1}};
  principal alice{"alice", role::user, false}, bob{"bob", role::user, false}, carol{"carol", role::user, false};
  CHECK(choose_tenant(b, alice, std::nullopt, 0).tenant == "vision");
  CHECK(choose_tenant(b, alice, std::string("vision"), 1).refusal.empty());
  CHECK(choose_tenant(b, alice, std::string("vision"), 2).refusal == "priority 2: tenant vision allows up to 1");
  CHECK(choose_tenant(b, alice, std::string("nlp"), 0).refusal ==
        "alice may not submit for tenant nlp (alice's tenants: vision)");
  CHECK(choose_tenant(b, bob, std::nullopt, 0).refusal == "bob is in tenants nlp, vision: choose one with --tenant");
  CHECK(choose_tenant(b, bob, std::string("nlp"), 5).refusal.empty());  // nlp has no cap
  CHECK(choose_tenant(b, carol, std::nullopt, 0).refusal.empty());
  CHECK_FALSE(choose_tenant(b, carol, std::nullopt, 0).tenant);
  CHECK(choose_tenant(b, carol, std::nullopt, 1).refusal == "priority 1: a job without a tenant runs at priority 0 at most");
  CHECK(choose_tenant(b, carol, std::string("vision"), 0).refusal ==
        "carol may not submit for tenant vision (no tenant names carol)");
  CHECK(choose_tenant(b, principal{"ops", role::admin, false}, std::string("nlp"), 9).refusal.empty());
  CHECK(choose_tenant(b, principal{"cluster-token", role::admin, true}, std::string("x"), 9).refusal.empty());
  CHECK(choose_tenant(tenant_binding{}, carol, std::string("x"), 9).tenant == "x");
}

TEST_CASE("hello: a token or a certificate names the identity, and they must agree, fit the hello's role, and not be "
          "revoked") {
  const auto path = temp_path("ids-hello");
  std::filesystem::remove(path);
  identity_registry ids(path);
  auto alice = ids.create({"alice", role::user, "", "", "", false});
  auto t0 = ids.create({"t0", role::agent, "", "V100", "training", false});
  ids.create({"ops", role::admin, "", "", "", false}, false);
  using wire::peer_role;
  auto as = [&](peer_role r, const std::string& token, const std::string& cn) {
    return authenticate(&ids, "", wire::hello{r, token, "x"}, cn);
  };
  auto v = as(peer_role::client, alice, "");
  REQUIRE(v.who);
  CHECK(v.who->name == "alice");
  CHECK(v.who->who == role::user);
  CHECK_FALSE(v.who->cluster_token);
  CHECK(as(peer_role::client, "", "ops").who->name == "ops");
  CHECK(as(peer_role::client, alice, "alice").who);
  CHECK(as(peer_role::client, alice, "ops").refusal == "the certificate names 'ops' and the token 'alice'");
  CHECK(as(peer_role::client, "aryl_nope", "").refusal == "unknown token");
  CHECK(as(peer_role::client, "", "mallory").refusal == "certificate for 'mallory': no such identity in this cluster");
  CHECK(as(peer_role::client, "", "").refusal.find("no credential") == 0);
  CHECK(as(peer_role::agent, alice, "").refusal == "alice (role user) may not register a node");
  CHECK(as(peer_role::client, t0, "").refusal == "t0 (role agent) may only register its node");
  auto agent = as(peer_role::agent, t0, "");
  REQUIRE(agent.who);

  wire::register_ r{"t0", "V100", 8, wire::pool_kind::training, {}};
  CHECK(register_refusal(&ids, *agent.who, r).empty());
  r.server = "t1";
  CHECK(register_refusal(&ids, *agent.who, r) == "t0 (role agent) may register only node t0, not t1");
  r.server = "t0";
  r.gpu_type = "A100";
  CHECK(register_refusal(&ids, *agent.who, r) == "t0 was enrolled with GPU type V100, not A100");
  r.gpu_type = "V100";
  r.pool = wire::pool_kind::inference;
  CHECK(register_refusal(&ids, *agent.who, r) == "t0 was enrolled in the training pool, not inference");

  CHECK(credential_lapsed(ids, *v.who, v.credential_hash).empty());
  REQUIRE(ids.revoke("alice"));
  CHECK(credential_lapsed(ids, *v.who, v.credential_hash) == "the credential of alice was revoked");
  auto revoked = as(peer_role::client, alice, "");
  CHECK(revoked.refusal == "the credential of alice was revoked");
  CHECK(revoked.named == "alice");
  auto fresh = ids.create({"alice", role::user, "", "", "", false});
  CHECK(credential_lapsed(ids, *v.who, v.credential_hash) == "the credential of alice was replaced");
  CHECK(as(peer_role::client, fresh, "").who);
  // Cluster-token mode: the token, and everyone is an admin.
  CHECK(authenticate(nullptr, "cluster-secret", wire::hello{peer_role::client, "cluster-secret", "x"}, "").who->cluster_token);
  CHECK(authenticate(nullptr, "cluster-secret", wire::hello{peer_role::client, "other", "x"}, "").refusal ==
        "wrong cluster token");
}

TEST_CASE("audit: one JSON line per entry, control characters escaped, appended across reopenings") {
  audit_entry e{"alice", "user", "127.0.0.1:5000", "submit", "job-3 (a\nb\x1b[31m)", "ok"};
  auto line = audit_line(e, 1'700'000'000'123);
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(line.find('\x1b') == std::string::npos);
  auto j = nlohmann::json::parse(line);
  CHECK(j["time"] == "2023-11-14T22:13:20.123Z");
  CHECK(j["target"] == "job-3 (a\nb\x1b[31m)");
  CHECK(j["identity"] == "alice");

  const auto path = temp_path("audit.jsonl");
  std::filesystem::remove(path);
  std::vector<std::string> trouble;
  {
    audit_log a(path, [&](const std::string& t) { trouble.push_back(t); });
    a.record(e);
  }
  {
    audit_log a(path, [&](const std::string& t) { trouble.push_back(t); });
    a.record(e);
  }
  std::ifstream in(path);
  int lines = 0;
  for (std::string l; std::getline(in, l);) lines += nlohmann::json::parse(l)["identity"] == "alice";
  CHECK(lines == 2);
  CHECK(trouble.empty());
  // A log that cannot be written is said once; the requests go on.
  audit_log nowhere("/proc/aryl-no-such-dir/audit.jsonl", [&](const std::string& t) { trouble.push_back(t); });
  nowhere.record(e);
  nowhere.record(e);
  CHECK(nowhere.failures() == 2);
  CHECK(trouble.size() == 2);  // cannot open, then cannot append (once)
}

TEST_CASE("gateway with identities: a refused request gets one error frame naming identity, role and action: "
          "the connection stays usable, and the refusal is audited") {
  const auto path = temp_path("ids-gateway");
  std::filesystem::remove(path);
  const auto audit_path = temp_path("gateway-audit.jsonl");
  std::filesystem::remove(audit_path);
  auto ids = std::make_shared<identity_registry>(path);
  auto alice = ids->create({"alice", role::user, "", "", "", false});
  auto ops = ids->create({"ops", role::admin, "", "", "", false});
  auto t0 = ids->create({"t0", role::agent, "", "", "", false});
  std::ostringstream log;
  gateway_options o;
  o.identities = ids;
  o.audit = std::make_shared<audit_log>(audit_path, nullptr);
  o.checkpoint_root = "/tmp/aryl-identities-test";
  auto g = std::make_unique<gateway>(o, log);
  g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
  g->add_server(1, "t1", "V100", 8, wire::pool_kind::training);

  peer user(g->port());
  user.send(wire::hello{wire::peer_role::client, alice, "cli"});
  auto ok = user.receive();
  REQUIRE(ok);
  auto* hello_ok = std::get_if<wire::hello_ok>(&*ok);
  REQUIRE(hello_ok);
  CHECK(hello_ok->identity == "alice");
  CHECK(hello_ok->role == "user");
  for (int i = 0; i < 2; ++i) {  // twice: the first refusal did not close it
    user.send(wire::node_request{"t0", "drain", std::nullopt, std::nullopt});
    auto m = user.receive();
    REQUIRE(m);
    auto* e = std::get_if<wire::error>(&*m);
    REQUIRE(e);
    CHECK(e->reason == "alice (role user) may not cordon, drain or resume servers");
  }
  user.send(wire::token_request{"create", "mallory", "admin", std::nullopt, std::nullopt});
  auto m = user.receive();
  REQUIRE(m);
  REQUIRE(std::get_if<wire::error>(&*m));
  CHECK(std::get<wire::error>(*m).reason == "alice (role user) may not manage identities");

  // An admin makes a token over the wire; it works at once, and its revocation ends it.
  peer admin(g->port());
  admin.send(wire::hello{wire::peer_role::client, ops, "cli"});
  REQUIRE(admin.receive());
  admin.send(wire::token_request{"create", "bob", "user", std::nullopt, std::nullopt});
  auto made = admin.receive();
  REQUIRE(made);
  auto* reply = std::get_if<wire::token_reply>(&*made);
  REQUIRE(reply);
  REQUIRE(reply->token);
  CHECK(ids->by_token(*reply->token)->name == "bob");
  CHECK(identity_store::load(path).by_name("bob"));  // written before answered
  admin.send(wire::token_request{"revoke", "alice", std::nullopt, std::nullopt, std::nullopt});
  auto revoked = admin.receive();
  REQUIRE(revoked);
  CHECK(std::get_if<wire::token_reply>(&*revoked));
  user.send(wire::node_request{"t0", "drain", std::nullopt, std::nullopt});
  CHECK(user.refusal() == "the credential of alice was revoked");

  // An identity named root submits nothing unless live.allow_root_jobs.
  auto root = ids->create({"root", role::user, "", "", "", false});
  peer as_root(g->port());
  as_root.send(wire::hello{wire::peer_role::client, root, "cli"});
  REQUIRE(as_root.receive());
  wire::submit job;
  job.name = "j";
  job.command = {"/bin/true"};
  as_root.send(job);
  auto refused = as_root.receive();
  REQUIRE(refused);
  REQUIRE(std::get_if<wire::error>(&*refused));
  CHECK(std::get<wire::error>(*refused).reason ==
        "jobs as root are refused: set live.allow_root_jobs (and agent --allow-root-jobs)");

  // An agent credential registers only its node.
  peer impostor(g->port());
  impostor.send(wire::hello{wire::peer_role::agent, t0, "t1"});
  REQUIRE(impostor.receive());
  impostor.send(wire::register_{"t1", "V100", 8, wire::pool_kind::training, {}});
  CHECK(impostor.refusal() == "register: t0 (role agent) may register only node t0, not t1");

  g->close();
  std::ifstream in(audit_path);
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  auto has = [&](const std::string& who, const std::string& act, const std::string& result) {
    for (auto& j : lines)
      if (j["identity"] == who && j["action"] == act && j["result"].get<std::string>().rfind(result, 0) == 0) return true;
    return false;
  };
  CHECK(has("alice", "node", "refused: alice (role user) may not cordon, drain or resume servers"));
  CHECK(has("alice", "token", "refused"));
  CHECK(has("ops", "token create", "ok"));
  CHECK(has("ops", "token revoke", "ok"));
  CHECK(has("alice", "node_request", "refused: the credential of alice was revoked"));
  CHECK(has("t0", "register", "refused: t0 (role agent) may register only node t0, not t1"));
  for (auto& j : lines) CHECK(j["peer"].get<std::string>().rfind("127.0.0.1:", 0) == 0);
}
