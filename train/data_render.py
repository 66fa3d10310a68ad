"""Chat-episode plumbing: the sample type, the completion writer and the k3 renderer pool.

The prompt of every chat document (everything up to and including the generation prompt)
comes from the real renderer, ``k3 chat-render``, so the training data sees exactly the
bytes the server will feed the model.  Only the final assistant turn, which the model must
learn to produce, is written here.  ``completion()`` mirrors how the renderer writes an
assistant turn in history; ``--check`` proves that byte for byte by rendering the whole
conversation with the final turn in history and comparing.
"""

import concurrent.futures
import json
import subprocess
import sys
from dataclasses import dataclass, field

OPEN, CLOSE, SEP, EOM = "<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"


def esc_attr(value):
    # The template escapes exactly these two characters in attribute values, & first.
    return str(value).replace("&", "&amp;").replace('"', "&quot;")


def open_tag(name, **attrs):
    return OPEN + name + "".join(f' {k}="{esc_attr(v)}"' for k, v in attrs.items()) + SEP


def close_tag(name):
    return CLOSE + name + SEP


def xtml_type(value):
    # bool before number: in Python, True is an int.
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


def xtml_value(value):
    if isinstance(value, str):
        return value
    # The renderer writes non-strings with Python's json.dumps defaults (ensure_ascii off).
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Turn:
    """An assistant turn: think trace, visible content and tool calls [(name, args)]."""
    reasoning: str
    content: str
    calls: list = field(default_factory=list)

    def message(self, call_ids=None):
        """The OpenAI message for this turn, as it appears in a conversation's history."""
        msg = {"role": "assistant", "content": self.content}
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        if self.calls:
            ids = call_ids or [f"call_{i + 1}" for i in range(len(self.calls))]
            msg["tool_calls"] = [
                {"id": cid, "type": "function",
                 "function": {"name": name,
                              "arguments": json.dumps(args, ensure_ascii=False)}}
                for cid, (name, args) in zip(ids, self.calls)]
        return msg


def completion(turn, thinking):
    """What the model generates after the generation prompt, up to <|end_of_msg|>.

    The generation prompt already opened the assistant message and the think channel
    (thinking on) or the response channel (thinking off).
    """
    out = []
    if thinking:
        out.append(turn.reasoning + close_tag("think") + open_tag("response"))
    out.append(turn.content + close_tag("response"))
    if turn.calls:
        out.append(open_tag("tools"))
        for i, (name, args) in enumerate(turn.calls, 1):
            out.append(OPEN + "call" + f' tool="{esc_attr(name)}" index="{i}"' + SEP)
            for key, value in args.items():
                out.append(OPEN + "argument" +
                           f' key="{esc_attr(key)}" type="{xtml_type(value)}"' + SEP)
                out.append(xtml_value(value) + close_tag("argument"))
            out.append(close_tag("call"))
        out.append(close_tag("tools"))
    out.append(close_tag("message") + EOM)
    return "".join(out)


@dataclass
class Sample:
    """One chat document: a conversation whose final assistant turn is the completion."""
    kind: str
    messages: list
    thinking: bool
    final: Turn
    tools: list = None
    effort: str = None          # None: the template default (max); else low/high/max
    meta: dict = field(default_factory=dict)

    def request(self, with_final=False):
        req = {"messages": list(self.messages)}
        if with_final:
            req["messages"].append(self.final.message(self.meta.get("final_call_ids")))
        if self.tools:
            req["tools"] = self.tools
        return req

    def flags(self):
        if not self.thinking:
            return ["--no-think"]
        return ["--reasoning-effort", self.effort] if self.effort else []

    def completion(self):
        return completion(self.final, self.thinking)


# A user message that no generated text contains; it separates conversations in a batch.
SPLIT_TEXT = "\u27e6k3-make-data: next conversation\u27e7"


