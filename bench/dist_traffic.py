#!/usr/bin/env python3
"""Traffic and time per decode token of a distributed run on this machine, beside the cost
model's prediction (docs/distributed.md, "Measured here").

For N in --ranks (default 1,2,3): `mpirun -np N k3 eval-logits --mode step` over T tokens
(one decode call per token, as generation makes them) with --dist-stats, then `k3 plan
--hosts N --json` for the same model. Prints a markdown table per model and, with --json, the
numbers. Rank 0's traffic: exchanges per token (all-gathers, plus rank 0's two requests),
bytes it receives per token, seconds inside the exchanges per token; and the wall time per
token of the whole step loop.

    bench/dist_traffic.py [--k3 build/bin/k3] [--tokens 64] [--ranks 1,2,3] [-t 1] MODEL...
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

STATS = re.compile(r"k3 dist: (\d+) ranks \| rank 0: (\d+) collectives, ([\d.]+) MB out, ([\d.]+) MB in, ([\d.]+) s")
SPEED = re.compile(r"mode step, ([\d.]+) s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--k3", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "k3"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--ranks", default="1,2,3")
    ap.add_argument("-t", "--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("dist_traffic: mpirun not found (scripts/setup.sh installs openmpi-bin)")
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
    ranks = [int(x) for x in a.ranks.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models:
            info = json.loads(subprocess.run([a.k3, "info", "-m", model, "--json"], capture_output=True, text=True,
                                             check=True).stdout)
            n_vocab = info["hparams"].get("vocab_size") or 256
            toks = ",".join(str((i * 7919 + 13) % min(int(n_vocab), 250)) for i in range(a.tokens))
            plan = json.loads(subprocess.run([a.k3, "plan", "-m", model, "--hosts", a.ranks, "--json", "--mem-bw", "30"],
                                             capture_output=True, text=True, check=True).stdout)
            for n, p in zip(ranks, plan):
                cmd = [a.k3, "eval-logits", "-m", model, "--tokens", toks, "--mode", "step", "-t", str(a.threads),
                       "-o", os.path.join(tmp, "l.f32")]
                if n > 1:
                    cmd = mpi + ["-np", str(n)] + cmd + ["--dist-stats"]
                r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
                if r.returncode != 0:
                    sys.exit(f"dist_traffic: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
                secs = float(SPEED.search(r.stderr).group(1))
                row = {"model": os.path.basename(model), "ranks": n, "tokens": a.tokens,
                       "ms_per_token": 1e3 * secs / a.tokens,
                       "predicted_exchanges": p["decode"]["collectives"], "predicted_bytes_in": p["decode"]["net_bytes"]}
                m = STATS.search(r.stderr)
                if m:
                    row.update(exchanges=int(m.group(2)) / a.tokens, bytes_in=float(m.group(4)) * 1e6 / a.tokens,
                               us_in_exchanges=float(m.group(5)) * 1e6 / a.tokens)
                results.append(row)
    if a.json:
        print(json.dumps(results, indent=1))
        return
    print("| model | ranks | ms/token | exchanges/token (model) | KB in/token (model) | µs in exchanges/token |")
    print("|---|---|---|---|---|---|")
    for r in results:
        if r["ranks"] == 1:
            print(f"| {r['model']} | 1 | {r['ms_per_token']:.2f} | – | – | – |")
        else:
            print(f"| {r['model']} | {r['ranks']} | {r['ms_per_token']:.2f} | {r['exchanges']:.0f} ({r['predicted_exchanges']}) "
                  f"| {r['bytes_in'] / 1e3:.1f} ({r['predicted_bytes_in'] / 1e3:.1f}) | {r['us_in_exchanges']:.0f} |")


if __name__ == "__main__":
    main()
