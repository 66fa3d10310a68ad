// k3 imatrix --chat: JSONL conversations become the calibration tokens. The reference for each
// sample is the rendered prompt string (text::render_chat) tokenized with special tokens ON —
// a different path from the segment-wise tokenization under test, equal whenever the sample
// text does not itself spell a marker; a sample that does spell one must keep it as text.
// Bad lines are errors naming the file and line; the CLI writes an imatrix from chats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "gguf/file.h"
#include "text/chat_template.h"
#include "text/json_py.h"
#include "text/tokenizer.h"
#include "tools/imatrix/chat_corpus.h"
#include "tools/quantize/quantize_imatrix.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

std::string data(const std::string& rel) { return std::string(K3_TEST_DATA_DIR) + "/" + rel; }

struct ChatScratch {
  fs::path dir;
  ChatScratch() {
    dir = fs::temp_directory_path() / ("k3-imatrix-chat-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~ChatScratch() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& body) const {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << body;
    return p;
  }
};

const char* const kSamples[] = {
    R"({"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"What is 2+2?"},)"
    R"({"role":"assistant","content":"4","reasoning_content":"Two plus two is four."}]})",
    R"({"messages":[{"role":"user","content":"Name a colour."},{"role":"assistant","content":"Blue."}],)"
    R"("reasoning_effort":"none"})",
    R"({"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":"",)"
    R"("tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
    R"({"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"assistant","content":"Sunny."}],)"
    R"("tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"}}}}}]})",
};

std::shared_ptr<const text::Tokenizer> small_tokenizer() {
  return text::Tokenizer::from_gguf_path(data("golden/small-k3mix.gguf"));
}

std::vector<int32_t> reference_tokens(const text::Tokenizer& tok, const std::string& line) {
  const text::Json req = text::parse_json_exact(line);
  return tok.encode(text::render_chat(text::chat_input_from_request(req, false)), true, false);
}

}  // namespace

TEST(ImatrixChat, RendersEverySampleThroughTheTemplate) {
  ChatScratch tmp;
  auto tok = small_tokenizer();
  std::string body;
  std::vector<int32_t> want;
  for (const char* s : kSamples) {
    body += std::string(s) + "\n\n";  // blank lines are skipped
    const std::vector<int32_t> r = reference_tokens(*tok, s);
    want.insert(want.end(), r.begin(), r.end());
  }
  const tools::ChatCorpus c = tools::chat_corpus_tokens(*tok, tmp.write("chats.jsonl", body));
  EXPECT_EQ(c.n_samples, 3);
  EXPECT_EQ(c.tokens, want);
  // The markers are there as control ids, and the reasoning text made it into the corpus.
  const int32_t open = tok->find("<|open|>"), sep = tok->find("<|sep|>");
  EXPECT_GE(std::count(c.tokens.begin(), c.tokens.end(), open), 6);
  EXPECT_GE(std::count(c.tokens.begin(), c.tokens.end(), sep), 1);
  const std::string text = tok->decode(c.tokens);
  EXPECT_NE(text.find("Two plus two is four."), std::string::npos);
  EXPECT_NE(text.find("Paris"), std::string::npos);
}

// A user who types "<|open|>" writes text, not a control token (chat-template contract).
TEST(ImatrixChat, MarkerSpelledInContentStaysText) {
  ChatScratch tmp;
  auto tok = small_tokenizer();
  const std::string line = R"({"messages":[{"role":"user","content":"say <|open|> please"}]})";
  const tools::ChatCorpus c = tools::chat_corpus_tokens(*tok, tmp.write("m.jsonl", line + "\n"));
  const int32_t open = tok->find("<|open|>");
  const std::vector<int32_t> ref = reference_tokens(*tok, line);  // parses the typed marker too
  EXPECT_EQ(std::count(ref.begin(), ref.end(), open), std::count(c.tokens.begin(), c.tokens.end(), open) + 1);
  EXPECT_NE(tok->decode(c.tokens).find("say <|open|> please"), std::string::npos);
}

TEST(ImatrixChat, BadLinesNameFileAndLine) {
  ChatScratch tmp;
  auto tok = small_tokenizer();
  struct Case {
    const char* body;
    const char* needle;
  };
  for (Case c :
       {Case{"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n{not json\n", "bad.jsonl:2"},
        Case{"\n\n{\"prompt\":\"x\"}\n", "bad.jsonl:3"},
        Case{"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n{\"messages\":7}\n", "bad.jsonl:2"},
        Case{"\n  \n", "no chat samples"}}) {
    SCOPED_TRACE(c.body);
    try {
      tools::chat_corpus_tokens(*tok, tmp.write("bad.jsonl", c.body));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(tools::chat_corpus_tokens(*tok, (tmp.dir / "missing.jsonl").string()), Error);
}

TEST(ImatrixChat, CliCollectsFromChats) {
  if (!fs::exists(K3_BINARY)) GTEST_SKIP() << "k3 binary not built";
  ChatScratch tmp;
  std::string body;
  for (int rep = 0; rep < 2; ++rep)
    for (const char* s : kSamples) body += std::string(s) + "\n";
  const std::string in = tmp.write("calib.jsonl", body), out = (tmp.dir / "im.gguf").string(),
                    log = (tmp.dir / "log.txt").string();
  const std::string cmd = std::string(K3_BINARY) + " imatrix -m " + data("golden/small-k3mix.gguf") +
                          " --chat " + in + " -o " + out + " -c 64 -t 2 > " + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const auto im = tools::load_imatrix(out);
  EXPECT_GE(im.chunk_count, 2u);
  EXPECT_EQ(im.chunk_size, 64u);
  EXPECT_EQ(im.datasets, std::vector<std::string>{"calib.jsonl"});
  EXPECT_EQ(im.entries.size(), 94u);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("rendered 6 chats"), std::string::npos) << ss.str();
  // -f and --chat together are refused.
  const std::string both = std::string(K3_BINARY) + " imatrix -m " + data("golden/small-k3mix.gguf") +
                           " --chat " + in + " -f " + in + " -o " + out + " > " + log + " 2>&1";
  EXPECT_NE(WEXITSTATUS(std::system(both.c_str())), 0);
}
