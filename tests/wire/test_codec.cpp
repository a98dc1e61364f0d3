// The wire codec: round trips, stream chunking, limits, and the error text of each malformed
// body. Bodies a peer might send are built by hand with mp (tests/wire/mp.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/wire/codec.hpp"
#include "tests/wire/mp.hpp"
#include "tests/wire/samples.hpp"

using namespace aryl::wire;
using aryl::wire::test::body;
using aryl::wire::test::framed;
using aryl::wire::test::mp;
using aryl::wire::test::sample_messages;

namespace {

/// The message of a one-frame stream, or a default hello_ok on failure (after FAIL_CHECK).
message decode_one(const std::vector<uint8_t>& frame) {
  frame_decoder d;
  d.feed(frame.data(), frame.size());
  decode_step s = d.next();
  if (auto* e = std::get_if<decode_error>(&s)) FAIL_CHECK("decode error: " << e->reason);
  if (auto* m = std::get_if<message>(&s)) return *m;
  FAIL_CHECK("decoder wants more bytes");
  return hello_ok{};
}

/// The reason the frame decoder refuses `b` as a body ("" if it accepts it); decode_body
/// must give the same reason.
std::string reason_of(const mp& b) {
  const auto frame = framed(b.bytes);
  frame_decoder d;
  d.feed(frame.data(), frame.size());
  decode_step s = d.next();
  body_result direct = decode_body(b.bytes.data(), b.bytes.size());
  if (auto* e = std::get_if<decode_error>(&s)) {
    auto* e2 = std::get_if<decode_error>(&direct);
    CHECK((e2 && e2->reason == e->reason));
    return e->reason;
  }
  CHECK(std::holds_alternative<message>(direct));
  return "";
}

/// A valid heartbeat body with `extra` fields appended.
mp heartbeat_with(std::vector<std::pair<std::string, mp>> extra) {
  extra.insert(extra.begin(), {"seq", mp::uint(5)});
  return body("heartbeat", extra);
}

} // namespace

TEST_CASE("wire: every message type survives encode then decode with its field values") {
  const auto samples = sample_messages();
  REQUIRE(samples.size() == std::variant_size_v<message>);
  for (size_t i = 0; i < samples.size(); ++i) {
    INFO("message " << type_of(samples[i]));
    CHECK(samples[i].index() == i);  // one sample per type, in variant order
    CHECK(decode_one(encode_frame(samples[i])) == samples[i]);
  }
}

TEST_CASE("wire: type_of names the wire type") {
  CHECK(type_of(register_{}) == "register");
  CHECK(type_of(status_reply{}) == "status_reply");
  CHECK(type_of(exit_{}) == "exit");
}

TEST_CASE("wire: a body starts with v then type") {
  const auto b = encode_body(bye{});
  // fixmap(2), "v", 1, "type", "bye"
  const std::vector<uint8_t> want{0x82, 0xa1, 'v', 0x01, 0xa4, 't', 'y', 'p', 'e', 0xa3, 'b', 'y', 'e'};
  CHECK(b == want);
  const auto f = encode_frame(bye{});
  CHECK(f == framed(want));
}

