//! The one place where the core gets its synchronization primitives.
//!
//! Under `cfg(loom)` every primitive comes from loom, so that the loom models
//! in `tests/loom.rs` explore the real core, not a copy of it.

// Under loom the spin budget is 0 (loom explores every spin), which makes the
// backoff loops' bounds trivially empty or saturated.
#![cfg_attr(
    loom,
    allow(
        clippy::absurd_extreme_comparisons,
        clippy::reversed_empty_ranges,
        clippy::unnecessary_min_or_max
    )
)]

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use std::sync::Arc;
    pub(crate) use std::thread::{current, park, park_timeout, yield_now, Thread};

    /// `core::cell::UnsafeCell` with loom's closure API, so that the same
    /// code checks every access under loom.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }

        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// A `parking_lot` mutex: no poisoning, so a panic under the lock only
    /// releases it.
    #[derive(Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }

    /// How many rounds a blocked thread spins before it parks.
    pub(crate) const SPIN_ROUNDS: u32 = 6;
    /// How many times it yields its time slice after spinning.
    pub(crate) const YIELD_ROUNDS: u32 = 2;
    /// How many times a registered thread yields before it parks when the
    /// other side is likely to serve it within a time slice or two: a
    /// sender waiting for room, a receiver of a bounded channel (whose
    /// producer alternates with its consumers). A wake-up from `park` costs
    /// tens of microseconds on a busy or virtualised machine; a yield lets
    /// the other side run on this core and costs about one. 256 as in
    /// kanal: with 64, a sync producer feeding tokio tasks outwaited its
    /// budget (a worker's wake-up) and parked for nearly every value (3-4x
    /// slower, BENCHMARKS.md History); still a fraction of a millisecond.
    pub(crate) const WAIT_YIELD_ROUNDS: u32 = 256;

    #[inline]
    pub(crate) fn spin_loop() {
        std::hint::spin_loop()
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::thread::{current, park, yield_now, Thread};

    /// loom's mutex, with poisoning ignored like `parking_lot`.
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// loom explores every spin, so the models do not spin at all.
    pub(crate) const SPIN_ROUNDS: u32 = 0;
    pub(crate) const YIELD_ROUNDS: u32 = 0;
    pub(crate) const WAIT_YIELD_ROUNDS: u32 = 0;

    pub(crate) fn spin_loop() {
        loom::hint::spin_loop()
    }

    /// loom does not model time: a timed park returns at once, and the
    /// caller treats it as timed out (see `Node::wait`), so the models see
    /// the timeout fire at every point loom chooses.
    pub(crate) fn park_timeout(_: std::time::Duration) {}
}

pub(crate) use imp::*;

/// Spins (exponentially longer rounds), then yields, until `ready()` is true
/// or the budget (a few microseconds) is spent. Returns the last `ready()`.
#[inline]
pub(crate) fn backoff(ready: impl FnMut() -> bool) -> bool {
    backoff_yielding(YIELD_ROUNDS, ready)
}

/// [`backoff`] with `yields` yields after the spins.
#[inline]
pub(crate) fn backoff_yielding(yields: u32, mut ready: impl FnMut() -> bool) -> bool {
    for round in 0..SPIN_ROUNDS + yields {
        if ready() {
            return true;
        }
        if round < SPIN_ROUNDS {
            for _ in 0..(1u32 << round) {
                spin_loop();
            }
        } else {
            yield_now();
        }
    }
    ready()
}

/// Like [`backoff`] without the yields: spins (exponentially longer rounds)
/// until `ready()` is true or the spin budget is spent.
#[inline]
pub(crate) fn spin(mut ready: impl FnMut() -> bool) -> bool {
    for round in 0..SPIN_ROUNDS {
        if ready() {
            return true;
        }
        for _ in 0..(1u32 << round) {
            spin_loop();
        }
    }
    ready()
}

/// Backs off after a lost compare-and-swap on a contended word: spins
/// exponentially longer each time (up to the spin budget), so that the
/// threads competing for it do not all retry at once. Returns the next
/// step. Out of line, so that the hot paths calling it stay small enough to
/// inline (inlined, it pushed `Blocks::push` out of line: callgrind 121 ->
/// 150 instructions per ready send+recv pair).
#[cold]
#[inline(never)]
pub(crate) fn contend(step: u32) -> u32 {
    for _ in 0..(1u32 << step.min(SPIN_ROUNDS)) {
        spin_loop();
    }
    (step + 1).min(SPIN_ROUNDS)
}

/// After a lost compare-and-swap on a claim word that was `expected` and is
/// `now`: [`contend`] if the word changed; a spurious failure of a weak
/// exchange (never on x86; 80% of them under Miri, where backing off made a
/// timed test overrun) is no contention and retries at once. Returns the
/// next step.
#[inline(always)]
pub(crate) fn lost_claim(expected: usize, now: usize, step: u32) -> u32 {
    if now != expected {
        contend(step)
    } else {
        step
    }
}

/// One wait of a loop that waits for another thread's next few
/// instructions (a claimed slot's stamp): spins (exponentially longer) at
/// first, then yields its time slice, in case that thread was preempted.
#[inline]
pub(crate) fn snooze(step: &mut u32) {
    if *step < SPIN_ROUNDS {
        for _ in 0..(1u32 << *step) {
            spin_loop();
        }
        *step += 1;
    } else {
        yield_now();
    }
}
