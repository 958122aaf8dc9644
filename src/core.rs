//! The one core that threads and tasks wait on together.
//!
//! A single mutex guards the queue, the endpoint counts, the FIFO list of
//! waiting receivers and the producer side's waiters (one slot for spmc, a
//! FIFO list for mpmc). Every notification decision is made under that lock;
//! every wake-up, and every drop of a value or a waker, happens after it is
//! released (see [`Deferred`]).
//!
//! Invariants (all under the lock):
//! - receivers wait only while the queue is empty, so a value sent while a
//!   receiver waits goes straight into that receiver's slot (direct handoff);
//! - `queue.len() + held + granted <= cap` for bounded channels with `cap > 0`:
//!   a value handed to a task is `held` until the task takes it (it may still
//!   come back if the task is cancelled), and a slot granted to a waiting async
//!   sender is `granted` until that sender uses or returns it;
//! - a waiting sender carries its value in its slot, except an async sender on
//!   a channel with `cap > 0`, which is granted a slot instead, so that a
//!   cancelled send never enqueues its value.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::error::{RecvError, RecvTimeoutError, SendTimeoutError, TryRecvError, TrySendError};
use crate::sync::{self, Arc, AtomicBool, Mutex, Ordering};
use crate::waiter::{Deferred, Signal, Waiter};

/// At most this many signals are kept for reuse.
const POOL_MAX: usize = 64;

/// The producer side's waiters.
enum SendWaiters<T> {
    /// spmc: the producer is exclusive (`&mut self`), so one slot suffices.
    One(Option<Arc<Signal<T>>>),
    /// mpmc: waiting senders in arrival order.
    Many(VecDeque<Arc<Signal<T>>>),
}

impl<T> SendWaiters<T> {
    fn push(&mut self, sig: Arc<Signal<T>>) {
        match self {
            SendWaiters::One(slot) => {
                debug_assert!(slot.is_none(), "an exclusive producer waits once");
                *slot = Some(sig);
            }
            SendWaiters::Many(list) => list.push_back(sig),
        }
    }

    fn front(&self) -> Option<&Arc<Signal<T>>> {
        match self {
            SendWaiters::One(slot) => slot.as_ref(),
            SendWaiters::Many(list) => list.front(),
        }
    }

    fn pop(&mut self) -> Option<Arc<Signal<T>>> {
        match self {
            SendWaiters::One(slot) => slot.take(),
            SendWaiters::Many(list) => list.pop_front(),
        }
    }

    fn remove(&mut self, sig: &Arc<Signal<T>>) -> bool {
        match self {
            SendWaiters::One(slot) => {
                let found = slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, sig));
                if found {
                    *slot = None;
                }
                found
            }
            SendWaiters::Many(list) => remove_from(list, sig),
        }
    }

    fn is_empty(&self) -> bool {
        self.front().is_none()
    }
}

fn remove_from<T>(list: &mut VecDeque<Arc<Signal<T>>>, sig: &Arc<Signal<T>>) -> bool {
    match list.iter().position(|s| Arc::ptr_eq(s, sig)) {
        Some(i) => {
            list.remove(i);
            true
        }
        None => false,
    }
}

/// Which producer side a channel has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flavor {
    /// One exclusive producer.
    Spmc,
    /// Cloneable producers.
    Mpmc,
}

pub(crate) struct State<T> {
    queue: VecDeque<T>,
    /// `None` = unbounded.
    cap: Option<usize>,
    senders: usize,
    receivers: usize,
    recv_waiters: VecDeque<Arc<Signal<T>>>,
    send_waiters: SendWaiters<T>,
    /// Values handed to waiting tasks and not yet taken (bounded, cap > 0).
    held: usize,
    /// Free slots granted to waiting async senders and not yet used.
    granted: usize,
    /// Signals kept for reuse, so that waiting does not allocate.
    pool: Vec<Arc<Signal<T>>>,
}

impl<T> State<T> {
    /// A room for one more value without exceeding the capacity.
    fn has_space(&self) -> bool {
        match self.cap {
            None => true,
            Some(cap) => self.queue.len() + self.held + self.granted < cap,
        }
    }

    fn holds_handoffs(&self) -> bool {
        holds_handoffs(self.cap)
    }

