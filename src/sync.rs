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

    /// The core's mutex, on [`RawLock`]: no poisoning, so a panic under the
    /// lock only releases it.
    #[derive(Default)]
    pub(crate) struct Mutex<T>(lock_api::Mutex<RawLock, T>);

    pub(crate) type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawLock, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(lock_api::Mutex::new(value))
        }

        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }

    #[cfg(test)]
    impl<T> Mutex<T> {
        /// Whether a waiter may be parked on the lock (`PARKED` is set).
        pub(crate) fn may_have_sleepers(&self) -> bool {
            // SAFETY: `raw` is unsafe only because unlocking through it
            // could break the guard's invariant; this reads the state.
            unsafe { self.0.raw() }.state.load(Ordering::Relaxed) & PARKED != 0
        }
    }

    const LOCKED: u8 = 1;
    /// Some thread may be parked on the lock.
    const PARKED: u8 = 2;
    /// How long a parked thread sleeps before it looks at the lock by
    /// itself, in case its wake-up was lost (see [`RawLock`]).
    const PARK_FOR: std::time::Duration = std::time::Duration::from_micros(100);

    /// `parking_lot`'s mutex algorithm (try, spin, then park in
    /// `parking_lot_core`'s queue for the lock's address), with a longer
    /// spin first ([`LOCK_SPIN_ROUNDS`]), and except that an
    /// unlock that sees no parked thread is a plain store instead of a
    /// compare-and-swap: one locked instruction per lock trip instead of
    /// two, as in kanal's spin lock, but without its waiters that never
    /// sleep (which measured 10-25% slower than `parking_lot` with more
    /// runnable threads than cores: BENCHMARKS.md History).
    ///
    /// The price: a waiter may set `PARKED` between an unlocker's look and
    /// its store, which then clears the bit without waking it. Such a
    /// waiter sleeps at most [`PARK_FOR`] before it looks again. The window
    /// is the few nanoseconds between two instructions of the unlocker, and
    /// `parking_lot_core` re-checks the state under its queue's lock before
    /// sleeping, so a lost wake-up needs both to fall in it.
    ///
    /// Until a waiter has ever parked on the lock (`parked_once`), the
    /// unlock does not read the lock byte at all: reading the byte its own
    /// compare-and-swap wrote a few dozen instructions earlier costs ~2.5 ns
    /// per lock trip on the development VM (a cancelled receive 21 -> 18
    /// ns, a cancelled send 23 -> 21; BENCHMARKS.md History), where reading
    /// another byte does not. The window above is then the one between the
    /// unlocker's read of `parked_once` and its store, and it can open only
    /// while the first waiter ever parks: from then on every unlock looks
    /// at the lock byte as before.
    pub(crate) struct RawLock {
        state: AtomicU8,
        /// Set, for good, before the first waiter ever sets `PARKED`.
        parked_once: AtomicBool,
    }

    // SAFETY: `lock` returns only once this thread set `LOCKED` (with
    // Acquire) where it was clear, and only the holder clears it (Release),
    // so one thread at a time holds the lock and each sees the previous
    // holder's writes.
    unsafe impl lock_api::RawMutex for RawLock {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: RawLock = RawLock {
            state: AtomicU8::new(0),
            parked_once: AtomicBool::new(false),
        };
        type GuardMarker = lock_api::GuardSend;

        #[inline]
        fn lock(&self) {
            if self
                .state
                .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                self.lock_slow();
            }
        }

        #[inline]
        fn try_lock(&self) -> bool {
            let state = self.state.load(Ordering::Relaxed);
            state & LOCKED == 0
                && self
                    .state
                    .compare_exchange(state, state | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        }

        #[inline]
        unsafe fn unlock(&self) {
            // Held, so the state is `LOCKED`, with `PARKED` if a waiter has
            // gone to sleep (others only set that bit, after `parked_once`).
            if !self.parked_once.load(Ordering::Relaxed)
                || self.state.load(Ordering::Relaxed) == LOCKED
            {
                self.state.store(0, Ordering::Release);
            } else {
                self.unlock_slow();
            }
        }
    }

    impl RawLock {
        #[cold]
        fn lock_slow(&self) {
            let mut spin = parking_lot_core::SpinWait::new();
            let mut state = self.state.load(Ordering::Relaxed);
            let mut round = 0;
            loop {
                if state & LOCKED == 0 {
                    match self.state.compare_exchange_weak(
                        state,
                        state | LOCKED,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return,
                        Err(now) => state = now,
                    }
                    continue;
                }
                if state & PARKED == 0 && round < LOCK_SPIN_ROUNDS {
                    for _ in 0..(1u32 << round) {
                        spin_loop();
                    }
                    round += 1;
                    state = self.state.load(Ordering::Relaxed);
                    continue;
                }
                if state & PARKED == 0 && spin.spin() {
                    state = self.state.load(Ordering::Relaxed);
                    continue;
                }
                if state & PARKED == 0 {
                    // Before `PARKED`, so that from now on unlocks look for
                    // it (a hint: a late look costs at most `PARK_FOR`).
                    self.parked_once.store(true, Ordering::Relaxed);
                    if let Err(now) = self.state.compare_exchange_weak(
                        state,
                        state | PARKED,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        state = now;
                        continue;
                    }
                }
                let addr = self as *const RawLock as usize;
                // SAFETY: the key is this lock's address, which only this
                // lock parks on; the callbacks neither panic nor call into
                // `parking_lot_core`.
                let _woken = unsafe {
                    parking_lot_core::park(
                        addr,
                        || self.state.load(Ordering::Relaxed) == LOCKED | PARKED,
                        || {},
                        |_, was_last| {
                            if was_last {
                                self.state.fetch_and(!PARKED, Ordering::Relaxed);
                            }
                        },
                        parking_lot_core::DEFAULT_PARK_TOKEN,
                        Some(std::time::Instant::now() + PARK_FOR),
                    )
                };
                #[cfg(test)]
                if matches!(_woken, parking_lot_core::ParkResult::Unparked(_)) {
                    super::tests::UNPARKED.fetch_add(1, Ordering::Relaxed);
                }
                // Woken, timed out, or the state changed before it slept:
                // try again.
                spin.reset();
                state = self.state.load(Ordering::Relaxed);
            }
        }

        #[cold]
        fn unlock_slow(&self) {
            let addr = self as *const RawLock as usize;
            // SAFETY: as in `lock_slow`.
            unsafe {
                parking_lot_core::unpark_one(addr, |result| {
                    // Unlocked; `PARKED` stays if others may still sleep.
                    let state = if result.have_more_threads { PARKED } else { 0 };
                    self.state.store(state, Ordering::Release);
                    parking_lot_core::DEFAULT_UNPARK_TOKEN
                });
            }
        }
    }

    /// How many rounds a blocked thread spins before it parks.
    pub(crate) const SPIN_ROUNDS: u32 = 6;
    /// How many rounds (1, 2, 4 ... 128 pauses, ~2 us on the development
    /// VM) a thread waiting for the core lock spins before
    /// `parking_lot`'s own few spins, its yields and the park. Its spins
    /// alone (14 pauses, ~0.1 us there) are shorter than a critical
    /// section that another thread's wake-up lengthens, so waiting tasks'
    /// workers and a sync producer yielded their time slices hundreds of
    /// times per run (kanal's lock spins ~1 us before it sleeps):
    /// BENCHMARKS.md History.
    const LOCK_SPIN_ROUNDS: u32 = 8;
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    /// Threads that add to a plain counter under the lock, some holding it
    /// long enough that the others spin out and park (and so that unlocks
    /// take the waking path): no increment is lost, no two holders overlap,
    /// and every waiter gets the lock (a lost wake-up only delays it).
    #[test]
    fn lock_excludes_and_wakes_parked_waiters() {
        const THREADS: usize = 4;
        let rounds = if cfg!(miri) { 20 } else { 2_000 };
        let lock = Arc::new(Mutex::new((0usize, false)));
        let overlap = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (lock, overlap) = (lock.clone(), overlap.clone());
                thread::spawn(move || {
                    for i in 0..rounds {
                        let mut g = lock.lock();
                        if g.1 {
                            overlap.store(true, Ordering::Relaxed);
                        }
                        g.1 = true;
                        if (i + t) % 100 == 0 {
                            // Long enough for the others to park.
                            thread::sleep(Duration::from_micros(200));
                        }
                        g.0 += 1;
                        g.1 = false;
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert!(
            !overlap.load(Ordering::Relaxed),
            "two threads held the lock"
        );
        assert_eq!(lock.lock().0, THREADS * rounds);
    }

    /// Parks that ended because an unlocker woke the thread (not a timeout).
    pub(super) static UNPARKED: AtomicUsize = AtomicUsize::new(0);

    /// A waiter that has gone to sleep is woken by the unlock, not only by
    /// its `PARK_FOR` timeout (which would hide a broken `unlock_slow`:
    /// every waiter would still get the lock, 100 us late). The holder
    /// unlocks while the waiter is parked; a waiter that happens to time
    /// out in that instant takes the lock without a wake-up, so the round is
    /// repeated until one wake-up is seen.
    #[test]
    #[cfg_attr(miri, ignore = "waits for real parks and wake-ups, up to 200 rounds")]
    fn unlock_wakes_a_parked_waiter() {
        let lock = Arc::new(Mutex::new(()));
        for _ in 0..200 {
            let held = lock.lock();
            let waiter = {
                let lock = lock.clone();
                thread::spawn(move || drop(lock.lock()))
            };
            // The waiter sets `PARKED` before it sleeps.
            while !lock.may_have_sleepers() {
                thread::yield_now();
            }
            drop(held);
            waiter.join().unwrap();
            if UNPARKED.load(Ordering::Relaxed) > 0 {
                return;
            }
        }
        panic!("no parked waiter was ever woken by an unlock");
    }
}
