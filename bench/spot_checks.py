#!/usr/bin/env python3
"""Spot checks of a served chat model, as model cards report them. Run by bench/spot_checks.sh against `k3 serve`; prints a markdown table and
one JSON line.

usage: spot_checks.py URL [--n N] [--seed S]

- Arithmetic: N problems drawn by the training data's own generator (train/data_arith,
  a seed the training never used), greedy. Correct when the answer's last integer is the
  result; a natural stop is finish_reason "stop" (not the token limit).
- Tool calls: N requests drawn by the training's tool scenarios (train/data_tools:
  weather, calculator, time, email, currency, dictionary), all seven tools declared. Valid
  when the reply has tool_calls, the first names the scenario's tool, and every call's
  arguments pass the training's own schema check (data_tools.validate_args). Measured twice:
  as the model writes them, and with every tool `strict: true` (constrained decoding).
- Plain questions: 38 fixed questions in the styles of the training's chats (capitals,
  opposites, colours, definitions, sorting, sums, greetings), no tools declared. Answered when
  the reply's content is not empty: a model that calls a tool nobody declared (which the parser
  drops) or never leaves its think channel fails it.
- Reasoning budget: N/2 arithmetic questions with reasoning_budget_tokens 8. Passes when the
  reasoning is cut (at most 8 tokens' worth plus the close), the turn stops naturally and an
  answer arrives.
"""
import argparse
import json
import random
import re
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "train"))
import data_arith as da  # noqa: E402
import data_tools as dt  # noqa: E402


def post(url, body):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def arithmetic(url, rng, n, budget=None):
    correct = natural = answered = 0
    for _ in range(n):
        a, op, b = da.make_problem(rng)
        r = da.apply(a, op, b)
        q = da._ask(rng, da.fmt_expr([a, op, b], rng.choice(["ascii", "math"])))
        body = {"messages": [{"role": "user", "content": q}], "temperature": 0, "max_tokens": 1500}
        if budget is not None:
            body["reasoning_budget_tokens"] = budget
        c = post(url, body)["choices"][0]
        content = c["message"].get("content") or ""
        nums = re.findall(r"-?\d+", content.replace(",", ""))
        correct += bool(nums) and int(nums[-1]) == r
        natural += c["finish_reason"] == "stop"
        answered += bool(content.strip())
    return correct, natural, answered


PLAIN = ([f"What is the capital of {c}?" for c in
          ["France", "Germany", "Japan", "Italy", "Spain", "Canada", "Egypt", "Brazil", "Kenya", "Norway"]]
         + [f"What's the opposite of {w}?" for w in
            ["hot", "up", "big", "early", "open", "light", "happy", "fast", "old", "wet"]]
         + [f"What colour is {t}?" for t in ["grass", "the sky", "snow", "a banana", "coal"]]
         + [f"Define {w}." for w in ["river", "table", "music", "winter", "bread"]]
         + [f"Sort these numbers from smallest to largest: {a}." for a in ["5, 2, 9", "14, 3, 8, 1", "70, 12, 45"]]
         + ["Hello!", "Thanks for your help.", "What is 12 + 30?", "What is 7 times 8?", "Tell me about Python lists."])


def plain_answers(url):
    answered = 0
    for q in PLAIN:
        c = post(url, {"messages": [{"role": "user", "content": q}], "temperature": 0, "max_tokens": 300})["choices"][0]
        answered += bool((c["message"].get("content") or "").strip())
    return answered


def tool_calls(url, rng, n, strict):
    scenarios = [dt.sc_weather, dt.sc_calculator, dt.sc_time, dt.sc_email, dt.sc_currency, dt.sc_lookup]
    tools = [json.loads(json.dumps(dt.TOOLS[k])) for k in dt.TOOL_NAMES]
    if strict:
        for t in tools:
            t["function"]["strict"] = True
    valid = called = right = args_ok = 0
    for _ in range(n):
        sc = rng.choice(scenarios)(rng, None)
        c = post(url, {"messages": [{"role": "user", "content": sc.user}], "tools": tools,
                       "temperature": 0, "max_tokens": 1500})["choices"][0]
        calls = c["message"].get("tool_calls") or []
        called += bool(calls)
        name_ok = bool(calls) and calls[0]["function"]["name"] == sc.tool
        a_ok = bool(calls)
        for call in calls:
            try:
                dt.validate_args(call["function"]["name"], json.loads(call["function"]["arguments"]))
            except (AssertionError, KeyError, ValueError):
                a_ok = False
        right += name_ok
        args_ok += a_ok
        valid += name_ok and a_ok
    return valid, called, right, args_ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=20261204)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    ar = arithmetic(a.url, rng, a.n)
    tc_free = tool_calls(a.url, random.Random(a.seed + 1), a.n, False)
    tc_strict = tool_calls(a.url, random.Random(a.seed + 1), a.n, True)
    nb = max(a.n // 2, 1)
    rb = arithmetic(a.url, random.Random(a.seed + 2), nb, budget=8)
    pa = plain_answers(a.url)
    n = a.n
    print("| check | count | rate |")
    print("|---|---|---|")
    print(f"| arithmetic correct (greedy) | {ar[0]}/{n} | {100 * ar[0] / n:.0f} % |")
    print(f"| arithmetic natural stop | {ar[1]}/{n} | {100 * ar[1] / n:.0f} % |")
    for label, t in (("as written", tc_free), ("`strict: true`", tc_strict)):
        print(f"| tool call valid (right tool, schema-valid arguments), {label} | {t[0]}/{n} | {100 * t[0] / n:.0f} % |")
        print(f"| … a call made / the right tool / all arguments schema-valid, {label} | {t[1]} / {t[2]} / {t[3]} of {n} | |")
    print(f"| plain questions answered (non-empty content, no tools) | {pa}/{len(PLAIN)} | {100 * pa / len(PLAIN):.0f} % |")
    print(f"| reasoning budget 8: answer arrives, natural stop | {min(rb[2], rb[1])}/{nb} | {100 * min(rb[2], rb[1]) / nb:.0f} % |")
    print(f"| reasoning budget 8: answer correct | {rb[0]}/{nb} | {100 * rb[0] / nb:.0f} % |")
    print(json.dumps({"bench": "spot_checks", "n": n, "arith_correct": ar[0], "arith_natural_stop": ar[1],
                      "tool_valid": tc_free[0], "tool_called": tc_free[1], "tool_right": tc_free[2], "tool_args_valid": tc_free[3],
                      "tool_valid_strict": tc_strict[0], "tool_called_strict": tc_strict[1], "tool_right_strict": tc_strict[2],
                      "tool_args_valid_strict": tc_strict[3], "budget_n": nb, "budget_answered_and_stopped": min(rb[2], rb[1]),
                      "budget_correct": rb[0], "plain_n": len(PLAIN), "plain_answered": pa}))


if __name__ == "__main__":
    main()
