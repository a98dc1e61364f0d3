// doctest's main, and one rule of our own: a run whose filters select no test case fails.
// CTest runs each TEST_CASE by its name (doctest_discover_tests); a name CTest cut short (at a
// ';', its list separator) used to select nothing, and doctest reports that as a success, so
// such a test passed in CI without ever running.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

struct run_selection {
  bool ended = false;
  unsigned selected = 0;
};
run_selection selection;

/// Records how many test cases the run's filters selected; reports nothing itself.
struct selection_listener : doctest::IReporter {
  explicit selection_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selection.ended = true;
    selection.selected = stats.numTestCasesPassingFilters;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

} // namespace

REGISTER_LISTENER("selection", 1, selection_listener);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || !selection.ended) return rc;  // a query: --help, --list-test-cases, ...
  if (selection.selected == 0) {
    std::fprintf(stderr, "%s: no test case matches the filters given (was a test's name cut short?)\n", argv[0]);
    return rc != 0 ? rc : 1;
  }
  return rc;
}
