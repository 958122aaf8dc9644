#!/usr/bin/env python3
"""Per value or per producer round, in time: `rounds.py`'s split, timed instead of counted.

`rounds.py` splits a single-thread row's instructions per value into a + b/R (a per value,
b per producer round, R the values a round moves). Instructions are not time: a round's
work (task switches, wake-ups, lock trips) runs at a lower rate than the values' ready
paths. This script fits the same model to wall time, for several peers at once, so that
the question "is the gap per value or per round?" is answered in the unit the benchmarks
report.

For each capacity and peer, R is measured as in `rounds.py` (values per poll of the
producer's task, under callgrind). Then ROUNDS alternations: in each, every (capacity,
peer) pair runs `profile_row WHERE boundedCAP CONSUMERS PEER RUNS` natively, in turn, and
its minimum run is kept; the best of those minima over the alternations is the pair's
time (this VM flips between a fast and a slow mode from one second to the next, and
alternating puts every pair in both). The fit is least squares of ns per value against
1/R, per peer.

    CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p amphi-benches --bin profile_row
    python3 benches/round_times.py target/release/profile_row tokio-ct 1 amphi,kanal 16 64 256 1024

Environment: ROUNDS [5] alternations, RUNS [15] runs per pair and alternation,
`AMPHI_BENCH_M_ASYNC` [16384] values per run. Needs valgrind (for R). Meant for
`tokio-ct` rows, as `rounds.py` is.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rounds  # noqa: E402  (the R measurement and the fit, shared)

UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
MINIMUM = re.compile(r"min ([0-9.]+)(ns|µs|us|ms|s)\b")


def usage():
    sys.exit("usage: round_times.py BINARY WHERE CONSUMERS PEER[,PEER...] CAP CAP [CAP...]")


def fastest_run(binary, where, consumers, peer, cap, runs):
    """Seconds: the minimum of `runs` native runs, as `profile_row` reports it."""
    out = subprocess.run(
        [binary, where, f"bounded{cap}", str(consumers), peer, str(runs)],
        check=True, capture_output=True, text=True)
    m = MINIMUM.search(out.stdout + out.stderr)
    if not m:
        sys.exit(f"round_times.py: no minimum in profile_row's output for {peer} bounded{cap}")
    return float(m.group(1)) * UNITS[m.group(2)]


def main():
    if len(sys.argv) < 7:
        usage()
    binary, where, consumers = sys.argv[1:4]
    peers = sys.argv[4].split(",")
    caps = [int(c) for c in sys.argv[5:]]
    alternations = int(os.environ.get("ROUNDS", "5"))
    runs = int(os.environ.get("RUNS", "15"))
    per_run = int(os.environ.get("AMPHI_BENCH_M_ASYNC", "16384"))

    r = {(p, c): rounds.measure(binary, where, consumers, p, c, per_run)[3]
         for p in peers for c in caps}
    best = {}
    for _ in range(alternations):
        for c in caps:
            for p in peers:
                t = fastest_run(binary, where, consumers, p, c, runs)
                best[(p, c)] = min(t, best.get((p, c), t))

    print(f"{where} {consumers}c: best of {alternations} alternations x {runs} runs, "
          f"{per_run} values per run")
    print("peer            cap       R   us/run  ns/value")
    for p in peers:
        for c in caps:
            t = best[(p, c)]
            print(f"{p:14s} {c:5d} {r[(p, c)]:7.1f} {t * 1e6:8.1f} {t / per_run * 1e9:9.2f}")
    for p in peers:
        a, b, worst = rounds.fit(
            [(1 / r[(p, c)], best[(p, c)] / per_run * 1e9) for c in caps], "round_times.py")
        print(f"fit {p}: {a:.2f} ns per value + {b:.0f} ns per round "
              f"(largest residual {worst:.2f} ns per value)")


if __name__ == "__main__":
    main()
