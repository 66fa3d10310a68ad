// server/origin_policy: which Host and Origin headers `k3 serve` answers (docs/serve.md,
// "Host and Origin"). Against DNS rebinding, a server bound to loopback answers only requests
// whose Host names loopback (localhost, 127.0.0.1, [::1]); against cross-site requests from a
// browser (a page elsewhere POSTing text/plain, which needs no preflight), a request with an
// Origin header is answered only when that origin is the server's own (the Host it was sent
// to) or listed with --cors. Requests without Origin (curl, SDKs) are not browser requests
// and pass; a request without Host passes the Host check (HTTP/1.0 clients), since a
// browser always sends one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::server {

struct OriginPolicy {
  std::vector<std::string> allowed_hosts;  // lower-case names without port; empty: any
  std::vector<std::string> cors_origins;   // "scheme://host[:port]", or "*": any

  // The default for a bind address: the loopback names when bound to loopback, any host
  // otherwise. `hosts` (from --allowed-hosts) replaces it when given; "*" means any.
  static OriginPolicy make(const std::string& bind_host, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& cors);

  enum class Verdict {
    same_origin,    // no Origin, or the server's own
    cross_allowed,  // an Origin listed in cors_origins: answer with CORS headers
    bad_host,
    bad_origin,
  };
  Verdict check(std::string_view host_header, std::string_view origin_header) const;
};

// "LocalHost:8080" -> "localhost", "[::1]:80" -> "[::1]", "a.b." -> "a.b"; "" when malformed.
std::string host_name_of(std::string_view host_header);

// Splits a comma-separated flag value, trimming blanks and dropping empty items.
std::vector<std::string> split_list(std::string_view s);

}  // namespace k3::server
