// server/slot_endpoints: llama-server's slot API over the scheduler's slot files
// (`--slot-save-path DIR`): POST /slots/{id}?action=save|restore with {"filename": NAME} saves
// or restores slot id's kept state as DIR/NAME, action=erase forgets it; GET /slots lists
// the slots. The response bodies are llama-server's (id_slot, filename, n_saved / n_restored,
// n_written / n_read, timings.save_ms / restore_ms; n_erased).
// Contract: a NAME is one file name of letters, digits, '.', '_' and '-', not starting with
// '.', at most 200 bytes: never a path, so no request reaches outside DIR. Anything else, an
// unknown action or a missing --slot-save-path is an ApiError (400, 400, 501); the
// scheduler's own errors (404 no slot, 409 busy, 400 a file that does not fit) pass through.
#pragma once

#include <string>

#include "text/json_py.h"

namespace k3::server {

class Scheduler;

// Checks `name` as above; returns it, or throws ApiError 400 saying what is wrong.
std::string checked_slot_filename(const text::Json& name);
text::Json slot_action(Scheduler& sched, const std::string& save_dir, const std::string& id_text,
                       const std::string& action, const text::Json& body);
text::Json slots_listing(Scheduler& sched);

}  // namespace k3::server
