#!/usr/bin/env python3
"""Distributed runs under mpirun on one machine (docs/distributed.md), against the one-process
run of the same command as the reference:

  * logits: `k3 eval-logits` on every golden model (batch mode) and on two of them in step and
    chunk:7 modes, and on a synth MoE model whose 10 experts don't divide by 3: the file that
    -np 2 and -np 3 write must equal -np 1's byte for byte;
  * images: a multimodal `k3 eval-logits` (k3-tiny + the vt-a tower) at -np 2 equals -np 1;
  * tokens: `k3 run` (greedy and sampled with a seed) prints the same text at -np 1, 2, 3;
  * traffic: --dist-stats reports rank 0's exchanges, and they match `k3 plan`'s count per
    decode token exactly, its bytes within 3 %;
  * faults: a rank killed mid-run (SIGKILL) and a rank stopped mid-run (SIGSTOP, --dist-timeout
    2) each end the whole run with a non-zero status and a message within seconds; no hang.

    tests/dist/mpi_test.py K3_BINARY REPO_ROOT
Skips (exit 77) where mpirun is not installed. Prints 'N passed, N failed'.
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

K3, ROOT = sys.argv[1], sys.argv[2]
GOLDEN = os.path.join(ROOT, "tests", "data", "golden")
MPIRUN = shutil.which("mpirun")
if not MPIRUN:
    print("mpirun not found (scripts/setup.sh installs openmpi-bin): skipped")
    sys.exit(77)
# As root (CI) Open MPI wants --allow-run-as-root; two or three ranks on two cores want
# --oversubscribe. The vader (shared memory) transport is what one machine uses.
MPI = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
ENV = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
passed, failed = 0, 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def run(np_, args, timeout=300):
    cmd = [K3] + args if np_ == 1 else MPI + ["-np", str(np_), K3] + args
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                          env=ENV)


def logits_identical(tmp, model, tokens_file, mode, ranks=(2, 3), extra=()):
    outs = {}
    for n in (1,) + tuple(ranks):
        out = os.path.join(tmp, f"{os.path.basename(model)}.{mode.replace(':', '_')}.np{n}.f32")
        r = run(n, ["eval-logits", "-m", model, "--tokens-file", tokens_file, "--mode", mode, "-t", "1",
                    "-o", out, *extra])
        if r.returncode != 0:
            return f"np {n} exited {r.returncode}: {r.stderr[-600:]}"
        outs[n] = open(out, "rb").read()
    for n in ranks:
        if outs[n] != outs[1]:
            return f"np {n} logits differ from np 1"
    if not outs[1]:
        return "no logits written"
    return ""


def rank_pids(mpirun_pid):
    """The k3 processes mpirun started, by their MPI rank."""
    ranks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if not cmdline.startswith(K3.encode()):
            continue
        for kv in env:
            if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                ranks[int(kv.split(b"=", 1)[1])] = int(pid)
    return ranks


def fault(tmp, sig, timeout_flag):
    """Starts a long distributed perplexity run, hits rank 1 with sig once it computes, and
    returns (exit status, seconds from the signal to the end, stderr)."""
    text = os.path.join(tmp, "long.txt")
    with open(text, "w") as f:
        f.write(open(os.path.join(ROOT, "docs", "MODEL.md")).read() * 20)
    cmd = MPI + ["-np", "2", K3, "perplexity", "-m", os.path.join(GOLDEN, "small-q8_0.gguf"), "-f", text,
                 "-c", "128", "-t", "1", *timeout_flag]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=ENV,
                         start_new_session=True)
    try:
        ranks = {}
        for _ in range(300):  # the ranks are up and the run is under way
            ranks = rank_pids(p.pid)
            if len(ranks) == 2:
                break
            time.sleep(0.05)
        time.sleep(2.0)
        if len(ranks) != 2 or p.poll() is not None:
            return None, 0, f"run not under way (ranks {ranks}, status {p.poll()})"
        os.kill(ranks[1], sig)
        t0 = time.time()
        _, err = p.communicate(timeout=60)
        return p.returncode, time.time() - t0, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, 60, "hung: no exit within 60 s"
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        for pid in rank_pids(p.pid).values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def main():
    with tempfile.TemporaryDirectory() as tmp:
        models = sorted(f for f in os.listdir(GOLDEN) if f.endswith(".gguf") and f != "small-imatrix.gguf")
        for m in models:
            base = m[:-5]
            toks = os.path.join(GOLDEN, base + ".tokens")
            if not os.path.exists(toks):
                continue
            err = logits_identical(tmp, os.path.join(GOLDEN, m), toks, "batch")
            check(f"logits np 1 = 2 = 3, {base}, batch", not err, err)
        for base in ("small-q8_0", "tiny10-base"):
            for mode in ("step", "chunk:7"):
                err = logits_identical(tmp, os.path.join(GOLDEN, base + ".gguf"), os.path.join(GOLDEN, base + ".tokens"),
                                       mode)
                check(f"logits np 1 = 2 = 3, {base}, {mode}", not err, err)

        # A synth MoE model: 10 routed experts (3 ranks own 4/3/3), top-3, a shared expert.
        synth = os.path.join(tmp, "moe10.gguf")
        r = subprocess.run([K3, "synth", "-o", synth, "--n-layer", "4", "--n-embd", "128", "--n-head", "2",
                            "--head-dim", "32", "--n-expert", "10", "--n-expert-used", "3", "--n-ff", "256",
                            "--n-ff-exp", "64", "--n-latent", "64", "--n-shared", "1", "--vocab", "300",
                            "--dense-layers", "1", "--mla-every", "2"], capture_output=True, text=True)
        check("synth MoE model written", r.returncode == 0, r.stderr[-400:])
        toks = os.path.join(tmp, "moe10.tokens")
        with open(toks, "w") as f:
            f.write(",".join(str((i * 37 + 11) % 300) for i in range(40)))
        for mode in ("batch", "step", "chunk:7"):
            err = logits_identical(tmp, synth, toks, mode)
            check(f"logits np 1 = 2 = 3, synth 10 experts, {mode}", not err, err)

        # A multimodal prompt: rank 0 sends the image rows with the batch (the other ranks run
        # no tower), and every rank's logits are one process's.
        vision = os.path.join(ROOT, "tests", "data", "vision")
        itoks = os.path.join(tmp, "image.tokens")
        with open(itoks, "w") as f:
            f.write("1,3858,<image>,3860,5,6,7")
        for mode in ("batch", "step"):
            err = logits_identical(tmp, os.path.join(ROOT, "models", "k3-tiny", "k3-tiny-Q8_0.gguf"), itoks, mode,
                                   ranks=(2,), extra=("--mmproj", os.path.join(vision, "mmproj-vt-a.gguf"),
                                                      "--image", os.path.join(vision, "big300x200.png")))
            check(f"logits np 1 = 2 with an image, k3-tiny + vt-a, {mode}", not err, err)

        # k3 run: the same text from one process and from 2 and 3 ranks.
        for flags in (["--temp", "0"], ["--seed", "7"]):
            args = ["run", "-m", os.path.join(GOLDEN, "small-q8_0.gguf"), "-p", "The pass key is", "-n", "24",
                    "-t", "1", *flags]
            outs = [run(n, args) for n in (1, 2, 3)]
            ok = all(o.returncode == 0 for o in outs) and outs[0].stdout == outs[1].stdout == outs[2].stdout
            check(f"k3 run {' '.join(flags)}: same text at np 1, 2, 3", ok and outs[0].stdout.strip() != "",
                  " | ".join(o.stdout[-80:] + o.stderr[-200:] for o in outs))
        r = run(2, ["eval-logits", "-m", os.path.join(GOLDEN, "tiny10-base.gguf"), "--tokens", "1,2,3,4",
                    "--mode", "step", "-o", os.path.join(tmp, "s.f32"), "--dist-stats"])
        check("--dist-stats prints rank 0's traffic", r.returncode == 0 and "k3 dist: 2 ranks" in r.stderr,
              r.stderr[-400:])

        # The cost model's exchanges and bytes per decode token against what rank 0 counts over T
        # one-token decode calls (its received bytes: (N-1)/N of each gathered width).
        for model in ("small-q8_0", "tiny10-base"):
            path, T = os.path.join(GOLDEN, model + ".gguf"), 24
            for n in (2, 3):
                plan = json.loads(subprocess.run([K3, "plan", "-m", path, "--hosts", str(n), "--json", "--mem-bw", "30"],
                                                 capture_output=True, text=True, check=True).stdout)[0]["decode"]
                r = run(n, ["eval-logits", "-m", path, "--tokens", ",".join(str(i + 1) for i in range(T)), "--mode",
                            "step", "-t", "1", "-o", os.path.join(tmp, "c.f32"), "--dist-stats"])
                m = re.search(r"rank 0: (\d+) collectives, [\d.]+ MB out, ([\d.]+) MB in", r.stderr)
                ok = r.returncode == 0 and m is not None
                if ok:
                    calls, mb_in = int(m.group(1)), float(m.group(2))
                    ok = abs(calls - plan["collectives"] * T) <= 4 and abs(mb_in * 1e6 / T / plan["net_bytes"] - 1) < 0.03
                check(f"cost model = measured exchanges and bytes per token, {model}, np {n}", ok,
                      f"plan {plan['collectives']} exchanges {plan['net_bytes']} B; measured {m.groups() if m else r.stderr[-300:]}")

        rc, secs, err = fault(tmp, signal.SIGKILL, [])
        check("a killed rank ends the run, non-zero, within 15 s", rc not in (None, 0) and secs < 15,
              f"status {rc}, {secs:.1f} s: {err[-600:]}")
        rc, secs, err = fault(tmp, signal.SIGSTOP, ["--dist-timeout", "2"])
        check("a stopped rank: rank 0 names the timed-out exchange and exits non-zero within 15 s",
              rc not in (None, 0) and secs < 15 and "waited" in err and "rank 0 of 2" in err,
              f"status {rc}, {secs:.1f} s: {err[-600:]}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
