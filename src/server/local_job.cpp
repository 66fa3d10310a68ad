// server/local_job: see local_job.h.
#include "server/local_job.h"

#include <chrono>

#include "core/error.h"
#include "server/scheduler.h"

namespace k3::server {

Event run_job(Scheduler& sched, const std::shared_ptr<Job>& job,
              const std::function<void(const Event&)>& on_event, const std::function<bool()>& interrupted) {
  auto poll = [&] {
    if (interrupted && interrupted()) job->stop_requested = true;
  };
  poll();  // before submitting, so a stop already asked for takes effect before the first token
  sched.submit(job);
  for (;;) {
    Event e;
    if (job->channel.pop(e, std::chrono::milliseconds(50))) {
      if (e.kind == Event::Kind::Error) fail("{}", e.message);
      if (e.kind == Event::Kind::Done) return e;
      on_event(e);
    }
    poll();
  }
}

}  // namespace k3::server
