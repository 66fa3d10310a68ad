// cli/chat_images: see chat_images.h.
#include "cli/chat_images.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace k3::cli {

namespace {

bool has_image_extension(const std::string& p) {
  const size_t dot = p.find_last_of('.');
  if (dot == std::string::npos) return false;
  std::string ext = p.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == "png" || ext == "jpg" || ext == "jpeg" || ext == "webp" || ext == "gif";
}

// Words split on unescaped, unquoted whitespace; quotes removed, "\ " kept as a space.
std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      any = true;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      cur += ' ';
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (any || !cur.empty()) out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += c;
    }
  }
  if (any || !cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::vector<std::string> image_paths_in(std::string_view text) {
  std::vector<std::string> out;
  for (std::string w : words(text)) {
    while (!w.empty() && std::string_view(",.;:!?)").find(w.back()) != std::string_view::npos &&
           !has_image_extension(w))
      w.pop_back();
    if (w.starts_with("file://")) w.erase(0, 7);
    std::error_code ec;
    if (!has_image_extension(w) || !std::filesystem::is_regular_file(w, ec)) continue;
    std::string abs = std::filesystem::absolute(w, ec).string();
    if (ec) abs = w;
    if (std::find(out.begin(), out.end(), abs) == out.end()) out.push_back(abs);
  }
  return out;
}

text::Json user_message(const std::string& text, const std::vector<std::string>& paths) {
  if (paths.empty()) return text::Json{{"role", "user"}, {"content", text}};
  text::Json parts = text::Json::array();
  for (const std::string& p : paths)
    parts.push_back({{"type", "image_url"}, {"image_url", {{"url", "file://" + p}}}});
  parts.push_back({{"type", "text"}, {"text", text}});
  return text::Json{{"role", "user"}, {"content", parts}};
}

}  // namespace k3::cli
