// tools/chat_corpus: calibration conversations from a JSONL file, rendered with K3's chat
// template and tokenized the way the server tokenizes a prompt — for `k3 imatrix --chat` and
// `k3 reap --chat`, so experts are measured on what they see in chat use (roles, XTML
// markers, reasoning channels, tool calls).
// Contract: each non-blank line is an object shaped like an OpenAI chat request
// ({"messages": [...]} with optional "tools", "reasoning_effort", "chat_template_kwargs"; an
// assistant message may carry "reasoning_content") or a bare JSON array of messages. Each is
// rendered by text::render_chat_segments (Engine mode, no generation prompt: the samples are
// complete conversations) and tokenized segment by segment — the four markers become their
// control ids, every other byte is plain text with special tokens off, so text that spells
// "<|open|>" stays text. A line that is not valid JSON, has no messages, is rejected by the
// template, or needs a marker the vocabulary lacks throws k3::Error naming FILE:LINE; so does
// a file without samples or that cannot be read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::text {
class Tokenizer;
}

namespace k3::tools {

// One token sequence per conversation, in file order.
std::vector<std::vector<int32_t>> read_chat_samples(const text::Tokenizer& tok,
                                                    const std::string& jsonl_path);

// k3 imatrix: the conversations' tokens concatenated (chunked later like plain text).
struct ChatCorpus {
  std::vector<int32_t> tokens;
  int64_t n_samples = 0;
};
ChatCorpus chat_corpus_tokens(const text::Tokenizer& tok, const std::string& jsonl_path);

// k3 reap: one calibration sequence per conversation, cut to n_ctx tokens.
struct ChatCalibration {
  std::vector<std::vector<int32_t>> sequences;
  int64_t n_truncated = 0;  // conversations longer than n_ctx
  int64_t n_tokens = 0;     // after truncation
};
ChatCalibration load_chat_calibration(const text::Tokenizer& tok, const std::string& path, int64_t n_ctx);

}  // namespace k3::tools
