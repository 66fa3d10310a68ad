// tests/server/test_prompt_cache: the prompt snapshots (one per slot, not tied to slots). A follow-up turn
// (history + one more exchange) and a repeated request restore the snapshot and decode only the rest; what
// they generate is what a server without the cache generates for the same request.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

int64_t cached_of(const Json& j) {
  return j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
}

std::string metric_line(TestServer& s, const std::string& name) {
  auto m = s.client()->Get("/metrics");
  if (!m) return "";
  size_t at = m->body.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  size_t end = m->body.find('\n', at + 1);
  return m->body.substr(at + 1, end - at - 1);
}

Json greedy(Json req, int max_tokens) {
  req["max_tokens"] = max_tokens;
  req["temperature"] = 0;
  return req;
}

TEST(ServerPromptCache, FollowUpTurnStartsFromTheLastHistory) {
  TestServer s;
  Json turn1 = greedy(user_chat("Tell me a story."), 6);
  auto [st1, a] = s.post("/v1/chat/completions", turn1);
  ASSERT_EQ(st1, 200) << a.dump();
  EXPECT_EQ(cached_of(a), 0);

  // The next turn repeats the history: everything up to the end of the first user message
  // comes from the snapshot.
  Json turn2 = turn1;
  turn2["messages"].push_back(Json{{"role", "assistant"}, {"content", "Once upon a time."}});
  turn2["messages"].push_back(Json{{"role", "user"}, {"content", "And then?"}});
  auto [st2, b] = s.post("/v1/chat/completions", turn2);
  ASSERT_EQ(st2, 200) << b.dump();
  const int64_t reused = cached_of(b);
  EXPECT_GT(reused, 10);
  EXPECT_LT(reused, a["usage"]["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(metric_line(s, "k3_prompt_tokens_cached_total"),
            fmt::format("k3_prompt_tokens_cached_total {}", reused));

  ServerOptions off = default_options();
  off.sched.prompt_cache = false;
  TestServer fresh(off);
  auto [st3, c] = fresh.post("/v1/chat/completions", turn2);
  ASSERT_EQ(st3, 200) << c.dump();
  EXPECT_EQ(cached_of(c), 0);
  EXPECT_EQ(b["choices"], c["choices"]) << "restoring the snapshot changed the answer";
  EXPECT_EQ(b["usage"]["prompt_tokens"], c["usage"]["prompt_tokens"]);
}

// Regression: cached_tokens told a client whether another client had sent the same prefix.
// Snapshots are reused only by the same `cache_key` / `user` (clients sending neither share).
TEST(ServerPromptCache, ReuseStaysWithinTheSameUser) {
  ServerOptions o = default_options();
  o.sched.n_slots = 1;
  TestServer s(o);
  Json turn1 = greedy(user_chat("Tell me a story."), 4);
  turn1["user"] = "alice";
  ASSERT_EQ(s.post("/v1/chat/completions", turn1).first, 200);
  Json turn2 = turn1;
  turn2["messages"].push_back(Json{{"role", "assistant"}, {"content", "Once upon a time."}});
  turn2["messages"].push_back(Json{{"role", "user"}, {"content", "And then?"}});
  Json other = turn2;
  other["user"] = "bob";
  auto [st_b, b] = s.post("/v1/chat/completions", other);
  ASSERT_EQ(st_b, 200) << b.dump();
  EXPECT_EQ(cached_of(b), 0) << "bob learnt of alice's prompt";
  ASSERT_EQ(s.post("/v1/chat/completions", turn1).first, 200);  // alice again, then her follow-up
  auto [st_a, a] = s.post("/v1/chat/completions", turn2);
  ASSERT_EQ(st_a, 200) << a.dump();
  EXPECT_GT(cached_of(a), 10);
  Json keyed = turn2;
  keyed.erase("user");
  keyed["cache_key"] = "alice";  // cache_key is another owner than user "alice"
  EXPECT_EQ(cached_of(s.post("/v1/chat/completions", keyed).second), 0);
  keyed["cache_key"] = 5;
  EXPECT_EQ(s.post("/v1/chat/completions", keyed).first, 400);
}

// Regression (issue 41, row 8): the owner was only what the client sent, so a guessed `user`
// (or a shared cache_key like "new") with a guessed history was confirmed by cached_tokens.
// "cache_key": "new" asks the server for a key no one else can guess; only its holder reuses
// the snapshot it owns.
TEST(ServerPromptCache, ServerIssuedCacheKeyCannotBeGuessed) {
  ServerOptions o = default_options();
  o.sched.n_slots = 1;
  TestServer s(o);
  Json turn1 = greedy(user_chat("Tell me a story."), 4);
  turn1["cache_key"] = "new";
  auto res1 = s.client()->Post("/v1/chat/completions", turn1.dump(), "application/json");
  ASSERT_TRUE(res1);
  ASSERT_EQ(res1->status, 200) << res1->body;
  const Json a1 = Json::parse(res1->body);
  ASSERT_TRUE(a1.contains("cache_key")) << a1.dump();
  const std::string key = a1["cache_key"].get<std::string>();
  EXPECT_EQ(key.size(), 5u + 32u) << key;
  EXPECT_EQ(key.rfind("k3ck_", 0), 0u) << key;
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 5), std::string::npos) << key;
  EXPECT_EQ(res1->get_header_value("X-K3-Cache-Key"), key);

  Json turn2 = turn1;
  turn2["messages"].push_back(Json{{"role", "assistant"}, {"content", "Once upon a time."}});
  turn2["messages"].push_back(Json{{"role", "user"}, {"content", "And then?"}});
  // Another client with the right history: asking for a key of its own, sending none, or
  // guessing names, learns nothing.
  for (const Json& owner : {Json{{"cache_key", "new"}}, Json::object(), Json{{"user", "new"}},
                            Json{{"cache_key", "k3ck_00000000000000000000000000000000"}}}) {
    Json probe = turn2;
    probe.erase("cache_key");
    probe.update(owner);
    auto [st, p] = s.post("/v1/chat/completions", probe);
    ASSERT_EQ(st, 200) << p.dump();
    EXPECT_EQ(cached_of(p), 0) << "a guess under " << owner.dump() << " was confirmed";
    if (owner.contains("cache_key") && owner["cache_key"] == "new") {
      EXPECT_NE(p.value("cache_key", std::string()), key) << "two requests were given one key";
    }
  }
  // The holder sends the key back (its first turn again: the probes' snapshots may have taken
  // the one entry), and its follow-up starts from its snapshot.
  Json again = turn1;
  again["cache_key"] = key;
  ASSERT_EQ(s.post("/v1/chat/completions", again).first, 200);
  Json mine = turn2;
  mine["cache_key"] = key;
  auto res2 = s.client()->Post("/v1/chat/completions", mine.dump(), "application/json");
  ASSERT_TRUE(res2);
  ASSERT_EQ(res2->status, 200) << res2->body;
  const Json a2 = Json::parse(res2->body);
  EXPECT_GT(cached_of(a2), 10);
  EXPECT_FALSE(a2.contains("cache_key")) << "a key the client sent is not issued again";
  EXPECT_TRUE(res2->get_header_value("X-K3-Cache-Key").empty());
  // A stream gets its key in the header.
  Json streamed = turn1;
  streamed["stream"] = true;
  auto res3 = s.client()->Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(res3);
  ASSERT_EQ(res3->status, 200);
  const std::string skey = res3->get_header_value("X-K3-Cache-Key");
  EXPECT_EQ(skey.size(), 37u);
  EXPECT_NE(skey, key);
}

