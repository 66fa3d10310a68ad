// server/webui: the chat page's files (src/server/webui/ and the two libraries it uses),
// linked into the binary so `k3 serve` needs no files installed beside it.
#pragma once

#include <string_view>
#include <vector>

namespace k3::server {

struct WebAsset {
  std::string_view path;          // "/", "/assets/chat.js", …
  std::string_view content_type;  // with charset
  std::string_view body;
};

// Every file of the page, "/" (index.html) first.
const std::vector<WebAsset>& web_assets();

// The Content-Security-Policy the page is served with: scripts and styles only from the
// server itself, no inline script, no frames, requests only back to the server.
std::string_view web_csp();

}  // namespace k3::server
