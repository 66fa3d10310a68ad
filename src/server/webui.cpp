// server/webui: see webui.h. The files are pulled in by the assembler's .incbin from the
// paths CMake passes (K3_WEBUI_DIR: src/server/webui; K3_MARKED_JS and K3_PURIFY_JS: the
// Debian packages libjs-marked and node-dompurify, docs/serve.md says why those), each
// bracketed by a start and an end symbol.
#include "server/webui.h"

#if !defined(K3_WEBUI_DIR) || !defined(K3_MARKED_JS) || !defined(K3_PURIFY_JS)
#error "K3_WEBUI_DIR, K3_MARKED_JS and K3_PURIFY_JS must be set by CMake"
#endif

#define K3_WEB_FILE(sym, file) \
  ".globl k3_web_" #sym        \
  "\n"                         \
  "k3_web_" #sym               \
  ":\n"                        \
  ".incbin \"" file            \
  "\"\n"                       \
  ".globl k3_web_" #sym        \
  "_end\n"                     \
  "k3_web_" #sym "_end:\n"

__asm__(".section .rodata.k3_webui,\"a\",@progbits\n" K3_WEB_FILE(index, K3_WEBUI_DIR "/index.html")
            K3_WEB_FILE(chat_js, K3_WEBUI_DIR "/chat.js") K3_WEB_FILE(chat_css, K3_WEBUI_DIR "/chat.css")
                K3_WEB_FILE(marked, K3_MARKED_JS) K3_WEB_FILE(purify, K3_PURIFY_JS) ".previous\n");

extern "C" {
extern const char k3_web_index[], k3_web_index_end[];
extern const char k3_web_chat_js[], k3_web_chat_js_end[];
extern const char k3_web_chat_css[], k3_web_chat_css_end[];
extern const char k3_web_marked[], k3_web_marked_end[];
extern const char k3_web_purify[], k3_web_purify_end[];
}

namespace k3::server {

namespace {

std::string_view span(const char* begin, const char* end) {
  return {begin, static_cast<size_t>(end - begin)};
}

}  // namespace

const std::vector<WebAsset>& web_assets() {
  static const std::vector<WebAsset> assets = {
      {"/", "text/html; charset=utf-8", span(k3_web_index, k3_web_index_end)},
      {"/assets/chat.js", "text/javascript; charset=utf-8", span(k3_web_chat_js, k3_web_chat_js_end)},
      {"/assets/chat.css", "text/css; charset=utf-8", span(k3_web_chat_css, k3_web_chat_css_end)},
      {"/assets/marked.min.js", "text/javascript; charset=utf-8", span(k3_web_marked, k3_web_marked_end)},
      {"/assets/purify.min.js", "text/javascript; charset=utf-8", span(k3_web_purify, k3_web_purify_end)},
  };
  return assets;
}

std::string_view web_csp() {
  return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
         "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
}

}  // namespace k3::server
