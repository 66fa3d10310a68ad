// tests/server/disk_cache_test: the prompt cache's disk tier (--prompt-cache-dir) and the
// slot-file API. A conversation's next turn after a restart (a new Server over the same
// directory) restores from disk and answers exactly what a server without any cache answers;
// every fault (a corrupt, truncated, foreign or removed file, a full disk, a directory that
// went away, a crash during a write, a second server on the directory) costs at most a
// prefill, never a request or an answer.
#include <dirent.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/hash64.h"
#include "common/temp_dir.h"
#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

using k3::test::TempDir;

std::vector<std::string> state_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 8 && n.ends_with(".k3state")) out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  return out;
}

int64_t cached_of(const Json& j) {
  return j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
}

double metric(TestServer& s, const std::string& name) {
  auto m = s.client()->Get("/metrics");
  if (!m) return -1;
  size_t at = m->body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::atof(m->body.c_str() + at + name.size() + 2);
}

// The writer works on its own thread: waits until it has finished `n` writes (or failed them).
void wait_writes(TestServer& s, double n) {
  for (int i = 0; i < 250; ++i) {
    if (metric(s, "k3_prompt_cache_disk_writes_total") +
            metric(s, "k3_prompt_cache_disk_write_errors_total") >=
        n)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ServerOptions with_disk(const std::string& dir, model::CacheType type = model::CacheType::F32) {
  ServerOptions o = default_options();
  o.sched.disk_dir = dir;
  o.sched.cache_type = type;
  return o;
}

Json turn1(bool seeded) {
  Json r = user_chat("Tell me a story about a lighthouse keeper.");
  r["max_tokens"] = 6;
  if (seeded) {
    r["temperature"] = 0.9;
    r["seed"] = 77;
  } else {
    r["temperature"] = 0;
  }
  r["user"] = "alice";
  return r;
}

Json turn2(bool seeded) {
  Json r = turn1(seeded);
  r["messages"].push_back(Json{{"role", "assistant"}, {"content", "Once upon a time."}});
  r["messages"].push_back(Json{{"role", "user"}, {"content", "And then?"}});
  return r;
}

// What a server with no prompt cache at all answers.
Json fresh_answer(const Json& req, model::CacheType type) {
  ServerOptions o = default_options();
  o.sched.prompt_cache = false;
  o.sched.cache_type = type;
  TestServer s(o);
  auto [st, a] = s.post("/v1/chat/completions", req);
  EXPECT_EQ(st, 200) << a.dump();
  return a;
}

// Turn 1 on one server, which then goes away; returns the directory's state files.
std::vector<std::string> first_server(const std::string& dir, bool seeded,
                                      model::CacheType type = model::CacheType::F32) {
  {
    TestServer s(with_disk(dir, type));
    auto [st, a] = s.post("/v1/chat/completions", turn1(seeded));
    EXPECT_EQ(st, 200) << a.dump();
  }  // the server's end waits for the writer
  return state_files(dir);
}

void restart_and_compare(bool seeded, model::CacheType type) {
  TempDir d;
  first_server(d.path, seeded, type);
  ASSERT_EQ(state_files(d.path).size(), 1u);
  TestServer s(with_disk(d.path, type));  // a new process, as far as the cache can tell
  auto [st, b] = s.post("/v1/chat/completions", turn2(seeded));
  ASSERT_EQ(st, 200) << b.dump();
  EXPECT_GT(cached_of(b), 10) << "the second turn did not resume from disk";
  EXPECT_EQ(metric(s, "k3_prompt_cache_disk_hits_total"), 1);
  // The reference decodes the same prompt split the same way (the history, then the rest): a
  // server that never restarted, with its snapshot in RAM. A split elsewhere may round
  // differently, which a sampled (seeded) answer can show.
  ServerOptions ram = default_options();
  ram.sched.cache_type = type;
  TestServer r(ram);
  ASSERT_EQ(r.post("/v1/chat/completions", turn1(seeded)).first, 200);
  auto [st2, c] = r.post("/v1/chat/completions", turn2(seeded));
  ASSERT_EQ(st2, 200) << c.dump();
  EXPECT_EQ(cached_of(c), cached_of(b));
  EXPECT_EQ(b["choices"], c["choices"]) << "restoring from disk changed the answer";
  EXPECT_EQ(b["usage"]["prompt_tokens"], c["usage"]["prompt_tokens"]);
  if (!seeded) { EXPECT_EQ(b["choices"], fresh_answer(turn2(seeded), type)["choices"]); }
}

TEST(PromptCacheDisk, RestartResumesGreedyF32) { restart_and_compare(false, model::CacheType::F32); }
TEST(PromptCacheDisk, RestartResumesSeededF16) { restart_and_compare(true, model::CacheType::F16); }

TEST(PromptCacheDisk, FilesArePrivateAndOwnersStaySeparate) {
  TempDir d;
  first_server(d.path, false);
  const auto files = state_files(d.path);
  ASSERT_EQ(files.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  TestServer s(with_disk(d.path));
  Json bob = turn2(false);
  bob["user"] = "bob";
  auto [code, b] = s.post("/v1/chat/completions", bob);
  ASSERT_EQ(code, 200) << b.dump();
  EXPECT_EQ(cached_of(b), 0) << "bob resumed alice's conversation from disk";
}

TEST(PromptCacheDisk, SecondServerOnTheDirectoryIsRefused) {
  TempDir d;
  TestServer s(with_disk(d.path));
  try {
    TestServer t(with_disk(d.path));
    ADD_FAILURE() << "two servers shared one cache directory";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("another k3 process"), std::string::npos) << e.what();
  }
  auto [st, a] = s.post("/v1/chat/completions", turn1(false));
  EXPECT_EQ(st, 200) << a.dump();
}

// Each way a file can be bad at restart: the next turn prefills, answers the same, and the
// server says so in its counters rather than failing.
void damaged_restart(const std::function<void(const std::string& file)>& damage, bool expect_indexed) {
  TempDir d;
  auto files = first_server(d.path, false);
  ASSERT_EQ(files.size(), 1u);
  TestServer s(with_disk(d.path));
  damage(files[0]);
  auto [st, b] = s.post("/v1/chat/completions", turn2(false));
  ASSERT_EQ(st, 200) << b.dump();
  EXPECT_EQ(cached_of(b), 0);
  EXPECT_EQ(b["choices"], fresh_answer(turn2(false), model::CacheType::F32)["choices"]);
  if (expect_indexed) { EXPECT_EQ(metric(s, "k3_prompt_cache_disk_load_failures_total"), 1); }
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_all(const std::string& p, const std::string& b) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << b;
}

TEST(PromptCacheDisk, CorruptFileFallsBackToPrefill) {
  damaged_restart(
      [](const std::string& f) {
        std::string b = read_all(f);
        b[b.size() - 40] ^= 0x55;  // the state, past everything the index read
        write_all(f, b);
      },
      true);
}

TEST(PromptCacheDisk, TruncatedFileFallsBackToPrefill) {
  damaged_restart([](const std::string& f) { write_all(f, read_all(f).substr(0, 4000)); }, true);
}

TEST(PromptCacheDisk, FileRemovedInUseFallsBackToPrefill) {
  damaged_restart([](const std::string& f) { ::unlink(f.c_str()); }, true);
}

TEST(PromptCacheDisk, BadFilesAtStartAreSkipped) {
  TempDir d;
  auto files = first_server(d.path, false);
  ASSERT_EQ(files.size(), 1u);
  std::string b = read_all(files[0]);
  b[8] = 9;  // another format version
  write_all(files[0], b);
  write_all(d.path + "/junk.k3state", "not a state");
  // A writer killed mid-write leaves its temporary, never a file under the final name.
  write_all(files[0] + ".tmp.Ab12Cd", b.substr(0, 1000));
  TestServer s(with_disk(d.path));
  EXPECT_EQ(metric(s, "k3_prompt_cache_disk_entries"), 0);
  EXPECT_FALSE(std::ifstream(files[0] + ".tmp.Ab12Cd").good()) << "the dead writer's temporary stayed";
  auto [st, r] = s.post("/v1/chat/completions", turn2(false));
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(cached_of(r), 0);
}

TEST(PromptCacheDisk, ForeignModelFileIsSkipped) {
  TempDir d;
  auto files = first_server(d.path, false);
  ASSERT_EQ(files.size(), 1u);
  std::string b = read_all(files[0]);
  b[16] ^= 1;  // another model identity, with a header checksum that matches it
  const uint64_t sum = hash64(b.data(), 120);
  std::memcpy(b.data() + 120, &sum, 8);
  write_all(files[0], b);
  TestServer s(with_disk(d.path));
  EXPECT_EQ(metric(s, "k3_prompt_cache_disk_entries"), 0);
  auto [st, r] = s.post("/v1/chat/completions", turn2(false));
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(cached_of(r), 0);
}

// A full disk, as the kernel reports it to a process over its file-size limit (EFBIG): the
// write fails, the answer does not change, and the next turn still reuses the RAM snapshot.
TEST(PromptCacheDisk, DiskFullCostsOnlyTheFile) {
  TempDir d;
  TestServer s(with_disk(d.path));
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 4096;  // smaller than any state file of this model
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto [st, a] = s.post("/v1/chat/completions", turn1(false));
  wait_writes(s, 1);
  ::setrlimit(RLIMIT_FSIZE, &old);
  ASSERT_EQ(st, 200) << a.dump();
  EXPECT_EQ(metric(s, "k3_prompt_cache_disk_write_errors_total"), 1);
  EXPECT_EQ(state_files(d.path).size(), 0u);
  auto [st2, b] = s.post("/v1/chat/completions", turn2(false));
  ASSERT_EQ(st2, 200) << b.dump();
  EXPECT_GT(cached_of(b), 10);
  EXPECT_EQ(b["choices"], fresh_answer(turn2(false), model::CacheType::F32)["choices"]);
}

// The directory is replaced by a file while the server runs (as unwritable as it gets for
// root, who ignores permission bits).
TEST(PromptCacheDisk, UnwritableDirectoryCostsOnlyTheFile) {
  TempDir d;
  const std::string dir = d.path + "/cache";
  TestServer s(with_disk(dir));
  ASSERT_EQ(std::system(fmt::format("rm -rf '{0}' && echo x > '{0}'", dir).c_str()), 0);
  auto [st, a] = s.post("/v1/chat/completions", turn1(false));
  ASSERT_EQ(st, 200) << a.dump();
  wait_writes(s, 1);
  EXPECT_EQ(metric(s, "k3_prompt_cache_disk_write_errors_total"), 1);
  auto [st2, b] = s.post("/v1/chat/completions", turn2(false));
  ASSERT_EQ(st2, 200) << b.dump();
  EXPECT_EQ(b["choices"], fresh_answer(turn2(false), model::CacheType::F32)["choices"]);
}

TEST(PromptCacheDisk, NewTurnReplacesItsConversationsOlderEntry) {
  TempDir d;
  TestServer s(with_disk(d.path));
  ASSERT_EQ(s.post("/v1/chat/completions", turn1(false)).first, 200);
  wait_writes(s, 1);
  Json t3 = turn2(false);
  ASSERT_EQ(s.post("/v1/chat/completions", t3).first, 200);
  wait_writes(s, 2);
  t3["messages"].push_back(Json{{"role", "assistant"}, {"content", "The light went out."}});
  t3["messages"].push_back(Json{{"role", "user"}, {"content", "Why?"}});
  ASSERT_EQ(s.post("/v1/chat/completions", t3).first, 200);
  wait_writes(s, 3);
  EXPECT_EQ(metric(s, "k3_prompt_cache_disk_writes_total"), 3);
  EXPECT_EQ(state_files(d.path).size(), 1u) << "one conversation, one file";
}

TEST(PromptCacheDisk, SizeLimitEvictsLeastRecentlyUsed) {
  TempDir d;
  auto one = first_server(d.path, false);
  ASSERT_EQ(one.size(), 1u);
  struct stat st {};
  ::stat(one[0].c_str(), &st);
  ServerOptions o = with_disk(d.path);
  o.sched.disk_bytes = static_cast<uint64_t>(st.st_size) * 2 + 100;  // room for two
  TestServer s(o);
  double n = 0;
  for (const char* who : {"bob", "carol", "dave"}) {
    Json r = turn1(false);
    r["user"] = who;
    ASSERT_EQ(s.post("/v1/chat/completions", r).first, 200);
    wait_writes(s, ++n);
  }
  EXPECT_LE(metric(s, "k3_prompt_cache_disk_bytes"), static_cast<double>(o.sched.disk_bytes));
  EXPECT_EQ(state_files(d.path).size(), 2u);
  EXPECT_FALSE(std::ifstream(one[0]).good()) << "the oldest entry (alice's) should have gone first";
}

// llama-server's slot API: save a slot's state, erase it, restore it; the next request
// resumes from it as if it had never left.
TEST(SlotFiles, SaveEraseRestore) {
  TempDir d;
  ServerOptions o = default_options();
  o.sched.n_slots = 1;
  o.slot_save_path = d.path;
  TestServer s(o);
  ASSERT_EQ(s.post("/v1/chat/completions", turn1(false)).first, 200);
  auto [st1, saved] = s.post("/slots/0?action=save", Json{{"filename", "alice.bin"}});
  ASSERT_EQ(st1, 200) << saved.dump();
  EXPECT_EQ(saved["id_slot"], 0);
  EXPECT_EQ(saved["filename"], "alice.bin");
  EXPECT_GT(saved["n_saved"].get<int64_t>(), 10);
  EXPECT_GT(saved["n_written"].get<int64_t>(), 1000);
  EXPECT_TRUE(saved["timings"].contains("save_ms"));
  auto [st2, erased] = s.post("/slots/0?action=erase", Json::object());
  ASSERT_EQ(st2, 200) << erased.dump();
  EXPECT_EQ(erased["n_erased"], saved["n_saved"]);
  auto [st3, restored] = s.post("/slots/0?action=restore", Json{{"filename", "alice.bin"}});
  ASSERT_EQ(st3, 200) << restored.dump();
  EXPECT_EQ(restored["n_restored"], saved["n_saved"]);
  EXPECT_EQ(restored["n_read"], saved["n_written"]);
  auto list = s.client()->Get("/slots");
  ASSERT_TRUE(list);
  const Json slots = Json::parse(list->body);
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0]["n_tokens"], saved["n_saved"]);
  // The RAM snapshot also holds turn 1's history; the restored slot holds more (the answer).
  auto [st4, b] = s.post("/v1/chat/completions", turn2(false));
  ASSERT_EQ(st4, 200) << b.dump();
  EXPECT_GT(cached_of(b), 10);
  EXPECT_EQ(b["choices"], fresh_answer(turn2(false), model::CacheType::F32)["choices"]);
}