    /// A signal for a new wait, reused from the pool when one is free.
    fn signal(&mut self, waiter: Waiter, value: Option<T>, d: &mut Deferred<T>) -> Arc<Signal<T>> {
        for sig in self.pool.iter_mut() {
            // Unique: neither a waiter, a list nor a notifier still holds it.
            if let Some(free) = Arc::get_mut(sig) {
                if let Some(stale) = free.reset(waiter, value) {
                    d.drop_slot(stale);
                }
                return sig.clone();
            }
        }
        let sig = Arc::new(Signal::new(waiter, value));
        if self.pool.len() < POOL_MAX {
            self.pool.push(sig.clone());
        }
        sig
    }

    /// Gives `value` to the oldest waiting receiver.
    fn hand_off(&mut self, sig: Arc<Signal<T>>, value: T, d: &mut Deferred<T>) {
        let (wake, is_task) = sig.notify(|slot| slot.value = Some(value));
        if is_task && self.holds_handoffs() {
            self.held += 1;
        }
        d.wake(wake);
    }

    /// Sends without waiting: to a waiting receiver, else into the queue.
    pub(crate) fn try_push(
        &mut self,
        value: T,
        d: &mut Deferred<T>,
    ) -> Result<(), TrySendError<T>> {
        if self.receivers == 0 {
            return Err(TrySendError::Disconnected(value));
        }
        if let Some(sig) = self.recv_waiters.pop_front() {
            self.hand_off(sig, value, d);
            return Ok(());
        }
        // Older waiting senders go first.
        if self.send_waiters.is_empty() && self.has_space() {
            self.queue.push_back(value);
            return Ok(());
        }
        Err(TrySendError::Full(value))
    }

    /// Delivers a value whose room is already accounted for: to a waiting
    /// receiver, else to the back (or, for a returned value, the front) of
    /// the queue.
    fn deliver(&mut self, value: T, front: bool, d: &mut Deferred<T>) {
        match self.recv_waiters.pop_front() {
            Some(sig) => self.hand_off(sig, value, d),
            None if front => self.queue.push_front(value),
            None => self.queue.push_back(value),
        }
    }

    /// Room may have appeared: serve waiting senders, oldest first. A
    /// blocking (value-carrying) sender's value is moved in and the sender is
    /// done; an async sender is granted the slot and sends when polled.
    #[inline]
    fn refill(&mut self, d: &mut Deferred<T>) {
        if !self.send_waiters.is_empty() {
            self.serve_senders(d);
        }
    }

    #[inline(never)]
    fn serve_senders(&mut self, d: &mut Deferred<T>) {
        while self.has_space() {
            let Some(sig) = self.send_waiters.pop() else {
                return;
            };
            let mut carried = None;
            let (wake, _) = sig.notify(|slot| {
                carried = slot.value.take();
                slot.granted = carried.is_none();
            });
            match carried {
                Some(v) => self.deliver(v, false, d),
                None => self.granted += 1,
            }
            d.wake(wake);
        }
    }

