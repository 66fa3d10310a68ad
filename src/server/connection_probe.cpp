// server/connection_probe: see connection_probe.h.
#include "server/connection_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace k3::server {
namespace {

// The textual address and port of a socket address, in the form cpp-httplib reports them.
bool describe(const sockaddr_storage& ss, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf)) return false;
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  addr = buf;
  return true;
}

bool endpoint_is(int fd, bool peer, const std::string& want_addr, int want_port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) return false;
  std::string addr;
  int port = -1;
  return describe(ss, addr, port) && port == want_port && addr == want_addr;
}

}  // namespace

ConnectionProbe ConnectionProbe::find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                      int remote_port) {
  ConnectionProbe p;
  if (remote_port < 0 || local_port < 0) return p;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return p;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st{};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    // The listening socket shares the local address; only the accepted one has this peer.
    if (endpoint_is(static_cast<int>(fd), true, remote_addr, remote_port) &&
        endpoint_is(static_cast<int>(fd), false, local_addr, local_port)) {
      p.fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return p;
}

bool ConnectionProbe::closed() const {
  if (fd_ < 0) return false;
  pollfd pfd{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&pfd, 1, 0) <= 0) return false;
  if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (pfd.revents & POLLIN) {
    // Readable: either EOF (peek returns 0) or a pipelined next request (still connected).
    char c;
    ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  return false;
}

}  // namespace k3::server