TEST(SlotFiles, BadRequestsAreRefused) {
  TempDir d;
  ServerOptions o = default_options();
  o.slot_save_path = d.path;
  TestServer s(o);
  for (const char* name : {"../x", "/etc/passwd", ".hidden", "a/b", ""})
    expect_error(s.post("/slots/0?action=save", Json{{"filename", name}}), 400, "invalid_request_error");
  expect_error(s.post("/slots/0?action=save", Json{{"filename", 5}}), 400, "invalid_request_error");
  expect_error(s.post("/slots/0?action=fly", Json{{"filename", "x"}}), 400, "invalid_request_error");
  expect_error(s.post("/slots/9?action=erase", Json::object()), 404, "not_found_error");
  expect_error(s.post("/slots/zero?action=erase", Json::object()), 404, "not_found_error");
  expect_error(s.post("/slots/0?action=restore", Json{{"filename", "missing"}}), 400,
               "invalid_request_error");
  write_all(d.path + "/junk", "junk");
  expect_error(s.post("/slots/0?action=restore", Json{{"filename", "junk"}}), 400, "invalid_request_error");
  TestServer off;  // no --slot-save-path
  expect_error(off.post("/slots/0?action=save", Json{{"filename", "x"}}), 501, "not_supported_error");
}

}  // namespace
}  // namespace k3::server::test
