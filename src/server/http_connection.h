// server/http_connection: one accepted HTTP connection, as the Stream the HTTP library
// (cpp-httplib, third_party/cpp-httplib) parses requests from and writes responses to. It adds
// what the library leaves to its caller (slow clients, HTTP/1.1 framing; docs/serve.md):
// - one read buffer for the connection's whole life, so requests pipelined behind the first
//   are parsed in turn (the library's own stream lives for one request and drops what it read
//   ahead);
// - a read deadline per request: from begin_request(), its request line, headers and body must
//   arrive within limits.request_timeout_s, plus one second per limits.body_min_rate bytes read
//   (a large body on a slow link is not cut short, a trickle is). A read past the deadline
//   fails and timed_out() turns true;
// - a cap on a request's head (request line and headers, up to head_done()): past
//   limits.max_head_bytes reads fail and head_too_large() turns true;
// - waits that end when stopping() answers true (the server is stopping).
// Each wait for more bytes is also bounded by limits.read_timeout_s (timed_out() then turns
// true as well), each write call by limits.write_timeout_s. peer_gone(): the client has closed (EOF: a
// half-close counts, it cannot be told from a client that left), reset or failed; bytes waiting to be read
// mean it is still there. The caller owns the socket until close(), which drains what is still arriving (at
// most 100 ms) so the client reads a FIN, not a reset, then closes it. One thread uses a connection at a
// time. ConnectionPool: the threads that serve connections, one connection each at a time. `base` threads
// always run; while no thread is free another is started, up to `max` (the extra ones end after idle_s
// without work), so slow clients holding threads do not queue a fresh connection behind them until `max` are
// busy. Then up to `max_queued` connections wait, and enqueue() refuses the rest (the library closes such a
// socket at once). While connections wait, starved() is true, and threads whose connection is idle give it up
// (wait_for_request's `shed`): 200 sockets that connect and say nothing cannot keep /health waiting for their
// idle timeout. shutdown() lets the threads finish the connections already given to them, then joins them.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace k3::server {

struct ConnectionLimits {
  double request_timeout_s = 10;
  double body_min_rate = 64 * 1024;  // bytes per second that extend the deadline by one second
  size_t max_head_bytes = 64 * 1024;
  double read_timeout_s = 5;
  double write_timeout_s = 5;
};

class HttpConnection final : public httplib::Stream {
 public:
  HttpConnection(int fd, ConnectionLimits limits, std::function<bool()> stopping);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;
  ~HttpConnection() override;

  // Waits up to idle_s for the next request's first byte; true when one is buffered or has
  // arrived (or the peer closed: the read then says so). False as well once `shed` answers
  // true after the connection has waited kShedGrace: an idle connection then gives its thread
  // up to connections that have something to say.
  bool wait_for_request(double idle_s, const std::function<bool()>& shed = {});
  static constexpr double kShedGrace = 0.5;  // seconds: a client sends its request at once
  void begin_request();
  void head_done() { in_head_ = false; }
  bool timed_out() const { return timed_out_; }
  bool head_too_large() const { return head_too_large_; }
  size_t consumed() const { return consumed_; }  // bytes of this request handed to the parser
  size_t written() const { return written_; }    // bytes written since begin_request()
  void close_after_response() { close_after_ = true; }
  bool closing() const { return close_after_; }
  bool peer_gone() const;
  bool write_all(const std::string& s);
  void close();

  // httplib::Stream
  bool is_readable() const override { return off_ < len_; }
  bool wait_readable() const override;
  bool wait_writable() const override;
  bool is_peer_alive() const override { return !peer_gone(); }
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }
  time_t duration() const override;
  void set_read_timeout(time_t sec, time_t usec) override;
  const char* buffered_data(size_t& size) const override;
  void consume_buffered(size_t size) override;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline() const;
  bool wait_in() const;
  bool head_over() const;

  int fd_;
  ConnectionLimits lim_;
  std::function<bool()> stopping_;
  std::vector<char> buf_;
  size_t off_ = 0, len_ = 0;
  Clock::time_point start_ = Clock::now();
  size_t consumed_ = 0, written_ = 0;
  bool in_head_ = true, close_after_ = false;
  mutable bool timed_out_ = false, head_too_large_ = false;
  std::string remote_addr_, local_addr_;
  int remote_port_ = -1, local_port_ = -1;
};

class ConnectionPool final : public httplib::TaskQueue {
 public:
  // `nice`: how much nicer than the process its threads run (0: as the process).
  ConnectionPool(size_t base, size_t max, size_t max_queued, double idle_s, int nice = 0);
  ~ConnectionPool() override;
  bool enqueue(std::function<void()> fn) override;
  void shutdown() override;
  // Connections are waiting that no idle thread will take: every thread is busy.
  bool starved() const;

 private:
  using Threads = std::list<std::thread>;
  void start_locked(bool extra);
  void reap_locked();
  void worker(Threads::iterator self, bool extra);

  const size_t max_, max_queued_;
  const std::chrono::duration<double> idle_;
  const int nice_;
  mutable std::mutex mu_;
  std::condition_variable work_, ended_;
  std::deque<std::function<void()>> jobs_;
  Threads running_, finished_;  // a thread moves itself to finished_ as it ends
  size_t live_ = 0, idle_threads_ = 0;
  bool stop_ = false;
};

}  // namespace k3::server