    /// Receives without waiting: from the queue, else straight from a waiting
    /// sender's slot (rendezvous).
    pub(crate) fn try_pop(&mut self, d: &mut Deferred<T>) -> Result<T, TryRecvError> {
        if let Some(v) = self.queue.pop_front() {
            self.refill(d);
            return Ok(v);
        }
        if let Some(sig) = self.send_waiters.front() {
            if sig.slot().value.is_some() {
                let sig = self.send_waiters.pop().expect("front exists");
                let mut taken = None;
                let (wake, _) = sig.notify(|slot| taken = slot.value.take());
                d.wake(wake);
                if let Some(v) = taken {
                    return Ok(v);
                }
            }
        }
        if self.senders == 0 {
            Err(TryRecvError::Disconnected)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Registers a waiting receiver.
    fn wait_recv(&mut self, waiter: Waiter, d: &mut Deferred<T>) -> Arc<Signal<T>> {
        let sig = self.signal(waiter, None, d);
        self.recv_waiters.push_back(sig.clone());
        sig
    }

    /// Registers a waiting sender, carrying `value` if given.
    fn wait_send(
        &mut self,
        waiter: Waiter,
        value: Option<T>,
        d: &mut Deferred<T>,
    ) -> Arc<Signal<T>> {
        let sig = self.signal(waiter, value, d);
        self.send_waiters.push(sig.clone());
        sig
    }
}

/// The shared channel.
pub(crate) struct Chan<T> {
    state: Mutex<State<T>>,
    cap: Option<usize>,
    /// Whether the queue held a value when the lock was last released. Only
    /// a hint, read without the lock by a blocking receiver that spins
    /// before it registers as a waiter (the lock decides).
    nonempty: AtomicBool,
}

/// How an async receive is going.
pub(crate) struct RecvWait<T>(Option<Arc<Signal<T>>>);

/// How an async send is going. `value` is `None` once the value was moved
/// into the signal (rendezvous) or sent.
pub(crate) struct SendWait<T> {
    value: Option<T>,
    sig: Option<Arc<Signal<T>>>,
}

impl<T> Chan<T> {
    /// A channel with one sender and one receiver.
    ///
    /// # Panics
    ///
    /// If the storage of a bounded channel cannot be allocated.
    pub(crate) fn new(cap: Option<usize>, flavor: Flavor) -> Self {
        let mut queue = VecDeque::new();
        if let Some(cap) = cap {
            if queue.try_reserve_exact(cap).is_err() {
                panic!("amphi: cannot allocate a bounded channel of capacity {cap}");
            }
        }
        Chan {
            state: Mutex::new(State {
                queue,
                cap,
                senders: 1,
                receivers: 1,
                recv_waiters: VecDeque::new(),
                send_waiters: match flavor {
                    Flavor::Spmc => SendWaiters::One(None),
                    Flavor::Mpmc => SendWaiters::Many(VecDeque::new()),
                },
                held: 0,
                granted: 0,
                pool: Vec::new(),
            }),
            cap,
            nonempty: AtomicBool::new(false),
        }
    }

    /// Runs `f` under the core lock; the wake-ups and drops it defers run
    /// after the lock is released.
    #[inline]
    pub(crate) fn locked<R>(&self, f: impl FnOnce(&mut State<T>, &mut Deferred<T>) -> R) -> R {
        let (r, d) = self.collect(f);
        d.run();
        r
    }

    /// Runs `f` under the core lock and returns, with its result, the work
    /// it deferred; the caller runs that once the guard is gone.
    #[inline]
    fn collect<R>(&self, f: impl FnOnce(&mut State<T>, &mut Deferred<T>) -> R) -> (R, Deferred<T>) {
        let mut d = Deferred::new();
        let r = {
            let mut state = self.state.lock();
            let r = f(&mut state, &mut d);
            self.nonempty
                .store(!state.queue.is_empty(), Ordering::Relaxed);
            r
        };
        (r, d)
    }

    /// Like [`locked`](Self::locked), for an operation that takes a value out
    /// of the channel: if a deferred wake-up panics (a sender's waker), the
    /// value (`taken(r)`) goes back to the front of the channel before the
    /// panic goes on, instead of being dropped while it unwinds.
    #[inline]
    fn locked_take<R>(
        &self,
        f: impl FnOnce(&mut State<T>, &mut Deferred<T>) -> R,
        taken: impl FnOnce(R) -> Option<T>,
    ) -> R {
        let (r, d) = self.collect(f);
        if let Err(panic) = panic::catch_unwind(AssertUnwindSafe(|| d.run())) {
            if let Some(v) = taken(r) {
                self.locked(|st, d| st.deliver(v, true, d));
            }
            panic::resume_unwind(panic);
        }
        r
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        self.cap
    }

    // ----- endpoint counts and disconnection

    pub(crate) fn add_sender(&self) {
        self.locked(|st, _| st.senders += 1);
    }

    pub(crate) fn add_receiver(&self) {
        self.locked(|st, _| st.receivers += 1);
    }

    /// The last sender gone: every waiting receiver is woken, to drain what
    /// is left and then see the disconnection.
    pub(crate) fn drop_sender(&self) {
        self.locked(|st, d| {
            st.senders -= 1;
            if st.senders == 0 {
                while let Some(sig) = st.recv_waiters.pop_front() {
                    d.wake(sig.notify(|_| {}).0);
                }
            }
        });
    }

    /// The last receiver gone: buffered values are dropped now (after the
    /// lock), and every waiting sender is woken to get its value back.
    pub(crate) fn drop_receiver(&self) {
        self.locked(|st, d| {
            st.receivers -= 1;
            if st.receivers == 0 {
                d.drop_values(std::mem::take(&mut st.queue));
                while let Some(sig) = st.send_waiters.pop() {
                    d.wake(sig.notify(|_| {}).0);
                }
            }
        });
    }

    // ----- state queries

    pub(crate) fn len(&self) -> usize {
        self.locked(|st, _| st.queue.len())
    }

    pub(crate) fn is_full(&self) -> bool {
        self.locked(|st, _| !st.has_space())
    }

    pub(crate) fn sender_count(&self) -> usize {
        self.locked(|st, _| st.senders)
    }

    pub(crate) fn receiver_count(&self) -> usize {
        self.locked(|st, _| st.receivers)
    }

    // ----- sending

    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.locked(|st, d| st.try_push(value, d))
    }

    /// Blocking send; `deadline` of `None` waits for ever.
    pub(crate) fn send(
        &self,
        value: T,
        deadline: Option<Instant>,
    ) -> Result<(), SendTimeoutError<T>> {
        let sig = self.locked(|st, d| match st.try_push(value, d) {
            Ok(()) => Ok(None),
            Err(TrySendError::Disconnected(v)) => Err(SendTimeoutError::Disconnected(v)),
            // A free slot wins over an expired deadline, so check it second.
            Err(TrySendError::Full(v)) if deadline.is_some_and(|t| Instant::now() >= t) => {
                Err(SendTimeoutError::Timeout(v))
            }
            Err(TrySendError::Full(v)) => Ok(Some(st.wait_send(
                Waiter::Thread(sync::current()),
                Some(v),
                d,
            ))),
        })?;
        let Some(sig) = sig else {
            return Ok(());
        };
        let notified = sig.wait(deadline);
        // Taking the slot empties it for reuse; what it held decides.
        let slot = if notified {
            sig.take()
        } else {
            self.locked(|st, _| {
                let timed_out = st.send_waiters.remove(&sig);
                let slot = sig.take();
                if timed_out {
                    return Err(SendTimeoutError::Timeout(
                        slot.value.expect("a waiting sender carries its value"),
                    ));
                }
                Ok(slot)
            })?
        };
        match slot.value {
            // A receiver took it, or moved it into the queue.
            None => Ok(()),
            // Woken because every receiver is gone.
            Some(v) => Err(SendTimeoutError::Disconnected(v)),
        }
    }

    /// Sends a batch: as many values as possible per lock acquisition,
    /// waiting (through `send`) only when the channel is full.
    pub(crate) fn send_batch(&self, values: &mut VecDeque<T>) -> Result<(), ()> {
        loop {
            match self.try_send_batch(values) {
                Ok(None) => return Ok(()),
                Ok(Some(v)) => match self.send(v, None) {
                    Ok(()) => {}
                    Err(e) => {
                        values.push_front(e.into_inner());
                        return Err(());
                    }
                },
                Err(()) => return Err(()),
            }
        }
    }

    /// Pushes from the front of `values` under one lock until one does not
    /// fit; returns that one, or an error (values kept) if every receiver is
    /// gone.
    pub(crate) fn try_send_batch(&self, values: &mut VecDeque<T>) -> Result<Option<T>, ()> {
        self.locked(|st, d| {
            while let Some(v) = values.pop_front() {
                match st.try_push(v, d) {
                    Ok(()) => {}
                    Err(TrySendError::Full(v)) => return Ok(Some(v)),
                    Err(TrySendError::Disconnected(v)) => {
                        values.push_front(v);
                        return Err(());
                    }
                }
            }
            Ok(None)
        })
    }

    pub(crate) fn new_send_wait(value: T) -> SendWait<T> {
        SendWait {
            value: Some(value),
            sig: None,
        }
    }

    /// Polls an async send.
    pub(crate) fn poll_send(
        &self,
        w: &mut SendWait<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), T>> {
        if let Some(sig) = &w.sig {
            if !sig.poll_notified(cx.waker()) {
                return Poll::Pending;
            }
            let slot = sig.take();
            w.sig = None;
            if slot.granted {
                // A slot was reserved for us: use it now.
                let v = w
                    .value
                    .take()
                    .expect("a granted sender still has its value");
                return Poll::Ready(self.locked(|st, d| {
                    st.granted -= 1;
                    if st.receivers == 0 {
                        return Err(v);
                    }
                    st.deliver(v, false, d);
                    // If a waiting thread took the value, the granted slot
                    // is free again and belongs to the next waiting sender.
                    st.refill(d);
                    Ok(())
                }));
            }
            if let Some(v) = slot.value {
                // Rendezvous value still in the slot: disconnected.
                return Poll::Ready(Err(v));
            }
            if w.value.is_none() {
                // Rendezvous value taken by a receiver.
                return Poll::Ready(Ok(()));
            }
            // Woken by disconnection; fall through to see it.
        }
        let v = w.value.take().expect("SendFuture polled after completion");
        self.locked(|st, d| match st.try_push(v, d) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(TrySendError::Disconnected(v)) => Poll::Ready(Err(v)),
            Err(TrySendError::Full(v)) => {
                let waker = Waiter::Task(cx.waker().clone());
                // A rendezvous value must be where a receiver can take it;
                // otherwise it stays in the future until a slot is granted.
                if st.cap == Some(0) {
                    w.sig = Some(st.wait_send(waker, Some(v), d));
                } else {
                    w.value = Some(v);
                    w.sig = Some(st.wait_send(waker, None, d));
                }
                Poll::Pending
            }
        })
    }

