#!/usr/bin/env python3
"""bench/ladder_row.py: one markdown row of the memory ladder (bench/LADDER.md) from a
`k3 bench --json` result and the cgroup's peak memory.

usage: ladder_row.py BENCH.json LIMIT_BYTES PEAK_BYTES OOM_KILLS MODE LOAD_BEFORE LOAD_AFTER
"""
import json
import sys


def gib(b):
    return f"{int(b) / 2**30:.2f}"


def main():
    path, limit, peak, ooms, mode, load0, load1 = sys.argv[1:8]
    with open(path) as f:
        j = json.load(f)
    size = j["model"]["file_size"]
    mem = j.get("memory", {})
    cache = mem.get("cache_fraction", 0)
    disk = mem.get("disk_bw_bytes_per_s", 0)
    rows = []
    for t in j["tests"]:
        io = t.get("io", {})
        busy = io.get("read_bw_busy", 0)
        frac = f"{100 * io.get('disk_bw_fraction', 0):.0f}%" if disk else "-"
        wall = io.get("read_bw_wall", 0)
        wall_frac = f"{100 * wall / disk:.0f}%" if disk else "-"
        store = "-"
        if mode != "mmap":
            store = (f"hit {100 * io.get('hit_rate', 0):.0f}% + pre {100 * io.get('prefetch_rate', 0):.0f}%, "
                     f"recall {100 * io.get('prediction_recall', 0):.0f}%, wait {100 * io.get('io_wait_share', 0):.0f}% "
                     f"at {io.get('read_bw_waiting', 0) / 1e9:.2f} GB/s ({100 * io.get('waiting_bw_fraction', 0):.0f}%), "
                     f"{busy / 1e9:.2f} GB/s busy ({frac}), {wall / 1e9:.2f} GB/s over the test ({wall_frac}); "
                     f"disk {disk / 1e9:.2f} GB/s")
        rows.append(
            f"| {gib(limit) if int(limit) > 0 else 'none'} | {mode} | "
            f"{100 * cache:.1f}% | {t['name']} (ub {j['params']['n_ubatch']}) | {t['avg_ts']:.3f} | "
            f"{io.get('disk_read_bytes_per_token', 0) / 2**20:.1f} | {gib(peak)} | {ooms} | {store} | "
            f"{load0} → {load1} |")
    print("\n".join(rows))
    _ = size


if __name__ == "__main__":
    main()
