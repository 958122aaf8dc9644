//! The one core that threads and tasks wait on together.
//!
//! A single mutex guards the endpoint counts, the FIFO list of waiting
//! receivers and the list of waiting senders. Every notification decision is
//! made under that lock; every wake-up, and every drop of a value or a waker,
//! happens after it is released (see [`Deferred`]). Waiters are intrusive
//! nodes ([`Node`]) that live in the blocked thread's stack frame or inside
//! the pinned future, so waiting never allocates.
//!
//! The values move through a lock-free [`Ring`] (`ring.rs`: an array of
//! slots when bounded, linked blocks when unbounded) on every channel except
//! `bounded(0)` (and bounded channels too large for an array's positions): a
//! ready send or receive touches only the ring, and the ring's flags send it
//! to the lock when a waiter or returned values need the core. Without a ring the queue is `State::queue`, under the lock.
//!
//! Invariants (under the lock unless said otherwise):
//! - receivers wait only while the channel is empty (a receiver sets the
//!   ring's `SLOW` flag before it looks, so no value enters the ring unseen
//!   while it registers). A value sent while receivers wait goes to the
//!   oldest: a *thread* is given a value at once (with a ring, the oldest one
//!   queued, the new value taking its place), and so is a *task* on unbounded
//!   and `bounded(1)` channels and those without a ring (`hands_tasks`; a
//!   cancelled receive passes it on); elsewhere a task is only woken and
//!   takes a value from the ring when it runs (so a cancelled receive leaves
//!   nothing to return), or, on `bounded(0)`, from the waiting sender;
//! - `queued + held + granted <= cap` for bounded channels with `cap > 0`,
//!   where `queued` counts the queue and the ring; a slot
//!   granted to a waiting async sender is `granted` until that sender uses or
//!   returns it (with cloneable senders also reserved in the ring, up to
//!   seven grants, so that the other senders' fast path leaves it free);
//!   `held` (a value handed to a task, on bounded channels that hand tasks
//!   their values) counts until the task takes it, and keeps the ring's
//!   `SLOW` flag set meanwhile, so that the producers count it;
//! - `held` is two counts: the hand-offs, under the lock (a plain write
//!   where the hand-off happens), and the takes, outside it, in one word
//!   with the "a sender waits" bit, so that a task taking its value
//!   releases the slot with one atomic addition, and takes the lock only if
//!   the bit is set. The bit is set (under the lock) while senders wait and
//!   a task holds a value: by a sender registering while `held > 0`, or by
//!   the hand-off that makes `held` non-zero while senders wait; a bit no
//!   longer needed stays set until a take finds nobody to serve. Setting it
//!   is a read-modify-write on the word the takes add to, so whichever comes
//!   second sees the other, and a freed slot always reaches a waiting
//!   sender. With a ring the same handshake is the ring's `SEND_WAITING`
//!   flag on its `head` word;
//! - a waiting sender carries its value in its node, except an async sender
//!   on a channel with `cap > 0`, which keeps it and is granted a slot
//!   instead, so that a cancelled send never enqueues its value.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::error::{RecvError, RecvTimeoutError, SendTimeoutError, TryRecvError, TrySendError};
use crate::ring::{self, Padded, Pop, Ring};
use crate::sync::{self, AtomicBool, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::waiter::{Deferred, List, Node, Notify, Waiter, GRANTED, NOTIFIED, WAITING};

/// Which producer side a channel has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flavor {
    /// One exclusive producer: at most one sender ever waits.
    Spmc,
    /// Cloneable producers.
    Mpmc,
}

/// In [`Chan::taken`]: a sender waits (bit 0); the count of taken values
/// is above it.
const SEND_WAITING: usize = 1;
/// One value in [`Chan::taken`] and [`State::handed`].
const ONE_HELD: usize = 2;

pub(crate) struct State<T> {
    /// The values, or, where the channel has a [`Ring`], only values
    /// returned by cancelled receives (older than anything in the ring).
    queue: VecDeque<T>,
    /// `usize::MAX` = unbounded.
    cap: usize,
    senders: usize,
    receivers: usize,
    recv_waiters: List<T>,
    send_waiters: List<T>,
    /// Free slots granted to waiting async senders and not yet used.
    granted: usize,
    /// Grants taken back by a panicking wake-up path (see `put_back`): the
    /// next granted sender to look finds its grant void.
    revoked: usize,
    /// Values handed to tasks (only where `Chan::holds`), in `ONE_HELD`
    /// units, wrapping: those not yet taken are `handed - taken`
    /// ([`Chan::held`]). Counted here, under the lock, where a hand-off
    /// happens, so that it needs no read-modify-write; the tasks count
    /// their takes without the lock, in [`Chan::taken`].
    handed: usize,
}

/// What an async send tried before `Chan::poll_send_slow`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tried {
    /// Nothing: registered, or the channel has no ring.
    Nothing,
    /// The ring's fast path, which failed.
    Ring,
}

/// The end of the channel a handle belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum End {
    Send,
    Recv,
}

/// The shared channel.
pub(crate) struct Chan<T> {
    state: Mutex<State<T>>,
    /// `taken * ONE_HELD | SEND_WAITING`, wrapping: values handed to tasks
    /// that their tasks have taken (only where `holds`; the hand-offs are
    /// [`State::handed`]), and whether a sender waits. A take adds to it
    /// with one read-modify-write, which also tells the taker whether it
    /// must serve a sender.
    taken: AtomicUsize,
    cap: Option<usize>,
    /// A waiting task is handed its value in its node, rather than woken to
    /// take it from the ring: without a ring, and on rings where that keeps
    /// the fast path (see `new`).
    hands_tasks: bool,
    /// Handed-off values count against the capacity (`cap > 0` bounded and
    /// `hands_tasks`).
    holds: bool,
    /// Whether the queue holds a value: a hint, read without the lock by a
    /// blocking receiver that spins briefly before it registers (the lock
    /// decides). Written only when it changes, on a line of its own, so
    /// spinning receivers are disturbed only by a real change.
    nonempty: Padded<AtomicBool>,
    /// Whether the last async send had to wait: a hint that lets the next
    /// one clone its waker before it takes the lock, and so register in one
    /// lock trip. Written only by async senders, only when it changes.
    full: Padded<AtomicBool>,
    /// On `bounded(0)`: a blocking receiver (a thread) waits, so a send
    /// would hand it its value at once. The mirror of
    /// `thread_sender_waits`, for async senders that spin
    /// ([`spin_for_room`](Self::spin_for_room)), written likewise.
    thread_receiver_waits: Padded<AtomicBool>,
    /// On `bounded(0)`: a blocking sender (a thread) waits with its value.
    /// A hint for async receivers that spin for it
    /// ([`spin_for_value`](Self::spin_for_value)), written under the lock
    /// only when it changes, and only while a thread sends, so that tasks
    /// alone never write it; it may stay set after a sender gave up (a
    /// spinning receiver then just takes the lock sooner).
    thread_sender_waits: Padded<AtomicBool>,
    flavor: Flavor,
    /// Blocking sender handles alive (`Sender`s, not `AsyncSender`s). While
    /// there are any, values most likely come from a thread of its own, so
    /// an async receive that finds the ring empty spins briefly for the
    /// next one before it waits ([`spin_for_value`](Self::spin_for_value)).
    /// A hint that orders nothing, so a plain `std` atomic (loom need not
    /// explore it), changed only when a handle is made, converted or
    /// dropped.
    blocking_senders: std::sync::atomic::AtomicUsize,
    /// Blocking receiver handles alive: the mirror of `blocking_senders`,
    /// for async sends that find no room ([`spin_for_room`](Self::spin_for_room)).
    blocking_receivers: std::sync::atomic::AtomicUsize,
    /// The data path outside the lock (`ring.rs`); `None` on `bounded(0)`.
    ring: Option<Ring<T>>,
    /// The ring's fast path for this channel's shape and kind of producer
    /// (`Ring::pusher`), chosen once, so that a send makes one direct call
    /// instead of testing both on every value.
    push: ring::Push<T>,
}

type Guard<'a, T> = MutexGuard<'a, State<T>>;

/// A future's waiter node and whether it is in use (linked, or notified and
/// not yet looked at).
///
/// The node is made in place the first time it is needed (when the future
/// waits), not when the future is created: a future that never waits stays
/// cheap to create and to move (a fully initialised node, copied right after
/// being written field by field, stalls on store forwarding).
struct WaitNode<T> {
    node: MaybeUninit<Node<T>>,
    init: bool,
    registered: bool,
}

impl<T> WaitNode<T> {
    fn new() -> Self {
        WaitNode {
            node: MaybeUninit::uninit(),
            init: false,
            registered: false,
        }
    }

    /// The node (made on first use) and the flag.
    fn project(&mut self) -> (Slot<'_, T>, &mut bool) {
        // SAFETY: the two fields of this wait, which its owner keeps pinned.
        let slot = unsafe { Slot::new(&mut self.node, &mut self.init) };
        (slot, &mut self.registered)
    }
}

impl<T> Drop for WaitNode<T> {
    fn drop(&mut self) {
        debug_assert!(!self.registered, "a wait is cancelled before it is dropped");
        if self.init {
            // SAFETY: initialised, and no longer linked (its owner cancelled
            // the wait first), so nobody else refers to it.
            unsafe { self.node.assume_init_drop() };
        }
    }
}

/// How an async receive is going.
pub(crate) struct RecvWait<T>(WaitNode<T>);

/// How an async send is going. `value` is the value while the future holds
/// it (not while it waits in its node on `bounded(0)`).
pub(crate) struct SendWait<T> {
    wait: WaitNode<T>,
    value: Option<T>,
}

/// A pinned wait's node, made in place on first use.
pub(crate) struct Slot<'a, T> {
    node: *mut MaybeUninit<Node<T>>,
    init: *mut bool,
    _wait: PhantomData<&'a mut Node<T>>,
}

impl<'a, T> Slot<'a, T> {
    /// # Safety
    ///
    /// `node` and `init` are the fields of one pinned wait, borrowed for `'a`.
    unsafe fn new(node: &'a mut MaybeUninit<Node<T>>, init: &'a mut bool) -> Self {
        Slot {
            node,
            init,
            _wait: PhantomData,
        }
    }
}

impl<T> Slot<'_, T> {
    /// Links this wait's task node at the back of `list` with `waker`. A
    /// node not made yet is made in place already linked, each field
    /// written once, rather than made, then given its waker and links.
    ///
    /// # Safety
    ///
    /// Under the core lock; the node is not linked, and its wait is pinned
    /// in a future whose `Drop` unlinks it (I2, I3).
    #[inline(always)]
    unsafe fn link_task(&self, list: &mut List<T>, waker: Waker) {
        // SAFETY: the fields are borrowed for the slot's life (`Slot::new`);
        // a node not made yet has no reference to it (see `deref`), and the
        // caller's contract covers the rest.
        unsafe {
            if !*self.init {
                let node = (*self.node).write(Node::task_for_back(list, waker));
                *self.init = true;
                list.link_made(node);
            } else {
                let node = (*self.node).assume_init_ref();
                node.install_waker(waker);
                list.push_back(node);
            }
        }
    }
}

impl<T> std::ops::Deref for Slot<'_, T> {
    type Target = Node<T>;

    fn deref(&self) -> &Node<T> {
        // SAFETY: the fields are borrowed for the slot's life (`Slot::new`).
        // The node is written only while `init` is false, before any
        // reference to it exists; from then on it is only borrowed, and it
        // never moves (the wait is pinned).
        unsafe {
            if !*self.init {
                (*self.node).write(Node::task());
                *self.init = true;
            }
            (*self.node).assume_init_ref()
        }
    }
}

impl<T> RecvWait<T> {
    pub(crate) fn new() -> Self {
        RecvWait(WaitNode::new())
    }

    pub(crate) fn is_registered(&self) -> bool {
        self.0.registered
    }

    /// Whether this registered wait is over: `None` while it waits;
    /// otherwise the value handed to it, if any, and the wait is done (no
    /// longer registered).
    #[inline]
    fn take_notified(self: Pin<&mut Self>) -> Option<Option<T>> {
        let (node, registered) = self.project();
        Self::finish(&node, registered)
    }

