#!/usr/bin/env bash
# Locked instructions per value of one `profile_row` row, counted under
# callgrind: every executed instruction with a `lock` prefix (or an `xchg`
# with memory, which locks implicitly), summed per function, split into the
# channel's (everything but the runtimes and the bench's executor crates)
# and the runtime's. On this project's single-thread rows the time follows
# these counts more than the instruction counts: each costs ~20 cycles and
# drains the store buffer (BENCHMARKS.md, "Where amphi trails", 2026-12-05).
#
#   bash benches/locked_ops.sh BINARY SUBJECT 'ROW ARGS' RUNS
#   bash benches/locked_ops.sh /tmp/pr amphi 'tokio-ct bounded1 1' 2
#   bash benches/locked_ops.sh /tmp/pr kanal cancel-send 20000
#
# RUNS is the run count of a grid row (16,384 values each) or the cycle count
# of a named cycle (`cancel-*`, `burst-*`, `round-trip-*`), as for
# `profile_row` itself. Needs valgrind, objdump and python3.
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 BINARY SUBJECT 'ROW ARGS' RUNS" >&2
  exit 2
fi
bin=$1
subject=$2
read -r -a row <<<"$3"
runs=$4
case "${row[0]}" in
  cancel-* | burst-* | round-trip-*) per=1 ;;
  threads) per=${AMPHI_BENCH_M_THREADS:-100000} ;;
  *) per=${AMPHI_BENCH_M_ASYNC:-16384} ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objdump -d --no-show-raw-insn -C "$bin" >"$tmp/asm"
valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$tmp/cg" \
  "$bin" "${row[@]}" "$subject" "$runs" >/dev/null 2>&1
python3 - "$tmp/cg" "$tmp/asm" "$((runs * per))" <<'PY'
import collections, re, sys

cg, asm, values = sys.argv[1], sys.argv[2], float(sys.argv[3])
locked, fn = {}, None
for line in open(asm):
    m = re.match(r"^([0-9a-f]+) <(.*)>:", line)
    if m:
        fn = m.group(2)
        continue
    parts = line.split("\t")
    if len(parts) < 2:
        continue
    ins = parts[-1].strip()
    if ins.startswith("lock ") or (ins.startswith("xchg") and "(" in ins):
        try:
            locked[int(parts[0].strip().rstrip(":"), 16)] = (fn, ins)
        except ValueError:
            pass
count = collections.Counter()
last, after_call = 0, False
for line in open(cg):
    if line.startswith("calls="):
        after_call = True
        continue
    if not line or not (line[0].isdigit() or line[0] in "+-*"):
        continue
    f = line.split()
    t = f[0]
    last = last if t == "*" else last + int(t[1:]) if t[0] == "+" else last - int(t[1:]) if t[0] == "-" else int(t, 16)
    if after_call:
        after_call = False
        continue
    if last in locked and len(f) >= 3:
        count[last] += int(f[2])
runtime = ("tokio::", "async_task", "async_executor", "futures_", "std::", "<std::", "smol", "concurrent_queue")
own = rt = 0.0
for addr, n in sorted(count.items(), key=lambda x: -x[1]):
    per_value = n / values
    name, ins = locked[addr]
    if per_value >= 0.005:
        print(f"{per_value:6.2f}  {name[:90]}  {ins}")
    if name.startswith(runtime):
        rt += per_value
    else:
        own += per_value
print(f"per value: {own + rt:.2f} locked instructions, channel {own:.2f}, runtime {rt:.2f}")
PY
