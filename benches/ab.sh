#!/usr/bin/env bash
# A same-run A/B of benchmark binaries: runs each binary's matching rows in
# turn, ROUNDS times (old, new, old, new, ...), and prints per row each
# binary's median over the rounds, its ratio to the first binary's, and every
# round's value (rows that swing between rounds show it there).
#
#   cargo bench -p amphi-benches --bench channels --no-run   # prints the binary's path
#   cp target/release/deps/channels-<hash> /tmp/ab/old       # then change src/, build again:
#   cp target/release/deps/channels-<hash> /tmp/ab/new
#   bash benches/ab.sh 4 '^prim/cancel.*/amphi$' /tmp/ab/old /tmp/ab/new
#
# The binaries run in a scratch directory (criterion writes its
# `target/criterion` there, not over the suite's results). Run it on an idle
# machine: nothing else building or testing.
set -euo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 ROUNDS FILTER BINARY..." >&2
  exit 2
fi
rounds=$1
filter=$2
shift 2
bins=()
for b in "$@"; do
  bins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
raw="$scratch/raw"
cd "$scratch"
for r in $(seq 1 "$rounds"); do
  for i in "${!bins[@]}"; do
    # criterion prints a long id on a line of its own, then `time:` on the
    # next; a short one on the same line.
    "${bins[$i]}" --bench "$filter" --noplot 2>/dev/null |
      awk -v v="$i" '
        /^[a-z]+\/[^ ]+/ && !/^Benchmarking/ { id = $1 }
        /time:/ {
          n = split($0, f, "[][ ]+")
          for (k = 1; k <= n; k++) if (f[k] == "time:") break
          # [low unit mid unit high unit]: the middle estimate
          mid = f[k + 3]; unit = f[k + 4]
          s = (unit == "ns") ? 1e-6 : (unit == "µs" || unit == "us") ? 1e-3 : (unit == "s") ? 1e3 : 1
          printf "%s %s %.6g\n", id, v, mid * s
        }' >> "$raw"
  done
done

# Per row and binary: the median of the rounds (ms), the ratio to binary 0.
sort -k1,1 -k2,2n -k3,3g "$raw" | awk -v nb="${#bins[@]}" '
  function flush(   i, c, m, line, rest) {
    if (row == "") return
    line = sprintf("%-48s", row)
    rest = ""
    for (i = 0; i < nb; i++) {
      c = cnt[i] + 0
      m = (c == 0) ? 0 : (c % 2) ? v[i, (c + 1) / 2] : (v[i, c / 2] + v[i, c / 2 + 1]) / 2
      med[i] = m
      line = line sprintf(" %10.4g", m)
      rest = rest (i ? " | " : "") vals[i]
    }
    line = line "  ratio"
    for (i = 1; i < nb; i++) line = line sprintf(" %.2f", (med[0] > 0) ? med[i] / med[0] : 0)
    print line "   " rest
    delete cnt; delete vals
  }
  $1 != row { flush(); row = $1 }
  { c = ++cnt[$2]; v[$2, c] = $3; vals[$2] = vals[$2] (c > 1 ? "," : "") sprintf("%.3g", $3) }
  END { flush() }'
echo "(medians in ms over $rounds rounds; ratio: each binary's median over the first's; then each binary's values, sorted)"
