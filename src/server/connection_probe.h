// server/connection_probe: tells a request handler whether its client is still there.
// Contract: ConnectionProbe::find() locates the accepted socket of one HTTP connection by its
// address pair (the HTTP library in Debian 12, cpp-httplib 0.11, hands handlers no socket and
// no "connection closed" signal); closed() is true once the peer has hung up (EOF, reset or
// error on the socket) and never consumes request bytes. A probe that found no socket always
// answers false, so a failed lookup degrades to "no early cancellation", never to a false one.
// Linux only (reads /proc/self/fd).
#pragma once

#include <string>

namespace k3::server {

class ConnectionProbe {
 public:
  static ConnectionProbe find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                              int remote_port);
  bool found() const { return fd_ >= 0; }
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace k3::server
