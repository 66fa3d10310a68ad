// cli/chat_loop: the terminal side of `k3 chat`: lines in, answers out, slash commands, Ctrl-C.
// Contract: run_chat_loop() reads lines from fd 0 until the end of input, /exit or a second
// Ctrl-C, and answers each message through the ChatSession, printing the answer (AnswerPrinter)
// and a status line on stderr. On a terminal a line ending in \ continues and """ opens a
// block (cli/chat_input.h); from a script each line is one message. Ctrl-C stops an answer
// (what was generated is kept), and a second one within a second, or at an empty prompt,
// leaves. install_sigint() puts the counting handler in place: call it with SIGINT blocked in
// every other thread (the engine's and the scheduler's), then unblock it in this one.
#pragma once

namespace k3::cli {

class ChatSession;

struct ChatTerminal {
  bool color = false;  // ANSI dim for notes and reasoning
  bool in_tty = false;
  bool out_tty = false;
};

void install_sigint();
void run_chat_loop(ChatSession& chat, const ChatTerminal& term);

}  // namespace k3::cli