class Renderer:
    """Runs ``k3 chat-render`` for many requests, two processes at a time (2 cores).

    Starting k3 costs ~25 ms of CPU, far more than rendering one short conversation, so
    conversations with the same flags and tools are rendered in batches: one request holds
    them one after another, separated by a sentinel user message, and the output is cut
    back apart.  This relies on K3's template writing each message independently of the
    others (the tool declaration and the effort note come first, the generation prompt
    last, and nothing of a message depends on earlier conversations).  That assumption is
    checked, not trusted: the first conversation of every flag set, of every 8th new tool
    list, and every 40th one are also rendered alone and compared byte for byte; on any difference batching is switched
    off and everything is rendered one conversation per process.  Either way the bytes are
    exactly what the renderer gives for each conversation alone.  Results come back in
    input order, so the output never depends on scheduling.
    """

    def __init__(self, k3_path, workers=2, batching=True, max_batch=48,
                 max_batch_bytes=400_000):
        self.k3 = k3_path
        self.workers = workers
        self.batching = batching
        self.max_batch = max_batch
        self.max_batch_bytes = max_batch_bytes
        self.calls = 0
        self.verified = 0
        self._probes = {}

    def _run(self, job):
        flags, req = job
        payload = json.dumps(req, ensure_ascii=False)
        proc = subprocess.run([self.k3, "chat-render", "-"] + list(flags),
                              input=payload.encode("utf-8"), capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"k3 chat-render failed ({proc.returncode}): "
                               f"{proc.stderr.decode('utf-8', 'replace').strip()}\n"
                               f"request: {payload[:2000]}")
        return proc.stdout.decode("utf-8")

    def _map(self, jobs):
        self.calls += len(jobs)
        if not jobs:
            return []
        with concurrent.futures.ThreadPoolExecutor(self.workers) as ex:
            return list(ex.map(self._run, jobs))

    def render_many(self, jobs):
        """jobs: [(flags list, request dict)] -> [prompt str], each as if rendered alone."""
        if not self.batching:
            return self._map(jobs)
        try:
            return self._render_batched(jobs)
        except _BatchMismatch as e:
            print(f"make_data: batched rendering disagrees with single renders ({e}); "
                  f"rendering one conversation per process from now on", file=sys.stderr)
            self.batching = False
            return self._map(jobs)

    def _probe(self, keys):
        """(head, rendered sentinel, generation prompt) for each (flags, tools) key, cached."""
        todo = sorted(k for k in set(keys) if k not in self._probes)
        reqs = []
        for flags, tools in todo:
            req = {"messages": [{"role": "user", "content": SPLIT_TEXT}]}
            if tools != "null":
                req["tools"] = json.loads(tools)
            reqs.append((list(flags), req))
        for k, probe in zip(todo, self._map(reqs)):
            pos = probe.index(SPLIT_TEXT)
            head_end = probe.rfind(OPEN, 0, pos)      # start of the sentinel message
            sent_end = probe.index(EOM, pos) + len(EOM)
            self._probes[k] = (probe[:head_end], probe[head_end:sent_end], probe[sent_end:])
        return [self._probes[k] for k in keys]

    def _render_batched(self, jobs):
        # Batches are formed per flag set.  The tool declaration is part of the head, so a
        # batch is rendered without tools and each conversation gets the head of its own
        # tool list from a (cached) probe.
        groups = {}
        tool_keys = []
        for i, (flags, req) in enumerate(jobs):
            assert set(req) <= {"messages", "tools"}, sorted(req)
            tool_keys.append((tuple(flags), json.dumps(req.get("tools"), ensure_ascii=False)))
            groups.setdefault(tuple(flags), []).append(i)
        flag_sets = sorted(groups)
        heads = dict(zip(tool_keys, self._probe(tool_keys)))
        bare = dict(zip(flag_sets, self._probe([(f, "null") for f in flag_sets])))
        batches = []
        for flags in flag_sets:
            cur, size = [], 0
            for i in groups[flags]:
                n = len(json.dumps(jobs[i][1]["messages"], ensure_ascii=False))
                if cur and (len(cur) >= self.max_batch or size + n > self.max_batch_bytes):
                    batches.append((flags, cur))
                    cur, size = [], 0
                cur.append(i)
                size += n
            if cur:
                batches.append((flags, cur))
        reqs = []
        for flags, idx in batches:
            msgs = []
            for j, i in enumerate(idx):
                if j:
                    msgs.append({"role": "user", "content": SPLIT_TEXT})
                msgs.extend(jobs[i][1]["messages"])
            reqs.append((list(flags), {"messages": msgs}))
        outs = self._map(reqs)
        result = [None] * len(jobs)
        for (flags, idx), out in zip(batches, outs):
            head, sentinel, gen = bare[flags]
            if not (out.startswith(head) and out.endswith(gen)):
                raise _BatchMismatch("head or generation prompt moved")
            parts = out[len(head):len(out) - len(gen)].split(sentinel)
            if len(parts) != len(idx):
                raise _BatchMismatch("conversation count")
            for i, part in zip(idx, parts):
                t_head, _, t_gen = heads[tool_keys[i]]
                if t_gen != gen:
                    raise _BatchMismatch("generation prompt depends on tools")
                result[i] = t_head + part + gen
        # Spot-check against single renders: the first of each flag set, the first of each
        # tool list in this call, and every 40th.
        first_tools = {}
        for i, k in enumerate(tool_keys):
            first_tools.setdefault(k, i)
        check = sorted({groups[f][0] for f in flag_sets} | set(range(0, len(jobs), 40))
                       | set(list(first_tools.values())[::8]))
        singles = self._map([jobs[i] for i in check])
        for i, single in zip(check, singles):
            if single != result[i]:
                raise _BatchMismatch(f"job {i}")
        self.verified += len(check)
        return result

    def render_samples(self, samples):
        return self.render_many([(s.flags(), s.request()) for s in samples])

    def render_history(self, samples):
        """Render each conversation alone with its final turn in history, no generation
        prompt (used by --check to prove the completion format)."""
        return self._map([(s.flags() + ["--no-generation-prompt"], s.request(with_final=True))
                          for s in samples])


class _BatchMismatch(Exception):
    pass
