// tools/chat_corpus: JSONL conversations → calibration tokens (see chat_corpus.h).
#include "tools/imatrix/chat_corpus.h"

#include <fstream>

#include "core/error.h"
#include "text/chat_template.h"
#include "text/json_py.h"
#include "text/tokenizer.h"

namespace k3::tools {

std::vector<std::vector<int32_t>> read_chat_samples(const text::Tokenizer& tok,
                                                    const std::string& jsonl_path) {
  std::ifstream in(jsonl_path, std::ios::binary);
  if (!in) fail("cannot read chat calibration file '{}'", jsonl_path);
  std::vector<std::vector<int32_t>> out;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (text::py_is_blank(line)) continue;
    std::vector<text::ChatSegment> segs;
    try {
      text::Json req = text::parse_json_exact(line, "chat sample");
      if (req.is_array()) req = text::Json{{"messages", std::move(req)}};
      if (!req.is_object() || !req.contains("messages"))
        fail(
            "expected an object with a \"messages\" array ({{\"messages\": [{{\"role\": ..., \"content\": "
            "...}}]}}) "
            "or an array of messages");
      segs = text::render_chat_segments(text::chat_input_from_request(req, false));
    } catch (const Error& e) {
      fail("{}:{}: {}", jsonl_path, line_no, e.what());
    } catch (const std::exception& e) {  // nlohmann type errors on odd shapes
      fail("{}:{}: malformed chat sample ({})", jsonl_path, line_no, e.what());
    }
    std::vector<int32_t> ids;
    for (const text::ChatSegment& s : segs) {
      if (!s.special) {
        tok.encode_ordinary(s.text, ids);
        continue;
      }
      const int32_t id = tok.find(s.text);
      if (id < 0 || !tok.is_control(id))
        fail("{}:{}: the model's vocabulary has no control token {}, so it cannot be calibrated on chats",
             jsonl_path, line_no, s.text);
      ids.push_back(id);
    }
    if (!ids.empty()) out.push_back(std::move(ids));
  }
  if (in.bad()) fail("error reading chat calibration file '{}'", jsonl_path);
  if (out.empty()) fail("'{}' holds no chat samples (expected JSONL, one conversation per line)", jsonl_path);
  return out;
}

ChatCorpus chat_corpus_tokens(const text::Tokenizer& tok, const std::string& jsonl_path) {
  ChatCorpus c;
  for (const std::vector<int32_t>& s : read_chat_samples(tok, jsonl_path)) {
    c.tokens.insert(c.tokens.end(), s.begin(), s.end());
    ++c.n_samples;
  }
  return c;
}

ChatCalibration load_chat_calibration(const text::Tokenizer& tok, const std::string& path, int64_t n_ctx) {
  if (n_ctx < 1) fail("the context size (-c) must be at least 1, not {}", n_ctx);
  ChatCalibration out;
  out.sequences = read_chat_samples(tok, path);
  for (std::vector<int32_t>& s : out.sequences) {
    if (static_cast<int64_t>(s.size()) > n_ctx) {
      s.resize(static_cast<size_t>(n_ctx));
      ++out.n_truncated;
    }
    out.n_tokens += static_cast<int64_t>(s.size());
  }
  return out;
}

}  // namespace k3::tools
