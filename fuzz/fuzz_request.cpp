// libFuzzer target for what a client's request body reaches before any model work: the body
// parser (depth, size and type checks), the chat and completion request builders (limits,
// sampler validation, the template rendering the messages and tools, tokenizing the prompt)
// and /apply-template's renderer; then the same bytes as model output through the output
// parser with the request's tools (the path a generated tool call takes). A client mistake
// must end as ApiError or k3::Error (a 4xx); a crash, a sanitizer report or any other
// exception is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/error.h"
#include "server/api_error.h"
#include "server/request_parse.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

namespace {

using namespace k3;

const text::Tokenizer& vocab() {
  static auto t = text::Tokenizer::from_gguf_path(K3_FUZZ_DATA_DIR "/text/k3-synth-vocab.gguf");
  return *t;
}

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz_request: unexpected exception: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  server::RequestLimits lim;
  lim.n_ctx = 4096;
  text::Json req;
  try {
    req = server::parse_body(body);
  } catch (const server::ApiError&) { return 0; } catch (const std::exception& e) {
    bug(e.what());
  }
  for (int which = 0; which < 3; ++which) {
    try {
      if (which == 0) {
        server::BuiltRequest b = server::build_chat_request(req, vocab(), lim);
        // The request's tools applied to the body as if the model had written it.
        text::OutputParser p(b.job->parser);
        p.feed(body);
        p.finish(text::StopReason::Eog);
      } else if (which == 1) {
        server::build_completion_request(req, vocab(), lim);
      } else {
        server::render_chat_prompt(req, lim);
      }
    } catch (const server::ApiError&) {
    } catch (const k3::Error&) {
    } catch (const std::exception& e) { bug(e.what()); }
  }
  return 0;
}
