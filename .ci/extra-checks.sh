#!/usr/bin/env bash
# Extra reliability checks (see RELIABILITY.md):
#   1. the loom models of tests/loom.rs (release build, bounded preemptions);
#   2. Miri on the unit and integration tests, only if `cargo +nightly miri`
#      is available (skipped with a message otherwise, never a failure).
# Budget: about 3 min (loom) + 7.5 min (Miri) from a cold cache on 2 cores,
# well under 15 minutes. Timings are printed; measured ones: RELIABILITY.md.
#
# Environment:
#   LOOM_MAX_PREEMPTIONS  loom's preemption bound (default 5)
#   MIRI_TESTS            integration test targets run under Miri besides the
#                         unit tests: "all" (default) = --tests, or a list of
#                         file names such as "proptest spmc_async"
#   LOOM_TARGET_DIR       cargo target dir of the loom build (target/loom)
#   SKIP_LOOM=1 / SKIP_MIRI=1  skip a stage
#   MIRI_TIMEOUT          seconds allowed for the Miri stage (default 900)
#   MIRIFLAGS             Miri's flags (default -Zmiri-tree-borrows: the
#                         aliasing model the project's unsafe code is
#                         written against)
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
    echo "== loom: clippy under --cfg loom (the library and every test target; all but the models are cfg(not(loom)))"
    if ! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-$ROOT/target/loom}" \
        cargo clippy --release --lib --tests -- -D warnings; then
        echo "== loom: clippy FAILED"
        status=1
    fi
    echo "== loom: LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-5}"
    if LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-5}" RUSTFLAGS="--cfg loom" \
        CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-$ROOT/target/loom}" \
        cargo test --release --test loom -- --test-threads=2; then
        echo "== loom: ok in $(( $(now) - t ))s"
    else
        echo "== loom: FAILED after $(( $(now) - t ))s"
        status=1
    fi
}

# ---------------------------------------------------------------- miri
# Every test target runs under Miri by default (about 3 min from a cold
# cache on 2 cores). Tests that cannot run usefully under Miri (an OS runtime,
# real time, long loops across threads, a global allocator) carry
# #[cfg_attr(miri, ignore)]; the stress files are #![cfg(not(miri))].
MIRI_DEFAULT_TESTS="all"
# Tests that leak on purpose (values after a panicking payload `Drop`, P7):
# ignored under Miri in their file, run here with the leak check off.
MIRI_LEAKING_TESTS="spmc_basic:panicking_payload_drop_on_last_receiver_drop"
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
    if [ "${MIRI_TESTS:-$MIRI_DEFAULT_TESTS}" = all ]; then
        targets=(--tests)
    else
        for name in ${MIRI_TESTS:-$MIRI_DEFAULT_TESTS}; do
            if [ -f "tests/$name.rs" ]; then targets+=(--test "$name"); fi
        done
    fi
    echo "== miri: MIRIFLAGS=${MIRIFLAGS:--Zmiri-tree-borrows} cargo +nightly miri test --lib ${targets[*]}"
    local deadline=$(( t + ${MIRI_TIMEOUT:-900} ))
    if MIRIFLAGS="${MIRIFLAGS:--Zmiri-tree-borrows}" timeout "${MIRI_TIMEOUT:-900}" \
        cargo +nightly miri test --lib "${targets[@]}"; then
        echo "== miri: ok in $(( $(now) - t ))s"
    else
        echo "== miri: FAILED (or timed out) after $(( $(now) - t ))s"
        status=1
    fi
    local entry file name left
    for entry in $MIRI_LEAKING_TESTS; do
        file=${entry%%:*} name=${entry#*:}
        # only when its file is among the targets
        case " ${targets[*]} " in *" --tests "* | *" $file "*) ;; *) continue ;; esac
        left=$(( deadline - $(now) )); [ $left -gt 10 ] || left=10
        echo "== miri: $file::$name with -Zmiri-ignore-leaks"
        if MIRIFLAGS="${MIRIFLAGS:--Zmiri-tree-borrows} -Zmiri-ignore-leaks" timeout "$left" \
            cargo +nightly miri test --test "$file" "$name" -- --exact --include-ignored; then
            echo "== miri: $name ok"
        else
            echo "== miri: $name FAILED (or timed out)"
            status=1
        fi
    done
}

[ "${SKIP_LOOM:-0}" = 1 ] && echo "== loom: skipped (SKIP_LOOM=1)" || run_loom
[ "${SKIP_MIRI:-0}" = 1 ] && echo "== miri: skipped (SKIP_MIRI=1)" || run_miri

echo "== extra checks: $([ $status = 0 ] && echo ok || echo FAILED) in $(( $(now) - T_ALL ))s"
exit $status