TEST(ServerPromptCache, RepeatedCompletionReusesAllButTheLastToken) {
  TestServer s;
  Json req = greedy(Json{{"prompt", "Once upon a time there was a"}}, 5);
  auto [st1, a] = s.post("/v1/completions", req);
  auto [st2, b] = s.post("/v1/completions", req);
  ASSERT_EQ(st1, 200) << a.dump();
  ASSERT_EQ(st2, 200) << b.dump();
  EXPECT_EQ(cached_of(a), 0);
  EXPECT_EQ(cached_of(b), a["usage"]["prompt_tokens"].get<int64_t>() - 1);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  // A different prompt shares no snapshot and decodes in full.
  auto [st3, c] = s.post("/v1/completions", greedy(Json{{"prompt", "Twice upon a time"}}, 3));
  ASSERT_EQ(st3, 200);
  EXPECT_EQ(cached_of(c), 0);
}

TEST(ServerPromptCache, WaitingJobTakesTheSlotHoldingItsPrefix) {
  ServerOptions o = default_options();  // two slots
  TestServer s(o);
  Json story = greedy(Json{{"prompt", "A long story about a cat and a dog"}}, 2);
  Json other = greedy(Json{{"prompt", "Something else entirely, about weather"}}, 2);
  ASSERT_EQ(s.post("/v1/completions", story).first, 200);
  ASSERT_EQ(s.post("/v1/completions", other).first, 200);
  // Both slots hold a snapshot now; each repeat finds its own.
  auto [st1, a] = s.post("/v1/completions", other);
  auto [st2, b] = s.post("/v1/completions", story);
  ASSERT_EQ(st1, 200);
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(cached_of(a), a["usage"]["prompt_tokens"].get<int64_t>() - 1);
  EXPECT_EQ(cached_of(b), b["usage"]["prompt_tokens"].get<int64_t>() - 1);
}

// A one-off request (a client that never comes back) must not cost the live conversations
// their entries: with snapshots tied to slots and least-recently-used eviction, X evicted A, A's
// next turn evicted B, and so on round the slots (with as many clients as slots, one stray
// request cost every client a full prefill). A new conversation gets an entry once one is idle.
TEST(ServerPromptCache, OneOffRequestsDoNotEvictLiveConversations) {
  ServerOptions o = default_options();  // two slots, two snapshots
  TestServer s(o);
  Json a = greedy(Json{{"prompt", "A long story about a cat and a dog"}}, 2);
  Json b = greedy(Json{{"prompt", "Something else entirely, about weather"}}, 2);
  auto full = [](const Json& r) { return r["usage"]["prompt_tokens"].get<int64_t>() - 1; };
  auto cached = [&](const Json& req) {
    auto [st, r] = s.post("/v1/completions", req);
    EXPECT_EQ(st, 200) << r.dump();
    return st == 200 && cached_of(r) == full(r);
  };
  for (int turn = 0; turn < 2; ++turn)  // both conversations reused once: both proven
    for (const Json* r : {&a, &b}) cached(*r);
  for (int i = 0; i < 3; ++i) {
    Json x = greedy(Json{{"prompt", fmt::format("Question {} from a client who then leaves", i)}}, 2);
    EXPECT_FALSE(cached(x));
    EXPECT_TRUE(cached(a)) << "one-off " << i << " evicted a";
    EXPECT_TRUE(cached(b)) << "one-off " << i << " evicted b";
  }
  // b goes quiet; after 2 x 2 admissions without it, a newcomer may take its entry.
  Json c = greedy(Json{{"prompt", "A newcomer who stays for a while"}}, 2);
  for (int i = 0; i < 4; ++i) cached(a);
  EXPECT_FALSE(cached(c));
  EXPECT_TRUE(cached(c)) << "the newcomer found no entry although b had gone quiet";
  EXPECT_TRUE(cached(a));
}

}  // namespace
}  // namespace k3::server::test
