// cli/cmd_tokenize: `k3 tokenize -m MODEL [TEXT | -f FILE|-]` — how text tokenizes with a
// model's vocabulary (text/tokenizer.h): ids with token pieces, ids only, pieces only, the
// pre-tokenizer split, or the reverse (ids -> text). Output bytes that are not printable
// UTF-8 are escaped (\n, \t, \r, \\, \xNN) so every token is visible on one line.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/read_file.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace k3::cli {
namespace {

std::string escape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    auto d = text::unicode::decode_utf8(s.data() + i, s.size() - i);
    const bool invalid = d.len == 1 && d.cp == text::unicode::kReplacement;
    const uint32_t c = d.cp;
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (invalid || c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0)) {
      for (size_t k = 0; k < d.len; ++k) out += fmt::format("\\x{:02X}", static_cast<uint8_t>(s[i + k]));
    } else {
      out.append(s.substr(i, d.len));
    }
    i += d.len;
  }
  return out;
}

std::string read_input(const std::string& path) {
  std::string data;
  if (path == "-") {
    data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return data;
  }
  return read_file(path);
}

std::vector<text::TokenId> parse_ids(const std::string& s) {
  std::vector<text::TokenId> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(cur, &used);
    } catch (const std::exception&) { used = 0; }
    if (used != cur.size() || v < 0 || v > INT32_MAX) fail("--decode: '{}' is not a token id", cur);
    ids.push_back(static_cast<text::TokenId>(v));
    cur.clear();
  };
  for (char c : s) {
    if (c == ',' || c == '[' || c == ']' || std::isspace(static_cast<unsigned char>(c))) flush();
    else cur.push_back(c);
  }
  flush();
  return ids;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  CLI::App app{"Show how text tokenizes with a model's vocabulary", "k3 tokenize"};
  std::string model, text_arg, file;
  bool ids_only = false, pieces_only = false, split = false, no_special = false, add_special = false;
  bool count = false, decode = false, timing = false;
  app.add_option("-m,--model", model, "GGUF file whose vocabulary to use (vocab-only files work)")
      ->required();
  app.add_option("text", text_arg, "the text (or, with --decode, the ids); '-' reads standard input");
  app.add_option("-f,--file", file, "read the text from FILE ('-' = standard input), bytes as they are");
  auto* g = app.add_option_group("output");
  g->add_flag("--ids", ids_only, "print only the ids, as [1, 2, 3]");
  g->add_flag("--pieces", pieces_only, "print only the token pieces, one per line");
  g->add_flag("--split", split, "print the pre-tokenizer pieces, one per line (no BPE)");
  g->add_flag("--count", count, "print only the number of tokens");
  g->add_flag("--decode", decode, "the input is token ids; print the text they decode to");
  g->require_option(0, 1);
  app.add_flag("--no-special", no_special, "treat special-token names in the text as plain text");
  app.add_flag("--add-special", add_special, "add BOS/EOS where the vocabulary asks for them");
  app.add_flag("--timing", timing, "report load and encode time and throughput on stderr");
  if (auto rc = parse_args(app, argc, argv)) return *rc;
  if (!file.empty() && !text_arg.empty()) { return usage_error("give TEXT or -f FILE, not both"); }
  if (file.empty() && text_arg.empty()) {
    return usage_error("give the text to tokenize (TEXT, '-' or -f FILE)");
  }
  const std::string input = !file.empty() ? read_input(file) : text_arg == "-" ? read_input("-") : text_arg;

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto tok = text::Tokenizer::from_gguf_path(model);
  const auto t1 = clock::now();
  auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };

  if (decode) {
    auto ids = parse_ids(input);
    std::string out = tok->decode(ids, !no_special);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  if (split) {
    for (auto p : tok->pieces(input)) fmt::print("{}\n", escape(p));
    return 0;
  }
  auto ids = tok->encode(input, !no_special, add_special);
  const auto t2 = clock::now();
  if (timing) {
    const double enc = ms(t2 - t1);
    fmt::print(stderr, "vocabulary: {} tokens, pre-tokenizer {}, loaded in {:.1f} ms\n", tok->n_vocab(),
               text::pretokenizer_name(tok->pre_tokenizer()), ms(t1 - t0));
    fmt::print(stderr, "encoded {} bytes into {} tokens in {:.2f} ms ({:.1f} MB/s)\n", input.size(),
               ids.size(), enc, enc > 0 ? static_cast<double>(input.size()) / 1e3 / enc : 0.0);
  }
  if (count) {
    fmt::print("{}\n", ids.size());
  } else if (ids_only) {
    fmt::print("[{}]\n", fmt::join(ids, ", "));
  } else if (pieces_only) {
    for (auto id : ids) fmt::print("{}\n", escape(tok->token_bytes(id)));
  } else {
    for (auto id : ids) fmt::print("{:>7} {}\n", id, escape(tok->token_bytes(id)));
  }
  return 0;
}

}  // namespace k3::cli
