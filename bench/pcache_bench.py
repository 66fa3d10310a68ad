#!/usr/bin/env python3
"""The prompt cache on disk, measured (docs/serve.md, "Prompt cache on disk").

usage: pcache_bench.py K3_BINARY MODEL.gguf [TOKENS=8192] [THREADS=2] [ABBA_CYCLES=2]

Two servers over MODEL: A with --prompt-cache-dir, B without (its --slot-save-path is A's
directory, so B starts from A's state file instead of a second prefill). A prefills a
conversation of ~TOKENS tokens once (the re-prefill time), writes its state (the write cost,
the bytes per token), and B restores it by the slot API (the resume time, page cache dropped
for the file first). Then both run the same turns of 64 generated tokens in ABBA order, A
writing each turn's new snapshot while it generates (tg with the disk tier on vs off). Last, A
is killed (SIGKILL) and restarted, and the next turn resumes from disk: its whole latency
against the prefill. Prints one JSON object.
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import atexit

K3, MODEL = sys.argv[1], sys.argv[2]
TOKENS = int(sys.argv[3]) if len(sys.argv) > 3 else 8192
THREADS = sys.argv[4] if len(sys.argv) > 4 else "2"
CYCLES = int(sys.argv[5]) if len(sys.argv) > 5 else 2
CTX = str(TOKENS + 1024 + 256 * CYCLES)


class Server:
    def __init__(self, *args):
        self.log = open(tempfile.mktemp(prefix="k3-pcache-bench-", suffix=".log"), "w+")
        self.p = None
        atexit.register(self.kill)
        self.p = subprocess.Popen([K3, "serve", "-m", MODEL, "--port", "0", "-t", THREADS, "-c", CTX,
                                   "--parallel", "1", "--no-webui", *args], stderr=self.log, text=True)
        for _ in range(600):
            self.log.seek(0)
            m = re.search(r"on http://[\d.]+:(\d+)", self.log.read())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.5)
        raise RuntimeError("server did not start")

    def post(self, path, body, timeout=3600):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        t0 = time.time()
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                out = json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{path}: {e.code} {e.read()[:300]}")
        out["_wall_s"] = time.time() - t0
        return out

    def metric(self, name):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=60) as r:
            m = re.search(rf"^{name} (\S+)$", r.read().decode(), re.M)
            return float(m.group(1)) if m else 0.0

    def writes_done(self, n):
        for _ in range(6000):
            if self.metric("k3_prompt_cache_disk_writes_total") + self.metric("k3_prompt_cache_disk_write_errors_total") >= n:
                return
            time.sleep(0.05)

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait()


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def long_text(a):
    words = ("keeper lighthouse evening ship storm harbour rope lantern tide gull cliff north wind "
             "compass chart anchor fog bell island current stone salt").split()
    out, i = [], 0
    while True:
        chunk = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(40)) + ". "
        out.append(chunk)
        i += 1
        if i % 4 == 0:
            n = len(a.post("/tokenize", {"content": "".join(out)})["tokens"])
            if n >= TOKENS - 160:
                return "".join(out), n


def chat(history, msg, max_tokens):
    return {"messages": history + [{"role": "user", "content": msg}], "max_tokens": max_tokens, "temperature": 0}


res = {"model": os.path.basename(MODEL), "threads": THREADS}
d = tempfile.mkdtemp(prefix="k3-pcache-dir-")
A = Server("--prompt-cache-dir", d)
text, n_text = long_text(A)
base = [{"role": "user", "content": text}]
r0 = A.post("/v1/chat/completions", {"messages": base, "max_tokens": 1, "temperature": 0})
res["prefill_tokens"] = r0["usage"]["prompt_tokens"]
res["prefill_s"] = r0["timings"]["prompt_ms"] / 1000
A.writes_done(1)
files = [f for f in os.listdir(d) if f.endswith(".k3state")]
res["state_file_bytes"] = os.path.getsize(os.path.join(d, files[0]))
res["write_s"] = A.metric("k3_prompt_cache_disk_write_seconds_total")
res["state_bytes_per_token"] = res["state_file_bytes"] / res["prefill_tokens"]

B = Server("--slot-save-path", d)
drop_cache(os.path.join(d, files[0]))
rb = B.post("/slots/0?action=restore", {"filename": files[0]})
res["slot_restore_cold_ms"] = rb["timings"]["restore_ms"]
res["slot_restore_tokens"] = rb["n_restored"]

hist = {id(A): base + [{"role": "assistant", "content": "Noted."}], id(B): base + [{"role": "assistant", "content": "Noted."}]}
tg = {"on": [], "off": []}
order = [A, B, B, A] * CYCLES
writes = 1
for i, srv in enumerate(order):
    turn = i // 2 + 1
    msg = f"Question {turn}: what did the keeper see on evening {turn}?"
    r = srv.post("/v1/chat/completions", chat(hist[id(srv)], msg, 64))
    res.setdefault("turn_prompt_tokens_decoded", []).append(r["usage"]["prompt_tokens"] - r["usage"]["prompt_tokens_details"]["cached_tokens"])
    res.setdefault("turn_prompt_s", []).append(r["timings"]["prompt_ms"] / 1000)
    tg["on" if srv is A else "off"].append(r["timings"]["predicted_per_second"])
    res.setdefault("tg_tokens", []).append(r["usage"]["completion_tokens"])
    hist[id(srv)] += [{"role": "user", "content": msg}, {"role": "assistant", "content": f"Answer {turn}."}]
    if srv is A:
        writes += 1
        A.writes_done(writes)  # B must not share the CPU with A's writer
res["tg64_on"] = tg["on"]
res["tg64_off"] = tg["off"]
for k in ("on", "off"):
    res[f"tg64_{k}_mean"] = statistics.mean(tg[k])
    res[f"tg64_{k}_median"] = statistics.median(tg[k])
    res[f"tg64_{k}_stdev"] = statistics.stdev(tg[k])
res["writes"] = A.metric("k3_prompt_cache_disk_writes_total")
res["write_s_per_turn"] = A.metric("k3_prompt_cache_disk_write_seconds_total") / res["writes"]
res["bytes_per_write"] = A.metric("k3_prompt_cache_disk_bytes_written_total") / res["writes"]
B.kill()

A.kill()
for f in os.listdir(d):
    if f.endswith(".k3state"):
        drop_cache(os.path.join(d, f))
A = Server("--prompt-cache-dir", d)
msg = "Question 9: and the last evening?"
r = A.post("/v1/chat/completions", chat(hist[id(order[0])], msg, 1))
res["resume_turn_wall_s"] = r["_wall_s"]
res["resume_prompt_tokens"] = r["usage"]["prompt_tokens"]
res["resume_cached_tokens"] = r["usage"]["prompt_tokens_details"]["cached_tokens"]
res["resume_restore_s"] = A.metric("k3_prompt_cache_disk_restore_seconds_total")
res["resume_prompt_s"] = r["timings"]["prompt_ms"] / 1000
A.kill()
subprocess.run(["rm", "-rf", d])
print(json.dumps(res, indent=1))