    /// A dropped async send: its value is not enqueued, and a slot granted to
    /// it passes to the next waiting sender.
    #[inline]
    pub(crate) fn cancel_send(&self, w: &mut SendWait<T>) {
        if let Some(sig) = w.sig.take() {
            self.abandon_send(sig);
        }
    }

    fn abandon_send(&self, sig: Arc<Signal<T>>) {
        let slot = self.locked(|st, d| {
            st.send_waiters.remove(&sig);
            let slot = sig.take();
            if slot.granted {
                st.granted -= 1;
                st.refill(d);
            }
            slot
        });
        // Its value and waker are dropped here, after the lock.
        drop(slot);
    }

    // ----- receiving

    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        self.locked_take(|st, d| st.try_pop(d), Result::ok)
    }

    /// Takes up to `limit` values without waiting; returns how many.
    pub(crate) fn try_recv_many(&self, buf: &mut Vec<T>, limit: usize) -> usize {
        if limit == 0 {
            return 0;
        }
        self.locked(|st, d| {
            let mut n = 0;
            while n < limit {
                match st.try_pop(d) {
                    Ok(v) => buf.push(v),
                    Err(_) => break,
                }
                n += 1;
            }
            n
        })
    }

    /// `recv_many` before waiting: `Some(n)` if it is done without a wait
    /// (values were ready, or `limit` is 0).
    pub(crate) fn recv_many_ready(&self, buf: &mut Vec<T>, limit: usize) -> Option<usize> {
        let n = self.try_recv_many(buf, limit);
        (n > 0 || limit == 0).then_some(n)
    }

    /// `recv_many` after waiting for its first value: that one, then whatever
    /// else is ready, up to `limit`.
    pub(crate) fn recv_many_rest(
        &self,
        first: Result<T, RecvError>,
        buf: &mut Vec<T>,
        limit: usize,
    ) -> usize {
        match first {
            Ok(v) => {
                buf.push(v);
                1 + self.try_recv_many(buf, limit - 1)
            }
            Err(RecvError) => 0,
        }
    }

    /// Blocking receive; `deadline` of `None` waits for ever.
    pub(crate) fn recv(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        // A value often arrives within microseconds (a producer that is
        // running, a round trip): spin for it before paying for a registered
        // wait and a wake-up. Not on `bounded(0)`, where the sender must find
        // this receiver registered, nor with a deadline.
        if self.cap != Some(0) && deadline.is_none() {
            match self.try_recv() {
                Ok(v) => return Ok(v),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {
                    sync::backoff(|| self.nonempty.load(Ordering::Relaxed));
                }
            }
        }
        loop {
            let sig = self.locked_take(
                |st, d| match st.try_pop(d) {
                    Ok(v) => Ok(Err(v)),
                    Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                    Err(TryRecvError::Empty) if deadline.is_some_and(|t| Instant::now() >= t) => {
                        Err(RecvTimeoutError::Timeout)
                    }
                    Err(TryRecvError::Empty) => {
                        Ok(Ok(st.wait_recv(Waiter::Thread(sync::current()), d)))
                    }
                },
                |r| r.ok()?.err(),
            )?;
            let sig = match sig {
                Ok(sig) => sig,
                Err(v) => return Ok(v),
            };
            let slot = if sig.wait(deadline) {
                sig.take()
            } else {
                self.locked(|st, _| {
                    let timed_out = remove_from(&mut st.recv_waiters, &sig);
                    let slot = sig.take();
                    if timed_out {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    Ok(slot)
                })?
            };
            // A thread's handoff is never `held`: it cannot be cancelled.
            if let Some(v) = slot.value {
                return Ok(v);
            }
            // Woken by disconnection: drain or report it.
        }
    }

    pub(crate) fn new_recv_wait() -> RecvWait<T> {
        RecvWait(None)
    }

    /// Polls an async receive.
    pub(crate) fn poll_recv(
        &self,
        w: &mut RecvWait<T>,
        waker: &Waker,
    ) -> Poll<Result<T, TryRecvError>> {
        if let Some(sig) = &w.0 {
            if !sig.poll_notified(waker) {
                return Poll::Pending;
            }
            let slot = sig.take();
            w.0 = None;
            if let Some(v) = slot.value {
                if !self.holds_handoffs() {
                    return Poll::Ready(Ok(v));
                }
                let v = self.locked_take(
                    |st, d| {
                        st.held -= 1;
                        st.refill(d);
                        v
                    },
                    Some,
                );
                return Poll::Ready(Ok(v));
            }
            // Woken by disconnection: drain or report it.
        }
        self.locked_take(
            |st, d| match st.try_pop(d) {
                Ok(v) => Poll::Ready(Ok(v)),
                Err(TryRecvError::Disconnected) => Poll::Ready(Err(TryRecvError::Disconnected)),
                Err(TryRecvError::Empty) => {
                    w.0 = Some(st.wait_recv(Waiter::Task(waker.clone()), d));
                    Poll::Pending
                }
            },
            |r| match r {
                Poll::Ready(Ok(v)) => Some(v),
                _ => None,
            },
        )
    }

    /// A dropped async receive: an unused value handed to it goes to the next
    /// waiting receiver or back to the front of the queue, so nothing is lost
    /// and order holds.
    #[inline]
    pub(crate) fn cancel_recv(&self, w: &mut RecvWait<T>) {
        if let Some(sig) = w.0.take() {
            self.abandon_recv(sig);
        }
    }

    fn abandon_recv(&self, sig: Arc<Signal<T>>) {
        let slot = self.locked(|st, d| {
            let waiting = remove_from(&mut st.recv_waiters, &sig);
            let mut slot = sig.take();
            if let Some(v) = slot.value.take() {
                debug_assert!(!waiting);
                if st.holds_handoffs() {
                    st.held -= 1;
                }
                st.deliver(v, true, d);
                // If a waiting thread took the value, its room is free.
                st.refill(d);
            }
            slot
        });
        // Its waker is dropped here, after the lock.
        drop(slot);
    }

    fn holds_handoffs(&self) -> bool {
        holds_handoffs(self.cap)
    }

    /// One more sender, for a weak sender's upgrade, unless every sender is
    /// already gone: a disconnected channel never reconnects.
    pub(crate) fn try_add_sender(&self) -> bool {
        self.locked(|st, _| {
            if st.senders == 0 {
                false
            } else {
                st.senders += 1;
                true
            }
        })
    }
}

/// Whether a value handed to a task counts against the capacity until the
/// task takes it: on bounded channels that can hold values (`cap > 0`).
fn holds_handoffs(cap: Option<usize>) -> bool {
    matches!(cap, Some(cap) if cap > 0)
}
