#!/usr/bin/env python3
"""Terminal test of `k3 chat`: drives it in a pseudo-terminal (Python's stdlib pty), as a user
at a keyboard would, and once through a pipe, as a script would.

usage: chat_pty_test.py K3_BINARY MODEL.gguf

The golden model answers with random tokens, so the checks are on structure (prompt, status
line, notes, saved JSON), never on words; --temp 0 makes answers repeatable.
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

K3, MODEL = sys.argv[1], sys.argv[2]
BASE = ["chat", "-m", MODEL, "-t", "1"]
ANSI = re.compile(rb"\x1b\[[0-9;]*m")
STATUS = re.compile(r"\[prompt \d+ tokens \(\d+ cached\), [\d.]+ tok/s \| answer \d+ tokens, [\d.]+ tok/s \| context \d+/\d+ \| stop: \w+\]")
failures = []


class Session:
    """One `k3 chat` in a pty: send keys, wait for text."""

    def __init__(self, *args, n="24"):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = "xterm"
            os.environ.pop("NO_COLOR", None)
            os.execv(K3, [K3] + BASE + ["-n", n] + list(args))
        self.raw = b""
        self.pos = 0  # expect() searches from here

    def text(self, start=0):
        return ANSI.sub(b"", self.raw[start:]).replace(b"\r", b"").decode("utf-8", "replace")

    def _pump(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        self.raw += data
        return True

    def expect(self, pattern, timeout=30):
        """Waits until `pattern` (a regex over the ANSI-free text) appears after the last match."""
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        while True:
            t = self.text()
            m = rx.search(t, self.pos)
            if m:
                self.pos = m.end()
                return m
            if time.time() > deadline or not self._pump(min(0.2, max(0.0, deadline - time.time()))):
                t = self.text()
                m = rx.search(t, self.pos)
                if m:
                    self.pos = m.end()
                    return m
                raise AssertionError(f"timed out waiting for {pattern!r}; output after the last match:\n{t[self.pos:][-2000:]}")

    def send(self, s):
        os.write(self.fd, s.encode() if isinstance(s, str) else s)

    def line(self, s):
        self.send(s + "\r")

    def turn(self, msg):
        """Sends a message and waits for its status line; returns the answer's text."""
        start = self.pos
        self.line(msg)
        self.expect(STATUS.pattern)
        return self.text()[start:self.pos]

    def wait(self, timeout=20):
        """Waits for the process to end; returns its exit code."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self._pump(0.1)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self._pump(0.05):
                    if not select.select([self.fd], [], [], 0)[0]:
                        break
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError("k3 chat did not exit")


def check(name, fn):
    t0 = time.time()
    try:
        fn()
        print(f"ok   {name} ({time.time() - t0:.1f} s)")
    except Exception as e:  # report every case, then fail at the end
        failures.append(name)
        print(f"FAIL {name}: {e}")


tmp = tempfile.mkdtemp(prefix="k3-chat-test-")


def path(name):
    return os.path.join(tmp, name)


def load(name):
    with open(path(name), "rb") as f:
        return json.loads(f.read())


def two_turns():
    s = Session("--temp", "0", "--seed", "3", "--system", "be brief")
    s.expect(r"k3 chat: .*\| context 4096 \| seed 3")
    s.expect(r"> ")
    a1 = s.turn("hello there")
    assert "[think]" in a1 or a1.strip(), "the first answer produced no output"
    assert b"\x1b[2m[think] " in s.raw, "the reasoning is not dimmed on a colour terminal"
    assert b"\x1b[2m[prompt " in s.raw, "the status line is not dimmed on a colour terminal"
    s.expect(r"> ")
    s.turn("and a second question")
    s.expect(r"> ")
    m = list(STATUS.finditer(s.text()))
    assert len(m) == 2, f"{len(m)} status lines"
    cached = int(re.search(r"\((\d+) cached\)", m[1].group(0)).group(1))
    assert cached > 0, "the second turn reused nothing of the first"
    s.line(f"/save {path('two.json')}")
    s.expect(r"\[saved 5 messages")
    s.line("/exit")
    assert s.wait() == 0
    msgs = load("two.json")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"], msgs
    assert msgs[1]["content"] == "hello there" and msgs[3]["content"] == "and a second question"


def deterministic():
    s = Session("--temp", "0", "--seed", "3", "--system", "be brief")
    s.expect(r"> ")
    s.turn("hello there")
    s.turn("and a second question")
    s.line(f"/save {path('two-again.json')}")
    s.expect(r"\[saved 5 messages")
    s.send(b"\x04")  # Ctrl-D
    assert s.wait() == 0
    assert load("two.json") == load("two-again.json"), "--temp 0 --seed gave different answers"


def reset():
    s = Session("--system", "keep me", "--seed", "1")
    s.expect(r"> ")
    s.turn("one")
    s.line("/reset")
    s.expect(r"\[conversation cleared\]")
    s.line(f"/save {path('reset.json')}")
    s.expect(r"\[saved 1 messages")
    s.turn("two")
    s.line(f"/save {path('reset2.json')}")
    s.expect(r"\[saved 3 messages")
    s.line("/exit")
    assert s.wait() == 0
    assert load("reset.json") == [{"role": "system", "content": "keep me"}]
    assert [m["role"] for m in load("reset2.json")] == ["system", "user", "assistant"]


def ctrl_c():
    # A long answer (no end of turn, no token limit) that only Ctrl-C stops.
    s = Session("--temp", "0", "--seed", "1", "--ignore-eos", "-c", "16384", n="-1")
    s.expect(r"> ")
    s.line("talk for a long time")
    s.expect(r"\[think\]", timeout=10)  # the answer is streaming
    time.sleep(0.3)
    s.send(b"\x03")
    s.expect(r"\[answer stopped by Ctrl-C", timeout=10)
    m = s.expect(STATUS.pattern, timeout=10)
    assert "stop: interrupted" in m.group(0), m.group(0)
    n = int(re.search(r"answer (\d+) tokens", m.group(0)).group(1))
    assert 0 < n < 16000, n
    s.expect(r"> ")
    # The session goes on, and the partial answer is in the history.
    s.line(f"/save {path('ctrlc.json')}")
    s.expect(r"\[saved 2 messages")
    msgs = load("ctrlc.json")
    assert msgs[1]["role"] == "assistant" and (msgs[1]["content"] or msgs[1].get("reasoning_content")), msgs
    # Ctrl-C at an empty prompt leaves, with exit status 0.
    time.sleep(1.2)
    s.send(b"\x03")
    assert s.wait() == 0


def ctrl_c_twice():
    s = Session("--temp", "0", "--ignore-eos", "-c", "16384", n="-1")
    s.expect(r"> ")
    s.line("talk for a long time")
    s.expect(r"\[think\]", timeout=10)
    time.sleep(0.3)
    s.send(b"\x03")
    time.sleep(0.2)
    s.send(b"\x03")
    assert s.wait() == 0
    assert "[answer stopped by Ctrl-C" in s.text()


def save_load():
    s = Session("--temp", "0", "--seed", "5")
    s.expect(r"> ")
    s.turn("first")
    s.turn("second")
    s.line(f"/save {path('s1.json')}")
    s.expect(r"\[saved 4 messages")
    s.line("/exit")
    assert s.wait() == 0
    s = Session("--temp", "0", "--seed", "5")
    s.expect(r"> ")
    s.line(f"/load {path('s1.json')}")
    s.expect(r"\[loaded 4 messages")
    s.line(f"/save {path('s2.json')}")
    s.expect(r"\[saved 4 messages")
    s.turn("third")  # the loaded conversation goes on
    s.line(f"/save {path('s3.json')}")
    s.expect(r"\[saved 6 messages")
    s.line("/exit")
    assert s.wait() == 0
    with open(path("s1.json"), "rb") as a, open(path("s2.json"), "rb") as b:
        assert a.read() == b.read(), "/load then /save does not reproduce the file"
    assert load("s3.json")[:4] == load("s1.json")
    assert not [f for f in os.listdir(tmp) if ".tmp." in f], "a temporary file was left behind"


def regen():
    s = Session("--seed", "11", "--temp", "1.5")
    s.expect(r"> ")
    s.line("/regen")
    s.expect(r"error: /regen: there is no message to answer yet")
    s.turn("question")
    s.line(f"/save {path('r1.json')}")
    s.expect(r"\[saved 2 messages")
    s.line("/regen")
    s.expect(STATUS.pattern)
    s.line(f"/save {path('r2.json')}")
    s.expect(r"\[saved 2 messages")
    s.line("/exit")
    assert s.wait() == 0
    r1, r2 = load("r1.json"), load("r2.json")
    assert r1[0] == r2[0] and r2[1]["role"] == "assistant"
    assert r1[1] != r2[1], "/regen gave the same answer (it should draw a new one)"


def bad_load():
    with open(path("bad.json"), "w") as f:
        f.write('[{"role": "user", "content": "x"')
    with open(path("badrole.json"), "w") as f:
        json.dump([{"role": "wizard", "content": "x"}], f)
    with open(path("notlist.json"), "w") as f:
        json.dump({"hello": 1}, f)
    s = Session("--temp", "0")
    s.expect(r"> ")
    s.turn("keep this")
    for name in ["bad.json", "badrole.json", "notlist.json", "missing.json"]:
        s.line(f"/load {path(name)}")
        s.expect(r"error: .*\(the conversation is unchanged\)")
    s.line("/foo")
    s.expect(r"error: unknown command /foo")
    s.line("/save")
    s.expect(r"error: /save needs a file name")
    s.turn("still here?")
    s.line(f"/save {path('after-bad.json')}")
    s.expect(r"\[saved 4 messages")
    s.line("/exit")
    assert s.wait() == 0
    assert [m["content"] for m in load("after-bad.json") if m["role"] == "user"] == ["keep this", "still here?"]


def multi_line():
    s = Session("--temp", "0", "--no-color")
    s.expect(r"> ")
    s.line("first line \\")
    s.expect(r"\.\.\. ")
    s.line("second line")
    s.expect(STATUS.pattern)
    s.line('"""')
    s.line("a block")
    s.line("/not a command")
    s.line('"""')
    s.expect(STATUS.pattern)
    s.line("//slash message")
    s.expect(STATUS.pattern)
    s.line(f"/save {path('ml.json')}")
    s.expect(r"\[saved 6 messages")
    s.line("/exit")
    assert s.wait() == 0
    assert b"\x1b[" not in s.raw, "--no-color still wrote ANSI sequences"
    users = [m["content"] for m in load("ml.json") if m["role"] == "user"]
    assert users == ["first line \nsecond line", "a block\n/not a command", "/slash message"], users


