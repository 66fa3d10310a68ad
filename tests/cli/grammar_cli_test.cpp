// tests/cli/grammar_cli_test: `k3 run --grammar / --json-schema` on the golden small model
// (random weights, temperature 1): every output obeys the constraint; flag and content
// errors are reported (usage errors exit 2, a grammar or schema we cannot honour exits 1).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "text/json_py.h"

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

// Per test: ctest runs the tests of this file side by side.
std::string tmp(const std::string& name) {
  return testing::TempDir() + "grammar_cli_" + testing::UnitTest::GetInstance()->current_test_info()->name() +
         "_" + name;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

Result k3(const std::string& args) {
  const std::string cmd =
      std::string("'") + K3_BINARY + "' " + args + " >'" + tmp("out") + "' 2>'" + tmp("err") + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(tmp("out")), slurp(tmp("err"))};
}

const std::string kRun =
    std::string("run -m '") + K3_TEST_DATA_DIR + "/golden/small-q8_0.gguf' -t 1 --temp 1 -p Q: ";

TEST(GrammarCli, RunObeysAGrammarFileOrText) {
  const std::string file = tmp("g.gbnf");
  std::ofstream(file) << "# yes or no, then a number\nroot ::= answer \" \" num\nanswer ::= \"yes\" | "
                         "\"no\"\nnum ::= [1-9] [0-9]?\n";
  const std::regex want("^(yes|no) [1-9][0-9]?\n$");
  for (int seed = 1; seed <= 6; ++seed) {
    Result r = k3(kRun + "-n 50 --seed " + std::to_string(seed) + " --grammar '" + file + "'");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(std::regex_match(r.out, want)) << r.out;
    EXPECT_NE(r.err.find("stop: eog"), std::string::npos) << r.err;
  }
  Result inline_text = k3(kRun + "-n 50 --seed 3 --grammar-file 'root ::= [a-c]{3}'");
  ASSERT_EQ(inline_text.rc, 0) << inline_text.err;
  EXPECT_TRUE(std::regex_match(inline_text.out, std::regex("^[a-c]{3}\n$"))) << inline_text.out;
}

TEST(GrammarCli, RunObeysAJsonSchema) {
  const std::string file = tmp("s.json");
  std::ofstream(file) << R"({"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":99},
    "ok":{"type":"boolean"}},"required":["id","ok"],"additionalProperties":false})";
  for (int seed = 1; seed <= 6; ++seed) {
    Result r = k3(kRun + "-n 500 --seed " + std::to_string(seed) + " --json-schema '" + file + "'");
    ASSERT_EQ(r.rc, 0) << r.err;
    auto v = k3::text::try_parse_json_exact(r.out);
    ASSERT_TRUE(v && v->is_object() && v->size() == 2) << r.out;
    EXPECT_TRUE((*v)["id"].is_number_integer() && (*v)["id"] >= 0 && (*v)["id"] <= 99) << r.out;
    EXPECT_TRUE((*v)["ok"].is_boolean()) << r.out;
  }
}

TEST(GrammarCli, ErrorsAreClear) {
  Result both = k3(kRun + "--grammar 'root ::= \"a\"' --json-schema '{}'");
  EXPECT_EQ(both.rc, 2);
  EXPECT_NE(both.err.find("give only one"), std::string::npos) << both.err;
  Result neither = k3(kRun + "--grammar no-such-file.gbnf");
  EXPECT_EQ(neither.rc, 2);
  EXPECT_NE(neither.err.find("neither a file nor a GBNF grammar"), std::string::npos) << neither.err;
  Result bad_json = k3(kRun + "--json-schema '{\"type\":'");
  EXPECT_EQ(bad_json.rc, 2);
  EXPECT_NE(bad_json.err.find("neither a file nor JSON"), std::string::npos) << bad_json.err;
  Result refused = k3(kRun + "--json-schema '{\"type\":\"string\",\"pattern\":\"^x$\"}'");
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.err.find("unsupported keyword 'pattern' at (root)"), std::string::npos) << refused.err;
  Result left = k3(kRun + "--grammar 'root ::= root \"x\" | \"y\"'");
  EXPECT_EQ(left.rc, 1);
  EXPECT_NE(left.err.find("left-recursive"), std::string::npos) << left.err;
}

}  // namespace
