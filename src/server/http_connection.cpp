// server/http_connection: see http_connection.h.
#include "server/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace k3::server {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(s, 0.0)));
}

// Linux gives each thread its own nice value (setpriority on a thread id); raising it needs
// no privilege. Best effort: where it fails the worker simply runs at the process's priority.
void lower_this_threads_priority(int by) {
  if (by <= 0) return;
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0) (void)::setpriority(PRIO_PROCESS, tid, std::min(now + by, 19));
}

// Milliseconds until `until` for poll(), rounded up so a wait never ends just short of it.
int ms_until(Clock::time_point until) {
  const auto left = until - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

// The textual address and port of one end of a socket, in the form the library reports them.
void describe(int fd, bool peer, std::string& addr, int& port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf)) {
      addr = buf;
      port = ntohs(a->sin_port);
    }
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf)) {
      addr = buf;
      port = ntohs(a->sin6_port);
    }
  }
}

constexpr auto kStopCheck = std::chrono::milliseconds(100);  // how often a wait looks at stopping()

}  // namespace

HttpConnection::HttpConnection(int fd, ConnectionLimits limits, std::function<bool()> stopping)
    : fd_(fd), lim_(limits), stopping_(std::move(stopping)), buf_(CPPHTTPLIB_RECV_BUFSIZ) {
  describe(fd_, true, remote_addr_, remote_port_);
  describe(fd_, false, local_addr_, local_port_);
}

HttpConnection::~HttpConnection() { close(); }

bool HttpConnection::wait_for_request(double idle_s, const std::function<bool()>& shed) {
  if (off_ < len_) return true;
  const auto since = Clock::now();
  const auto give_up = since + seconds(idle_s);
  for (;;) {
    if (stopping_ && stopping_()) return false;
    const auto now = Clock::now();
    if (now >= give_up) return false;
    if (shed && now - since >= seconds(kShedGrace) && shed()) return false;
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, ms_until(std::min(give_up, now + kStopCheck)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

void HttpConnection::begin_request() {
  start_ = Clock::now();
  consumed_ = 0;
  written_ = 0;
  in_head_ = true;
  timed_out_ = false;
  head_too_large_ = false;
}

HttpConnection::Clock::time_point HttpConnection::deadline() const {
  const double rate = lim_.body_min_rate > 0 ? lim_.body_min_rate : 1e300;
  return start_ + seconds(lim_.request_timeout_s + static_cast<double>(consumed_) / rate);
}

bool HttpConnection::head_over() const {
  if (in_head_ && consumed_ > lim_.max_head_bytes) head_too_large_ = true;
  return head_too_large_;
}

// Waits until a read will not block, within the request's deadline, the per-read timeout and
// the server's stop.
bool HttpConnection::wait_in() const {
  const auto give_up = Clock::now() + seconds(lim_.read_timeout_s);
  for (;;) {
    if (stopping_ && stopping_()) return false;
    const auto now = Clock::now();
    const auto dl = deadline();
    if (now >= dl) {
      timed_out_ = true;
      return false;
    }
    if (now >= give_up) {
      timed_out_ = true;  // a pause that long ends the request too
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, ms_until(std::min({dl, give_up, now + kStopCheck})));
    if (r > 0) return true;  // bytes, EOF or an error: the read tells which
    if (r < 0 && errno != EINTR) return false;
  }
}

bool HttpConnection::wait_readable() const { return off_ < len_ || wait_in(); }

bool HttpConnection::wait_writable() const {
  const auto give_up = Clock::now() + seconds(lim_.write_timeout_s);
  for (;;) {
    pollfd p{fd_, POLLOUT, 0};
    const int r = ::poll(&p, 1, ms_until(give_up));
    if (r > 0) return (p.revents & POLLOUT) != 0;
    if (r == 0 || errno != EINTR) return false;
  }
}

bool HttpConnection::peer_gone() const {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && !would_block());
}

ssize_t HttpConnection::read(char* ptr, size_t size) {
  if (head_over()) {
    error_ = httplib::Error::Read;
    return -1;
  }
  if (size == 0) return 0;
  if (off_ < len_) {
    const size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }
  for (;;) {
    if (!wait_in()) {
      error_ = httplib::Error::Timeout;
      return -1;
    }
    // A large read goes straight to the caller; a small one fills the buffer, and what the
    // caller did not ask for stays there for the next read (or the next request).
    const bool direct = size >= buf_.size();
    const ssize_t n = ::recv(fd_, direct ? ptr : buf_.data(), direct ? size : buf_.size(), MSG_DONTWAIT);
    if (n < 0 && would_block()) continue;
    if (n <= 0) {
      error_ = n == 0 ? httplib::Error::ConnectionClosed : httplib::Error::Read;
      return n;
    }
    size_t got = static_cast<size_t>(n);
    if (!direct) {
      off_ = 0;
      len_ = got;
      got = std::min(size, len_);
      std::memcpy(ptr, buf_.data(), got);
      off_ = got;
    }
    consumed_ += got;
    return static_cast<ssize_t>(got);
  }
}

const char* HttpConnection::buffered_data(size_t& size) const {
  size = 0;
  if (off_ >= len_ || head_over()) return nullptr;
  size = len_ - off_;
  return buf_.data() + off_;
}

void HttpConnection::consume_buffered(size_t size) {
  size = std::min(size, len_ - off_);
  off_ += size;
  consumed_ += size;
}

ssize_t HttpConnection::write(const char* ptr, size_t size) {
  if (size == 0) return 0;
  const auto give_up = Clock::now() + seconds(lim_.write_timeout_s);
  for (;;) {
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      written_ += static_cast<size_t>(n);
      return n;
    }
    if (!would_block()) return -1;
    pollfd p{fd_, POLLOUT, 0};
    const int r = ::poll(&p, 1, ms_until(give_up));
    if (r == 0 || (r < 0 && errno != EINTR)) return -1;
  }
}

bool HttpConnection::write_all(const std::string& s) {
  for (size_t at = 0; at < s.size();) {
    const ssize_t n = write(s.data() + at, s.size() - at);
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

void HttpConnection::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = remote_addr_;
  port = remote_port_;
}

void HttpConnection::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = local_addr_;
  port = local_port_;
}

time_t HttpConnection::duration() const {
  return static_cast<time_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count());
}

