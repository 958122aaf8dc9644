#!/usr/bin/env bash
# An A/B of `profile_row` binaries for a machine whose speed flips between
# modes from one second to the next (the 2-core development VM, where even a
# peer's own criterion row moved 1.0-1.5x between binaries of one round):
# ROUNDS times, each binary in turn runs the row RUNS times, and one line per
# round gives each binary's minimum (and median). Read the rounds whose
# minima agree (the fast mode); a peer given as PEER=... is run by the last
# binary each round as a yardstick. The binaries run SUBJECT [amphi]; for the
# mpmc rows (`4p4c`) give SUBJECT=amphi-mpmc.
#
#   cp target/release/profile_row /tmp/old     # before the change (any build)
#   ...change src/, build again...
#   bash benches/profile_ab.sh 5 30 'tokio-ct bounded64 1' /tmp/old target/release/profile_row
#   PEER=kanal bash benches/profile_ab.sh 5 30 'tokio-ct bounded64 8' /tmp/old /tmp/new
#
# With INSTR=1 it prints instructions per value under callgrind instead (one
# round; the difference of RUNS and 2 runs, divided by the values moved),
# which is stable on a noisy machine; for rows that run on one thread
# (`tokio-ct ...`, the `cancel-*`, `burst-*`, `ready-sync-*` and `round-trip-tokio-ct`
# cycles, whose "value" is one cycle).
set -euo pipefail

if [ $# -lt 4 ]; then
  echo "usage: [SUBJECT=amphi] [PEER=name] [INSTR=1] $0 ROUNDS RUNS 'ROW ARGS' BINARY..." >&2
  exit 2
fi
rounds=$1
runs=$2
subject=${SUBJECT:-amphi}
read -r -a row <<<"$3"
shift 3

# Values moved per run of a grid row (`WHERE QUEUE CONSUMERS`), or 1 per
# cycle for the named cycles (whose count argument is the cycle count).
per_run() {
  case "${row[0]}" in
    cancel-* | burst-* | round-trip-* | ready-sync-*) echo 1 ;;
    threads) echo "${AMPHI_BENCH_M_THREADS:-100000}" ;;
    *) echo "${AMPHI_BENCH_M_ASYNC:-16384}" ;;
  esac
}

# Runs one binary for `$2` runs (or cycles) of the row with peer `$3`: the
# grid rows and the cycles both take the peer, then the count, last.
run() {
  "$1" "${row[@]}" "$3" "$2"
}

# Instructions callgrind counts for binary `$1` running `$2` runs.
count() {
  local out
  if ! out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$1" "${row[@]}" "$subject" "$2" 2>&1); then
    echo "$0: $1 ${row[*]} $subject $2 failed:" >&2
    echo "$out" | grep -v '^==' >&2
    exit 1
  fi
  echo "$out" | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

if [ "${INSTR:-0}" = 1 ]; then
  values=$(per_run)
  for b in "$@"; do
    low=$(count "$b" 2)
    high=$(count "$b" "$runs")
    echo "$(basename "$b"): $(((high - low) / ((runs - 2) * values))) instructions per value"
  done
  exit 0
fi

for r in $(seq "$rounds"); do
  line="round $r"
  for b in "$@"; do
    out=$(run "$b" "$runs" "$subject" 2>&1 | tail -1)
    line="$line | $(basename "$b") ${out#*: }"
  done
  if [ -n "${PEER:-}" ]; then
    last=${*: -1}
    out=$(run "$last" "$runs" "$PEER" 2>&1 | tail -1)
    line="$line | $PEER ${out#*: }"
  fi
  echo "$line"
done
