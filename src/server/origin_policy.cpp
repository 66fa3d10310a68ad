// server/origin_policy: see origin_policy.h.
#include "server/origin_policy.h"

#include <algorithm>
#include <cctype>

namespace k3::server {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_loopback_bind(const std::string& h) {
  return h == "127.0.0.1" || h == "::1" || h == "localhost" || h.starts_with("127.");
}

// A header value fit to compare: no control bytes (a NUL or CR would let a forged value
// pass a prefix match elsewhere).
bool clean(std::string_view s) {
  return std::none_of(s.begin(), s.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x21 || c == 0x7f; });
}

}  // namespace

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string_view::npos) j = s.size();
    std::string_view item = s.substr(i, j - i);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    i = j + 1;
  }
  return out;
}

std::string host_name_of(std::string_view h) {
  if (h.empty() || !clean(h)) return {};
  std::string_view name;
  if (h.front() == '[') {  // [v6]:port
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return {};
    name = h.substr(0, close + 1);
    std::string_view rest = h.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) return {};
  } else {
    const size_t colon = h.find(':');
    name = h.substr(0, colon);
    if (colon != std::string_view::npos) {
      std::string_view port = h.substr(colon + 1);
      if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return {};
    }
  }
  std::string n = lower(name);
  if (!n.empty() && n.back() == '.') n.pop_back();  // "localhost." is localhost
  return n;
}

OriginPolicy OriginPolicy::make(const std::string& bind_host, const std::vector<std::string>& hosts,
                                const std::vector<std::string>& cors) {
  OriginPolicy p;
  if (!hosts.empty()) {
    if (std::find(hosts.begin(), hosts.end(), "*") == hosts.end())
      for (const std::string& h : hosts)
        p.allowed_hosts.push_back(host_name_of(h).empty() ? lower(h) : host_name_of(h));
  } else if (is_loopback_bind(bind_host)) {
    p.allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
  }
  for (const std::string& o : cors) {
    std::string v = lower(o);
    while (!v.empty() && v.back() == '/') v.pop_back();  // "https://a.example/" names the origin too
    p.cors_origins.push_back(v);
  }
  return p;
}

OriginPolicy::Verdict OriginPolicy::check(std::string_view host_header,
                                          std::string_view origin_header) const {
  if (!host_header.empty()) {
    const std::string name = host_name_of(host_header);
    if (name.empty()) return Verdict::bad_host;
    if (!allowed_hosts.empty() &&
        std::find(allowed_hosts.begin(), allowed_hosts.end(), name) == allowed_hosts.end())
      return Verdict::bad_host;
  }
  if (origin_header.empty()) return Verdict::same_origin;
  if (!clean(origin_header)) return Verdict::bad_origin;
  const std::string origin = lower(origin_header);
  // The server's own origin: host[:port] is what the request was sent to (and passed the Host
  // check), over http or, behind a TLS proxy that keeps the Host, https.
  if (!host_header.empty() &&
      (origin == "http://" + lower(host_header) || origin == "https://" + lower(host_header)))
    return Verdict::same_origin;
  for (const std::string& o : cors_origins)
    if (o == "*" || o == origin) return Verdict::cross_allowed;
  return Verdict::bad_origin;
}

}  // namespace k3::server