TEST_CASE("wire: frames fed one byte at a time decode to the same messages") {
  const auto samples = sample_messages();
  std::vector<uint8_t> stream;
  for (const auto& m : samples) {
    const auto f = encode_frame(m);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  frame_decoder d;
  std::vector<message> got;
  for (uint8_t byte : stream) {
    d.feed(&byte, 1);
    for (decode_step s = d.next(); !std::holds_alternative<need_more>(s); s = d.next()) {
      REQUIRE(std::holds_alternative<message>(s));
      got.push_back(std::get<message>(s));
    }
  }
  CHECK(got == samples);
  CHECK(d.buffered() == 0);
}

TEST_CASE("wire: several frames in one chunk decode in order then need more bytes") {
  std::vector<uint8_t> stream;
  for (uint64_t seq : {1, 2, 3}) {
    const auto f = encode_frame(heartbeat{.seq = seq});
    stream.insert(stream.end(), f.begin(), f.end());
  }
  frame_decoder d;
  d.feed(stream.data(), stream.size());
  for (uint64_t seq : {1, 2, 3}) CHECK(std::get<message>(d.next()) == message(heartbeat{seq}));
  CHECK(std::holds_alternative<need_more>(d.next()));
  CHECK_FALSE(d.failed());
}

TEST_CASE("wire: a truncated frame waits for more bytes") {
  const auto f = encode_frame(cancel{.job_id = 9});
  frame_decoder d;
  d.feed(f.data(), 2);  // half a length
  CHECK(std::holds_alternative<need_more>(d.next()));
  d.feed(f.data() + 2, f.size() - 3);  // all but the last body byte
  CHECK(std::holds_alternative<need_more>(d.next()));
  CHECK(d.buffered() == f.size() - 1);
  d.feed(f.data() + f.size() - 1, 1);
  CHECK(std::get<message>(d.next()) == message(cancel{.job_id = 9}));
}

TEST_CASE("wire: an oversized announced length is refused before any body byte arrives") {
  // 5,000,000 = 0x004C4B40; only the 4 length bytes are fed.
  const std::vector<uint8_t> header{0x00, 0x4c, 0x4b, 0x40};
  frame_decoder d;
  d.feed(header.data(), header.size());
  CHECK(d.failed());
  CHECK(d.buffered() == 0);
  CHECK(std::get<decode_error>(d.next()).reason ==
        "frame of 5000000 bytes exceeds the 1048576-byte limit");
}

TEST_CASE("wire: the frame limit is a decoder parameter") {
  const auto f = encode_frame(error{.reason = std::string(200, 'x')});
  frame_decoder small(100);
  small.feed(f.data(), f.size());
  CHECK(std::get<decode_error>(small.next()).reason ==
        "frame of " + std::to_string(f.size() - 4) + " bytes exceeds the 100-byte limit");
  frame_decoder big(f.size() - 4);
  big.feed(f.data(), f.size());
  CHECK(std::holds_alternative<message>(big.next()));
}

TEST_CASE("wire: after an error the decoder repeats it and ignores further bytes") {
  const auto bad = framed(body("foo", {}).bytes);
  const auto good = encode_frame(bye{});
  frame_decoder d;
  d.feed(bad.data(), bad.size());
  d.feed(good.data(), good.size());
  CHECK(std::get<decode_error>(d.next()).reason == "unknown message type 'foo'");
  d.feed(good.data(), good.size());
  CHECK(std::get<decode_error>(d.next()).reason == "unknown message type 'foo'");
  CHECK(d.failed());
  CHECK(d.buffered() == 0);
}

TEST_CASE("wire: a body that is not one msgpack map is refused with its reason") {
  CHECK(reason_of(mp{}) == "body is empty");
  CHECK(reason_of(mp::array({mp::uint(1)})) == "body is not a msgpack map");
  CHECK(reason_of(mp::str("hello")) == "body is not a msgpack map");
  mp trailing = body("bye", {});
  trailing.append(mp::nil());
  CHECK(reason_of(trailing) == "trailing bytes in frame");
  mp cut = body("heartbeat", {{"seq", mp::uint(1)}});
  cut.bytes.pop_back();
  CHECK(reason_of(cut) == "msgpack body ends before its last value");
  CHECK(reason_of(mp{{0xc1}}) == "malformed msgpack body");  // 0xc1: never used
}

TEST_CASE("wire: version and type are checked before the fields") {
  CHECK(reason_of(mp::map({{"type", mp::str("bye")}})) == "missing field 'v'");
  CHECK(reason_of(mp::map({{"v", mp::str("1")}, {"type", mp::str("bye")}})) ==
        "field 'v' must be an unsigned integer");
  CHECK(reason_of(mp::map({{"v", mp::uint(2)}, {"type", mp::str("bye")}})) ==
        "protocol version 2 not supported (this is 1)");
  CHECK(reason_of(mp::map({{"v", mp::uint(0)}, {"type", mp::str("bye")}})) ==
        "protocol version 0 not supported (this is 1)");
  CHECK(reason_of(mp::map({{"v", mp::uint(1)}})) == "missing field 'type'");
  CHECK(reason_of(mp::map({{"v", mp::uint(1)}, {"type", mp::uint(3)}})) ==
        "field 'type' must be a string");
  CHECK(reason_of(body("foo", {})) == "unknown message type 'foo'");
  CHECK(reason_of(body(std::string("a\nb\0c", 5), {})) == "unknown message type 'a?b?c'");
}

TEST_CASE("wire: a missing or mistyped field is named in the error") {
  CHECK(reason_of(body("heartbeat", {})) == "missing field 'seq'");
  CHECK(reason_of(body("submit_ok", {{"job_id", mp::integer(-1)}})) ==
        "field 'job_id' must be an unsigned integer");
  CHECK(reason_of(body("demand", {{"servers_needed", mp::f64(2.0)}})) ==
        "field 'servers_needed' must be an unsigned integer");
  CHECK(reason_of(body("progress", {{"job_id", mp::uint(1)},
                                    {"rank", mp::uint(uint64_t{1} << 32)},
                                    {"work_done", mp::f64(1)},
                                    {"step", mp::uint(1)}})) == "field 'rank' exceeds 4294967295");
  CHECK(reason_of(body("stop", {{"job_id", mp::uint(1)}, {"grace_s", mp::f64(-1)}})) ==
        "field 'grace_s' must be finite and non-negative");
  CHECK(reason_of(body("stop", {{"job_id", mp::uint(1)}, {"grace_s", mp::str("1")}})) ==
        "field 'grace_s' must be a number");
  CHECK(reason_of(body("exit", {{"job_id", mp::uint(1)},
                                {"rank", mp::uint(0)},
                                {"code", mp::integer(-3'000'000'000)},
                                {"signal", mp::uint(0)}})) ==
        "field 'code' is outside the 32-bit signed range");
  CHECK(reason_of(body("hello", {{"role", mp::str("admin")},
                                 {"token", mp::str("t")},
                                 {"name", mp::str("n")}})) ==
        "field 'role' must be one of: agent, client");
  CHECK(reason_of(body("error", {{"reason", mp::str("\xff")}})) ==
        "field 'reason' is not valid UTF-8");
  CHECK(reason_of(body("error", {{"reason", mp::nil()}})) == "field 'reason' must be a string");
  CHECK(reason_of(heartbeat_with({{"seq", mp::uint(6)}})) == "duplicate field 'seq'");
}

TEST_CASE("wire: an error inside a list or nested map gives the field's path") {
  const mp worker0 = mp::map({{"job_id", mp::uint(1)}, {"rank", mp::uint(0)},
                              {"gpus", mp::array({mp::uint(0)})}});
  const mp worker1 = mp::map({{"job_id", mp::uint(2)}, {"rank", mp::uint(0)},
                              {"gpus", mp::array({mp::str("0")})}});
  const auto reg = [](mp workers) {
    return body("register", {{"server", mp::str("s")}, {"gpu_type", mp::str("a100")},
                             {"gpus", mp::uint(8)}, {"pool", mp::str("training")},
                             {"workers", workers}});
  };
  CHECK(reason_of(reg(mp::array({worker0, worker1}))) ==
        "field 'workers[1].gpus[0]' must be an unsigned integer");
  CHECK(reason_of(reg(mp::array({worker0, mp::uint(1)}))) == "field 'workers[1]' must be a map");
  CHECK(reason_of(reg(mp::map({}))) == "field 'workers' must be a list");
  CHECK(reason_of(reg(mp::array({mp::map({{"job_id", mp::uint(1)}})}))) ==
        "missing field 'workers[0].rank'");
}

TEST_CASE("wire: launch env must map strings to distinct strings") {
  const auto with_env = [](mp env) {
    return body("launch", {{"job_id", mp::uint(1)}, {"rank", mp::uint(0)},
                           {"world_size", mp::uint(1)}, {"gpus", mp::array({})},
                           {"checkpoint_dir", mp::str("/c")}, {"rendezvous", mp::str("h:1")},
                           {"command", mp::array({mp::str("x")})}, {"env", env}});
  };
  CHECK(reason_of(with_env(mp::map({{"A", mp::str("1")}}))) == "");
  CHECK(reason_of(with_env(mp::map({{"A", mp::uint(1)}}))) == "field 'env.A' must be a string");
  CHECK(reason_of(with_env(mp::map({{"A", mp::str("1")}, {"A", mp::str("2")}}))) ==
        "field 'env' has duplicate key 'A'");
  CHECK(reason_of(with_env(mp::map_of({{mp::uint(1), mp::str("1")}}))) ==
        "field 'env key' must be a string");
  CHECK(reason_of(with_env(mp::array({}))) == "field 'env' must be a map");
}

TEST_CASE("wire: size and nesting limits are enforced") {
  std::vector<mp> gpus(max_gpu_list + 1, mp::uint(0));
  const auto launch_with = [](std::vector<mp> g) {
    return body("launch", {{"job_id", mp::uint(1)}, {"rank", mp::uint(0)},
                           {"world_size", mp::uint(1)}, {"gpus", mp::array(g)},
                           {"checkpoint_dir", mp::str("/c")}, {"rendezvous", mp::str("h:1")},
                           {"command", mp::array({})}});
  };
  CHECK(reason_of(launch_with(gpus)) == "field 'gpus' has 1025 entries (limit 1024)");
  gpus.pop_back();
  CHECK(reason_of(launch_with(gpus)) == "");

  CHECK(reason_of(body("error", {{"reason", mp::str(std::string(max_string_bytes, 'x'))}})) == "");
  CHECK(reason_of(body("error", {{"reason", mp::str(std::string(max_string_bytes + 1, 'x'))}})) ==
        "a string exceeds the 65536-byte limit");
  CHECK(reason_of(heartbeat_with({{"extra", mp::array(std::vector<mp>(max_list + 1, mp::nil()))}})) ==
        "a list exceeds the 4096-entry limit");
  std::vector<std::pair<std::string, mp>> many;
  for (size_t i = 0; i < max_map; ++i) many.emplace_back(std::to_string(i) + "k", mp::nil());
  CHECK(reason_of(heartbeat_with({{"extra", mp::map(many)}})) == "");
  many.emplace_back("one_more", mp::nil());
  CHECK(reason_of(heartbeat_with({{"extra", mp::map(many)}})) ==
        "a map exceeds the 1024-entry limit");

  // The body is level 1; an extra field holding 7 nested arrays reaches level 8.
  const auto nested = [](size_t levels) {
    mp x = mp::nil();
    for (size_t i = 0; i < levels; ++i) x = mp::array({x});
    return x;
  };
  CHECK(reason_of(heartbeat_with({{"extra", nested(max_depth - 1)}})) == "");
  CHECK(reason_of(heartbeat_with({{"extra", nested(max_depth)}})) == "nesting deeper than 8 levels");
}

TEST_CASE("wire: unknown extra fields are ignored") {
  const mp b = heartbeat_with({{"future", mp::map({{"x", mp::array({mp::f64(1.5)})}})},
                               {"flag", mp::boolean(true)}});
  CHECK(decode_one(framed(b.bytes)) == message(heartbeat{.seq = 5}));
  // A non-string key is not a field name either.
  const mp odd = mp::map_of({{mp::str("v"), mp::uint(1)}, {mp::uint(7), mp::str("x")},
                             {mp::str("type"), mp::str("heartbeat")}, {mp::str("seq"), mp::uint(5)}});
  CHECK(decode_one(framed(odd.bytes)) == message(heartbeat{.seq = 5}));
}

TEST_CASE("wire: fields may come in any order") {
  const mp b = mp::map({{"seq", mp::uint(8)}, {"type", mp::str("heartbeat")}, {"v", mp::uint(1)}});
  CHECK(decode_one(framed(b.bytes)) == message(heartbeat{.seq = 8}));
}

TEST_CASE("wire: an optional field that is nil or absent decodes as absent") {
  const auto sub = [](std::vector<std::pair<std::string, mp>> extra) {
    std::vector<std::pair<std::string, mp>> f{
        {"name", mp::str("j")},        {"gpus", mp::uint(2)},
        {"min_workers", mp::uint(1)},  {"max_workers", mp::uint(4)},
        {"command", mp::array({})},    {"expected_duration_s", mp::uint(60)}};
    f.insert(f.end(), extra.begin(), extra.end());
    return framed(body("submit", f).bytes);
  };
  submit want;
  want.name = "j";
  want.gpus = 2;
  want.max_workers = 4;
  want.expected_duration_s = 60;
  CHECK(decode_one(sub({})) == message(want));
  CHECK(decode_one(sub({{"gpu_type", mp::nil()}})) == message(want));
  submit typed = want;
  typed.gpu_type = "h100";
  CHECK(decode_one(sub({{"gpu_type", mp::str("h100")}})) == message(typed));
}

TEST_CASE("wire: an absent or empty env is omitted on the wire and decodes as empty") {
  launch l;
  l.job_id = 1;
  l.gpus = {0};
  l.command = {"x"};
  const auto frame = encode_frame(l);
  const std::string bytes(frame.begin(), frame.end());
  CHECK(bytes.find("env") == std::string::npos);
  CHECK(bytes.find("work_s") == std::string::npos);
  CHECK(decode_one(frame) == message(l));
}

TEST_CASE("wire: integers are accepted where a number is expected") {
  const mp b = body("progress", {{"job_id", mp::uint(3)}, {"rank", mp::uint(0)},
                                 {"work_done", mp::uint(120)}, {"step", mp::uint(10)}});
  CHECK(decode_one(framed(b.bytes)) ==
        message(progress{.job_id = 3, .rank = 0, .work_done = 120, .step = 10}));
}

TEST_CASE("wire: an unsigned field accepts any msgpack integer encoding of its value") {
  // seq = 5 as int64 (0xd3), the widest signed format; a peer may encode it so.
  const mp five{{0xd3, 0, 0, 0, 0, 0, 0, 0, 5}};
  CHECK(decode_one(framed(body("heartbeat", {{"seq", five}}).bytes)) == message(heartbeat{.seq = 5}));
}
