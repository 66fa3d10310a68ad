// Properties that must hold for any input: pieces tile the text, decode(encode(b)) == b for
// arbitrary bytes, BPE equals a naive rank-BPE reference on long pieces, and the streaming
// detokenizer reproduces decode() while never cutting a UTF-8 character.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/error.h"
#include "text/unicode.h"
#include "text/tokenizer_test_util.h"

namespace k3::text::test {
namespace {

const char* const kVocabs[] = {"k3-synth-vocab.gguf", "ggml-vocab-gpt-2.gguf",
                               "ggml-vocab-deepseek-coder.gguf"};
constexpr PreTokenizer kKinds[] = {
    PreTokenizer::KimiK2,        PreTokenizer::Gpt2,      PreTokenizer::Llama3, PreTokenizer::DeepseekLlm,
    PreTokenizer::DeepseekCoder, PreTokenizer::Starcoder, PreTokenizer::Falcon};

// Random text that hits the interesting classes: ASCII words, digits, whitespace runs,
// CR/LF, apostrophes, CJK, combining marks, emoji, marker text, and raw invalid bytes.
std::string random_text(std::mt19937& rng, size_t max_parts) {
  static const char* const kParts[] = {
      "Hello",
      " world",
      "'s",
      "'LL",
      "\xC5\xBF",
      "123456",
      "  ",
      "\t",
      "\r\n",
      "\n\n",
      " ",
      "x",
      "\xE4\xBD\xA0\xE5\xA5\xBD",
      "\xE3\x80\x87",
      "\xE3\x80\x85",
      "e\xCC\x81",
      "\xCC\x81",
      "\xF0\x9F\x98\x80",
      "\xE2\x80\x8D",
      "<|open|>",
      "<|sep|>",
      "[EOS]",
      "<|end_of_msg|>",
      "\xC2\xA0",
      "\xE3\x80\x80",
      "\x1C",
      "camelCaseJSON",
      "\xD9\xA3",
      "\xEF\xBC\x91",
      ".,;!?",
      "{\"a\": [1, 2]}",
      "\xE2\x85\xA0",
      "\x00",
      "\xC2\x85",
  };
  std::string s;
  const size_t parts = rng() % (max_parts + 1);
  for (size_t i = 0; i < parts; ++i) {
    switch (rng() % 4) {
      case 0: s += std::string(1, static_cast<char>(rng() & 0xFF)); break;  // any byte
      case 1: {
        std::string cp;
        unicode::append_utf8(cp, rng() % 0x30000);
        if (cp.size() > 1 && rng() % 8 == 0) cp.pop_back();  // truncated sequence
        s += cp;
        break;
      }
      default: s += kParts[rng() % std::size(kParts)];
    }
  }
  return s;
}

std::string valid_utf8(const std::string& text) {
  std::string valid;
  for (size_t i = 0; i < text.size();) {
    auto d = unicode::decode_utf8(text.data() + i, text.size() - i);
    if (!(d.len == 1 && d.cp == unicode::kReplacement)) valid.append(text, i, d.len);
    i += d.len;
  }
  return valid;
}

TEST(RoundTrip, ByteCompleteness) {
  EXPECT_TRUE(vocab("k3-synth-vocab.gguf")->byte_complete());
  EXPECT_TRUE(vocab("ggml-vocab-gpt-2.gguf")->byte_complete());
  auto ds = vocab("ggml-vocab-deepseek-coder.gguf");
  EXPECT_FALSE(ds->byte_complete());  // lacks C0, C1, F5..FF: dropped, as llama.cpp does
  EXPECT_EQ(ds->decode(ds->encode("a\xC0"
                                  "b")),
            "ab");
}

TEST(RoundTrip, PiecesTileTheInput) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    const std::string text = random_text(rng, 40);
    for (PreTokenizer kind : kKinds) {
      auto pieces = pretokenize(kind, text);
      std::string joined;
      for (auto p : pieces) {
        ASSERT_FALSE(p.empty());
        joined += p;
      }
      ASSERT_EQ(joined, text) << pretokenizer_name(kind);
    }
  }
}

TEST(RoundTrip, ArbitraryBytesEncodeDecode) {
  std::mt19937 rng(99);
  for (const char* name : kVocabs) {
    auto tok = vocab(name);
    for (int iter = 0; iter < 1500; ++iter) {
      std::string text = random_text(rng, 30);
      if (iter % 3 == 0) {  // pure random bytes
        text.clear();
        for (size_t k = rng() % 64; k > 0; --k) text.push_back(static_cast<char>(rng() & 0xFF));
      }
      if (!tok->byte_complete()) text = valid_utf8(text);
      for (bool special : {false, true}) {
        auto ids = tok->encode(text, special);
        for (TokenId id : ids) ASSERT_LT(static_cast<size_t>(id), tok->n_vocab());
        ASSERT_EQ(tok->decode(ids), text) << name;
      }
    }
  }
}

TEST(RoundTrip, ParseSpecialOnlyChangesMarkerText) {
  auto tok = vocab("k3-synth-vocab.gguf");
  EXPECT_EQ(tok->encode("a<|sep|>b", true),
            (std::vector<TokenId>{tok->encode("a")[0], 7941, tok->encode("b")[0]}));
  auto plain = tok->encode("<|sep|>", false);
  EXPECT_GT(plain.size(), 1u);  // text tokens, never the control id
  for (TokenId id : plain) EXPECT_NE(id, 7941);
  // Leftmost wins, then longest: "<|end_of_msg|>" is not read as a shorter marker.
  EXPECT_EQ(tok->encode("<|end_of_msg|>", true), (std::vector<TokenId>{7938}));
  EXPECT_EQ(tok->decode(std::vector<TokenId>{7939, 1004, 7941}, false), "think");
}

