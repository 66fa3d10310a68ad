// server/local_job: a job run to its end by a caller in the same process (the CLI commands,
// which are one-slot clients of the scheduler: one generation loop, one prompt cache).
// Contract: run_job() submits `job` and hands every event to on_event until the Done, which it
// returns. While it waits it asks `interrupted` every 50 ms; once that answers true it sets
// job.stop_requested, so the job ends at the scheduler's next step with a Done whose stop is
// Interrupted and the answer so far kept. An Error event throws k3::Error with its message.
#pragma once

#include <functional>
#include <memory>

#include "server/job.h"

namespace k3::server {

class Scheduler;

Event run_job(Scheduler& sched, const std::shared_ptr<Job>& job,
              const std::function<void(const Event&)>& on_event,
              const std::function<bool()>& interrupted = {});

}  // namespace k3::server
