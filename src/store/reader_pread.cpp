// store/reader_pread: the portable back end — `depth` threads, each taking one read at a
// time from the shared queue and calling pread until it is complete.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "store/reader.h"
#include "store/reader_backends.h"

namespace k3::store {
namespace {

class PreadReader final : public Reader {
 public:
  PreadReader(ReadDone done, int depth) : Reader(std::move(done), depth) {
    for (int i = 0; i < depth_; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~PreadReader() override {
    request_stop();
    for (std::thread& t : threads_) t.join();
  }
  const char* name() const override { return "pread"; }

 private:
  void loop() {
    raise_priority();
    for (;;) {
      std::vector<Read> rs = take(1, true);
      if (rs.empty()) return;
      const Read& r = rs.front();
      uint64_t got = 0;
      std::string err;
      while (got < r.len) {
        const ssize_t n = ::pread(r.fd, r.dst + got, r.len - got, static_cast<off_t>(r.offset + got));
        if (n < 0) {
          if (errno == EINTR || errno == EAGAIN) continue;
          err = std::strerror(errno);
          break;
        }
        if (n == 0) break;  // end of file
        got += static_cast<uint64_t>(n);
      }
      if (err.empty() && got < r.need) err = "unexpected end of file";
      finished(r, err.empty(), err, got);
    }
  }
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<Reader> make_pread_reader(ReadDone done, int depth) {
  return std::make_unique<PreadReader>(std::move(done), depth);
}

}  // namespace k3::store
