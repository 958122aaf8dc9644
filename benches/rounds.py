#!/usr/bin/env python3
"""Per value or per producer round? Splits a single-thread row's instruction count in two.

On a bounded queue the producer fills the buffer, waits, is woken and fills it again: a
*round*. A row's instructions per value are then about a + b/R, where a is what each value
costs (the two ready paths), b what each round costs (the waits, the wake-ups, the task
polls, the hand-offs to waiting receivers) and R the values a round moves. R is not always
the capacity: a channel that hands values to waiting receivers outside its buffer (kanal)
moves capacity + waiting receivers per round. So R is measured, as the values per poll of
the producer's task, and a and b are fitted by least squares over several capacities.

For each capacity it runs `profile_row WHERE boundedCAP CONSUMERS PEER RUNS` under callgrind
twice (RUNS = FEW and MANY, 2 and 6; the difference leaves out setup) and prints, per value: instructions,
task polls (tokio's `Harness::poll`), wake-ups (`wake_by_val`), and R; then the fit.

    CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p amphi-benches --bin profile_row
    python3 benches/rounds.py target/release/profile_row tokio-ct 8 amphi 32 64 128
    python3 benches/rounds.py target/release/profile_row tokio-ct 8 kanal 24 56 64 120

Meant for `tokio-ct` rows (one thread, so callgrind's counts are the row's); on the
multi-threaded executors spinning adds instructions that are not the channel's work. Values
per run: `AMPHI_BENCH_M_ASYNC` [16384]. Needs valgrind.
"""

import os
import re
import subprocess
import sys
import tempfile

POLL = re.compile(r"Harness<T,S>::poll$")
WAKE = re.compile(r"task::waker::wake_by_val$")
PRODUCE = re.compile(r"run::produce::\{\{closure\}\}$")
# The two run counts whose difference is measured (leaving out setup).
FEW, MANY = 2, 6


def usage():
    sys.exit("usage: rounds.py BINARY WHERE CONSUMERS PEER CAP CAP [CAP...]")


def counts(binary, where, consumers, peer, cap, runs):
    """Total instructions and the call counts of the polls, wake-ups and producer polls."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--compress-strings=no",
             f"--callgrind-out-file={out}",
             binary, where, f"bounded{cap}", str(consumers), peer, str(runs)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        calls = {"polls": 0, "wakes": 0, "producer": 0}
        callee = None
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    total = int(line.split()[1])
                elif line.startswith("cfn="):
                    callee = line[4:].strip()
                elif line.startswith("calls=") and callee is not None:
                    n = int(line[6:].split()[0])
                    if POLL.search(callee):
                        calls["polls"] += n
                    if WAKE.search(callee):
                        calls["wakes"] += n
                    if PRODUCE.search(callee):
                        calls["producer"] += n
        return total, calls


def measure(binary, where, consumers, peer, cap, per_run):
    """Per value, from the difference of FEW and MANY runs: instructions, task polls,
    wake-ups, and R (values per poll of the producer's task)."""
    t_few, c_few = counts(binary, where, consumers, peer, cap, FEW)
    t_many, c_many = counts(binary, where, consumers, peer, cap, MANY)
    values = (MANY - FEW) * per_run
    producer = c_many["producer"] - c_few["producer"]
    return ((t_many - t_few) / values,
            (c_many["polls"] - c_few["polls"]) / values,
            (c_many["wakes"] - c_few["wakes"]) / values,
            values / producer if producer else float("inf"))


def fit(points, script="rounds.py"):
    """Least squares of y = a + b x over (x, y) points: a, b and the largest residual."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        sys.exit(f"{script}: every capacity gave the same R; nothing to fit")
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a = my - b * mx
    return a, b, max(abs(a + b * x - y) for x, y in points)


def main():
    if len(sys.argv) < 7:
        usage()
    binary, where, consumers, peer = sys.argv[1:5]
    caps = [int(c) for c in sys.argv[5:]]
    per_run = int(os.environ.get("AMPHI_BENCH_M_ASYNC", "16384"))
    values = (MANY - FEW) * per_run
    points = []
    print(f"{where} {consumers}c {peer}: per value (runs {MANY} - {FEW}, {values} values)")
    print("   cap   instr   polls   wakes       R")
    for cap in caps:
        instr, polls, wakes, r = measure(binary, where, consumers, peer, cap, per_run)
        points.append((1 / r, instr))
        print(f"{cap:6d} {instr:7.1f} {polls:7.3f} {wakes:7.3f} {r:7.1f}")
    # instr = a + b * (1/R)
    a, b, worst = fit(points)
    print(f"fit: {a:.0f} instructions per value + {b:.0f} per round "
          f"(largest residual {worst:.1f} per value)")


if __name__ == "__main__":
    main()
