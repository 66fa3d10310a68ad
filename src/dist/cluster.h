// dist/cluster: this process's place in a distributed run (docs/distributed.md): `mpirun -np N
// k3 COMMAND …` starts N processes, one per host (or socket); each loads the same model file
// (its own copy or a shared one) and rank 0 drives the others through runtime::Engine.
// Contract:
// * launched_by_mpi() tells whether mpirun (Open MPI, or any launcher that sets the PMI
//   variables) started this process. start() initialises MPI once per process and returns the
//   cluster, or nullptr for one process (MPI is then never touched). k3 without MPI support
//   refuses to run as one rank of several.
// * collective() is the model::Collective of the run. Every call except rank 0's requests to
//   the idle followers is bounded by the timeout: a rank that dies or stops answering makes the
//   others print an error naming the call and exit non-zero within timeout seconds (a process
//   can't leave an MPI call it is blocked in; mpirun then ends the rest). on_failure() runs
//   first, so a server can answer 503 for a moment before the process exits.
// * finish() (end of main) prints the traffic summary on rank 0 and finalises MPI; abort(code)
//   ends every rank now (an error on one rank while the others wait).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace k3::model {
class Collective;
}

namespace k3::dist {

struct ClusterOptions {
  double timeout_s = 30.0;  // longest wait for the other ranks inside one collective
  bool stats = false;       // print the traffic summary at the end on rank 0
};

struct Traffic {
  uint64_t collectives = 0;  // calls (each: one message from every rank to every other)
  uint64_t bytes_out = 0;    // this rank's contributions, summed
  uint64_t bytes_in = 0;     // what this rank received from the others
  double wait_s = 0.0;       // time inside the calls
};

class Cluster {
 public:
  static bool launched_by_mpi();
  static Cluster* start(const ClusterOptions& o);
  static Cluster* current();  // the started cluster, or nullptr

  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual model::Collective& collective() = 0;
  virtual Traffic traffic() const = 0;
  virtual void on_failure(std::function<void(const std::string&)> f) = 0;
  // A failure seen by this process (a timed-out collective), or "".
  virtual std::string failure() const = 0;

  static void finish();
  [[noreturn]] static void abort(int code);
};

}  // namespace k3::dist