    /// [`take_notified`](Self::take_notified) on a projected wait.
    #[inline]
    fn finish(node: &Node<T>, registered: &mut bool) -> Option<Option<T>> {
        debug_assert!(*registered);
        // A receive node is only ever waiting or notified.
        if node.state() != NOTIFIED {
            return None;
        }
        // SAFETY: notified (Acquire): the notifier wrote the node under the
        // lock, unlinked it and is done with it (I3).
        let v = unsafe {
            node.reset();
            node.take_value()
        };
        *registered = false;
        Some(v)
    }

    /// The fields of a pinned wait.
    fn project(self: Pin<&mut Self>) -> (Slot<'_, T>, &mut bool) {
        // SAFETY: the node is never moved out of the pinned wait.
        unsafe { self.get_unchecked_mut() }.0.project()
    }
}

impl<T> SendWait<T> {
    pub(crate) fn new(value: Option<T>) -> Self {
        SendWait {
            wait: WaitNode::new(),
            value,
        }
    }

    /// Whether this wait is still to send a value.
    pub(crate) fn is_idle(&self) -> bool {
        !self.wait.registered && self.value.is_none()
    }

    /// Re-arms a finished wait with the next value.
    pub(crate) fn set_value(self: Pin<&mut Self>, value: T) {
        let (_, slot, registered) = self.project();
        debug_assert!(!*registered && slot.is_none());
        *slot = Some(value);
    }

    fn project(self: Pin<&mut Self>) -> (Slot<'_, T>, &mut Option<T>, &mut bool) {
        // SAFETY: the node is never moved out of the pinned wait; the value
        // is a plain field, not structurally pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let (slot, registered) = this.wait.project();
        (slot, &mut this.value, registered)
    }
}

impl<T> State<T> {
    #[inline]
    fn nobody_waits(&self) -> bool {
        self.recv_waiters.is_empty() && self.send_waiters.is_empty()
    }
}

impl<T> Chan<T> {
    /// A channel with one sender and one receiver.
    ///
    /// # Panics
    ///
    /// If the storage of a bounded channel cannot be allocated.
    pub(crate) fn new(cap: Option<usize>, flavor: Flavor) -> Self {
        let ring = match cap {
            Some(c) if c > 0 && c <= ring::MAX_CAP => {
                Some(Ring::bounded(c, flavor == Flavor::Mpmc))
            }
            Some(_) => None,
            None => Some(Ring::unbounded()),
        };
        let hands_tasks = ring.is_none() || matches!(cap, None | Some(1));
        let mut queue = VecDeque::new();
        if let (Some(cap), None) = (cap, &ring) {
            if queue.try_reserve_exact(cap).is_err() {
                panic!("amphi: cannot allocate a bounded channel of capacity {cap}");
            }
        }
        Chan {
            state: Mutex::new(State {
                queue,
                cap: cap.unwrap_or(usize::MAX),
                senders: 1,
                receivers: 1,
                recv_waiters: List::new(),
                send_waiters: List::new(),
                granted: 0,
                revoked: 0,
                handed: 0,
            }),
            taken: AtomicUsize::new(0),
            cap,
            // A task holding a value keeps the ring's `SLOW` flag set (the
            // producer's locked path counts `held`) until a locked send
            // sees it taken. On `bounded(1)` the channel is full then
            // anyway, and unbounded rings count no room; on a roomier ring
            // the producer would lose its fast path while the task has not
            // yet run, so there tasks are woken to take their value from the
            // ring instead.
            hands_tasks,
            holds: hands_tasks && matches!(cap, Some(c) if c > 0),
            nonempty: Padded(AtomicBool::new(false)),
            full: Padded(AtomicBool::new(false)),
            thread_sender_waits: Padded(AtomicBool::new(false)),
            thread_receiver_waits: Padded(AtomicBool::new(false)),
            flavor,
            blocking_senders: std::sync::atomic::AtomicUsize::new(0),
            blocking_receivers: std::sync::atomic::AtomicUsize::new(0),
            push: Ring::pusher(flavor == Flavor::Mpmc),
            ring,
        }
    }

