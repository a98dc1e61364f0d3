// serve's and agent's log: each line stamped, and lines of threads writing at once kept whole.
#include <doctest/doctest.h>

#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/cli/log_stamp.hpp"

TEST_CASE("stamped log: two threads writing lines in several statements each at once leave every line whole") {
  std::stringbuf target;
  aryl::live::stamped_log stamped(&target);
  std::ostream log(&stamped);
  const int lines = 2000;
  auto writer = [&](char who) {
    for (int i = 0; i < lines; ++i) log << "[" << who << "] line " << i << " of " << lines << '\n';
  };
  std::thread a(writer, 'a'), b(writer, 'b');
  a.join();
  b.join();
  std::istringstream in(target.str());
  const std::regex whole(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[([ab])\] line (\d+) of 2000)");
  int next[2] = {0, 0};
  int total = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(line, m, whole), line);
    int who = m[1] == "a" ? 0 : 1;
    CHECK(std::stoi(m[2]) == next[who]);  // each thread's lines in its own order
    ++next[who];
    ++total;
  }
  CHECK(total == 2 * lines);
}
