// cli/commands: the k3 subcommands. Each takes the arguments after its name (argv[0] is
// "k3 NAME"), returns the process exit code, and may throw k3::Error for user errors
// (main prints "error: ..." and exits 1). Usage errors exit 2.
#pragma once

namespace k3::cli {

using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  CommandFn fn;
};

// The table, in the order `k3 --help` lists them.
const Command* commands();

int cmd_info(int argc, char** argv);
int cmd_dequant(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_eval_logits(int argc, char** argv);
int cmd_embed_image(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_chat_render(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_split(int argc, char** argv);
int cmd_merge(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_imatrix(int argc, char** argv);
int cmd_reap(int argc, char** argv);
int cmd_niah(int argc, char** argv);
int cmd_plan(int argc, char** argv);

}  // namespace k3::cli