// Naive tiktoken rank BPE: rescans all pairs after every merge.
std::vector<TokenId> naive_rank_bpe(const Tokenizer& tok, const std::map<std::string, TokenId>& ranks,
                                    std::string_view piece) {
  if (auto it = ranks.find(std::string(piece)); it != ranks.end()) return {it->second};
  std::vector<std::string> parts;
  for (char c : piece) parts.emplace_back(1, c);
  while (parts.size() > 1) {
    size_t best = parts.size();
    TokenId best_rank = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = ranks.find(parts[i] + parts[i + 1]);
      if (it != ranks.end() && (best == parts.size() || it->second < best_rank))
        best = i, best_rank = it->second;
    }
    if (best == parts.size()) break;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + static_cast<long>(best) + 1);
  }
  std::vector<TokenId> ids;
  for (auto& p : parts) ids.push_back(ranks.at(p));
  (void)tok;
  return ids;
}

TEST(RoundTrip, BpeMatchesNaiveReferenceOnLongPieces) {
  auto tok = vocab("k3-synth-vocab.gguf");
  std::map<std::string, TokenId> ranks;
  for (TokenId id = 0; id < 7936; ++id) ranks.emplace(tok->token_bytes(id), id);
  std::mt19937 rng(7);
  const std::vector<std::string> words = {"the", "tion",         "ing",          "an", "er", "a",
                                          "e",   "\xE4\xBD\xA0", "\xE5\xA5\xBD", "  ", "00", "ab",
                                          "ba",  "\xF0\x9F",     "\x98\x80",     "re", "s",  "z"};
  for (int iter = 0; iter < 400; ++iter) {
    std::string piece;
    const size_t n = 1 + rng() % (iter < 200 ? 40 : 600);
    while (piece.size() < n) piece += words[rng() % words.size()];
    std::vector<TokenId> got;
    tok->encode_piece(piece, got);
    ASSERT_EQ(got, naive_rank_bpe(*tok, ranks, piece)) << "piece of " << piece.size() << " bytes";
  }
}

TEST(RoundTrip, StreamingDetokenizerHoldsBackPartialCharacters) {
  auto tok = vocab("k3-synth-vocab.gguf");
  // Tokens that are not valid UTF-8 on their own exist in this vocabulary (README: 951).
  size_t partial_tokens = 0;
  for (TokenId id = 0; id < 7936; ++id) partial_tokens += !unicode::is_valid_utf8(tok->token_bytes(id));
  EXPECT_GT(partial_tokens, 900u);

  std::mt19937 rng(5);
  size_t held_somewhere = 0;
  for (int iter = 0; iter < 500; ++iter) {
    std::string text = random_text(rng, 30);
    // Keep the text valid UTF-8 so every emitted chunk must be valid too.
    const std::string valid = valid_utf8(text);
    auto ids = tok->encode(valid, true);
    StreamingDetokenizer st(*tok);
    std::string all;
    for (TokenId id : ids) {
      std::string chunk = st.push(id);
      ASSERT_TRUE(unicode::is_valid_utf8(chunk));
      held_somewhere += st.pending() > 0;
      all += chunk;
    }
    all += st.flush();
    ASSERT_EQ(all, valid);
  }
  EXPECT_GT(held_somewhere, 0u);
}

TEST(RoundTrip, RandomIdsDecodeLikeStreaming) {
  auto tok = vocab("k3-synth-vocab.gguf");
  std::mt19937 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<TokenId> ids(rng() % 50);
    for (auto& id : ids) id = static_cast<TokenId>(rng() % tok->n_vocab());
    for (bool render : {true, false}) {
      StreamingDetokenizer st(*tok, render);
      std::string all;
      for (TokenId id : ids) all += st.push(id);
      all += st.flush();
      ASSERT_EQ(all, tok->decode(ids, render));
    }
  }
  EXPECT_THROW(tok->decode(std::vector<TokenId>{-1}), k3::Error);
  EXPECT_THROW(tok->decode(std::vector<TokenId>{8192}), k3::Error);
}

// No crash, no hang, exact round trip on larger random inputs through every pre-tokenizer.
TEST(RoundTrip, FuzzLoop) {
  std::mt19937 rng(2024);
  auto k3 = vocab("k3-synth-vocab.gguf");
  for (int iter = 0; iter < 300; ++iter) {
    std::string text = random_text(rng, 400);
    for (PreTokenizer kind : kKinds) {
      size_t total = 0;
      for (auto p : pretokenize(kind, text)) total += p.size();
      ASSERT_EQ(total, text.size());
    }
    ASSERT_EQ(k3->decode(k3->encode(text, iter % 2 == 0)), text);
  }
}

// Pathological inputs stay fast (the 25k chunk cut, long runs, long pieces).
TEST(RoundTrip, LongRunsAreLinear) {
  auto tok = vocab("k3-synth-vocab.gguf");
  for (std::string unit : {"a", " ", "\xE4\xBD\xA0", "1", "!", "\xCC\x81", "aB", " \n"}) {
    std::string text;
    while (text.size() < 300000) text += unit;
    auto ids = tok->encode(text);
    ASSERT_EQ(tok->decode(ids), text);
  }
  auto ds = vocab("ggml-vocab-deepseek-coder.gguf");
  std::string spaces(200000, ' ');
  spaces += "1";
  ASSERT_EQ(ds->decode(ds->encode(spaces)), spaces);
}

}  // namespace
}  // namespace k3::text::test
