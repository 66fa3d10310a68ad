#!/usr/bin/env bash
# bench/memory_ladder.sh: the memory ladder of the streaming expert store
# (docs/expert-store.md). Runs `k3 bench` on a model inside a cgroup-v1 memory limit, once per
# limit and mode — the streaming store (--ram-budget LIMIT minus HEADROOM) and the page-cache
# baseline (--mmap) — and prints one markdown row per test (bench/ladder_row.py): tok/s, disk
# bytes read per token (/proc/self/io), the cgroup's peak memory (memory.max_usage_in_bytes,
# page cache included) and OOM kills. The page cache is dropped before every run (cold start)
# and the bench warm-up is skipped. Needs root (cgroup v1 memory controller, drop_caches).
#
# usage: bench/memory_ladder.sh K3 MODEL OUTDIR "LIMITS" "TESTS" [MODES]
#   LIMITS: cgroup limits, e.g. "5G 8G" (0: no limit)
#   TESTS:  bench test flags separated by ';', e.g. "-p 0 -n 8;-p 512 -n 0 -ub 512"
#   MODES:  "stream mmap" (default)
# env: HEADROOM (default 512M: the limit minus the budget, for what the plan does not see),
#      THREADS (default 2), EXTRA (more k3 bench flags, e.g. "--expert-eviction lfu"),
#      DISK_BPS (cap the runs' reads from the model's disk at this many bytes/s with the
#      cgroup-v1 blkio throttle, e.g. 450M: a VM whose host caches its disk reads several times
#      faster than the disk it stands for; page-cache and O_DIRECT reads are capped alike)
# example: bench/memory_ladder.sh build/bin/k3 /data/bench-m-896.gguf /tmp/ladder "5G" "-p 0 -n 8"
set -euo pipefail
K3=$1 MODEL=$2 OUT=$3 LIMITS=$4 TESTS=$5 MODES=${6:-"stream mmap"}
HEADROOM=${HEADROOM:-512M} THREADS=${THREADS:-2} EXTRA=${EXTRA:-}
CG=/sys/fs/cgroup/memory/k3ladder
BCG=/sys/fs/cgroup/blkio/k3ladder
DISK_BPS=${DISK_BPS:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" "$CG"
join_blkio=""
if [ -n "$DISK_BPS" ]; then
  mkdir -p "$BCG"
  dev=$(stat -c '%d' "$MODEL")  # the model's filesystem device: major = dev >> 8 (old encoding)
  majmin="$((dev >> 8)):$((dev & 255))"
  # a partition's device is throttled through its whole disk
  disk=$(lsblk -no PKNAME "/dev/block/$majmin" 2>/dev/null | head -1 || true)
  [ -n "$disk" ] && majmin=$(lsblk -dno MAJ:MIN "/dev/$disk" | tr -d ' ')
  echo "$majmin $(numfmt --from=iec "$DISK_BPS")" >"$BCG/blkio.throttle.read_bps_device"
  echo "reads from $majmin capped at $DISK_BPS/s" >&2
  join_blkio="echo \$\$ >$BCG/cgroup.procs; "
fi

to_bytes() { numfmt --from=iec "${1%B}"; }

i=0
IFS=';' read -ra tests <<<"$TESTS"
for limit in $LIMITS; do
  for mode in $MODES; do
    for t in "${tests[@]}"; do
      i=$((i + 1))
      lb=0
      [ "$limit" != 0 ] && lb=$(to_bytes "$limit")
      if [ "$mode" = stream ]; then
        if [ "$lb" = 0 ]; then flags="--ram-budget unlimited"
        else flags="--ram-budget $((lb - $(to_bytes "$HEADROOM")))"; fi
      else
        flags="--mmap"
      fi
      sync; echo 3 >/proc/sys/vm/drop_caches
      echo "$([ "$lb" = 0 ] && echo -1 || echo "$lb")" >"$CG/memory.limit_in_bytes"
      echo 0 >"$CG/memory.max_usage_in_bytes"
      ooms0=$(awk '/^oom_kill /{print $2}' "$CG/memory.oom_control")
      load0=$(cut -d' ' -f1-3 /proc/loadavg)
      name="$OUT/run$i-$mode-$limit"
      echo "[$(date -u +%H:%M:%S)] limit $limit, $mode, $t: $K3 bench -m $MODEL $t $flags" >&2
      rc=0
      # shellcheck disable=SC2086
      sh -c "echo \$\$ >$CG/cgroup.procs; $join_blkio exec $K3 bench -m $MODEL -t $THREADS -r 1 --no-warmup --no-bw --json $t $flags $EXTRA" \
        >"$name.json" 2>"$name.err" || rc=$?
      load1=$(cut -d' ' -f1-3 /proc/loadavg)
      peak=$(cat "$CG/memory.max_usage_in_bytes")
      ooms=$(( $(awk '/^oom_kill /{print $2}' "$CG/memory.oom_control") - ooms0 ))
      if [ "$rc" = 0 ]; then
        python3 "$here/ladder_row.py" "$name.json" "$lb" "$peak" "$ooms" "$mode" "$load0" "$load1" | tee -a "$OUT/rows.md"
      else
        echo "| $limit | $mode | - | $t | failed (exit $rc) | - | $(numfmt --to=iec "$peak") | $ooms | see $name.err | $load0 → $load1 |" | tee -a "$OUT/rows.md"
      fi
    done
  done
done
echo -1 >"$CG/memory.limit_in_bytes"
[ -n "$DISK_BPS" ] && echo "$majmin 0" >"$BCG/blkio.throttle.read_bps_device"
true
