//! Waiters: one enum for a parked thread or a task's waker, and the signal a
//! waiter is notified through.
//!
//! A waiter registers an `Arc<Signal<T>>` in one of the core's lists. The core
//! notifies it by moving a value into (or out of) the signal's slot and marking
//! the signal `NOTIFIED`, both under the core lock; the actual wake-up (unpark
//! or `Waker::wake`) is returned to the caller and runs after the core lock is
//! released, from a [`Deferred`].

use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::task::Waker;
use std::time::Instant;

use crate::sync::{self, AtomicU8, Mutex, MutexGuard, Ordering, Thread};

/// Someone waiting on the channel: a blocked thread or a pending task.
pub(crate) enum Waiter {
    /// A thread in a blocking call; woken with `unpark`.
    Thread(Thread),
    /// A task whose future returned `Pending`; woken through its waker.
    Task(Waker),
}

impl Waiter {
    fn wake(self) {
        match self {
            Waiter::Thread(t) => t.unpark(),
            Waiter::Task(w) => w.wake(),
        }
    }
}

/// Not yet notified; the waiter may be spinning or polling.
const WAITING: u8 = 0;
/// Not yet notified; the waiting thread has parked (or is about to) and must
/// be unparked.
const PARKED: u8 = 1;
/// Notified: the slot holds the outcome.
const NOTIFIED: u8 = 2;

/// The data of a signal, under its own small lock (core lock first, then this
/// one, never the other way round).
pub(crate) struct Slot<T> {
    /// A value handed to a receiver, or carried by a waiting sender.
    pub(crate) value: Option<T>,
    /// Who to wake. Taken by the notifier.
    pub(crate) waiter: Option<Waiter>,
    /// A waiting async sender was granted a free slot of capacity.
    pub(crate) granted: bool,
}

/// One wait: shared by the waiter and the core's list.
pub(crate) struct Signal<T> {
    state: AtomicU8,
    slot: Mutex<Slot<T>>,
}

impl<T> Signal<T> {
    pub(crate) fn new(waiter: Waiter, value: Option<T>) -> Self {
        Signal {
            state: AtomicU8::new(WAITING),
            slot: Mutex::new(Slot {
                value,
                waiter: Some(waiter),
                granted: false,
            }),
        }
    }

    /// Re-arms a signal that nobody else references (see `State::signal`).
    pub(crate) fn reset(&mut self, waiter: Waiter, value: Option<T>) -> Option<Slot<T>> {
        self.state = AtomicU8::new(WAITING);
        let slot = self.slot.get_mut();
        let stale = Slot {
            value: slot.value.take(),
            waiter: slot.waiter.take(),
            granted: false,
        };
        *slot = Slot {
            value,
            waiter: Some(waiter),
            granted: false,
        };
        (stale.value.is_some() || stale.waiter.is_some()).then_some(stale)
    }

    pub(crate) fn slot(&self) -> MutexGuard<'_, Slot<T>> {
        self.slot.lock()
    }

    /// Notifies the waiter after `f` has updated the slot. Called by the core,
    /// under the core lock. Returns the wake-up to run once the core lock is
    /// released, and whether the waiter is a task.
    pub(crate) fn notify(&self, f: impl FnOnce(&mut Slot<T>)) -> (Option<Waiter>, bool) {
        let mut slot = self.slot.lock();
        f(&mut slot);
        let waiter = slot.waiter.take();
        // Under the slot lock, so that a task re-polling with a new waker
        // either sees NOTIFIED or has its new waker taken here.
        let prev = self.state.swap(NOTIFIED, Ordering::AcqRel);
        drop(slot);
        match waiter {
            Some(Waiter::Task(w)) => (Some(Waiter::Task(w)), true),
            // A thread that never parked sees NOTIFIED while spinning, or its
            // WAITING -> PARKED exchange fails: no unpark needed.
            Some(Waiter::Thread(t)) if prev == PARKED => (Some(Waiter::Thread(t)), false),
            _ => (None, false),
        }
    }

    pub(crate) fn is_notified(&self) -> bool {
        self.state.load(Ordering::Acquire) == NOTIFIED
    }

    /// For a pending task: true if notified; otherwise makes sure the newest
    /// waker is the one that will be woken.
    pub(crate) fn poll_notified(&self, waker: &Waker) -> bool {
        if self.is_notified() {
            return true;
        }
        let mut slot = self.slot.lock();
        if self.is_notified() {
            return true;
        }
        let stale = match &slot.waiter {
            Some(Waiter::Task(w)) if w.will_wake(waker) => None,
            _ => slot.waiter.replace(Waiter::Task(waker.clone())),
        };
        drop(slot);
        drop(stale);
        false
    }

    /// Blocks the calling thread until notified or until `deadline`. Returns
    /// true if notified. Spins briefly, then parks; the notifier unparks only
    /// a thread that has parked.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> bool {
        if sync::backoff(|| self.is_notified()) {
            return true;
        }
        if self
            .state
            .compare_exchange(WAITING, PARKED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return true;
        }
        loop {
            match deadline {
                None => sync::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return self.is_notified();
                    }
                    sync::park_timeout(deadline - now);
                }
            }
            if self.is_notified() {
                return true;
            }
        }
    }

    /// Empties the slot once the wait is over, so that the signal can be
    /// reused; the caller drops what comes back outside the core lock.
    pub(crate) fn take(&self) -> Slot<T> {
        let mut slot = self.slot.lock();
        Slot {
            value: slot.value.take(),
            waiter: slot.waiter.take(),
            granted: std::mem::take(&mut slot.granted),
        }
    }
}