    #[inline]
    fn lock(&self) -> Guard<'_, T> {
        self.state.lock()
    }

    pub(crate) fn capacity(&self) -> Option<usize> {
        self.cap
    }

    /// Room for one more value without exceeding the capacity, counted on
    /// the senders' side: by a sender, or for senders that wait. With
    /// cloneable senders and a ring, other senders are first kept off the
    /// ring's fast path (`SLOW`), so that the room found stays there for the
    /// lock holder; the one spmc producer is the caller or waits. So `tail`
    /// does not move meanwhile, and a bounded ring is counted with one read
    /// of each end ([`Ring::len_stable`]). A receiver's look, with the spmc
    /// producer perhaps sending, is [`has_space_now`](Self::has_space_now).
    #[inline]
    fn has_space(&self, st: &State<T>) -> bool {
        self.exclude_senders();
        let queued = match &self.ring {
            Some(ring) => {
                let n = ring.len_stable();
                // A full ring, what a sender about to wait most often finds,
                // needs no more counting.
                if n >= st.cap {
                    return false;
                }
                st.queue.len() + n
            }
            None => st.queue.len(),
        };
        self.fits(st, queued)
    }

    /// [`has_space`](Self::has_space) while the spmc producer may be
    /// sending: the ring is counted from a consistent pair of its ends.
    fn has_space_now(&self, st: &State<T>) -> bool {
        self.exclude_senders();
        self.fits(st, self.queued(st))
    }

    /// Room for one more value beside `queued` values in the channel (held
    /// and granted slots count too).
    #[inline]
    fn fits(&self, st: &State<T>, queued: usize) -> bool {
        queued + self.held(st) + st.granted < st.cap
    }

    /// Values handed to tasks and not yet taken (under the lock). A take
    /// not yet visible here counts as held: too little room is found, and
    /// the "a sender waits" handshake makes that take serve a sender that
    /// waits for it (see `mark_send_waiting`).
    #[inline]
    fn held(&self, st: &State<T>) -> usize {
        let taken = self.taken.load(Ordering::Relaxed) & !SEND_WAITING;
        st.handed.wrapping_sub(taken) / ONE_HELD
    }

    /// Values in the channel (in the queue and the ring).
    #[inline]
    fn queued(&self, st: &State<T>) -> usize {
        match &self.ring {
            Some(ring) => st.queue.len() + ring.len(),
            None => st.queue.len(),
        }
    }

    /// Whether a receiver would find a value now: a hint, without the lock.
    #[inline]
    fn looks_nonempty(&self) -> bool {
        match &self.ring {
            Some(ring) => ring.looks_nonempty(),
            None => self.nonempty.0.load(Ordering::Relaxed),
        }
    }

    // ----- the ring's flags (under the lock)

    /// With cloneable senders, the lock holder is about to count or use the
    /// ring's room: keep the other senders off the fast path (`SLOW`) until
    /// a producer's locked path settles it again. Nothing for spmc, whose one
    /// producer is here or blocked.
    #[inline]
    fn exclude_senders(&self) {
        if let Some(ring) = &self.ring {
            if self.flavor == Flavor::Mpmc {
                ring.set_slow();
            }
        }
    }

    /// The ring's fast path for whichever kind of producer the channel has.
    #[inline]
    fn ring_push(&self, ring: &Ring<T>, value: T) -> Result<(), T> {
        (self.push)(ring, value)
    }

    /// The ring's fast path, if the channel has a ring; `Err` gives the
    /// value back for the locked path.
    #[inline]
    fn fast_push(&self, value: T) -> Result<(), T> {
        match &self.ring {
            Some(ring) => self.ring_push(ring, value),
            None => Err(value),
        }
    }

    /// A receiver is about to look, under the lock, before it waits: from
    /// now on the ring gains no value without the lock, so what it finds
    /// holds until it is registered.
    #[inline]
    fn announce_receiver(&self) {
        if let Some(ring) = &self.ring {
            ring.set_slow();
        }
    }

    /// A producer's locked path, once it has sent: clears the ring's `SLOW`
    /// flag if nothing needs it any more (set by `announce_receiver`,
    /// `drop_receiver`, `push_front`, grants the ring cannot reserve, and
    /// for mpmc by `exclude_senders`; waiting senders keep it, so that they
    /// go first).
    #[inline]
    fn settle_slow(&self, st: &State<T>) {
        if let Some(ring) = &self.ring {
            if ring.is_slow()
                && st.recv_waiters.is_empty()
                && st.send_waiters.is_empty()
                && st.receivers != 0
                && st.queue.is_empty()
                && st.granted == ring.reserved()
                && self.held(st) == 0
            {
                ring.clear_slow();
            }
        }
    }

    /// A slot is granted to a waiting async sender (the caller has just
    /// counted the room). With cloneable senders the ring reserves it, so
    /// that the other senders' fast path leaves it free; past what the ring
    /// can reserve, the senders' sends are kept on the locked path, which
    /// counts the grant. For spmc the one producer is the one granted (or
    /// its sink, holding the grant): until it uses or returns the grant
    /// through the lock it has no other send in flight, so the fast path
    /// needs no fence around the room.
    ///
    /// On `bounded(1)` the grant takes the one slot, so no fast send could
    /// use the ring while it is outstanding anyway: nothing is reserved, and
    /// `SLOW` (set by the caller's count, and kept by `settle_slow` while a
    /// grant is not reserved) keeps the producers on the locked path, which
    /// counts the grant. That saves the reservation's two read-modify-writes
    /// on `tail` per grant, one per value where senders wait on every value.
    #[inline]
    fn grant(&self, st: &mut State<T>) {
        st.granted += 1;
        if let Some(ring) = &self.ring {
            if self.flavor == Flavor::Mpmc {
                debug_assert!(ring.is_slow(), "the caller counted the room");
                if st.cap > 1 && !ring.reserve() {
                    ring.set_slow();
                }
            }
        }
    }

    /// A grant is used or given back. If the ring reserves a slot for it,
    /// the slot is released, with `SLOW` set first, so that no producer's
    /// fast path takes it before the caller has used it or decided whom it
    /// goes to.
    #[inline]
    fn ungrant(&self, st: &mut State<T>) {
        st.granted -= 1;
        if let Some(ring) = &self.ring {
            if ring.reserved() > st.granted {
                ring.set_slow();
                ring.unreserve();
            }
        }
    }

    // ----- the queue, with its lock-free "non-empty" hint (under the lock)

    /// Out of line, and on a ring's path without a frame (a tail call to
    /// [`Ring::push_locked`]): in line it grew its callers' frames.
    #[inline(never)]
    fn push_back(&self, st: &mut State<T>, value: T) {
        if let Some(ring) = &self.ring {
            self.exclude_senders();
            ring.push_locked(value);
            return;
        }
        st.queue.push_back(value);
        if st.queue.len() == 1 {
            self.nonempty.0.store(true, Ordering::Relaxed);
        }
    }

    fn push_front(&self, st: &mut State<T>, value: T) {
        st.queue.push_front(value);
        if let Some(ring) = &self.ring {
            // Consumers must take it first, and the producer must count it.
            ring.set_head_flag(ring::RETURNED, true);
            ring.set_slow();
            return;
        }
        if st.queue.len() == 1 {
            self.nonempty.0.store(true, Ordering::Relaxed);
        }
    }

    #[inline(always)]
    fn pop_front(&self, st: &mut State<T>) -> Option<T> {
        if let Some(ring) = &self.ring {
            if let Some(v) = st.queue.pop_front() {
                if st.queue.is_empty() {
                    ring.set_head_flag(ring::RETURNED, false);
                }
                return Some(v);
            }
            // The caller serves a waiting producer (`refill`), so whether
            // the claim cleared `SEND_WAITING` does not matter here.
            return match ring.pop(true) {
                Pop::Value(v, _) => Some(v),
                Pop::Empty(_) | Pop::Slow | Pop::Again => None,
            };
        }
        let v = st.queue.pop_front();
        if v.is_some() && st.queue.is_empty() {
            self.nonempty.0.store(false, Ordering::Relaxed);
        }
        v
    }

    /// [`pop_front`](Self::pop_front) for a caller that pushes a value in
    /// its place before it unlocks: the ring's claim leaves `SEND_WAITING`
    /// set. The room this take frees is taken again at once, so it serves
    /// no sender; a consumer whose claim comes between the two must still
    /// find the flag and serve the waiting sender with the room it frees,
    /// which nobody else would count (the loom model
    /// `handoff_past_full_ring_leaves_waiting_sender_served`).
    fn pop_refilled(&self, st: &mut State<T>) -> Option<T> {
        match &self.ring {
            Some(ring) if st.queue.is_empty() => match ring.pop_refilled() {
                Pop::Value(v, _) => Some(v),
                Pop::Empty(_) | Pop::Slow | Pop::Again => None,
            },
            _ => self.pop_front(st),
        }
    }

    // ----- the notification path (all under the lock)

    /// Gives `value` to the receiver of a node just popped from
    /// `recv_waiters`. A thread gets a value at once, and so does a task
    /// where the channel `hands_tasks` (counted in `held` if it `holds`);
    /// with a ring, that is the oldest value in the channel, `value` taking
    /// its place. Elsewhere a task is only woken, with the value put where
    /// it takes it from when it runs (the front of the queue if `front`,
    /// else the ring): its room stays counted where it is, and a cancelled
    /// task leaves nothing to return.
    fn hand_off(
        &self,
        st: &mut State<T>,
        node: NonNull<Node<T>>,
        value: T,
        front: bool,
        d: &mut Deferred<T>,
    ) {
        // SAFETY: just popped under the lock: valid and ours to notify (I4).
        let n = unsafe { node.as_ref() };
        if !self.hands_tasks && n.is_task() {
            if front {
                self.push_front(st, value);
            } else {
                self.push_back(st, value);
            }
            Self::notify(node, d);
            return;
        }
        let value = if self.ring.is_some() && !front && self.queued(st) != 0 {
            // Older values wait for woken receivers: the receiver takes the
            // oldest and `value` goes to the back, so that no receiver gets
            // a value older than one it already has. The count is unchanged,
            // so this needs no room.
            match self.pop_refilled(st) {
                Some(oldest) => {
                    self.push_back(st, value);
                    oldest
                }
                // Taken by a running receiver meanwhile.
                None => value,
            }
        } else {
            value
        };
        if n.is_task() {
            if self.holds {
                st.handed = st.handed.wrapping_add(ONE_HELD);
                // Now a task's release may free a slot a sender waits for.
                self.sync_send_waiting(st);
            }
            // SAFETY: a task node is written under the lock (I3).
            unsafe {
                n.put_value(Some(value));
                d.wake(n.notify_task(NOTIFIED));
            }
        } else {
            // SAFETY: popped just now; published after the lock.
            unsafe { d.push(Notify::Thread(node, Some(value))) };
        }
    }

    /// The common case of [`try_push`](Self::try_push), without its
    /// generality: on a ring channel the oldest waiting receiver is a task,
    /// the channel has room for `value`, and no sender waits. Where the
    /// channel `hands_tasks` (and holds nothing, so the task gets `value`
    /// itself) the task is handed `value`; elsewhere `value` goes to the
    /// ring for the task to take when it runs. The task is notified, the
    /// lock released, then the task woken; otherwise `Err` gives the lock and
    /// `value` back for the general path.
    #[inline(always)]
    fn send_to_task<'a>(&'a self, mut st: Guard<'a, T>, value: T) -> Result<(), (Guard<'a, T>, T)> {
        let Some(ring) = &self.ring else {
            return Err((st, value));
        };
        if st.receivers == 0
            || !st.send_waiters.is_empty()
            || !st.recv_waiters.front().is_some_and(|n| n.is_task())
        {
            return Err((st, value));
        }
        // A receiver waits, so `SLOW` is set (`announce_receiver`; only a
        // producer's locked path clears it, once nobody waits): other
        // senders are already off the fast path and the room counted here
        // stays.
        debug_assert!(ring.is_slow());
        // Where tasks are handed values, only an empty channel hands one
        // over here (older values go first), and emptiness costs less to
        // see than the count.
        let room = if self.hands_tasks {
            st.queue.is_empty() && ring.is_empty_locked() && self.fits(&st, 0)
        } else {
            self.fits(&st, st.queue.len() + ring.len())
        };
        if !room {
            return Err((st, value));
        }
        let node = st.recv_waiters.pop_front().expect("front exists");
        // SAFETY: just popped under the lock: valid and ours to notify (I4).
        let n = unsafe { node.as_ref() };
        if self.hands_tasks {
            // Counted before the task can see its value and release it. No
            // sender waits, so the "a sender waits" bit needs no change (a
            // set one is stale: see `sync_send_waiting`).
            if self.holds {
                st.handed = st.handed.wrapping_add(ONE_HELD);
            }
            // SAFETY: a task node, under the lock (I3).
            unsafe { n.put_value(Some(value)) };
        } else {
            self.push_back(&mut st, value);
        }
        // SAFETY: a task node, under the lock (I3).
        let waker = unsafe { n.notify_task(NOTIFIED) };
        // A held value keeps `SLOW` set (`settle_slow` would only check).
        if !self.holds {
            self.settle_slow(&st);
        }
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Notifies a popped node without handing it anything.
    fn notify(node: NonNull<Node<T>>, d: &mut Deferred<T>) {
        // SAFETY: just popped under the lock: valid and ours to notify (I4).
        let n = unsafe { node.as_ref() };
        if n.is_task() {
            // SAFETY: a task node, under the lock (I3).
            d.wake(unsafe { n.notify_task(NOTIFIED) });
        } else {
            // SAFETY: popped just now; published after the lock.
            unsafe { d.push(Notify::Thread(node, None)) };
        }
    }

    /// Sends without waiting, past the fast path: to a waiting receiver, else
    /// into the queue; then settles the ring's `SLOW` flag.
    #[inline(always)]
    fn try_push(
        &self,
        st: &mut State<T>,
        value: T,
        d: &mut Deferred<T>,
    ) -> Result<(), TrySendError<T>> {
        let r = self.try_push_inner(st, value, d);
        self.settle_slow(st);
        r
    }

    fn try_push_inner(
        &self,
        st: &mut State<T>,
        value: T,
        d: &mut Deferred<T>,
    ) -> Result<(), TrySendError<T>> {
        if st.receivers == 0 {
            return Err(TrySendError::Disconnected(value));
        }
        // Where there is a ring, a waiting task is woken to take a value
        // from it, which needs room; a waiting thread is given one at once
        // (`hand_off`). Decided before a selecting thread is claimed.
        // Room only grows while the lock is held (consumers free slots
        // without it), so room found here is still there below.
        let room = self.ring.is_some() && self.has_space(st);
        if self.ring.is_some()
            && !room
            && st.recv_waiters.live_front().map_or(true, |n| n.is_task())
        {
            return Err(TrySendError::Full(value));
        }
        // On `bounded(0)` a waiting task cannot take a value now: it is woken
        // by a waiting sender instead (`wait_send`).
        if let Some(task) = st.recv_waiters.claim_front().map(|n| n.is_task()) {
            if task && st.cap == 0 {
                return Err(TrySendError::Full(value));
            }
            let node = st.recv_waiters.pop_front().expect("front exists");
            if st.cap == 0 && st.recv_waiters.is_empty() {
                Self::set_hint(&self.thread_receiver_waits, false);
            }
            self.hand_off(st, node, value, false, d);
            return Ok(());
        }
        // Older waiting senders go first.
        if st.send_waiters.is_empty() && (room || self.has_space(st)) {
            self.push_back(st, value);
            return Ok(());
        }
        Err(TrySendError::Full(value))
    }

    /// Delivers a value whose room is already accounted for: to a waiting
    /// receiver, else to the back (or, for a returned value, the front) of
    /// the queue.
    fn deliver(&self, st: &mut State<T>, value: T, front: bool, d: &mut Deferred<T>) {
        match st.recv_waiters.pop_claimed() {
            Some(node) => self.hand_off(st, node, value, front, d),
            None if front => self.push_front(st, value),
            None => self.push_back(st, value),
        }
    }

    /// Room may have appeared: serve waiting senders, oldest first.
    #[inline]
    fn refill(&self, st: &mut State<T>, d: &mut Deferred<T>) {
        if !st.send_waiters.is_empty() {
            self.serve_senders(st, d);
        }
    }

    /// A blocking sender's value is moved in and the sender is done; an async
    /// sender is granted the slot and sends when polled.
    #[inline(never)]
    fn serve_senders(&self, st: &mut State<T>, d: &mut Deferred<T>) {
        // Emptiness first: it is cheaper than counting the room, and an spmc
        // channel's one sender is served after one count.
        while !st.send_waiters.is_empty() {
            // The "a sender waits" flags go up before each count, as for a
            // registering sender: a consumer whose claim came after the
            // serving one's (which cleared the flag) and before this count
            // is in the count; one after it finds the flag and serves.
            // Raised only after the count, a slot freed in between would
            // reach nobody (the loom model `two_freed_slots_...`).
            self.mark_send_waiting(st, true);
            if !self.has_space(st) {
                break;
            }
            let Some(node) = st.send_waiters.pop_claimed() else {
                break;
            };
            // SAFETY: just popped under the lock: valid and ours (I4).
            let n = unsafe { node.as_ref() };
            if n.is_task() {
                self.grant(st);
                // SAFETY: a task node, under the lock (I3).
                d.wake(unsafe { n.notify_task(GRANTED) });
            } else {
                // SAFETY: a popped node's value is its notifier's.
                let v = unsafe { n.take_value() }.expect("a blocked sender carries its value");
                self.deliver(st, v, false, d);
                // SAFETY: popped just now; published after the lock.
                unsafe { d.push(Notify::Thread(node, None)) };
            }
        }
        self.sync_send_waiting(st);
    }

    /// Keeps the "a sender waits" bit set while senders wait and a task
    /// holds a value, writing only when it changes.
    ///
    /// The bit only matters while a task holds a value (a release then has
    /// a slot to give), so it is set only then: `held` grows only under the
    /// lock, and [`hand_off`](Self::hand_off) sets the bit when it makes
    /// `held` non-zero while senders wait. A channel whose senders wait
    /// while no task holds anything pays no atomic write for it.
    ///
    /// A bit no longer needed (no sender waits) stays set, as the ring's
    /// flag does: the next release finds it, takes the lock, serves nobody
    /// and clears it then ([`serve_sender_after`](Self::serve_sender_after)).
    /// A served sender most often waits again at its next send (on
    /// `bounded(1)` at every value), so clearing the bit at each serve and
    /// raising it at each wait would cost two read-modify-writes per value
    /// where a stale bit costs one lock trip when the senders stop waiting.
    fn sync_send_waiting(&self, st: &State<T>) {
        self.mark_send_waiting(st, !st.send_waiters.is_empty());
    }

    /// [`sync_send_waiting`](Self::sync_send_waiting) for `waiting`
    /// senders: also called with `true` before a sender that will most
    /// likely wait checks the room, so that one check suffices.
    #[inline]
    fn mark_send_waiting(&self, st: &State<T>, waiting: bool) {
        if let Some(ring) = &self.ring {
            // Set with a read-modify-write on `head`, before the caller
            // checks the room: a consumer's claim either comes first (the
            // check sees its room) or sees the flag and serves the sender.
            // Never cleared here: the next claim clears it (and finds
            // nobody to serve), which costs less than a write on the line
            // consumers compete for at every cancelled or served wait.
            if waiting {
                ring.set_head_flag(ring::SEND_WAITING, true);
            }
        }
        if waiting && self.taken.load(Ordering::Relaxed) & SEND_WAITING == 0 && self.held(st) != 0 {
            // A read-modify-write on the word the takes add to, before the
            // caller counts the room: a take either comes first (the count
            // sees it: `held`) or finds the bit and serves the sender.
            self.taken.fetch_or(SEND_WAITING, Ordering::AcqRel);
        }
    }

    /// [`try_pop`](Self::try_pop) when no sender waits, so that the take
    /// serves nobody and needs no deferred work; `None` if a sender waits.
    #[inline(always)]
    fn try_pop_alone(&self, st: &mut State<T>) -> Option<Result<T, TryRecvError>> {
        if !st.send_waiters.is_empty() {
            return None;
        }
        Some(match self.pop_front(st) {
            Some(v) => Ok(v),
            None if st.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        })
    }

    /// Receives without waiting, past the fast path: from the queue, else
    /// straight from a waiting sender's node (rendezvous).
    #[inline(always)]
    fn try_pop(&self, st: &mut State<T>, d: &mut Deferred<T>) -> Result<T, TryRecvError> {
        if let Some(v) = self.pop_front(st) {
            self.refill(st, d);
            return Ok(v);
        }
        if st.cap == 0 {
            if let Some(node) = st.send_waiters.pop_claimed() {
                self.sync_send_waiting(st);
                if st.send_waiters.is_empty() {
                    Self::set_hint(&self.thread_sender_waits, false);
                }
                // SAFETY: just popped under the lock: valid and ours (I4).
                let v = unsafe { node.as_ref().take_value() };
                Self::notify(node, d);
                return Ok(v.expect("a rendezvous sender carries its value"));
            }
        }
        if st.senders == 0 {
            Err(TryRecvError::Disconnected)
        } else {
            Err(TryRecvError::Empty)
        }
    }

    /// Links a sender's node (carrying its value on `bounded(0)` or when it
    /// is a thread), then makes sure it is not waiting for nothing: on
    /// `bounded(0)` the oldest waiting receiver (a task, or the value would
    /// have been handed over) is woken to take the value; otherwise room
    /// released by a task just now (the `held` handshake) is served at once.
    ///
    /// # Safety
    ///
    /// As for [`List::push_back`].
    unsafe fn wait_send(&self, st: &mut State<T>, node: &Node<T>, d: &mut Deferred<T>) {
        debug_assert!(self.flavor == Flavor::Mpmc || st.send_waiters.is_empty());
        // SAFETY: the caller's contract.
        unsafe { st.send_waiters.push_back(node) };
        // The "a sender waits" flags, after which a freed slot reaches the
        // node; room freed before them is served below.
        self.sync_send_waiting(st);
        if st.cap == 0 {
            if !node.is_task() {
                Self::set_hint(&self.thread_sender_waits, true);
            }
            if let Some(r) = st.recv_waiters.pop_claimed() {
                Self::notify(r, d);
            }
        } else if self.has_space(st) {
            self.serve_senders(st, d);
        }
    }

    /// Sets one of the `bounded(0)` "a thread waits" hints (under the
    /// lock), writing only when it changes: spinners on the other side read
    /// its line.
    #[inline]
    fn set_hint(hint: &Padded<AtomicBool>, on: bool) {
        if hint.0.load(Ordering::Relaxed) != on {
            hint.0.store(on, Ordering::Relaxed);
        }
    }

    /// A receiver woken without a value (on `bounded(0)`, to take a waiting
    /// sender's value; with a ring, to take a value from it) will not use
    /// the wake-up: pass it to the next waiting receiver while there is
    /// something to take.
    fn pass_wake(&self, st: &mut State<T>, d: &mut Deferred<T>) {
        if self.ring.is_some() {
            if self.queued(st) != 0 {
                if let Some(r) = st.recv_waiters.pop_claimed() {
                    Self::notify(r, d);
                }
            }
            return;
        }
        if st.cap != 0 || st.send_waiters.is_empty() {
            return;
        }
        let Some(r) = st.recv_waiters.pop_claimed() else {
            return;
        };
        // SAFETY: just popped under the lock: valid (I4).
        if unsafe { r.as_ref() }.is_task() {
            Self::notify(r, d);
        } else {
            // A thread takes the value at once.
            let v = self.try_pop(st, d).expect("a rendezvous sender waits");
            self.hand_off(st, r, v, false, d);
        }
    }

    /// Puts back a value taken by a receive whose deferred wake-up panicked,
    /// without exceeding the capacity: to a waiting receiver, else to the
    /// front of the queue, taking back a grant made for the room it left if
    /// that room is gone. Only if the granted sender has already used that
    /// room (it was polled in the meantime) is there no place for the value:
    /// then it is dropped, after the lock, rather than overfilling.
    fn put_back(&self, v: T) {
        let mut d = Deferred::new();
        let mut st = self.lock();
        let front_thread = st.recv_waiters.live_front().map(|n| !n.is_task());
        let fits = if front_thread.is_some() || self.has_space_now(&st) {
            true
        } else if st.granted > 0 {
            self.ungrant(&mut st);
            st.revoked += 1;
            true
        } else {
            false
        };
        let spill = if fits && (st.cap != 0 || front_thread == Some(true)) {
            self.deliver(&mut st, v, true, &mut d);
            None
        } else {
            Some(v)
        };
        drop(st);
        d.run();
        drop(spill);
    }

    /// Finishes a receive that took `v` and deferred `d`: if a wake-up in
    /// `d` (a sender's waker) panics, `v` goes back (see `put_back`) before
    /// the panic goes on.
    #[inline]
    fn finish_take(&self, v: T, d: Deferred<T>) -> T {
        if !d.may_panic() {
            d.run();
            return v;
        }
        self.guard_take(v, || d.run())
    }

    /// Runs `after` (user code, after the lock) for a receive that took
    /// `v`: if it panics, `v` goes back (see `put_back`) before the panic
    /// goes on.
    fn guard_take(&self, v: T, after: impl FnOnce()) -> T {
        match panic::catch_unwind(AssertUnwindSafe(after)) {
            Ok(()) => v,
            Err(p) => {
                self.put_back(v);
                panic::resume_unwind(p)
            }
        }
    }

    // ----- endpoint counts and disconnection

    pub(crate) fn add_sender(&self) {
        self.lock().senders += 1;
    }

    pub(crate) fn add_receiver(&self) {
        self.lock().receivers += 1;
    }

    /// The count of blocking handles at `end`.
    fn blocking_handles_at(&self, end: End) -> &std::sync::atomic::AtomicUsize {
        match end {
            End::Send => &self.blocking_senders,
            End::Recv => &self.blocking_receivers,
        }
    }

    /// A blocking handle at `end` is made or converted from an async one
    /// (`made`), or dropped or converted to an async one.
    pub(crate) fn count_blocking(&self, end: End, made: bool) {
        let n = self.blocking_handles_at(end);
        if made {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            n.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// How many blocking handles at `end` are alive (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn blocking_handles(&self, end: End) -> usize {
        self.blocking_handles_at(end)
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The last sender gone: every waiting receiver is woken, to drain what
    /// is left and then see the disconnection.
    pub(crate) fn drop_sender(&self) {
        let mut d = Deferred::new();
        let mut st = self.lock();
        st.senders -= 1;
        if st.senders == 0 {
            if let Some(ring) = &self.ring {
                ring.set_head_flag(ring::TX_GONE, true);
            }
            while let Some(node) = st.recv_waiters.pop_claimed() {
                Self::notify(node, &mut d);
            }
        }
        drop(st);
        d.run();
    }

    /// The last receiver gone: buffered values are dropped now (after the
    /// lock), and every waiting sender is woken to get its value back.
    pub(crate) fn drop_receiver(&self) {
        let mut d = Deferred::new();
        let mut st = self.lock();
        st.receivers -= 1;
        if st.receivers == 0 {
            let mut values = std::mem::take(&mut st.queue);
            if let Some(ring) = &self.ring {
                ring.set_slow();
                ring.set_head_flag(ring::RETURNED, false);
                while let Pop::Value(v, _) = ring.pop(true) {
                    values.push_back(v);
                }
            }
            d.drop_values(values);
            self.nonempty.0.store(false, Ordering::Relaxed);
            while let Some(node) = st.send_waiters.pop_claimed() {
                Self::notify(node, &mut d);
            }
            self.sync_send_waiting(&st);
        }
        drop(st);
        d.run();
    }

    // ----- state queries

    pub(crate) fn len(&self) -> usize {
        let st = self.lock();
        self.queued(&st)
    }

    pub(crate) fn is_full(&self) -> bool {
        let st = self.lock();
        !self.has_space_now(&st)
    }

    pub(crate) fn sender_count(&self) -> usize {
        self.lock().senders
    }

    pub(crate) fn receiver_count(&self) -> usize {
        self.lock().receivers
    }

    // ----- sending

    #[inline]
    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        match self.fast_push(value) {
            Ok(()) => Ok(()),
            Err(value) => self.try_send_locked(value),
        }
    }

    /// `try_send` past the ring's fast path: under the lock.
    #[inline(never)]
    fn try_send_locked(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut st = self.lock();
        if st.nobody_waits() && st.receivers != 0 {
            let r = if self.has_space(&st) {
                self.push_back(&mut st, value);
                Ok(())
            } else {
                Err(TrySendError::Full(value))
            };
            self.settle_slow(&st);
            return r;
        }
        match self.send_to_task(st, value) {
            Ok(()) => Ok(()),
            Err((st, value)) => self.try_send_general(st, value),
        }
    }

    /// [`try_send_locked`](Self::try_send_locked) past its two common
    /// cases; out of line, so that their frame holds no deferred work.
    #[inline(never)]
    fn try_send_general(&self, mut st: Guard<'_, T>, value: T) -> Result<(), TrySendError<T>> {
        let mut d = Deferred::new();
        let r = self.try_push(&mut st, value, &mut d);
        drop(st);
        d.run();
        r
    }

    /// Blocking send; `deadline` of `None` waits for ever.
    #[inline]
    pub(crate) fn send(
        &self,
        value: T,
        deadline: Option<Instant>,
    ) -> Result<(), SendTimeoutError<T>> {
        match self.fast_push(value) {
            Ok(()) => Ok(()),
            Err(value) => self.send_locked(value, deadline),
        }
    }

    /// `send` past the ring's fast path.
    #[inline(never)]
    fn send_locked(&self, value: T, deadline: Option<Instant>) -> Result<(), SendTimeoutError<T>> {
        let value = match &self.ring {
            Some(ring) => match value {
                // Full: a running consumer frees a slot within microseconds
                // (as in `recv`). Spin for it before paying for a registered
                // wait and the locked hand-over of every value after it.
                // `bounded(1)` too: there the registered wait put each value
                // through the lock twice, and that cost more than the spin
                // takes from a consumer sharing the core (A/B in
                // BENCHMARKS.md).
                v if deadline.is_none() && self.cap.is_some() && !ring.is_slow() => {
                    sync::spin(|| ring.looks_free());
                    match self.ring_push(ring, v) {
                        Ok(()) => return Ok(()),
                        Err(v) => v,
                    }
                }
                v => v,
            },
            None => value,
        };
        let mut st = self.lock();
        if st.nobody_waits() && st.receivers != 0 && self.has_space(&st) {
            self.push_back(&mut st, value);
            self.settle_slow(&st);
            return Ok(());
        }
        match self.send_to_task(st, value) {
            Ok(()) => Ok(()),
            Err((st, value)) => self.send_slow(st, value, deadline),
        }
    }

    #[inline(never)]
    fn send_slow(
        &self,
        mut st: Guard<'_, T>,
        value: T,
        deadline: Option<Instant>,
    ) -> Result<(), SendTimeoutError<T>> {
        let node = std::pin::pin!(Node::thread());
        let node = node.as_ref().get_ref();
        let mut d = Deferred::new();
        match self.try_push(&mut st, value, &mut d) {
            Ok(()) => {
                drop(st);
                d.run();
                return Ok(());
            }
            Err(TrySendError::Disconnected(v)) => return Err(SendTimeoutError::Disconnected(v)),
            // A free slot wins over an expired deadline, so check it second.
            Err(TrySendError::Full(v)) if deadline.is_some_and(|t| Instant::now() >= t) => {
                return Err(SendTimeoutError::Timeout(v));
            }
            Err(TrySendError::Full(v)) => {
                // SAFETY: the node is linked now, under the lock; it is
                // pinned in this frame, which `wait_thread` leaves only once
                // the node is unlinked and published.
                unsafe {
                    node.put_value(Some(v));
                    self.wait_send(&mut st, node, &mut d);
                }
            }
        }
        drop(st);
        d.run();
        let notified = self.wait_thread(node, true, deadline);
        // SAFETY: the wait is over: the node is unlinked and published.
        let left = unsafe { node.take_value() };
        match (notified, left) {
            // A receiver took it, or moved it into the queue.
            (true, None) => Ok(()),
            // Woken because every receiver is gone.
            (true, Some(v)) => Err(SendTimeoutError::Disconnected(v)),
            (false, v) => Err(SendTimeoutError::Timeout(
                v.expect("a waiting sender carries its value"),
            )),
        }
    }

    /// Waits on a linked thread node until it is notified (true) or, at
    /// `deadline`, takes it back (false); if a notifier popped it meanwhile,
    /// waits for that notifier to publish and reports it notified. Returns
    /// only once no notifier will touch the node again, also on unwind.
    fn wait_thread(&self, node: &Node<T>, sender: bool, deadline: Option<Instant>) -> bool {
        struct Withdraw<'a, T> {
            chan: &'a Chan<T>,
            node: &'a Node<T>,
            sender: bool,
        }
        impl<T> Drop for Withdraw<'_, T> {
            fn drop(&mut self) {
                self.chan.withdraw(self.node, self.sender);
            }
        }
        let guard = Withdraw {
            chan: self,
            node,
            sender,
        };
        // A receiver of an unbounded channel waits for a producer that runs
        // freely: yielding to it would only take its CPU, so it parks soon.
        // A deadline is kept by `park_timeout`, not by a run of yields.
        let yields = if deadline.is_none() && (sender || self.cap.is_some()) {
            sync::WAIT_YIELD_ROUNDS
        } else {
            sync::YIELD_ROUNDS
        };
        let notified = node.wait(deadline, yields);
        std::mem::forget(guard);
        notified || !self.withdraw(node, sender)
    }

    /// Unlinks a thread node whose wait ended without a notification; true
    /// if it was still linked. Otherwise a notifier popped it: wait until
    /// that notifier has published it.
    fn withdraw(&self, node: &Node<T>, sender: bool) -> bool {
        let removed = {
            let mut st = self.lock();
            // SAFETY: the node is valid (its owner is here) and, if linked,
            // linked in the list its role names.
            let removed = unsafe {
                if sender {
                    st.send_waiters.remove(node)
                } else {
                    st.recv_waiters.remove(node)
                }
            };
            if removed && sender {
                self.sync_send_waiting(&st);
                if st.send_waiters.is_empty() {
                    Self::set_hint(&self.thread_sender_waits, false);
                }
            } else if removed && st.recv_waiters.is_empty() {
                Self::set_hint(&self.thread_receiver_waits, false);
            }
            removed
        };
        if !removed {
            node.wait_published();
        }
        removed
    }

    /// Sends a batch: through the ring's fast path while it takes values,
    /// else as many as possible per lock acquisition, waiting (through
    /// `send`) only when the channel is full.
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

    /// Pushes from the front of `values` (without the lock while the ring
    /// takes them, then, if a waiter needs the core, under one lock) until
    /// one does not fit; returns that one, or an error (values kept) if
    /// every receiver is gone.
    pub(crate) fn try_send_batch(&self, values: &mut VecDeque<T>) -> Result<Option<T>, ()> {
        // The ring's fast path first, as for a single send: no lock while it
        // takes values. A value it refuses for want of room alone (`SLOW`
        // clear: nobody waits, every receiver is there) goes back to the
        // caller, which sends it as a single send does, spinning for room
        // before it waits; a trip through the lock would only find the ring
        // full. Otherwise (a waiter needs the core) it goes on under the lock
        // with the rest.
        if let Some(ring) = &self.ring {
            // A run of an unbounded ring's positions claimed at once; a
            // single send where no run is taken (a block's last slot, a
            // bounded ring, a claim lost to another producer).
            let runs = ring.claims_runs();
            while !values.is_empty() {
                if runs && ring.push_many(values) > 0 {
                    continue;
                }
                let Some(v) = values.pop_front() else { break };
                if let Err(v) = self.fast_push(v) {
                    values.push_front(v);
                    break;
                }
            }
            if values.is_empty() {
                return Ok(None);
            }
            if !ring.is_slow() {
                return Ok(values.pop_front());
            }
        }
        let mut d = Deferred::new();
        let mut st = self.lock();
        let mut r = Ok(None);
        while let Some(v) = values.pop_front() {
            match self.try_push(&mut st, v, &mut d) {
                Ok(()) => {}
                Err(TrySendError::Full(v)) => {
                    r = Ok(Some(v));
                    break;
                }
                Err(TrySendError::Disconnected(v)) => {
                    values.push_front(v);
                    r = Err(());
                    break;
                }
            }
        }
        drop(st);
        d.run();
        r
    }

    /// Polls an async send. On `Ready(Err(v))` every receiver is gone.
    #[inline]
    pub(crate) fn poll_send(
        &self,
        mut w: Pin<&mut SendWait<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), T>> {
        // The ring's fast path first, unless the last async send had to
        // wait (the hint): everything else is out of line, so that this
        // path stays short.
        let mut missed = None;
        if let Some(ring) = &self.ring {
            let (_, value, registered) = w.as_mut().project();
            if !*registered && !self.full.0.load(Ordering::Relaxed) {
                if let Some(v) = value.take() {
                    match self.ring_push(ring, v) {
                        Ok(()) => return Poll::Ready(Ok(())),
                        Err(v) => missed = Some(v),
                    }
                }
            }
        }
        // One call site, so that this stays small enough to inline and its
        // result passes straight through.
        self.poll_send_missed(w, cx, missed)
    }

    /// [`poll_send`](Self::poll_send) past the ring's fast path: with the
    /// value its ring attempt `missed`, if it made one,
    /// [`poll_send_missed_ring`](Self::poll_send_missed_ring); an
    /// unregistered send the "full" hint kept off the ring, straight to
    /// its wait ([`wait_send_async`](Self::wait_send_async)); otherwise
    /// (registered, or no ring) [`poll_send_slow`](Self::poll_send_slow).
    #[inline(never)]
    fn poll_send_missed(
        &self,
        w: Pin<&mut SendWait<T>>,
        cx: &mut Context<'_>,
        missed: Option<T>,
    ) -> Poll<Result<(), T>> {
        // Every call in tail position, so that this saves no registers.
        match missed {
            Some(v) => self.poll_send_missed_ring(w, cx, v),
            // Unregistered, with a ring: the "full" hint kept it off the
            // ring, so it most likely waits.
            None if self.ring.is_some() && !w.wait.registered => self.wait_send_async(w, cx, true),
            None => self.poll_send_slow(w, cx, Tried::Nothing),
        }
    }

    /// An unregistered send whose ring attempt failed, with its value.
    /// Kept off the ring (`SLOW`: most often a receiver waits), one locked
    /// attempt, as [`poll_send_slow`](Self::poll_send_slow) would make
    /// first (`SLOW` makes the ring look free, so no wait is predicted),
    /// without that function's larger frame; a full channel then waits
    /// ([`wait_send_async`](Self::wait_send_async), no second attempt
    /// before the registration's look), and a full ring (not `SLOW`) goes
    /// to `poll_send_slow` as it did.
    #[inline(never)]
    fn poll_send_missed_ring(
        &self,
        mut w: Pin<&mut SendWait<T>>,
        cx: &mut Context<'_>,
        v: T,
    ) -> Poll<Result<(), T>> {
        if self.ring.as_ref().is_some_and(|ring| ring.is_slow()) {
            match self.try_send_locked(v) {
                Ok(()) => Poll::Ready(Ok(())),
                Err(TrySendError::Disconnected(v)) => Poll::Ready(Err(v)),
                Err(TrySendError::Full(v)) => {
                    let (_, value, _) = w.as_mut().project();
                    *value = Some(v);
                    let hinted = self.full.0.load(Ordering::Relaxed);
                    self.wait_send_async(w, cx, hinted)
                }
            }
        } else {
            let (_, value, _) = w.as_mut().project();
            *value = Some(v);
            self.poll_send_slow(w, cx, Tried::Ring)
        }
    }

    /// `tried`: what the caller has just tried (the ring's fast path, so
    /// that the first attempt here goes straight to the lock; or the lock
    /// too, which found the channel full, so that this one waits).
    #[inline(never)]
    fn poll_send_slow(
        &self,
        mut w: Pin<&mut SendWait<T>>,
        cx: &mut Context<'_>,
        tried: Tried,
    ) -> Poll<Result<(), T>> {
        let (node, value, registered) = w.as_mut().project();
        if *registered {
            match self.poll_send_wait(&node, registered, cx.waker()) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(mut st)) => {
                    let v = value.take().expect("a granted sender still has its value");
                    self.ungrant(&mut st);
                    // This send waited, so the hint says "full". If room
                    // stays after its value, the next send most likely
                    // finds it: let that one try the ring first instead of
                    // cloning its waker for a wait that will not come.
                    // (`bounded(1)` is full again after this value.)
                    if st.cap > 1 && self.fits(&st, self.queued(&st) + 1) {
                        self.full.0.store(false, Ordering::Relaxed);
                    }
                    // Most often the slot goes to a waiting task: the lean
                    // hand-off, which also finds nobody else to serve.
                    let (mut st, v) = match self.send_to_task(st, v) {
                        Ok(()) => return Poll::Ready(Ok(())),
                        Err(back) => back,
                    };
                    let mut d = Deferred::new();
                    let r = if st.receivers == 0 {
                        Err(v)
                    } else {
                        self.deliver(&mut st, v, false, &mut d);
                        // If a waiting thread took the value, the granted
                        // slot is free again for the next waiting sender.
                        self.refill(&mut st, &mut d);
                        Ok(())
                    };
                    drop(st);
                    d.run();
                    return Poll::Ready(r);
                }
                Poll::Ready(None) if self.cap == Some(0) => {
                    // SAFETY: the wait is over: the notifier is done with
                    // the node.
                    return Poll::Ready(match unsafe { node.take_value() } {
                        // A receiver took it.
                        None => Ok(()),
                        // Every receiver is gone.
                        Some(v) => Err(v),
                    });
                }
                // Woken by disconnection, or the grant was taken back
                // (`put_back`): the attempt below sees what holds now.
                Poll::Ready(None) => {}
            }
        }
        let v = value.take().expect("SendFuture polled after completion");
        // The waker is cloned outside the lock. When the last async send
        // found the channel full (the hint), or the ring's fast path has
        // just found no free slot, this one most likely waits too: clone
        // first and take the lock once. Otherwise try without a clone, and
        // clone only if that fails.
        let hinted = self.full.0.load(Ordering::Relaxed);
        let predicted = hinted
            || match tried {
                Tried::Nothing => false,
                Tried::Ring => self.ring.as_ref().is_some_and(|ring| !ring.looks_free()),
            };
        let v = if predicted {
            v
        } else {
            let r = if tried == Tried::Ring {
                self.try_send_locked(v)
            } else {
                self.try_send(v)
            };
            match r {
                Ok(()) => return Poll::Ready(Ok(())),
                Err(TrySendError::Disconnected(v)) => return Poll::Ready(Err(v)),
                Err(TrySendError::Full(v)) => v,
            }
        };
        *value = Some(v);
        self.wait_send_async(w, cx, hinted)
    }

    /// An async send that most likely waits (the "full" hint, or an attempt
    /// that found no room): the waker is cloned first and the lock taken
    /// once, to register or, if room turned up, to send. Its value is in
    /// the future (`SendWait`'s value); `hinted`: the hint was set when the
    /// caller read it.
    #[inline(never)]
    fn wait_send_async(
        &self,
        w: Pin<&mut SendWait<T>>,
        cx: &mut Context<'_>,
        hinted: bool,
    ) -> Poll<Result<(), T>> {
        let (node, value, registered) = w.project();
        debug_assert!(!*registered);
        assert!(value.is_some(), "SendFuture polled after completion");
        if self
            .blocking_receivers
            .load(std::sync::atomic::Ordering::Relaxed)
            != 0
            && self.spin_for_room(value)
        {
            // Sent without a wait: the next send tries the ring first.
            if hinted {
                self.full.0.store(false, Ordering::Relaxed);
            }
            return Poll::Ready(Ok(()));
        }
        let waker = cx.waker().clone();
        let mut st = self.lock();
        if self.ring.is_some() {
            // This send most likely waits (the hint, or the attempt above):
            // the "a sender waits" flags go up before the room is counted,
            // so that room freed after the count reaches the node linked
            // below (the freeing consumer serves it under the lock), and
            // the count needs no second look once linked, as `wait_send`
            // takes. If it does not wait, a consumer finds the flag with
            // nobody to serve, once.
            self.mark_send_waiting(&st, true);
        }
        if self.surely_full(&mut st) {
            // What `try_push` would find, without its deferred work: wait.
            self.settle_slow(&st);
            if !hinted {
                self.full.0.store(true, Ordering::Relaxed);
            }
            // SAFETY: a task node, under the lock (I3); the node is pinned
            // in the future, whose `Drop` unlinks it (I2). The value stays
            // in the future until a slot is granted (`cap > 0`: a ring).
            unsafe {
                debug_assert!(self.flavor == Flavor::Mpmc || st.send_waiters.is_empty());
                node.link_task(&mut st.send_waiters, waker);
            }
            *registered = true;
            return Poll::Pending;
        }
        self.send_or_wait_locked(st, node, value, registered, waker, hinted)
    }

    /// [`wait_send_async`](Self::wait_send_async) past its "surely full"
    /// look, under the lock: the general attempt, which sends (to a waiting
    /// receiver or into the channel) or registers.
    #[inline(never)]
    fn send_or_wait_locked(
        &self,
        mut st: Guard<'_, T>,
        node: Slot<'_, T>,
        value: &mut Option<T>,
        registered: &mut bool,
        waker: Waker,
        hinted: bool,
    ) -> Poll<Result<(), T>> {
        let v = value.take().expect("the caller left the value in place");
        let mut d = Deferred::new();
        let (r, unused) = match self.try_push(&mut st, v, &mut d) {
            Ok(()) => {
                if hinted {
                    self.full.0.store(false, Ordering::Relaxed);
                }
                (Poll::Ready(Ok(())), Some(waker))
            }
            Err(TrySendError::Disconnected(v)) => (Poll::Ready(Err(v)), Some(waker)),
            Err(TrySendError::Full(v)) => {
                if !hinted {
                    self.full.0.store(true, Ordering::Relaxed);
                }
                // SAFETY: a task node, under the lock (I3); the node is
                // pinned in the future, whose `Drop` unlinks it (I2).
                unsafe {
                    node.install_waker(waker);
                    // A rendezvous value must be where a receiver can take
                    // it; otherwise it stays in the future until a slot is
                    // granted.
                    if st.cap == 0 {
                        node.put_value(Some(v));
                    } else {
                        *value = Some(v);
                    }
                    self.wait_send(&mut st, &node, &mut d);
                }
                *registered = true;
                (Poll::Pending, None)
            }
        };
        drop(st);
        d.run();
        drop(unused);
        r
    }

    /// An async send is about to wait while a blocking receiver is alive:
    /// the mirror of [`spin_for_value`](Self::spin_for_value). A consumer
    /// thread, most often on another CPU, frees a slot (or, on
    /// `bounded(0)`, comes back to wait for the next value) within
    /// microseconds; spin for that briefly before paying for a
    /// registration, the consumer's locked grant and the executor's
    /// wake-up. True if the value went into the ring; otherwise it is still
    /// in `value` and the caller goes on to the lock (on `bounded(0)`, where
    /// a waiting thread receiver is handed it there).
    #[inline(never)]
    fn spin_for_room(&self, value: &mut Option<T>) -> bool {
        let Some(ring) = &self.ring else {
            // `bounded(0)`: wait for a thread receiver to wait, then let the
            // lock hand it the value. (A queue without a ring, too large for
            // an array, has no hint to spin on.)
            if self.cap == Some(0) {
                sync::spin(|| self.thread_receiver_waits.0.load(Ordering::Relaxed));
            }
            return false;
        };
        if !sync::spin(|| ring.looks_free()) {
            return false;
        }
        let v = value.take().expect("the caller checked the value");
        match self.ring_push(ring, v) {
            Ok(()) => true,
            Err(v) => {
                *value = Some(v);
                false
            }
        }
    }

    /// Whether an async send on a ring channel would find no room and no
    /// receiver to take its value (`try_push_inner`'s `Full`, decided the
    /// same way), so that it waits; `false` means "look the general way".
    #[inline(always)]
    fn surely_full(&self, st: &mut State<T>) -> bool {
        if self.ring.is_none() || st.receivers == 0 {
            return false;
        }
        match st.recv_waiters.front() {
            // Older waiting senders go first.
            None => !st.send_waiters.is_empty() || !self.has_space(st),
            // A waiting task takes a value from the ring, which needs room;
            // a waiting thread would be handed it.
            Some(n) => n.is_task() && !self.has_space(st),
        }
    }

    /// Polls a registered async sender's wait. `Pending` while it waits (the
    /// newest waker installed). Otherwise the wait is over (no longer
    /// registered) and says how: `Some` with the lock held if it was granted
    /// a slot (still counted in `granted`), `None` if not: woken by
    /// disconnection or (`bounded(0)`) a receiver's take, or its grant was
    /// taken back by a panicking wake-up path (`put_back`).
    fn poll_send_wait(
        &self,
        node: &Node<T>,
        registered: &mut bool,
        waker: &Waker,
    ) -> Poll<Option<Guard<'_, T>>> {
        loop {
            let state = node.state();
            if state == WAITING {
                if self.refresh_waker(node, waker) {
                    return Poll::Pending;
                }
                continue;
            }
            *registered = false;
            // SAFETY: notified: the notifier is done with the node.
            unsafe { node.reset() };
            if state != GRANTED {
                return Poll::Ready(None);
            }
            let mut st = self.lock();
            if st.revoked > 0 {
                st.revoked -= 1;
                return Poll::Ready(None);
            }
            return Poll::Ready(Some(st));
        }
    }

    /// A re-polled future whose node is still linked: makes sure the newest
    /// waker is the one that will be woken. Returns false if the node was
    /// notified meanwhile (the caller then looks at it again).
    fn refresh_waker(&self, node: &Node<T>, waker: &Waker) -> bool {
        {
            let _st = self.lock();
            // Under the lock a task node's state is stable (I3).
            if node.state() != WAITING {
                return false;
            }
            // SAFETY: a task node, under the lock (I3).
            if unsafe { node.will_wake(waker) } {
                return true;
            }
        }
        // Clone outside the lock (user code), then swap it in.
        let new = waker.clone();
        let (still, stale) = {
            let _st = self.lock();
            if node.state() == WAITING {
                // SAFETY: a task node, under the lock (I3).
                (true, unsafe { node.set_waker(new) })
            } else {
                (false, Some(Waiter::Task(new)))
            }
        };
        drop(stale);
        still
    }

    /// A dropped async send: its value is not enqueued, and a slot granted to
    /// it passes to the next waiting sender.
    #[inline]
    pub(crate) fn cancel_send(&self, w: Pin<&mut SendWait<T>>) {
        let (node, _, registered) = w.project();
        if *registered {
            *registered = false;
            self.abandon_send(&node);
        }
    }

    fn abandon_send(&self, node: &Node<T>) {
        let mut st = self.lock();
        // SAFETY: the node is valid (its future is here) and, if linked,
        // linked among the senders.
        if unsafe { st.send_waiters.remove(node) } {
            self.sync_send_waiting(&st);
            // SAFETY: a task node, under the lock (I3).
            let stale = unsafe { (node.take_waker(), node.take_value()) };
            drop(st);
            // Its value and waker are dropped here, after the lock.
            drop(stale);
            return;
        }
        self.abandon_notified_send(st, node);
    }

    /// [`abandon_send`](Self::abandon_send) of a node notified before it
    /// was dropped: a slot granted to it passes to the next waiting sender.
    #[inline(never)]
    fn abandon_notified_send(&self, mut st: Guard<'_, T>, node: &Node<T>) {
        let mut d = Deferred::new();
        if node.state() == GRANTED {
            if st.revoked > 0 {
                st.revoked -= 1;
            } else {
                self.ungrant(&mut st);
                self.refill(&mut st, &mut d);
            }
        }
        // A rendezvous value a receiver took stays sent; one left by a
        // disconnection is dropped with the future.
        // SAFETY: notified: the node is ours again.
        let value = unsafe { node.take_value() };
        drop(st);
        d.run();
        // Dropped here, after the lock.
        drop(value);
    }

    // ----- receiving

    #[inline]
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        if let Some(ring) = &self.ring {
            // `popped`'s arms written out: through it this path took ~2.5
            // instructions more per value (callgrind).
            match ring.pop_once() {
                Pop::Value(v, false) => return Ok(v),
                Pop::Value(v, true) => return Ok(self.serve_sender_after(v)),
                Pop::Empty(false) => return Err(TryRecvError::Empty),
                Pop::Empty(true) => return Err(TryRecvError::Disconnected),
                // Out of line, as in `poll_recv`.
                Pop::Again => return self.try_recv_again(),
                Pop::Slow => {}
            }
        }
        self.try_recv_locked()
    }

    /// [`try_recv`](Self::try_recv) after its one ring attempt said
    /// [`Pop::Again`]: the ring's full attempt, then the lock.
    #[inline(never)]
    fn try_recv_again(&self) -> Result<T, TryRecvError> {
        let ring = self.ring.as_ref().expect("only ring channels try again");
        match self.popped(ring.pop(false)) {
            Some(r) => r,
            None => self.try_recv_locked(),
        }
    }

    /// What a ring's answer means to a receive that does not wait: the
    /// value (serving a sender that waits for the room it left), empty or
    /// disconnected; `None` where the ring sends the receive to the lock
    /// (`Slow`, or a claim loop's `Again`).
    #[inline(always)]
    fn popped(&self, pop: Pop<T>) -> Option<Result<T, TryRecvError>> {
        Some(match pop {
            Pop::Value(v, false) => Ok(v),
            Pop::Value(v, true) => Ok(self.serve_sender_after(v)),
            Pop::Empty(false) => Err(TryRecvError::Empty),
            Pop::Empty(true) => Err(TryRecvError::Disconnected),
            Pop::Slow | Pop::Again => return None,
        })
    }

    /// A take that freed a slot a sender waits for (a pop from the ring
    /// that cleared `SEND_WAITING`, or a held value's release): serve the
    /// sender, then hand `v` back.
    #[cold]
    #[inline(never)]
    fn serve_sender_after(&self, v: T) -> T {
        let mut st = self.lock();
        if let Some(waker) = self.grant_front_task(&mut st) {
            // The flags as they now stand; while senders still wait, they
            // are up before the room is counted again (see `serve_senders`).
            let more = !st.send_waiters.is_empty();
            self.sync_send_waiting(&st);
            if !more || !self.has_space(&st) {
                // Nobody else to serve: no deferred work.
                drop(st);
                return match waker {
                    Some(w) => self.guard_take(v, || w.wake()),
                    None => v,
                };
            }
            // More room and more senders (other consumers freed slots
            // without serving): the rest as `serve_senders` does.
            let mut d = Deferred::new();
            d.wake(waker);
            self.refill(&mut st, &mut d);
            drop(st);
            return self.finish_take(v, d);
        }
        let mut d = Deferred::new();
        self.refill(&mut st, &mut d);
        if st.send_waiters.is_empty() && self.taken.load(Ordering::Relaxed) & SEND_WAITING != 0 {
            // A stale bit (`sync_send_waiting`): nobody waits now.
            self.taken.fetch_and(!SEND_WAITING, Ordering::AcqRel);
        }
        drop(st);
        self.finish_take(v, d)
    }

    /// [`serve_senders`](Self::serve_senders)'s first step in its most
    /// common case: the oldest waiting sender is a task and there is room.
    /// It is granted the slot; its waker comes back, to be woken after the
    /// lock. `None` (nothing done) in every other case. The caller syncs the
    /// "a sender waits" flags once it has served everyone it will.
    #[inline(always)]
    fn grant_front_task(&self, st: &mut State<T>) -> Option<Option<Waker>> {
        if !st.send_waiters.front().is_some_and(|n| n.is_task()) || !self.has_space(st) {
            return None;
        }
        let node = st.send_waiters.pop_front().expect("one waits");
        self.grant(st);
        // SAFETY: just popped under the lock, a task node: ours to notify
        // (I3, I4).
        Some(unsafe { node.as_ref().notify_task(GRANTED) })
    }

    /// `try_recv` past the ring's fast path: under the lock.
    #[inline(never)]
    fn try_recv_locked(&self) -> Result<T, TryRecvError> {
        let mut st = self.lock();
        if let Some(r) = self.try_pop_alone(&mut st) {
            return r;
        }
        let mut d = Deferred::new();
        let r = self.try_pop(&mut st, &mut d);
        drop(st);
        r.map(|v| self.finish_take(v, d))
    }

    /// Takes up to `limit` values without waiting; returns how many.
    pub(crate) fn try_recv_many(&self, buf: &mut Vec<T>, limit: usize) -> usize {
        if limit == 0 {
            return 0;
        }
        let mut n = 0;
        if let Some(ring) = self.ring.as_ref().filter(|r| r.pops_batches_unlocked()) {
            // Value by value through the ring's fast path, as `try_recv`
            // would take them, while it has them; the lock only once it
            // says so (returned values first, or a claim's loop gave up).
            while n < limit {
                let pop = match ring.pop_once() {
                    Pop::Again => ring.pop(false),
                    pop => pop,
                };
                match self.popped(pop) {
                    Some(Ok(v)) => buf.push(v),
                    Some(Err(_)) => return n,
                    None => break,
                }
                n += 1;
            }
            if n == limit {
                return n;
            }
        }
        let mut d = Deferred::new();
        let mut st = self.lock();
        while n < limit {
            match self.try_pop(&mut st, &mut d) {
                Ok(v) => buf.push(v),
                Err(_) => break,
            }
            n += 1;
        }
        drop(st);
        d.run();
        n
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
    #[inline]
    pub(crate) fn recv(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        if let Some(ring) = &self.ring {
            match ring.pop_once() {
                Pop::Value(v, false) => return Ok(v),
                Pop::Value(v, true) => return Ok(self.serve_sender_after(v)),
                Pop::Empty(true) => return Err(RecvTimeoutError::Disconnected),
                // `recv_wait` tries the ring again, in full.
                Pop::Empty(false) | Pop::Slow | Pop::Again => {}
            }
        }
        self.recv_wait(deadline)
    }

    /// `recv` past the ring's fast path (which it tries again).
    #[inline(never)]
    fn recv_wait(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        // The fast path's answer, unless it found the channel empty.
        let ready = || match self.try_recv() {
            Ok(v) => Some(Ok(v)),
            Err(TryRecvError::Disconnected) => Some(Err(RecvTimeoutError::Disconnected)),
            Err(TryRecvError::Empty) => None,
        };
        if let Some(r) = ready() {
            return r;
        }
        // A value often arrives within microseconds (a running producer, a
        // round trip): spin on the hint before paying for a registered wait
        // and a wake-up, then take the value through the fast path. Only if
        // that fails go to the lock, whose look sets the ring's `SLOW` and
        // so sends the producer's next send through the lock too (a
        // consumer chasing a producer would otherwise do that on every
        // value it catches up on). A receiver that loses the value to
        // another goes to the lock at once rather than spin on against the
        // producer for the CPU. Not on `bounded(0)`, where the sender must
        // find this receiver registered, nor with a deadline.
        if self.cap != Some(0) && deadline.is_none() && sync::backoff(|| self.looks_nonempty()) {
            if let Some(r) = ready() {
                return r;
            }
        }
        self.recv_slow(deadline)
    }

    #[inline(never)]
    fn recv_slow(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        loop {
            let node = std::pin::pin!(Node::thread());
            let node = node.as_ref().get_ref();
            let mut st = self.lock();
            self.announce_receiver();
            let mut d = Deferred::new();
            match self.try_pop(&mut st, &mut d) {
                Ok(v) => {
                    drop(st);
                    return Ok(self.finish_take(v, d));
                }
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) if deadline.is_some_and(|t| Instant::now() >= t) => {
                    return Err(RecvTimeoutError::Timeout);
                }
                Err(TryRecvError::Empty) => {}
            }
            debug_assert!(d.is_empty());
            // SAFETY: pinned in this frame, which `wait_thread` leaves only
            // once the node is unlinked and published (I2).
            unsafe { st.recv_waiters.push_back(node) };
            if st.cap == 0 {
                Self::set_hint(&self.thread_receiver_waits, true);
            }
            drop(st);
            if !self.wait_thread(node, false, deadline) {
                return Err(RecvTimeoutError::Timeout);
            }
            // SAFETY: published: the node is ours again. A thread's handoff
            // is never `held`: it cannot be cancelled.
            if let Some(v) = unsafe { node.take_value() } {
                return Ok(v);
            }
            // Woken by disconnection: drain or report it.
        }
    }

    /// Polls an async receive. It never reports "empty" (it waits), so its
    /// error is the disconnection alone; a narrow result also comes back in
    /// registers from the out-of-line paths. Always inlined, as is
    /// `RecvFuture::poll`: with `#[inline]` LLVM kept one or the other out
    /// of line, a call frame with five saved registers around a ring pop
    /// of ~40 instructions (BENCHMARKS.md, History).
    #[inline(always)]
    pub(crate) fn poll_recv(
        &self,
        mut w: Pin<&mut RecvWait<T>>,
        waker: &Waker,
    ) -> Poll<Result<T, RecvError>> {
        // The ring's fast path first (after a wake-up too), or a value
        // handed to the registered wait; everything else is out of line,
        // so that this path stays short.
        if let Some(ring) = &self.ring {
            if w.is_registered() {
                match w.as_mut().take_notified() {
                    // Still waiting: the slow path refreshes the waker.
                    None => return self.poll_recv_slow(w, waker),
                    Some(Some(v)) => {
                        let v = if self.holds { self.release_held(v) } else { v };
                        return Poll::Ready(Ok(v));
                    }
                    // Woken to take a value from the ring, or by
                    // disconnection: look as an unregistered poll does.
                    Some(None) => {}
                }
            }
            match ring.pop_once() {
                Pop::Value(v, false) => return Poll::Ready(Ok(v)),
                Pop::Value(v, true) => return Poll::Ready(Ok(self.serve_sender_after(v))),
                Pop::Empty(true) => return Poll::Ready(Err(RecvError)),
                // A lost claim or a slot in passing: the whole attempt, out
                // of line, so that its result does not merge with this
                // path's (it would pass through the stack).
                Pop::Again => return self.poll_recv_again(w, waker),
                // Empty, or returned values (rare) or waiting receivers
                // (common) send it to the lock: either way it most likely
                // waits.
                Pop::Empty(false) | Pop::Slow => return self.wait_recv(w, waker),
            }
        }
        // Without a ring: nothing to take by the hint, and not woken.
        if !w.is_registered() && !self.nonempty.0.load(Ordering::Relaxed) {
            return self.wait_recv(w, waker);
        }
        self.poll_recv_slow(w, waker)
    }

    /// [`poll_recv`](Self::poll_recv) after its one ring attempt said
    /// [`Pop::Again`]: the ring's full attempt, then as `poll_recv`.
    #[inline(never)]
    fn poll_recv_again(
        &self,
        w: Pin<&mut RecvWait<T>>,
        waker: &Waker,
    ) -> Poll<Result<T, RecvError>> {
        let ring = self.ring.as_ref().expect("only ring channels try again");
        match ring.pop(false) {
            Pop::Value(v, false) => Poll::Ready(Ok(v)),
            Pop::Value(v, true) => Poll::Ready(Ok(self.serve_sender_after(v))),
            Pop::Empty(true) => Poll::Ready(Err(RecvError)),
            Pop::Empty(false) | Pop::Slow | Pop::Again => self.wait_recv(w, waker),
        }
    }

    /// An unregistered receive that found the ring empty (or needing the
    /// lock), or, without a ring, whose "non-empty" hint is clear: it most
    /// likely waits, so the waker is cloned first and the lock taken once.
    /// When nothing is there to take and no sender waits, it only
    /// registers (what `recv_locked`'s first branch would decide, without
    /// its take attempt); everything else is
    /// [`recv_locked`](Self::recv_locked)'s.
    #[inline(never)]
    fn wait_recv(&self, w: Pin<&mut RecvWait<T>>, waker: &Waker) -> Poll<Result<T, RecvError>> {
        if self
            .blocking_senders
            .load(std::sync::atomic::Ordering::Relaxed)
            != 0
        {
            if let Some(r) = self.spin_for_value() {
                return Poll::Ready(r);
            }
        }
        let (node, registered) = w.project();
        let new = waker.clone();
        let mut st = self.lock();
        self.announce_receiver();
        if st.send_waiters.is_empty() && st.senders != 0 && self.surely_empty(&st) {
            // SAFETY: a task node, under the lock (I3); pinned in the
            // future, whose `Drop` unlinks it (I2).
            unsafe { node.link_task(&mut st.recv_waiters, new) };
            *registered = true;
            return Poll::Pending;
        }
        self.recv_locked(st, &node, registered, new)
    }

    /// An async receive found nothing to take while a blocking sender is
    /// alive: that producer runs on a thread of its own, most often on
    /// another CPU, and its next value is usually a few hundred nanoseconds
    /// away. Spin for it, briefly (the blocking receiver's spin, without its
    /// yields: this is an executor's thread), before paying for a
    /// registration, the producer's locked hand-off and the executor's
    /// wake-up (on a multi-threaded runtime, a parked worker's, per value).
    /// `Some`: taken from the ring. `None`: nothing came in time, or (no
    /// ring) a thread sender now waits, whose value only the lock takes:
    /// the caller goes on to the lock either way.
    #[inline(never)]
    fn spin_for_value(&self) -> Option<Result<T, RecvError>> {
        let Some(ring) = &self.ring else {
            // `bounded(0)` (or a queue without a ring, whose hint is
            // `nonempty`): wait for the hint, then let the lock decide.
            sync::spin(|| {
                self.thread_sender_waits.0.load(Ordering::Relaxed)
                    || self.nonempty.0.load(Ordering::Relaxed)
            });
            return None;
        };
        if !sync::spin(|| ring.looks_nonempty()) {
            return None;
        }
        match ring.pop(false) {
            Pop::Value(v, false) => Some(Ok(v)),
            Pop::Value(v, true) => Some(Ok(self.serve_sender_after(v))),
            Pop::Empty(true) => Some(Err(RecvError)),
            Pop::Empty(false) | Pop::Slow | Pop::Again => None,
        }
    }

    /// Under the lock, after [`announce_receiver`](Self::announce_receiver):
    /// whether the channel holds no value, so that a receiver finding it so
    /// may register. Only a locked send adds a value from then on.
    #[inline(always)]
    fn surely_empty(&self, st: &State<T>) -> bool {
        st.queue.is_empty()
            && match &self.ring {
                Some(ring) => ring.is_empty_locked(),
                None => true,
            }
    }

    /// A receive past the ring's fast path (or without a ring): a
    /// registered one's wake-up or waker refresh, then an attempt.
    #[inline(never)]
    fn poll_recv_slow(
        &self,
        w: Pin<&mut RecvWait<T>>,
        waker: &Waker,
    ) -> Poll<Result<T, RecvError>> {
        let (node, registered) = w.project();
        let mut woken = false;
        while *registered {
            match RecvWait::finish(&node, registered) {
                None => {
                    if self.refresh_waker(&node, waker) {
                        return Poll::Pending;
                    }
                }
                Some(Some(v)) => {
                    let v = if self.holds { self.release_held(v) } else { v };
                    return Poll::Ready(Ok(v));
                }
                // Woken by disconnection, or (bounded(0)) to take a waiting
                // sender's value: the attempt below does either, most likely
                // without waiting again.
                Some(None) => woken = true,
            }
        }
        // The waker is cloned outside the lock. With a ring, try it first
        // (lock-free), and clone only if that fails. Without one, every
        // attempt takes the lock: a woken receive (where several compete
        // for one rendezvous sender, often too late) clones first and
        // takes the lock once, to take or to wait again; an unwoken one
        // tries first only if the queue looks non-empty.
        if self.ring.is_some() || (!woken && self.nonempty.0.load(Ordering::Relaxed)) {
            match self.try_recv() {
                Ok(v) => return Poll::Ready(Ok(v)),
                Err(TryRecvError::Disconnected) => return Poll::Ready(Err(RecvError)),
                Err(TryRecvError::Empty) => {}
            }
        }
        let new = waker.clone();
        let st = self.lock();
        self.announce_receiver();
        self.recv_locked(st, &node, registered, new)
    }

    /// A receive's attempt under the lock, after
    /// [`announce_receiver`](Self::announce_receiver), with its waker cloned
    /// (`new`): takes a value (serving a waiting sender), reports
    /// disconnection, or registers the node.
    #[inline]
    fn recv_locked(
        &self,
        mut st: Guard<'_, T>,
        node: &Node<T>,
        registered: &mut bool,
        new: Waker,
    ) -> Poll<Result<T, RecvError>> {
        match self.try_pop_alone(&mut st) {
            Some(Err(TryRecvError::Empty)) => {
                // SAFETY: a task node, under the lock (I3); pinned in the
                // future, whose `Drop` unlinks it (I2).
                unsafe { Self::register_recv(&mut st, node, new) };
                *registered = true;
                return Poll::Pending;
            }
            Some(r) => {
                drop(st);
                // The waker cloned for a wait that did not happen is
                // dropped now: user code, after which a taken value goes
                // back if it panics.
                return Poll::Ready(match r {
                    Ok(v) => Ok(self.guard_take(v, || drop(new))),
                    Err(_) => {
                        drop(new);
                        Err(RecvError)
                    }
                });
            }
            None => {}
        }
        let mut d = Deferred::new();
        let r = self.try_pop(&mut st, &mut d);
        if let Err(TryRecvError::Empty) = r {
            // SAFETY: as above.
            unsafe { Self::register_recv(&mut st, node, new) };
            *registered = true;
            drop(st);
            d.run();
            return Poll::Pending;
        }
        drop(st);
        Poll::Ready(match r {
            // The deferred wake-ups, then the unused waker's drop, as above.
            Ok(v) => Ok(self.guard_take(v, move || {
                d.run();
                drop(new);
            })),
            Err(_) => {
                d.run();
                drop(new);
                Err(RecvError)
            }
        })
    }

    /// Links a receiving task's node with its waker.
    ///
    /// # Safety
    ///
    /// Under the lock; `node` is a task node, not linked, pinned in its
    /// future, whose `Drop` unlinks it (I2, I3).
    #[inline(always)]
    unsafe fn register_recv(st: &mut Guard<'_, T>, node: &Node<T>, waker: Waker) {
        // SAFETY: the caller's contract.
        unsafe {
            node.install_waker(waker);
            st.recv_waiters.push_back(node);
        }
    }

    /// A task took `v`, a value that was `held` for it: the slot is free.
    /// One addition to the count of takes, on the word that also says
    /// whether a sender waits;
    /// only then is the lock needed, to serve that sender (and if its
    /// waker panics, `v` goes back to the channel, as after a ring pop).
    #[inline]
    fn release_held(&self, v: T) -> T {
        let before = self.taken.fetch_add(ONE_HELD, Ordering::AcqRel);
        if before & SEND_WAITING != 0 {
            return self.serve_sender_after(v);
        }
        v
    }

    /// A dropped async receive: an unused value handed to it goes to the next
    /// waiting receiver or back to the front of the queue, so nothing is lost
    /// and order holds; an unused wake-up passes on.
    #[inline]
    pub(crate) fn cancel_recv(&self, w: Pin<&mut RecvWait<T>>) {
        let (node, registered) = w.project();
        if *registered {
            *registered = false;
            self.abandon_recv(&node);
        }
    }

    fn abandon_recv(&self, node: &Node<T>) {
        let mut st = self.lock();
        // SAFETY: the node is valid (its future is here) and, if linked,
        // linked among the receivers.
        if unsafe { st.recv_waiters.remove(node) } {
            // SAFETY: a task node, under the lock (I3).
            let stale = unsafe { node.take_waker() };
            drop(st);
            // Its waker is dropped here, after the lock.
            drop(stale);
            return;
        }
        self.abandon_notified_recv(st, node);
    }

    /// [`abandon_recv`](Self::abandon_recv) of a node notified before it
    /// was dropped: what it was given passes on.
    #[inline(never)]
    fn abandon_notified_recv(&self, mut st: Guard<'_, T>, node: &Node<T>) {
        let mut d = Deferred::new();
        // Notified (stable under the lock): the node is ours again.
        // SAFETY: a task node, under the lock (I3).
        match unsafe { node.take_value() } {
            Some(v) => {
                if self.holds {
                    // Given back rather than taken: no longer handed out.
                    st.handed = st.handed.wrapping_sub(ONE_HELD);
                }
                self.deliver(&mut st, v, true, &mut d);
                // If a waiting thread took the value, its room is free.
                self.refill(&mut st, &mut d);
            }
            None => self.pass_wake(&mut st, &mut d),
        }
        drop(st);
        d.run();
    }

    /// One more sender, for a weak sender's upgrade, unless every sender is
    /// already gone: a disconnected channel never reconnects.
    pub(crate) fn try_add_sender(&self) -> bool {
        let mut st = self.lock();
        if st.senders == 0 {
            return false;
        }
        st.senders += 1;
        true
    }

    // ----- select (blocking): one node per arm, sharing the selector's claim

    /// Links a selecting thread's receive node unless the arm is ready now
    /// (a value, a waiting rendezvous sender, or disconnection); returns
    /// whether it was ready (then nothing was linked).
    ///
    /// # Safety
    ///
    /// As for [`List::push_back`]; the node was made by [`Node::select`].
    pub(crate) unsafe fn select_recv(&self, node: &Node<T>) -> bool {
        let mut st = self.lock();
        self.announce_receiver();
        let has_value = match &self.ring {
            Some(ring) => !st.queue.is_empty() || ring.settled_nonempty(),
            None => !st.queue.is_empty(),
        };
        let ready =
            has_value || st.senders == 0 || (st.cap == 0 && st.send_waiters.live_front().is_some());
        if !ready {
            // SAFETY: the caller's contract.
            unsafe { st.recv_waiters.push_back(node) };
        }
        ready
    }

    /// Links a selecting thread's send node (carrying its value) unless the
    /// arm is ready now (a receiver that can take the value, room, or no
    /// receiver left); returns whether it was ready (then nothing was
    /// linked and the value is still in the node).
    ///
    /// # Safety
    ///
    /// As for [`List::push_back`]; the node was made by [`Node::select`].
    pub(crate) unsafe fn select_send(&self, node: &Node<T>) -> bool {
        let mut d = Deferred::new();
        let mut st = self.lock();
        let cap = st.cap;
        let ready = st.receivers == 0
            || st
                .recv_waiters
                .live_front()
                .is_some_and(|n| cap != 0 || !n.is_task())
            || (st.send_waiters.is_empty() && self.has_space(&st));
        if !ready {
            // SAFETY: the caller's contract.
            unsafe { self.wait_send(&mut st, node, &mut d) };
        }
        drop(st);
        d.run();
        ready
    }

    /// Takes a selecting thread's node back out of this channel; once it
    /// returns, no notifier refers to the node. True if it was still linked.
    pub(crate) fn select_withdraw(&self, node: &Node<T>, sender: bool) -> bool {
        self.withdraw(node, sender)
    }

    // ----- sinks: room held for one async sender (a grant)

    /// Waits for room and holds it for the sink that owns `w`: a grant, as
    /// `serve_senders` makes to a waiting async sender, counted in
    /// `granted` until [`send_reserved`](Self::send_reserved) uses it or
    /// [`release_reserved`](Self::release_reserved) returns it. `w` carries
    /// no value. `Ready(Err(()))`: every receiver is gone, nothing is held.
    /// Only for bounded channels with `cap > 0` (elsewhere there is no room
    /// to hold).
    pub(crate) fn poll_reserve(
        &self,
        w: Pin<&mut SendWait<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), ()>> {
        debug_assert!(matches!(self.cap, Some(c) if c > 0));
        let (node, value, registered) = w.project();
        debug_assert!(value.is_none(), "a reserving wait carries no value");
        if *registered {
            match self.poll_send_wait(&node, registered, cx.waker()) {
                Poll::Pending => return Poll::Pending,
                // The grant stays counted in `granted`: it is held.
                Poll::Ready(Some(_st)) => return Poll::Ready(Ok(())),
                // Woken by disconnection, or the grant was taken back
                // (`put_back`): the attempt below sees what holds now.
                Poll::Ready(None) => {}
            }
        }
        if let Some(r) = self.try_grant(&mut self.lock()) {
            return Poll::Ready(r);
        }
        // It will wait: clone the waker before taking the lock again.
        let waker = cx.waker().clone();
        let mut d = Deferred::new();
        let mut st = self.lock();
        let (r, unused) = match self.try_grant(&mut st) {
            Some(r) => (Poll::Ready(r), Some(waker)),
            None => {
                // SAFETY: a task node, under the lock (I3); the node is
                // pinned in the sink's box, whose owner unlinks it before
                // the box is dropped (I2). It carries no value: a granted
                // slot is what it waits for.
                unsafe {
                    node.install_waker(waker);
                    self.wait_send(&mut st, &node, &mut d);
                }
                *registered = true;
                (Poll::Pending, None)
            }
        };
        drop(st);
        d.run();
        drop(unused);
        r
    }

    /// Takes a grant for free room if nobody waits ahead; `None` if the
    /// caller must wait.
    fn try_grant(&self, st: &mut State<T>) -> Option<Result<(), ()>> {
        if st.receivers == 0 {
            return Some(Err(()));
        }
        if st.send_waiters.is_empty() && self.has_space(st) {
            self.grant(st);
            return Some(Ok(()));
        }
        None
    }

    /// Sends `value` into the room held by a [`poll_reserve`](Self::poll_reserve)
    /// that returned `Ready(Ok(()))`: to the oldest waiting receiver, else
    /// into the queue. `Disconnected`: every receiver is gone (the grant is
    /// returned). `Full`: the grant was void (taken back by `put_back` after
    /// a panicking wake-up) and there is no room now; the caller keeps the
    /// value and sends it as an ordinary async send.
    pub(crate) fn send_reserved(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut d = Deferred::new();
        let mut st = self.lock();
        let r = if st.revoked > 0 {
            // This holder looks first, so the void grant is this one.
            st.revoked -= 1;
            self.try_push(&mut st, value, &mut d)
        } else {
            self.ungrant(&mut st);
            let r = if st.receivers == 0 {
                Err(TrySendError::Disconnected(value))
            } else {
                self.deliver(&mut st, value, false, &mut d);
                Ok(())
            };
            // Returned, or freed again if a waiting thread took the value.
            self.refill(&mut st, &mut d);
            r
        };
        drop(st);
        d.run();
        r
    }

    /// Returns the room held by a [`poll_reserve`](Self::poll_reserve) that
    /// returned `Ready(Ok(()))` and was not used: it passes to the next
    /// waiting sender.
    pub(crate) fn release_reserved(&self) {
        let mut d = Deferred::new();
        let mut st = self.lock();
        if st.revoked > 0 {
            st.revoked -= 1;
        } else {
            self.ungrant(&mut st);
            self.refill(&mut st, &mut d);
        }
        drop(st);
        d.run();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Chan, Flavor};
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    /// A batch receive on a bounded ring takes ready values on the ring's
    /// fast path, as `try_recv` does, not under the core lock: here it
    /// finishes while another thread holds the lock (through it, it would
    /// wait for the lock and the test would time out). Both flavors.
    #[test]
    fn batch_receive_on_a_bounded_ring_takes_ready_values_without_the_lock() {
        for flavor in [Flavor::Spmc, Flavor::Mpmc] {
            let chan = Chan::<u32>::new(Some(8), flavor);
            for v in 0..5 {
                assert!(chan.try_send(v).is_ok());
            }
            let st = chan.lock();
            let (done, took) = mpsc::channel();
            thread::scope(|s| {
                s.spawn(|| {
                    let mut buf = Vec::new();
                    let n = chan.try_recv_many(&mut buf, 3);
                    done.send((n, buf)).unwrap();
                });
                let got = took.recv_timeout(Duration::from_secs(20));
                drop(st);
                assert_eq!(
                    got.expect("the batch receive waited for the lock"),
                    (3, vec![0, 1, 2]),
                    "{flavor:?}"
                );
            });
            let mut rest = Vec::new();
            assert_eq!(chan.try_recv_many(&mut rest, 8), 2);
            assert_eq!(rest, [3, 4]);
        }
    }
}
