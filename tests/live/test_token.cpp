// The cluster token helpers (runtime/live/token.hpp): constant-time comparison, and the token
// file read with the checks every credential file gets.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "solvers/input_error.hpp"
#include "runtime/live/token.hpp"
#include "tests/live/fake_scheduler.hpp"

using namespace aryl::live;
using namespace aryl::live::test;

TEST_CASE("live token: tokens_equal is true exactly for equal strings") {
  CHECK(tokens_equal("", ""));
  CHECK(tokens_equal("secret", "secret"));
  CHECK_FALSE(tokens_equal("secret", "secreT"));
  CHECK_FALSE(tokens_equal("secret", "secret2"));
  CHECK_FALSE(tokens_equal("secret2", "secret"));
  CHECK_FALSE(tokens_equal("", "x"));
  CHECK_FALSE(tokens_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
  CHECK_FALSE(tokens_equal(std::string_view("a\0", 2), "a"));
}

namespace {
/// A file holding `text`, readable and writable by its owner only.
void write_private(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}
} // namespace

TEST_CASE("live token: read_token_file trims the final newline and its errors name the file") {
  scratch_dir dir;
  const auto good = dir.path() / "token";
  write_private(good, "s3cret-0123456789\n");
  CHECK(read_token_file(good.string()) == "s3cret-0123456789");

  const auto expect_error = [](const std::string& path, const std::string& what) {
    try {
      read_token_file(path);
      FAIL("no error for " << path);
    } catch (const aryl::input_error& e) {
      const std::string msg = e.what();
      CHECK(msg.find(path) != std::string::npos);
      CHECK(msg.find(what) != std::string::npos);
    }
  };
  expect_error((dir.path() / "missing").string(), "cannot read");
  write_private(dir.path() / "empty", "\n");
  expect_error((dir.path() / "empty").string(), "empty");
  write_private(dir.path() / "big", std::string(max_token_file_bytes + 1, 'x'));
  expect_error((dir.path() / "big").string(), "larger than");
}

TEST_CASE("live token: a token file open to its group or others, or a token under 16 bytes, is refused naming the file") {
  scratch_dir dir;
  const auto open_file = dir.path() / "token-0644";
  std::ofstream(open_file) << "s3cret-0123456789\n";
  std::filesystem::permissions(open_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                              std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  try {
    read_token_file(open_file.string());
    FAIL("a 0644 token file was accepted");
  } catch (const aryl::input_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find(open_file.string()) != std::string::npos);
    CHECK(msg.find("mode 0644") != std::string::npos);
    CHECK(msg.find("chmod 600") != std::string::npos);
  }
  const auto short_file = dir.path() / "short";
  write_private(short_file, "s3cret\n");
  try {
    read_token_file(short_file.string());
    FAIL("a 6-byte token was accepted");
  } catch (const aryl::input_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find(short_file.string()) != std::string::npos);
    CHECK(msg.find("token is 6 bytes; at least 16") != std::string::npos);
  }
  CHECK_THROWS_AS(read_token_file(dir.path().string()), aryl::input_error);  // a folder
}

TEST_CASE("live token: a token that is not UTF-8 is refused at read time naming the file, as every hello would be") {
  scratch_dir dir;
  const auto latin1 = dir.path() / "token-latin1";
  write_private(latin1, "s3cret-0123456789-caf\xe9\n");
  try {
    read_token_file(latin1.string());
    FAIL("a token that is not UTF-8 was accepted");
  } catch (const aryl::input_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find(latin1.string() + ": token is not valid UTF-8") != std::string::npos);
  }
  // UTF-8 beyond ASCII is a token like any other.
  write_private(latin1, "s3cret-0123456789-caf\xc3\xa9\n");
  CHECK(read_token_file(latin1.string()) == "s3cret-0123456789-caf\xc3\xa9");
}

TEST_CASE("live token: a FIFO or a device as the token file is refused naming the file, without waiting for a writer") {
  scratch_dir dir;
  const auto fifo = dir.path() / "token-fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {fifo.string(), std::string("/dev/zero")}) {
    try {
      read_token_file(path);
      FAIL("no error for " << path);
    } catch (const aryl::input_error& e) {
      const std::string msg = e.what();
      CHECK_MESSAGE(msg.find(path + ": token file is not a regular file") != std::string::npos, msg);
    }
  }
}