void HttpConnection::set_read_timeout(time_t sec, time_t usec) {
  lim_.read_timeout_s = static_cast<double>(sec) + static_cast<double>(usec) / 1e6;
}

void HttpConnection::close() {
  if (fd_ < 0) return;
  ::shutdown(fd_, SHUT_WR);
  // Unread bytes at close() make the kernel send a reset, which can destroy the response
  // before the client has read it: read what is still coming for a moment first.
  const auto give_up = Clock::now() + std::chrono::milliseconds(100);
  size_t drained = 0;
  while (drained < (1u << 20)) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, ms_until(give_up)) <= 0) break;
    const ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(fd_);
  fd_ = -1;
}

ConnectionPool::ConnectionPool(size_t base, size_t max, size_t max_queued, double idle_s, int nice)
    : max_(std::max<size_t>({max, base, 1})), max_queued_(max_queued), idle_(idle_s), nice_(nice) {
  std::lock_guard<std::mutex> lk(mu_);
  for (size_t i = 0; i < std::max<size_t>(base, 1); ++i) start_locked(false);
}

ConnectionPool::~ConnectionPool() { shutdown(); }

bool ConnectionPool::starved() const {
  std::lock_guard<std::mutex> lk(mu_);
  return jobs_.size() > idle_threads_;
}

// The new thread counts as idle from here: the next enqueue() must not start another one for
// the job this one is about to take.
void ConnectionPool::start_locked(bool extra) {
  running_.emplace_back();
  const Threads::iterator self = std::prev(running_.end());
  try {
    *self = std::thread([this, self, extra] { worker(self, extra); });
  } catch (...) {
    running_.erase(self);
    throw;
  }
  ++live_;
  ++idle_threads_;
}

void ConnectionPool::reap_locked() {
  for (std::thread& t : finished_) t.join();  // each has left worker() or is about to
  finished_.clear();
}

bool ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lk(mu_);
  if (stop_) return false;
  reap_locked();
  if (jobs_.size() >= idle_threads_) {  // every idle thread already has a job waiting for it
    bool started = false;
    if (live_ < max_) {
      try {
        start_locked(true);
        started = true;
      } catch (const std::system_error&) {  // no thread to be had now: the job waits like beyond max_
      }
    }
    if (!started && jobs_.size() >= max_queued_) return false;
  }
  jobs_.push_back(std::move(fn));
  work_.notify_one();
  return true;
}

void ConnectionPool::worker(Threads::iterator self, bool extra) {
  lower_this_threads_priority(nice_);
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    const auto ready = [this] { return stop_ || !jobs_.empty(); };
    bool woke = true;
    if (extra) woke = work_.wait_for(lk, idle_, ready);
    else work_.wait(lk, ready);
    if (jobs_.empty()) {
      if (!stop_ && woke) continue;
      break;  // stopping (with nothing left to serve), or an extra thread idle too long
    }
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    --idle_threads_;
    lk.unlock();
    fn();
    fn = nullptr;
    lk.lock();
    ++idle_threads_;
  }
  --idle_threads_;
  --live_;
  finished_.splice(finished_.end(), running_, self);
  ended_.notify_all();
}

void ConnectionPool::shutdown() {
  std::unique_lock<std::mutex> lk(mu_);
  stop_ = true;
  work_.notify_all();
  ended_.wait(lk, [this] { return live_ == 0; });
  reap_locked();
}

}  // namespace k3::server