/// Work that must wait until the core lock is released: wake-ups, and values
/// and wakers to drop. Collected under the lock, run by `Drop` (which
/// `Chan::locked` arranges to happen after the guard is gone). The common
/// case (one wake-up) stays inline; the rare rest (disconnection, several
/// wake-ups, a stale slot of a reused signal) goes in a box.
pub(crate) struct Deferred<T> {
    wake: Option<Waiter>,
    rest: Option<Box<Rest<T>>>,
}

struct Rest<T> {
    wakes: Vec<Waiter>,
    values: VecDeque<T>,
    slots: Vec<Slot<T>>,
}

impl<T> Deferred<T> {
    #[inline]
    pub(crate) fn new() -> Self {
        Deferred {
            wake: None,
            rest: None,
        }
    }

    fn rest(&mut self) -> &mut Rest<T> {
        self.rest.get_or_insert_with(|| {
            Box::new(Rest {
                wakes: Vec::new(),
                values: VecDeque::new(),
                slots: Vec::new(),
            })
        })
    }

    pub(crate) fn wake(&mut self, waiter: Option<Waiter>) {
        if let Some(w) = waiter {
            if self.wake.is_none() {
                self.wake = Some(w);
            } else {
                self.rest().wakes.push(w);
            }
        }
    }

    pub(crate) fn drop_values(&mut self, values: VecDeque<T>) {
        if !values.is_empty() {
            let rest = self.rest();
            if rest.values.is_empty() {
                rest.values = values;
            } else {
                rest.values.extend(values);
            }
        }
    }

    pub(crate) fn drop_slot(&mut self, slot: Slot<T>) {
        self.rest().slots.push(slot);
    }

    /// Runs the deferred work. The common case (at most one wake-up, nothing
    /// to drop) skips the drop glue of the rare parts.
    #[inline]
    pub(crate) fn run(mut self) {
        if self.rest.is_none() {
            let wake = self.wake.take();
            std::mem::forget(self);
            if let Some(w) = wake {
                w.wake();
            }
        }
    }
}

impl<T> Drop for Deferred<T> {
    fn drop(&mut self) {
        match self.rest.take() {
            // The common case: at most one wake-up.
            None => {
                if let Some(w) = self.wake.take() {
                    w.wake();
                }
            }
            Some(rest) => self.run_all(*rest),
        }
    }
}

impl<T> Deferred<T> {
    #[cold]
    fn run_all(&mut self, mut rest: Rest<T>) {
        // Every waiter gets its wake-up even if one `wake` panics: the guard
        // wakes the rest while that panic unwinds.
        struct WakeRest<I: Iterator<Item = Waiter>>(I);
        impl<I: Iterator<Item = Waiter>> Drop for WakeRest<I> {
            fn drop(&mut self) {
                for w in &mut self.0 {
                    w.wake();
                }
            }
        }
        let mut pending = WakeRest(self.wake.take().into_iter().chain(rest.wakes.drain(..)));
        for w in &mut pending.0 {
            w.wake();
        }
        drop(pending);

        // A panicking payload `Drop` propagates, and the values after it are
        // leaked instead of being dropped during unwinding (which would abort).
        let mut values = ManuallyDrop::new(std::mem::take(&mut rest.values));
        while let Some(v) = values.pop_front() {
            drop(v);
        }
        drop(ManuallyDrop::into_inner(values));
        let mut slots = ManuallyDrop::new(std::mem::take(&mut rest.slots));
        while let Some(s) = slots.pop() {
            drop(s);
        }
        drop(ManuallyDrop::into_inner(slots));
    }
}
