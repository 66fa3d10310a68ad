// dist/cluster: the MPI implementation of the distributed run (see cluster.h) and of
// model::Collective over MPI_COMM_WORLD. Compiled without MPI (K3_HAVE_MPI unset), start()
// refuses to run as one of several ranks.
#include "dist/cluster.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "model/collective.h"

#if defined(K3_HAVE_MPI)
#include <mpi.h>
#endif

namespace k3::dist {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

// The world size the launcher announces: Open MPI's, then the PMI/PMIx conventions.
int launched_size() {
  for (const char* n : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"})
    if (int v = env_int(n); v > 0) return v;
  return -1;
}

std::unique_ptr<Cluster> g_cluster;

}  // namespace

bool Cluster::launched_by_mpi() { return launched_size() > 0; }

Cluster* Cluster::current() { return g_cluster.get(); }

#if defined(K3_HAVE_MPI)

namespace {

class MpiCluster final : public Cluster, public model::Collective {
 public:
  explicit MpiCluster(const ClusterOptions& o) : opts_(o) {
    int provided = 0;
    // Serialized: the engine's caller thread makes the calls, one at a time; the server's
    // decode thread is not the main thread.
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      fail("MPI_Init_thread failed");
    if (provided < MPI_THREAD_SERIALIZED) fail("MPI does not support calls from more than one thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    watchdog_ = std::thread([this] { watch(); });
  }
  ~MpiCluster() override {
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const ClusterOptions& options() const { return opts_; }
  model::Collective& collective() override { return *this; }
  Traffic traffic() const override {
    std::lock_guard<std::mutex> l(mu_);
    return traffic_;
  }
  void on_failure(std::function<void(const std::string&)> f) override {
    std::lock_guard<std::mutex> l(mu_);
    on_failure_ = std::move(f);
  }
  std::string failure() const override {
    std::lock_guard<std::mutex> l(mu_);
    return failure_;
  }

  void allgatherv(const void* mine, void* all, std::span<const size_t> counts) override {
    if (counts.size() != static_cast<size_t>(size_))
      fail("allgatherv: {} counts for {} ranks", counts.size(), size_);
    counts_.resize(counts.size());
    displs_.resize(counts.size());
    uint64_t total = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (counts[r] > static_cast<size_t>(INT32_MAX) || total > static_cast<uint64_t>(INT32_MAX))
        fail("allgatherv: {} bytes is more than one MPI call carries", counts[r]);
      counts_[r] = static_cast<int>(counts[r]);
      displs_[r] = static_cast<int>(total);
      total += counts[r];
    }
    Call c(*this, "MPI_Allgatherv", false);
    check(MPI_Allgatherv(mine, counts_[static_cast<size_t>(rank_)], MPI_BYTE, all, counts_.data(),
                         displs_.data(), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Allgatherv");
    c.count(counts[static_cast<size_t>(rank_)], total - counts[static_cast<size_t>(rank_)]);
  }

  void broadcast(void* data, size_t bytes, bool idle) override {
    if (bytes > static_cast<size_t>(INT32_MAX))
      fail("broadcast: {} bytes is more than one MPI call carries", bytes);
    Call c(*this, "MPI_Bcast", idle);
    check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (rank_ == 0) c.count(bytes * static_cast<uint64_t>(size_ - 1), 0);
    else c.count(0, bytes);
  }

 private:
  // Times one call; while it runs the watchdog may declare the run failed.
  class Call {
   public:
    Call(MpiCluster& m, const char* what, bool idle) : m_(m), t0_(std::chrono::steady_clock::now()) {
      if (!idle) {
        m_.what_.store(what);
        m_.since_ns_.store(t0_.time_since_epoch().count());
      }
    }
    void count(uint64_t out, uint64_t in) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      std::lock_guard<std::mutex> l(m_.mu_);
      ++m_.traffic_.collectives;
      m_.traffic_.bytes_out += out;
      m_.traffic_.bytes_in += in;
      m_.traffic_.wait_s += s;
    }
    ~Call() { m_.since_ns_.store(0); }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    MpiCluster& m_;
    std::chrono::steady_clock::time_point t0_;
  };

  void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fail("rank {}: {} failed: {} (another rank may have died)", rank_, what,
         std::string(msg, static_cast<size_t>(len)));
  }

  // Every 50 ms: has a bounded call waited past the timeout? Then say so, let the owner react
  // (a server answers 503), and end this process: an MPI call can't be interrupted.
  void watch() {
    using namespace std::chrono;
    while (!stop_) {
      std::this_thread::sleep_for(milliseconds(50));
      const int64_t since = since_ns_.load();
      if (since == 0) continue;
      const double waited =
          duration<double>(steady_clock::now().time_since_epoch() - nanoseconds(since)).count();
      if (waited < opts_.timeout_s) continue;
      const std::string msg = fmt::format(
          "rank {} of {}: {} waited {:.0f} s for the other ranks; a rank died or stopped answering "
          "(--dist-timeout {})",
          rank_, size_, what_.load(), waited, opts_.timeout_s);
      std::function<void(const std::string&)> cb;
      {
        std::lock_guard<std::mutex> l(mu_);
        failure_ = msg;
        cb = on_failure_;
      }
      std::fprintf(stderr, "error: %s\n", msg.c_str());
      std::fflush(stderr);
      if (cb) {
        cb(msg);
        std::this_thread::sleep_for(seconds(1));  // a moment for the 503s to go out
      }
      std::_Exit(3);
    }
  }

  ClusterOptions opts_;
  int rank_ = 0, size_ = 1;
  std::vector<int> counts_, displs_;
  mutable std::mutex mu_;
  Traffic traffic_;
  std::string failure_;
  std::function<void(const std::string&)> on_failure_;
  std::atomic<int64_t> since_ns_{0};
  std::atomic<const char*> what_{""};
  std::atomic<bool> stop_{false};
  std::thread watchdog_;
};

}  // namespace

Cluster* Cluster::start(const ClusterOptions& o) {
  if (g_cluster) return g_cluster.get();
  if (launched_size() <= 1) return nullptr;
  g_cluster = std::make_unique<MpiCluster>(o);
  return g_cluster.get();
}

void Cluster::finish() {
  if (!g_cluster) return;
  auto* m = static_cast<MpiCluster*>(g_cluster.get());
  if (m->rank() == 0 && m->options().stats) {
    const Traffic t = m->traffic();
    std::fprintf(stderr,
                 "k3 dist: %d ranks | rank 0: %llu collectives, %.3f MB out, %.3f MB in, %.3f s in them\n",
                 m->size(), static_cast<unsigned long long>(t.collectives), t.bytes_out / 1e6,
                 t.bytes_in / 1e6, t.wait_s);
  }
  g_cluster.reset();
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

void Cluster::abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else  // no MPI in this build

Cluster* Cluster::start(const ClusterOptions&) {
  if (launched_size() > 1)
    fail("this k3 was built without MPI (libopenmpi-dev): it can't run as one of {} ranks", launched_size());
  return nullptr;
}

void Cluster::finish() {}

void Cluster::abort(int code) { std::_Exit(code); }

#endif

}  // namespace k3::dist
