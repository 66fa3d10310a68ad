// The chat loop without a terminal: ChatSession (cli/chat_session.h) over a one-slot scheduler
// and the trained k3-tiny. A follow-up turn resumes from the state the last answer left (the
// whole previous prompt and answer are cached when the answer re-renders token for token), the
// answer becomes the assistant message, a stop before the first token appends nothing, a
// prompt past the context and an impossible constraint are errors that leave the conversation
// as it was, and a JSON schema holds the content to it. AnswerPrinter never passes terminal
// controls through.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/answer_printer.h"
#include "common/temp_dir.h"
#include "cli/chat_session.h"
#include "model/model.h"
#include "server/scheduler.h"
#include "text/json_py.h"
#include "text/tokenizer.h"

using namespace k3;
using namespace k3::cli;
using text::Json;

namespace {

struct Tiny {
  std::shared_ptr<model::Model> model =
      model::Model::load(std::string(K3_MODELS_DIR) + "/k3-tiny/k3-tiny-Q8_0.gguf");
  std::shared_ptr<const text::Tokenizer> tok = text::Tokenizer::from_gguf(model->gguf());
};

Tiny& tiny() {
  static Tiny t;
  return t;
}

server::SchedulerOptions one_slot(int64_t n_ctx = 1024) {
  server::SchedulerOptions o;
  o.n_slots = 1;
  o.n_threads = 1;
  o.n_ctx = n_ctx;
  return o;
}

ChatOptions greedy_no_think(int64_t max_tokens = 24) {
  ChatOptions co;
  co.params.sampler.temperature = 0;
  co.params.max_tokens = max_tokens;
  co.vars["thinking"] = false;
  return co;
}

void user(ChatSession& c, const std::string& text) {
  c.messages.push_back(Json{{"role", "user"}, {"content", text}});
}

}  // namespace

TEST(ChatSession, AFollowUpResumesFromTheLastAnswersState) {
  server::Scheduler sched(tiny().model, tiny().tok, one_slot());
  ChatSession chat(sched, *tiny().tok, greedy_no_think());
  std::string err, shown;
  auto show = [&](const text::ParseDelta& d) { shown += d.content; };
  user(chat, "hi");
  std::optional<TurnStats> a = chat.answer(
      show, [] { return false; }, err);
  ASSERT_TRUE(a) << err;
  EXPECT_EQ(a->n_cached, 0);
  ASSERT_GT(a->n_generated, 0);
  ASSERT_EQ(chat.messages.size(), 2u);
  EXPECT_EQ(chat.messages[1]["role"], "assistant");
  EXPECT_EQ(chat.messages[1]["content"], shown);  // the message is what was shown
  EXPECT_EQ(chat.context_used(), a->n_prompt + a->n_generated - 1);

  user(chat, "and then?");
  std::optional<TurnStats> b = chat.answer([](const text::ParseDelta&) {}, [] { return false; }, err);
  ASSERT_TRUE(b) << err;
  // The previous prompt and every decoded answer token (the last one never is).
  EXPECT_EQ(b->n_cached, a->n_prompt + a->n_generated - 1);
  EXPECT_EQ(chat.messages.size(), 4u);
}

// /save writes the slot's state beside the conversation; /load in a new process (a new
// scheduler) restores it, so the next answer decodes only what is new and is the answer the
// first session would have given. A state of another cache type is refused with its reason.
TEST(ChatSession, SavedStateResumesWithoutPrefill) {
  const k3::test::TempDir dir("k3-chatstate");
  const std::string path = dir.path + "/conv.json.k3state";
  auto noop = [](const text::ParseDelta&) {};
  auto never = [] { return false; };
  std::string err, first_answer;
  Json msgs;
  int64_t saved = 0;
  {
    server::Scheduler sched(tiny().model, tiny().tok, one_slot());
    ChatSession chat(sched, *tiny().tok, greedy_no_think());
    user(chat, "hi");
    ASSERT_TRUE(chat.answer(noop, never, err)) << err;
    saved = chat.save_state(path);
    EXPECT_EQ(saved, chat.context_used());
    msgs = chat.messages;
    user(chat, "and then?");
    ASSERT_TRUE(chat.answer(noop, never, err)) << err;
    first_answer = chat.messages.back().dump();
  }
  server::Scheduler sched(tiny().model, tiny().tok, one_slot());
  ChatSession chat(sched, *tiny().tok, greedy_no_think());
  chat.messages = msgs;
  EXPECT_EQ(chat.load_state(path), saved);
  user(chat, "and then?");
  std::optional<TurnStats> b = chat.answer(noop, never, err);
  ASSERT_TRUE(b) << err;
  EXPECT_EQ(b->n_cached, saved);
  EXPECT_EQ(chat.messages.back().dump(), first_answer);

  // The same file beside a conversation it did not come from: refused, not silently unused.
  ChatSession edited(sched, *tiny().tok, greedy_no_think());
  edited.messages = msgs;
  edited.messages[0]["content"] = "hello";
  try {
    edited.load_state(path);
    ADD_FAILURE() << "a state was kept for a conversation it does not start";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("do not start this conversation"), std::string::npos) << e.what();
  }

  server::SchedulerOptions f16 = one_slot();
  f16.cache_type = model::CacheType::F16;
  server::Scheduler other(tiny().model, tiny().tok, f16);
  ChatSession chat16(other, *tiny().tok, greedy_no_think());
  try {
    chat16.load_state(path);
    ADD_FAILURE() << "an F32 state was restored into an F16 engine";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cache type"), std::string::npos) << e.what();
  }
}

