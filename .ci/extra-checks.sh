#!/usr/bin/env bash
# Extra reliability checks (see RELIABILITY.md):
#   1. the loom models of tests/loom.rs (release build, bounded preemptions);
#   2. Miri on the unit and integration tests, only if `cargo +nightly miri`
#      is available (skipped with a message otherwise, never a failure).
# Budget: well under 15 minutes on 2 cores. Timings are printed.
#
# Environment:
#   LOOM_MAX_PREEMPTIONS  loom's preemption bound (default 5: ~6 s of model
#                         checking after a ~1 min release build)
#   MIRI_TESTS            integration test targets run under Miri besides the
#                         unit tests (default below: the files known to pass
#                         under Miri in a few minutes); "all" = --tests
#   SKIP_LOOM=1 / SKIP_MIRI=1  skip a stage
#   MIRI_TIMEOUT          seconds allowed for the Miri stage (default 600)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

now() { date +%s; }
T_ALL=$(now)
status=0

# ---------------------------------------------------------------- loom
# `RUSTFLAGS="--cfg loom"` applies to every crate of the build; the
# dev-dependencies that do not build under it (smol, async-channel) are
# `cfg(not(loom))` in Cargo.toml. A separate target dir keeps the loom build
# from invalidating the normal one.
run_loom() {
    local t=$(now)
    echo "== loom: LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-5}"
    if LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-5}" RUSTFLAGS="--cfg loom" \
        CARGO_TARGET_DIR="$ROOT/target/loom" \
        cargo test --release --test loom -- --test-threads=2; then
        echo "== loom: ok in $(( $(now) - t ))s"
    else
        echo "== loom: FAILED after $(( $(now) - t ))s"
        status=1
    fi
}

# ---------------------------------------------------------------- miri
# Integration test files run under Miri by default. Files with tests that
# need an OS runtime (tokio/smol), real time or long loops mark those tests
# #[cfg_attr(miri, ignore)]; see RELIABILITY.md for the list.
MIRI_DEFAULT_TESTS="proptest spmc_async"
run_miri() {
    if ! cargo +nightly miri --version >/dev/null 2>&1; then
        echo "== miri: skipped (no nightly toolchain with the miri component;"
        echo "   install with: rustup component add --toolchain nightly miri rust-src)"
        return 0
    fi
    local t=$(now)
    echo "== miri: $(cargo +nightly miri --version)"
    # Isolation stays on; tests that need an OS runtime, real time or long
    # loops are marked #[cfg_attr(miri, ignore)] in their files.
    local targets=()
    if [ "${MIRI_TESTS:-}" = all ]; then
        targets=(--tests)
    else
        for name in ${MIRI_TESTS:-$MIRI_DEFAULT_TESTS}; do
            if [ -f "tests/$name.rs" ]; then targets+=(--test "$name"); fi
        done
    fi
    echo "== miri: cargo +nightly miri test --lib ${targets[*]}"
    if MIRIFLAGS="${MIRIFLAGS:-}" timeout "${MIRI_TIMEOUT:-600}" \
        cargo +nightly miri test --lib "${targets[@]}"; then
        echo "== miri: ok in $(( $(now) - t ))s"
    else
        echo "== miri: FAILED (or timed out) after $(( $(now) - t ))s"
        status=1
    fi
}

[ "${SKIP_LOOM:-0}" = 1 ] && echo "== loom: skipped (SKIP_LOOM=1)" || run_loom
[ "${SKIP_MIRI:-0}" = 1 ] && echo "== miri: skipped (SKIP_MIRI=1)" || run_miri

echo "== extra checks: $([ $status = 0 ] && echo ok || echo FAILED) in $(( $(now) - T_ALL ))s"
exit $status
