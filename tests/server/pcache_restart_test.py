#!/usr/bin/env python3
"""The prompt cache on disk across real process deaths: `k3 serve --prompt-cache-dir` is killed
with SIGKILL between two turns of a conversation and started again; the second turn resumes
from the state file and answers exactly what a server that never died answers (greedy with
an F32 cache, seeded with an F16 one). The same under `mpirun -np 2` where mpirun is installed:
rank 0 reads the file and sends the state to rank 1 (docs/distributed.md). A second server on
the same directory is refused, and `k3 chat` with the directory resumes the last session.

usage: pcache_restart_test.py K3_BINARY
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

K3 = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader", "-np", "2"]


class Server:
    def __init__(self, *args, launch=()):
        self.launch = launch
        self.p = subprocess.Popen([*launch, K3, "serve", "--port", "0", "-t", "1", "--parallel", "1", *args],
                                  stderr=subprocess.PIPE, text=True)
        self.log = ""
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.p.stderr.readline()
            if not line:
                break
            self.log += line
            m = re.search(r"on http://[\d.]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                return
        raise RuntimeError("k3 serve did not start:\n" + self.log)

    def post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())

    def metric(self, name):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=30) as r:
            m = re.search(rf"^{name} (\S+)$", r.read().decode(), re.M)
            return float(m.group(1)) if m else -1

    def kill(self):
        # mpirun killed outright would leave its ranks behind (and the directory's lock with
        # them): it is asked to end the job instead.
        self.p.send_signal(signal.SIGTERM if self.launch else signal.SIGKILL)
        self.p.wait(timeout=60)


def turns(seeded):
    t1 = {"messages": [{"role": "user", "content": "Tell me about the lighthouse."}], "max_tokens": 12,
          "user": "alice"}
    t1.update({"temperature": 0.9, "seed": 5} if seeded else {"temperature": 0})
    t2 = json.loads(json.dumps(t1))
    t2["messages"] += [{"role": "assistant", "content": "It stands on a rock."}, {"role": "user", "content": "Who keeps it?"}]
    return t1, t2


def restart_case(tmp, seeded, cache_type, launch=()):
    d = os.path.join(tmp, f"cache-{cache_type}-{seeded}-{len(launch)}")
    flags = ["--cache-type", cache_type]
    t1, t2 = turns(seeded)
    s = Server("--prompt-cache-dir", d, *flags, launch=launch)
    s.post("/v1/chat/completions", t1)
    for _ in range(250):  # the writer thread; SIGKILL must not find it half done for this test
        if s.metric("k3_prompt_cache_disk_writes_total") >= 1:
            break
        time.sleep(0.02)
    s.kill()
    s = Server("--prompt-cache-dir", d, *flags, launch=launch)
    b = s.post("/v1/chat/completions", t2)
    check(b["usage"]["prompt_tokens_details"]["cached_tokens"] > 10, f"{cache_type}: turn 2 did not resume: {b['usage']}")
    check(s.metric("k3_prompt_cache_disk_hits_total") == 1, f"{cache_type}: no disk hit")
    s.kill()
    ref = Server(*flags)  # never died, snapshot in RAM: the same split of the prompt
    ref.post("/v1/chat/completions", t1)
    c = ref.post("/v1/chat/completions", t2)
    ref.kill()
    check(b["choices"] == c["choices"], f"{cache_type}: the answer after a restart differs: {b['choices']} vs {c['choices']}")
    print(f"restart {cache_type} {'seeded' if seeded else 'greedy'}{' mpirun -np 2' if launch else ''}: cached {b['usage']['prompt_tokens_details']['cached_tokens']}, same answer")


def two_servers(tmp):
    d = os.path.join(tmp, "shared")
    s = Server("--prompt-cache-dir", d)
    p = subprocess.run([K3, "serve", "--port", "0", "--prompt-cache-dir", d], capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "another k3 process" in p.stderr, f"a second server was not refused: {p.returncode} {p.stderr[-300:]}")
    s.kill()


def chat_resumes(tmp):
    d = os.path.join(tmp, "chat")
    args = [K3, "chat", "--temp", "0", "-n", "16", "-t", "1", "--prompt-cache-dir", d]
    subprocess.run(args, input="Tell me about the sea.\n", capture_output=True, text=True, timeout=120, check=True)
    p = subprocess.run(args, input="And the mountains?\n", capture_output=True, text=True, timeout=120, check=True)
    check("[resumed the last chat" in p.stderr, "chat did not resume: " + p.stderr[-400:])
    m = re.search(r"\[prompt \d+ tokens \((\d+) cached\)", p.stderr)
    check(m and int(m.group(1)) > 10, "chat's resumed turn was prefilled: " + p.stderr[-400:])


tmp = tempfile.mkdtemp(prefix="k3-pcache-e2e-")
try:
    restart_case(tmp, False, "f32")
    restart_case(tmp, True, "f16")
    if shutil.which("mpirun"):
        restart_case(tmp, False, "f16", MPI)
    two_servers(tmp)
    chat_resumes(tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    sys.exit(1)
print("prompt cache restart: ok")
