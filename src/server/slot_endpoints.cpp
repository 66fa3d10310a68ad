// server/slot_endpoints: see slot_endpoints.h.
#include "server/slot_endpoints.h"

#include <charconv>

#include "server/api_error.h"
#include "server/scheduler.h"

namespace k3::server {

using text::Json;

std::string checked_slot_filename(const Json& name) {
  if (!name.is_string())
    throw ApiError(400, "invalid_request_error", "'filename' must be a string", "filename");
  const std::string f = name.get<std::string>();
  auto bad = [&](const char* why) {
    throw ApiError(400, "invalid_request_error", fmt::format("invalid filename: {}", why), "filename");
  };
  if (f.empty()) bad("empty");
  if (f.size() > 200) bad("longer than 200 bytes");
  if (f[0] == '.') bad("it starts with '.'");
  for (unsigned char c : f)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-'))
      bad("only letters, digits, '.', '_' and '-' are allowed (a name, not a path)");
  return f;
}

Json slot_action(Scheduler& sched, const std::string& save_dir, const std::string& id_text,
                 const std::string& action, const Json& body) {
  int id = -1;
  const auto [end, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (ec != std::errc() || end != id_text.data() + id_text.size())
    throw ApiError(404, "not_found_error", fmt::format("no slot '{}'", id_text));
  if (action == "erase") return Json{{"id_slot", id}, {"n_erased", sched.slot_erase(id)}};
  if (action != "save" && action != "restore")
    throw ApiError(400, "invalid_request_error", "action must be save, restore or erase", "action");
  if (save_dir.empty())
    throw ApiError(501, "not_supported_error", "slot save and restore need --slot-save-path");
  if (!body.is_object() || !body.contains("filename"))
    throw ApiError(400, "invalid_request_error", "the body needs a 'filename'", "filename");
  const std::string name = checked_slot_filename(body["filename"]);
  const std::string path = save_dir + "/" + name;
  if (action == "save") {
    const SlotFileResult r = sched.slot_save(id, path);
    return Json{{"id_slot", id},
                {"filename", name},
                {"n_saved", r.n_tokens},
                {"n_written", r.n_bytes},
                {"timings", {{"save_ms", r.ms}}}};
  }
  const SlotFileResult r = sched.slot_restore(id, path);
  return Json{{"id_slot", id},
              {"filename", name},
              {"n_restored", r.n_tokens},
              {"n_read", r.n_bytes},
              {"timings", {{"restore_ms", r.ms}}}};
}

Json slots_listing(Scheduler& sched) {
  Json out = Json::array();
  for (const SlotInfo& s : sched.slots_info())
    out.push_back(
        Json{{"id", s.id}, {"n_ctx", sched.n_ctx()}, {"is_processing", s.busy}, {"n_tokens", s.n_tokens}});
  return out;
}

}  // namespace k3::server
