// store/reader_uring: the io_uring back end — one thread keeps up to `depth` reads in
// flight, refilling from the queue as completions arrive or as new reads are queued (an
// eventfd read sits in the ring so submit() can wake the thread out of its wait: without it,
// reads queued while a few others were in flight waited for one of those to finish, which
// on a throttled disk cost decode a visible share of its read bandwidth).
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "store/reader.h"
#include "store/reader_backends.h"

#ifdef K3_HAVE_URING
#include <liburing.h>
#endif

namespace k3::store {

#ifdef K3_HAVE_URING
namespace {

class UringReader final : public Reader {
 public:
  UringReader(ReadDone done, int depth, io_uring ring, int efd)
      : Reader(std::move(done), depth), ring_(ring), efd_(efd), ops_(static_cast<size_t>(depth_)) {
    for (size_t i = 0; i < ops_.size(); ++i) free_.push_back(i);
    thread_ = std::thread([this] { loop(); });
  }
  ~UringReader() override {
    request_stop();
    thread_.join();
    io_uring_queue_exit(&ring_);
    ::close(efd_);
  }
  const char* name() const override { return "io_uring"; }

 private:
  struct Op {
    Read r;
    uint64_t got = 0;
  };

  void prep(size_t i) {
    Op& op = ops_[i];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    // The ring has depth_ entries and at most depth_ ops exist, so an SQE is always free.
    io_uring_prep_read(sqe, op.r.fd, op.r.dst + op.got, static_cast<unsigned>(op.r.len - op.got),
                       op.r.offset + op.got);
    io_uring_sqe_set_data64(sqe, i);
  }

  static constexpr uint64_t kWakeTag = ~uint64_t{0};

  void wake() override {
    const uint64_t one = 1;
    (void)!::write(efd_, &one, sizeof one);  // a full counter still wakes the reader
  }

  void arm_wake() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // the ring has one entry more than depth_
    io_uring_prep_read(sqe, efd_, &wake_buf_, sizeof wake_buf_, 0);
    io_uring_sqe_set_data64(sqe, kWakeTag);
  }

  void complete(size_t i, bool ok, const std::string& err) {
    const Op op = ops_[i];
    free_.push_back(i);
    --active_;
    finished(op.r, ok, err, op.got);
  }

  void loop() {
    raise_priority();
    arm_wake();
    io_uring_submit(&ring_);
    for (;;) {
      if (!free_.empty()) {
        std::vector<Read> rs = take(free_.size(), active_ == 0);
        if (rs.empty() && active_ == 0 && stopping()) return;
        for (const Read& r : rs) {
          const size_t i = free_.back();
          free_.pop_back();
          ops_[i] = {r, 0};
          ++active_;
          prep(i);
        }
        if (!rs.empty()) io_uring_submit(&ring_);
      }
      if (active_ == 0) continue;
      io_uring_cqe* cqe = nullptr;
      int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      bool resubmit = false;
      while (rc == 0 && cqe) {
        const uint64_t data = io_uring_cqe_get_data64(cqe);
        const int res = cqe->res;
        io_uring_cqe_seen(&ring_, cqe);
        if (data == kWakeTag) {  // new reads may be queued: the loop takes them next
          arm_wake();
          resubmit = true;
          cqe = nullptr;
          rc = io_uring_peek_cqe(&ring_, &cqe);
          continue;
        }
        const size_t i = static_cast<size_t>(data);
        Op& op = ops_[i];
        if (res == -EINTR || res == -EAGAIN) {
          prep(i);
          resubmit = true;
        } else if (res < 0) {
          complete(i, false, std::strerror(-res));
        } else if (res == 0) {
          complete(i, op.got >= op.r.need, "unexpected end of file");
        } else {
          op.got += static_cast<uint64_t>(res);
          if (op.got >= op.r.len) {
            complete(i, true, "");
          } else {
            prep(i);
            resubmit = true;
          }
        }
        cqe = nullptr;
        rc = io_uring_peek_cqe(&ring_, &cqe);
      }
      if (resubmit) io_uring_submit(&ring_);
    }
  }

  io_uring ring_;
  int efd_;
  uint64_t wake_buf_ = 0;
  std::vector<Op> ops_;
  std::vector<size_t> free_;
  int64_t active_ = 0;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Reader> make_uring_reader(ReadDone done, int depth) {
  io_uring ring;
  if (depth < 1) depth = 1;
  const int efd = ::eventfd(0, EFD_CLOEXEC);
  if (efd < 0) return nullptr;
  if (io_uring_queue_init(static_cast<unsigned>(depth) + 1, &ring, 0) != 0) {
    ::close(efd);
    return nullptr;
  }
  return std::make_unique<UringReader>(std::move(done), depth, ring, efd);
}

#else

std::unique_ptr<Reader> make_uring_reader(ReadDone, int) { return nullptr; }

#endif

std::unique_ptr<Reader> make_reader(ReadDone done, int depth, bool use_uring) {
  if (use_uring)
    if (auto r = make_uring_reader(done, depth)) return r;
  return make_pread_reader(std::move(done), depth);
}

}  // namespace k3::store