def pipe():
    r = subprocess.run([K3] + BASE + ["-n", "24", "--temp", "0", "--seed", "2"], input=b"one\ntwo\n/help\nthree\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, (r.returncode, err)
    assert len(STATUS.findall(err)) == 3, err
    assert "/reset" in err, "/help did not list the commands"
    assert "> " not in out and "\x1b[2m" not in out, "prompt or colour in non-terminal output"
    r2 = subprocess.run([K3] + BASE + ["-n", "24", "--temp", "0", "--seed", "2"], input=b"one\ntwo\n/help\nthree\n",
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r2.stdout == r.stdout, "the same script gave different answers"


def pipe_ctrl_c():
    # A script's next line is answered at once, so a second SIGINT within a second must
    # leave rather than stop the next answer.
    p = subprocess.Popen([K3] + BASE + ["-n", "-1", "--temp", "0", "--ignore-eos", "-c", "16384"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stdin.write(b"long one\nlong two\nlong three\n")
    p.stdin.flush()
    time.sleep(0.6)
    p.send_signal(signal.SIGINT)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    t0 = time.time()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("a second SIGINT within a second did not end the session")
    err = p.stderr.read().decode("utf-8", "replace")
    p.stdin.close()
    p.stderr.close()
    assert p.returncode == 0, (p.returncode, err)
    # On a loaded machine the first SIGINT can land while the prompt is still being read.
    assert "[answer stopped by Ctrl-C" in err or "[stopped before the answer began]" in err, err
    assert time.time() - t0 < 5


def live_reuse():
    # A one-token answer without thinking re-renders token for token, so the next turn reuses
    # the whole previous prompt (sequence 0), not only its history snapshot.
    for extra in ([], ["--no-prompt-cache"]):
        r = subprocess.run([K3] + BASE + ["-n", "1", "--temp", "0", "--no-think"] + extra,
                           input=b"hi\nagain\nthird\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert r.returncode == 0, r.stderr
        st = re.findall(r"\[prompt (\d+) tokens \((\d+) cached\)", r.stderr.decode())
        assert len(st) == 3, r.stderr
        assert int(st[1][1]) == int(st[0][0]) and int(st[2][1]) == int(st[1][0]), (extra, st)


def json_schema():
    # --json-schema constrains every answer of the conversation (random weights, temperature 1),
    # the saved history holds the JSON; a schema that cannot be honoured stops the start.
    schema = path("schema.json")
    with open(schema, "w") as f:
        json.dump({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9},
                                                   "s": {"type": "string", "maxLength": 5}},
                   "required": ["n", "s"], "additionalProperties": False}, f)
    r = subprocess.run([K3] + BASE + ["-n", "2000", "--temp", "1", "--seed", "4", "--no-think", "--json-schema", schema],
                       input=f"one\ntwo\n/save {path('js.json')}\n".encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr
    answers = [m["content"] for m in load("js.json") if m["role"] == "assistant"]
    assert len(answers) == 2, answers
    for a in answers:
        v = json.loads(a)
        assert set(v) == {"n", "s"} and 1 <= v["n"] <= 9 and isinstance(v["s"], str) and len(v["s"]) <= 5, a
    bad = subprocess.run([K3] + BASE + ["--json-schema", '{"type":"array","uniqueItems":true}'], input=b"hi\n",
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert bad.returncode == 1 and b"unsupported keyword 'uniqueItems'" in bad.stderr, bad.stderr


def save_is_private():
    # Regression (issue 41, row 10): /save wrote FILE.tmp.PID (a name another user can plant a
    # link at) without O_EXCL, left a 0600 file 0644, and replaced a link at FILE. Now: a random
    # temporary, the old mode kept (a new file 0600), a link at FILE refused and left alone.
    os.mkdir(path("priv"))
    d = lambda n: os.path.join(path("priv"), n)
    with open(d("victim"), "w") as f:
        f.write("precious")
    with open(d("old.json"), "w") as f:
        f.write("[]")
    os.chmod(d("old.json"), 0o600)
    os.symlink(d("victim"), d("link.json"))
    s = Session("--temp", "0")
    os.symlink(d("victim"), d("new.json") + f".tmp.{s.pid}")  # planted at the predictable name
    os.symlink(d("victim"), d("old.json") + f".tmp.{s.pid}")
    s.expect(r"> ")
    s.turn("secret")
    s.line(f"/save {d('old.json')}")
    s.expect(r"\[saved 2 messages")
    s.line(f"/save {d('new.json')}")
    s.expect(r"\[saved 2 messages")
    s.line(f"/save {d('link.json')}")
    s.expect(r"error: .*link\.json: is a symbolic link")
    s.line("/exit")
    assert s.wait() == 0
    with open(d("victim")) as f:
        assert f.read() == "precious", "a write went through a link"
    assert os.path.islink(d("link.json")), "the link at FILE was replaced"
    assert os.stat(d("old.json")).st_mode & 0o777 == 0o600, oct(os.stat(d("old.json")).st_mode)
    assert os.stat(d("new.json")).st_mode & 0o777 == 0o600, oct(os.stat(d("new.json")).st_mode)
    assert len(json.loads(open(d("old.json")).read())) == 2 and len(json.loads(open(d("new.json")).read())) == 2
    left = sorted(f for f in os.listdir(path("priv")) if ".tmp." in f and not os.path.islink(d(f)))
    assert not left, f"temporary files were left behind: {left}"


check("two turns, status lines, colour", two_turns)
check("--temp 0 --seed is repeatable", deterministic)
check("/reset keeps the system prompt", reset)
check("Ctrl-C stops an answer, the session goes on", ctrl_c)
check("Ctrl-C twice leaves", ctrl_c_twice)
check("/save then /load reproduces the history", save_load)
check("/save keeps files private and follows no link", save_is_private)
check("/regen", regen)
check("bad /load file and unknown command", bad_load)
check("multi-line input", multi_line)
check("non-terminal stdin (pipe)", pipe)
check("non-terminal stdin: SIGINT twice leaves", pipe_ctrl_c)
check("the next turn reuses the engine state of the last prompt", live_reuse)
check("--json-schema constrains every answer", json_schema)
if failures:
    print(f"{len(failures)} failed: {', '.join(failures)}; files kept in {tmp}")
    sys.exit(1)
shutil.rmtree(tmp)
print("all passed")