TEST(ChatSession, AStopBeforeTheFirstTokenAppendsNothing) {
  server::Scheduler sched(tiny().model, tiny().tok, one_slot());
  ChatSession chat(sched, *tiny().tok, greedy_no_think());
  user(chat, "hi");
  std::string err;
  std::optional<TurnStats> st = chat.answer([](const text::ParseDelta&) {}, [] { return true; }, err);
  ASSERT_TRUE(st) << err;
  EXPECT_EQ(st->stop, text::StopReason::Interrupted);
  EXPECT_LE(st->n_generated, 1);  // the request is seen at the scheduler's next step
  if (st->n_generated == 0) { EXPECT_EQ(chat.messages.size(), 1u); }
}

TEST(ChatSession, ErrorsLeaveTheConversationAsItWas) {
  server::Scheduler sched(tiny().model, tiny().tok, one_slot(64));
  {
    ChatSession chat(sched, *tiny().tok, greedy_no_think());
    user(chat, std::string(400, 'a'));
    std::string err;
    EXPECT_FALSE(chat.answer([](const text::ParseDelta&) {}, [] { return false; }, err));
    EXPECT_NE(err.find("does not fit the context"), std::string::npos) << err;
    EXPECT_EQ(chat.messages.size(), 1u);
  }
  {
    ChatOptions co = greedy_no_think();
    co.constraint = Json{{"grammar", "root ::= undefined-rule"}};
    ChatSession chat(sched, *tiny().tok, co);
    EXPECT_ANY_THROW(chat.check_constraint());
    user(chat, "hi");
    std::string err;
    EXPECT_FALSE(chat.answer([](const text::ParseDelta&) {}, [] { return false; }, err));
    EXPECT_FALSE(err.empty());
    EXPECT_EQ(chat.messages.size(), 1u);
  }
}

TEST(ChatSession, AJsonSchemaHoldsTheContent) {
  server::Scheduler sched(tiny().model, tiny().tok, one_slot());
  ChatOptions co = greedy_no_think(200);
  co.constraint =
      Json{{"json_schema",
            {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}}}};
  ChatSession chat(sched, *tiny().tok, co);
  user(chat, "give me a number");
  std::string err;
  std::optional<TurnStats> st = chat.answer([](const text::ParseDelta&) {}, [] { return false; }, err);
  ASSERT_TRUE(st) << err;
  ASSERT_EQ(st->stop, text::StopReason::Eog);
  Json j = Json::parse(chat.messages.back()["content"].get<std::string>());
  EXPECT_TRUE(j["n"].is_number_integer()) << j.dump();
}

TEST(AnswerPrinter, TerminalControlsNeverPassThrough) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb\rc\xc2\x9b"),
            "a\xef\xbf\xbd[2Jb\xef\xbf\xbd"
            "c\xef\xbf\xbd");
  EXPECT_EQ(terminal_safe("tab\tnew\nline"), "tab\tnew\nline");
  char buf[256] = {};
  std::FILE* f = fmemopen(buf, sizeof buf, "w");
  AnswerPrinter p(/*color=*/false, /*sanitize=*/true, f);
  text::ParseDelta d;
  d.reasoning_content = "hmm";
  p.show(d);
  d = {};
  d.content = "ok\x1b]0;title\x07";
  p.show(d);
  p.end();
  std::fclose(f);
  EXPECT_STREQ(buf, "[think] hmm\n[/think]\nok\xef\xbf\xbd]0;title\xef\xbf\xbd\n");
}
