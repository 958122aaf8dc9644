//! Waiters: intrusive nodes that live where the waiter lives (a blocked
//! thread's stack frame, a pending future), the FIFO list the core links them
//! into, and the work a notifier does once the core lock is released.
//!
//! # Protocol
//!
//! A node is linked into one of the core's lists under the core lock and is
//! reachable from the core exactly while it is linked (I1). A notifier pops it
//! under the lock; from then on the node belongs to that notifier until the
//! notifier's final store to `state` (I4).
//!
//! - **Task nodes** (inside a pinned future) are written only under the core
//!   lock: the notifier writes the value, takes the waker and stores
//!   `NOTIFIED` (or `GRANTED`) before it unlocks, and after the lock it only
//!   calls `wake()` (I3). So a future's `Drop`, which takes the lock, never
//!   has to wait for anyone.
//! - **Thread nodes** (on a blocked thread's stack) are finished after the
//!   lock ([`Notify::Thread`]): the notifier writes the value, then
//!   `CAS(WAITING -> NOTIFIED)`; if the thread has parked it clones the
//!   thread's handle first, stores `NOTIFIED`, then unparks. A thread that
//!   stops waiting (timeout) after its node was popped waits for that store,
//!   which comes within a few instructions.
//!
//! Each value is in exactly one place: a queue slot, a node, or a caller's
//! hands (I5).

use std::collections::VecDeque;
use std::marker::PhantomPinned;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::task::Waker;
use std::time::Instant;

use crate::sync::{self, AtomicU8, AtomicUsize, Ordering, Thread, UnsafeCell};

/// Not yet notified; the waiter may be spinning, polling, or (for a thread
/// that timed out) withdrawing.
pub(crate) const WAITING: u8 = 0;
/// Not yet notified; the thread has parked and must be unparked.
const PARKED: u8 = 1;
/// Notified: the value, if one was handed over, is in the node.
pub(crate) const NOTIFIED: u8 = 2;
/// Notified: an async sender was granted a free slot of capacity.
pub(crate) const GRANTED: u8 = 3;

/// Someone waiting on the channel: a blocked thread or a pending task.
pub(crate) enum Waiter {
    /// A thread that has parked (stored just before it parks).
    Thread(Thread),
    /// A task whose future returned `Pending`.
    Task(Waker),
}

/// The claim word a selecting thread shares between its nodes, one per arm,
/// each linked into its own channel (crossbeam's `Context`, in one word).
/// The first channel to claim it (`0 -> arm + 1`) notifies that arm; every
/// other channel finds it claimed and drops the selector's node from its list
/// instead of handing it anything. The selector aborts with `ABORTED`.
pub(crate) struct Claim {
    word: AtomicUsize,
    /// The selecting thread, unparked by the winning arm's notifier.
    thread: Thread,
    /// `WAITING`, `PARKED` (the selector sleeps), or `NOTIFIED` (the winner
    /// is publishing): the winner unparks only a selector that parked.
    sleep: AtomicU8,
}

/// In [`Claim`]'s word: the selector gave up (timeout, or an arm turned out
/// ready while it registered).
const ABORTED: usize = usize::MAX;

impl Claim {
    /// A new claim for the calling thread.
    pub(crate) fn new() -> Self {
        Claim {
            word: AtomicUsize::new(0),
            thread: sync::current(),
            sleep: AtomicU8::new(WAITING),
        }
    }

    /// Blocks the selecting thread until an arm has won (its index), or until
    /// `deadline`, when the selection is aborted (`None`) unless an arm won
    /// just then. Spins briefly, then parks; the winner unparks only a
    /// selector that parked.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<usize> {
        if sync::backoff(|| self.winner().is_some()) {
            return self.winner();
        }
        loop {
            if let Some(k) = self.winner() {
                return Some(k);
            }
            if self
                .sleep
                .compare_exchange(WAITING, PARKED, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // A winner is publishing: it claimed before.
                return self.winner();
            }
            let expired = match deadline {
                None => {
                    sync::park();
                    false
                }
                Some(d) => {
                    let now = Instant::now();
                    if now < d {
                        sync::park_timeout(d - now);
                    }
                    // loom does not model time: the timeout fires here.
                    cfg!(loom) || Instant::now() >= d
                }
            };
            if self
                .sleep
                .compare_exchange(PARKED, WAITING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return self.winner();
            }
            if expired {
                return self.abort();
            }
        }
    }

    /// The arm that won, if one did (Acquire: the winner's writes to the
    /// claim are visible).
    pub(crate) fn winner(&self) -> Option<usize> {
        match self.word.load(Ordering::Acquire) {
            0 | ABORTED => None,
            k => Some(k - 1),
        }
    }

    /// Aborts the selection unless an arm has won; returns the winner if one
    /// did.
    pub(crate) fn abort(&self) -> Option<usize> {
        match self
            .word
            .compare_exchange(0, ABORTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => None,
            Err(k) => {
                debug_assert_ne!(k, ABORTED);
                Some(k - 1)
            }
        }
    }

    fn try_claim(&self, arm: usize) -> bool {
        self.word
            .compare_exchange(0, arm + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn is_open(&self) -> bool {
        self.word.load(Ordering::Acquire) == 0
    }
}

/// A selecting thread's node: which claim and which arm it belongs to.
struct Select {
    claim: NonNull<Claim>,
    arm: usize,
}

/// One wait, linked into one of the core's FIFO lists.
pub(crate) struct Node<T> {
    /// Links, touched only under the core lock (I1).
    next: UnsafeCell<Option<NonNull<Node<T>>>>,
    prev: UnsafeCell<Option<NonNull<Node<T>>>>,
    linked: UnsafeCell<bool>,
    /// Whether the waiter is a task (fixed at creation).
    task: bool,
    state: AtomicU8,
    /// A value handed to a receiver, or carried by a waiting sender.
    value: UnsafeCell<Option<T>>,
    /// Task: the waker, under the lock. Thread: its handle, written by the
    /// thread before it announces `PARKED`.
    waiter: UnsafeCell<Option<Waiter>>,
    /// Set (at creation) for a selecting thread's node.
    select: Option<Select>,
    /// Linked nodes are reached through raw pointers: never move one.
    _pin: PhantomPinned,
}

// SAFETY: a node is shared between its waiter and at most one notifier at a
// time, and every field is either atomic or accessed under the protocol above
// (the core lock, or the `state` handshake). The value crosses threads, so
// `T: Send` is required; the waker and thread handle are `Send + Sync`.
unsafe impl<T: Send> Send for Node<T> {}
// SAFETY: as above; `&Node` gives no unsynchronised access to `T`.
unsafe impl<T: Send> Sync for Node<T> {}

impl<T> Node<T> {
    fn new(task: bool) -> Self {
        Node {
            next: UnsafeCell::new(None),
            prev: UnsafeCell::new(None),
            linked: UnsafeCell::new(false),
            task,
            state: AtomicU8::new(WAITING),
            value: UnsafeCell::new(None),
            waiter: UnsafeCell::new(None),
            select: None,
            _pin: PhantomPinned,
        }
    }

    /// A node for arm `arm` of a selecting thread whose claim is `claim`.
    /// The claim must outlive the node's time in any list (I2).
    pub(crate) fn select(claim: &Claim, arm: usize, value: Option<T>) -> Self {
        let mut node = Node::new(false);
        node.value = UnsafeCell::new(value);
        node.select = Some(Select {
            claim: NonNull::from(claim),
            arm,
        });
        node
    }

    /// The selector's claim of a select node.
    fn claim(&self) -> Option<(&Claim, usize)> {
        // SAFETY: a select node's claim outlives the node's time in any list
        // and its publication (`Node::select`'s contract): whoever reaches
        // the node through a list or as its notifier may use the claim.
        self.select
            .as_ref()
            .map(|s| (unsafe { s.claim.as_ref() }, s.arm))
    }

    /// A node for a blocked thread.
    pub(crate) fn thread() -> Self {
        Node::new(false)
    }

    /// A node for a pending future.
    pub(crate) fn task() -> Self {
        Node::new(true)
    }

    /// A pending future's node, made to be linked at the back of `list` at
    /// once ([`List::link_made`]) with `waker` installed: its links are
    /// what [`List::push_back`] would write, so each field is written once
    /// rather than made empty and then written again (fewer stores and
    /// instructions per registration).
    #[inline(always)]
    pub(crate) fn task_for_back(list: &List<T>, waker: Waker) -> Self {
        Node {
            next: UnsafeCell::new(None),
            prev: UnsafeCell::new(list.tail),
            linked: UnsafeCell::new(true),
            task: true,
            state: AtomicU8::new(WAITING),
            value: UnsafeCell::new(None),
            waiter: UnsafeCell::new(Some(Waiter::Task(waker))),
            select: None,
            _pin: PhantomPinned,
        }
    }

    pub(crate) fn is_task(&self) -> bool {
        self.task
    }

    /// The state, with the notifier's writes visible once it reads
    /// `NOTIFIED` or `GRANTED`.
    #[inline]
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Whether the node is in a list.
    ///
    /// # Safety
    ///
    /// The caller holds the core lock (I1).
    pub(crate) unsafe fn is_linked(&self) -> bool {
        // SAFETY: `linked` is only touched under the core lock, held by the
        // caller.
        self.linked.with(|p| unsafe { *p })
    }

    /// Moves `value` into the node.
    ///
    /// # Safety
    ///
    /// The caller has exclusive access to the node's value: it holds the core
    /// lock and the node is linked or is a task node, or the caller is the
    /// notifier that popped it, or the waiter after the final store.
    pub(crate) unsafe fn put_value(&self, value: Option<T>) -> Option<T> {
        // SAFETY: exclusive access, by the caller's contract.
        self.value
            .with_mut(|p| unsafe { std::mem::replace(&mut *p, value) })
    }

    /// Takes the value out of the node.
    ///
    /// # Safety
    ///
    /// As for [`put_value`](Self::put_value).
    pub(crate) unsafe fn take_value(&self) -> Option<T> {
        // SAFETY: exclusive access, by the caller's contract.
        unsafe { self.put_value(None) }
    }

    /// Installs a task's waker, returning the one it replaces.
    ///
    /// # Safety
    ///
    /// The caller holds the core lock and the node is a task node (I3).
    pub(crate) unsafe fn set_waker(&self, waker: Waker) -> Option<Waiter> {
        // SAFETY: a task node's waker is only touched under the core lock.
        self.waiter
            .with_mut(|p| unsafe { (*p).replace(Waiter::Task(waker)) })
    }

    /// Installs the waker of a task about to be linked. Such a node holds
    /// none: a waker leaves the node with its link, taken by whoever
    /// unlinks it (`notify_task`, a cancel's `take_waker`), so there is no
    /// old one to drop under the lock.
    ///
    /// # Safety
    ///
    /// As for [`set_waker`](Self::set_waker).
    #[inline(always)]
    pub(crate) unsafe fn install_waker(&self, waker: Waker) {
        // SAFETY: as for `set_waker`; the slot is empty, so writing over it
        // drops nothing (and, were it not, would only leak a waker).
        self.waiter.with_mut(|p| unsafe {
            debug_assert!((*p).is_none(), "a node to link holds no waker");
            std::ptr::write(p, Some(Waiter::Task(waker)));
        })
    }

    /// Whether the installed waker would wake the same task as `waker`.
    ///
    /// # Safety
    ///
    /// As for [`set_waker`](Self::set_waker).
    pub(crate) unsafe fn will_wake(&self, waker: &Waker) -> bool {
        // SAFETY: as for `set_waker`. `will_wake` compares two pointers and
        // runs no user code.
        self.waiter.with(|p| match unsafe { &*p } {
            Some(Waiter::Task(w)) => w.will_wake(waker),
            _ => false,
        })
    }

    /// Takes a task's waker out.
    ///
    /// # Safety
    ///
    /// As for [`set_waker`](Self::set_waker).
    pub(crate) unsafe fn take_waker(&self) -> Option<Waker> {
        // SAFETY: as for `set_waker`.
        match self.waiter.with_mut(|p| unsafe { (*p).take() }) {
            Some(Waiter::Task(w)) => Some(w),
            _ => None,
        }
    }

    /// Notifies a task node: the value (if any) is already in it; stores
    /// `state` and returns the waker to wake once the lock is released.
    ///
    /// # Safety
    ///
    /// The caller holds the core lock, the node is a task node, and the
    /// caller has just popped it from its list.
    #[inline]
    pub(crate) unsafe fn notify_task(&self, state: u8) -> Option<Waker> {
        // SAFETY: the caller's contract is `take_waker`'s.
        let waker = unsafe { self.take_waker() };
        self.state.store(state, Ordering::Release);
        waker
    }

    /// Re-arms a node whose wait is over, for another wait.
    ///
    /// # Safety
    ///
    /// The node is not linked and its notifier is done with it (its state was
    /// read as notified), so the caller has it to itself.
    pub(crate) unsafe fn reset(&self) {
        self.state.store(WAITING, Ordering::Relaxed);
    }

    /// Blocks the calling thread, which owns this linked thread node, until
    /// it is notified or until `deadline`. Returns true if notified. Spins
    /// briefly and yields `yields` times, then parks; the notifier unparks
    /// only a thread that parked.
    pub(crate) fn wait(&self, deadline: Option<Instant>, yields: u32) -> bool {
        if sync::backoff_yielding(yields, || self.state() == NOTIFIED) {
            return true;
        }
        // SAFETY: a thread node's handle is written only by its own thread,
        // here, and a notifier reads it only after it has seen `PARKED`,
        // which the exchange below publishes (Release).
        self.waiter
            .with_mut(|p| unsafe { *p = Some(Waiter::Thread(sync::current())) });
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
                        return self.state() == NOTIFIED;
                    }
                    sync::park_timeout(deadline - now);
                    if cfg!(loom) {
                        // loom does not model time: let the timeout fire
                        // here, so that the models explore a timed-out
                        // waiter racing its notifier.
                        return self.state() == NOTIFIED;
                    }
                }
            }
            if self.state() == NOTIFIED {
                return true;
            }
        }
    }

    /// Waits for the notifier that popped this thread node to finish with
    /// it (a bounded wait: it has no lock to take and runs no user code).
    pub(crate) fn wait_published(&self) {
        while self.state() != NOTIFIED {
            sync::spin_loop();
            sync::yield_now();
        }
    }

    /// Finishes a popped thread node after the core lock is released: hands
    /// it `value` (if any), marks it notified and unparks its thread if it
    /// parked.
    ///
    /// # Safety
    ///
    /// `node` was popped from a list under the core lock by the caller, which
    /// has not published it yet (I4): the node is valid until the store that
    /// publishes it, and nothing else writes its value meanwhile.
    unsafe fn publish(node: NonNull<Node<T>>, value: Option<T>) {
        // SAFETY: valid until published, by the caller's contract.
        let n = unsafe { node.as_ref() };
        if let Some(v) = value {
            // SAFETY: the notifier owns the node's value until it publishes.
            unsafe { n.put_value(Some(v)) };
        }
        if let Some((claim, _)) = n.claim() {
            // The selector sleeps on its claim, not on this node. Look at the
            // claim (and clone the thread handle if needed) before the store
            // after which the selector may return.
            let parked = claim.sleep.swap(NOTIFIED, Ordering::AcqRel) == PARKED;
            let thread = parked.then(|| claim.thread.clone());
            n.state.store(NOTIFIED, Ordering::Release);
            if let Some(t) = thread {
                t.unpark();
            }
            return;
        }
        if let Err(state) =
            n.state
                .compare_exchange(WAITING, NOTIFIED, Ordering::AcqRel, Ordering::Acquire)
        {
            debug_assert_eq!(state, PARKED);
            // SAFETY: the thread stored its handle before its Release
            // exchange to `PARKED`, which the Acquire failure above saw; the
            // thread touches it no more until it sees `NOTIFIED`.
            let thread = n.waiter.with(|p| match unsafe { &*p } {
                Some(Waiter::Thread(t)) => t.clone(),
                _ => unreachable!("a parked node holds its thread"),
            });
            n.state.store(NOTIFIED, Ordering::Release);
            // The node may be gone from here on: only the clone is used.
            thread.unpark();
        }
    }
}

/// An intrusive FIFO list of nodes. Lives in the core's state, so every
/// method runs under the core lock.
pub(crate) struct List<T> {
    head: Option<NonNull<Node<T>>>,
    tail: Option<NonNull<Node<T>>>,
}

// SAFETY: the list only holds pointers to nodes, which are `Send + Sync` for
// `T: Send`, and is only used under the core lock.
unsafe impl<T: Send> Send for List<T> {}

impl<T> List<T> {
    pub(crate) const fn new() -> Self {
        List {
            head: None,
            tail: None,
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Links `node` at the back.
    ///
    /// # Safety
    ///
    /// `node` is not linked, and stays valid (not moved, not freed) until it
    /// is unlinked: its owner unlinks it (or waits for its notifier) before
    /// the memory goes (I2).
    pub(crate) unsafe fn push_back(&mut self, node: &Node<T>) {
        // SAFETY: under the core lock (I1); the node's own links are its
        // linker's to write, and with them written as `task_for_back` does,
        // `link_made` finishes the link (the caller's contract covers it).
        unsafe {
            debug_assert!(!node.is_linked());
            node.prev.with_mut(|p| *p = self.tail);
            node.next.with_mut(|p| *p = None);
            node.linked.with_mut(|p| *p = true);
            self.link_made(node);
        }
    }

    /// Links `node` at the back, its own links already written for this
    /// list (`prev` the tail, no `next`, marked linked): by
    /// [`Node::task_for_back`], or by [`push_back`](Self::push_back).
    ///
    /// # Safety
    ///
    /// As for [`push_back`](Self::push_back); no change to the list since
    /// the node's links were written (so `tail` is still its `prev`).
    #[inline(always)]
    pub(crate) unsafe fn link_made(&mut self, node: &Node<T>) {
        let ptr = NonNull::from(node);
        // SAFETY: under the core lock (I1); `tail`, if any, is linked and so
        // valid (I2).
        unsafe {
            debug_assert!(node.is_linked() && node.prev.with(|p| *p) == self.tail);
            match self.tail {
                Some(tail) => tail.as_ref().next.with_mut(|p| *p = Some(ptr)),
                None => self.head = Some(ptr),
            }
        }
        self.tail = Some(ptr);
    }

    /// The oldest node that can still be notified, left linked. A selecting
    /// thread's node whose selector is already claimed by another channel
    /// (or gave up) is unlinked and released on the way; a live one is
    /// claimed for the caller, which must then pop and notify it. Other
    /// nodes are not touched: the caller may still decide not to pop them.
    pub(crate) fn claim_front(&mut self) -> Option<&Node<T>> {
        loop {
            let head = self.head?;
            // SAFETY: `head` is linked, so valid (I2).
            let n = unsafe { &*head.as_ptr() };
            match n.claim() {
                None => return Some(n),
                Some((claim, arm)) if claim.try_claim(arm) => return Some(n),
                Some(_) => self.release_dead(head),
            }
        }
    }

    /// The oldest node, as it is: nothing is claimed or released.
    #[inline]
    pub(crate) fn front(&self) -> Option<&Node<T>> {
        // SAFETY: `head` is linked, so valid (I2), and under the core lock
        // (I1) nobody unlinks it while the list is borrowed.
        self.head.map(|head| unsafe { &*head.as_ptr() })
    }

    /// Like [`claim_front`](Self::claim_front), but claims nothing: for
    /// readiness checks.
    pub(crate) fn live_front(&mut self) -> Option<&Node<T>> {
        loop {
            let head = self.head?;
            // SAFETY: `head` is linked, so valid (I2).
            let n = unsafe { &*head.as_ptr() };
            match n.claim() {
                Some((claim, _)) if !claim.is_open() => self.release_dead(head),
                _ => return Some(n),
            }
        }
    }

    /// [`claim_front`](Self::claim_front), then pops that node.
    pub(crate) fn pop_claimed(&mut self) -> Option<NonNull<Node<T>>> {
        self.claim_front()?;
        self.pop_front()
    }

    /// Unlinks a select node whose selector went elsewhere and marks it done,
    /// so that its selector, withdrawing it, does not wait for a notifier.
    fn release_dead(&mut self, node: NonNull<Node<T>>) {
        // SAFETY: `node` is the linked head (I1, I2).
        unsafe { self.unlink(node) };
        // SAFETY: still valid: its selector withdraws it only under the lock
        // we hold, and then sees it unlinked and this store done.
        unsafe { node.as_ref() }
            .state
            .store(NOTIFIED, Ordering::Release);
    }

    /// Unlinks and returns the oldest node. The caller now owns it as its
    /// notifier (I4).
    pub(crate) fn pop_front(&mut self) -> Option<NonNull<Node<T>>> {
        let head = self.head?;
        // SAFETY: `head` is linked, so valid (I2), and under the core lock
        // (I1).
        unsafe { self.unlink(head) };
        Some(head)
    }

    /// Unlinks `node` if it is linked (in this list); returns whether it was.
    ///
    /// # Safety
    ///
    /// `node` is valid, and if linked, linked in this list.
    pub(crate) unsafe fn remove(&mut self, node: &Node<T>) -> bool {
        // SAFETY: under the core lock (I1), by the caller's contract.
        if !unsafe { node.is_linked() } {
            return false;
        }
        // SAFETY: linked in this list, by the caller's contract.
        unsafe { self.unlink(NonNull::from(node)) };
        true
    }

    /// # Safety
    ///
    /// `node` is linked in this list; under the core lock.
    unsafe fn unlink(&mut self, node: NonNull<Node<T>>) {
        // SAFETY: `node` and its neighbours are linked, so valid (I2).
        unsafe {
            let n = node.as_ref();
            // Read, not cleared: an unlinked node's links are never read
            // (`linked` says whether it is in a list), and linking writes
            // both again.
            let prev = n.prev.with(|p| *p);
            let next = n.next.with(|p| *p);
            match prev {
                Some(prev) => prev.as_ref().next.with_mut(|p| *p = next),
                None => self.head = next,
            }
            match next {
                Some(next) => next.as_ref().prev.with_mut(|p| *p = prev),
                None => self.tail = prev,
            }
            n.linked.with_mut(|p| *p = false);
        }
    }
}

/// A notification to finish once the core lock is released.
pub(crate) enum Notify<T> {
    /// Wake a task (its node was notified under the lock).
    Task(Waker),
    /// Finish a popped thread node, handing it a value or not.
    Thread(NonNull<Node<T>>, Option<T>),
}

/// Work that must wait until the core lock is released: notifications, and
/// values to drop. Collected under the lock; run by `run` (or by `Drop`, so
/// that a popped thread node is published even on an unwinding path).
pub(crate) struct Deferred<T> {
    /// Always taken by `Drop` (so it needs no drop glue, and `Drop` inlines
    /// into the locked paths as a few checks).
    first: ManuallyDrop<Option<Notify<T>>>,
    /// Dropped by `run_now` (if they own anything, `Drop` calls it), so
    /// that the common empty `Deferred` costs its drop a few checks.
    rest: ManuallyDrop<Vec<Notify<T>>>,
    values: ManuallyDrop<VecDeque<T>>,
}

impl<T> Deferred<T> {
    #[inline]
    pub(crate) fn new() -> Self {
        Deferred {
            first: ManuallyDrop::new(None),
            rest: ManuallyDrop::new(Vec::new()),
            values: ManuallyDrop::new(VecDeque::new()),
        }
    }

    /// Nothing to do.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none() && self.values.is_empty()
    }

    /// Whether running this can call user code that may panic (a waker).
    pub(crate) fn may_panic(&self) -> bool {
        let task = |n: &Notify<T>| matches!(n, Notify::Task(_));
        self.first.as_ref().is_some_and(task) || self.rest.iter().any(task)
    }

    /// Queues a notification.
    ///
    /// # Safety
    ///
    /// For [`Notify::Thread`], the caller popped that node under the core
    /// lock it holds now and hands its publication to this `Deferred` (I4).
    pub(crate) unsafe fn push(&mut self, n: Notify<T>) {
        if self.first.is_none() {
            *self.first = Some(n);
        } else {
            self.rest.push(n);
        }
    }

    /// Queues a task's waker, if it has one.
    pub(crate) fn wake(&mut self, waker: Option<Waker>) {
        if let Some(w) = waker {
            // SAFETY: not a thread node.
            unsafe { self.push(Notify::Task(w)) };
        }
    }

    pub(crate) fn drop_values(&mut self, values: VecDeque<T>) {
        if self.values.is_empty() {
            *self.values = values;
        } else {
            self.values.extend(values);
        }
    }

    /// Runs the deferred work; call it once the core lock is released.
    #[inline]
    pub(crate) fn run(self) {
        drop(self);
    }
}

impl<T> Drop for Deferred<T> {
    /// Most locked paths notify nobody and drop nothing: they pay a few
    /// checks. Most of the rest notify one waiter: they skip the general
    /// loop. (`rest` owns nothing until a second notification is pushed;
    /// `values` may own an empty buffer.)
    #[inline(always)]
    fn drop(&mut self) {
        let owns_values = !self.values.is_empty()
            || (std::mem::size_of::<T>() != 0 && self.values.capacity() != 0);
        if owns_values || self.rest.capacity() != 0 {
            self.run_now();
        } else if let Some(n) = self.first.take() {
            Self::notify_one(n);
        }
    }
}

impl<T> Deferred<T> {
    /// The one notification of a `Deferred` that has nothing else to do.
    #[inline(never)]
    fn notify_one(n: Notify<T>) {
        match n {
            // SAFETY: popped under the lock and handed to us (`push`).
            Notify::Thread(node, v) => unsafe { Node::publish(node, v) },
            Notify::Task(w) => w.wake(),
        }
    }

    /// The work of `Drop`; called once, by it.
    #[cold]
    #[inline(never)]
    fn run_now(&mut self) {
        // SAFETY: called once, from `Drop`, and the fields are not used
        // again: they are dropped as locals (also while a panic unwinds).
        let (mut rest, mut values) = unsafe {
            (
                ManuallyDrop::take(&mut self.rest),
                ManuallyDrop::take(&mut self.values),
            )
        };
        // Thread nodes first: publishing runs no user code, and a thread left
        // unpublished would wait for ever.
        let mut tasks = Vec::new();
        let mut first_task = None;
        for n in self.first.take().into_iter().chain(rest.drain(..)) {
            match n {
                // SAFETY: popped under the lock and handed to us (`push`).
                Notify::Thread(node, v) => unsafe { Node::publish(node, v) },
                Notify::Task(w) if first_task.is_none() => first_task = Some(w),
                Notify::Task(w) => tasks.push(w),
            }
        }
        // Every task gets its wake-up even if one `wake` panics: the guard
        // wakes the rest while that panic unwinds.
        struct WakeRest<I: Iterator<Item = Waker>>(I);
        impl<I: Iterator<Item = Waker>> Drop for WakeRest<I> {
            fn drop(&mut self) {
                for w in &mut self.0 {
                    w.wake();
                }
            }
        }
        let mut pending = WakeRest(first_task.into_iter().chain(tasks));
        for w in &mut pending.0 {
            w.wake();
        }
        drop(pending);

        // A panicking payload `Drop` propagates, and the values after it are
        // leaked instead of being dropped during unwinding (which would
        // abort).
        if !values.is_empty() {
            let mut values = ManuallyDrop::new(std::mem::take(&mut values));
            while let Some(v) = values.pop_front() {
                drop(v);
            }
            drop(ManuallyDrop::into_inner(values));
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    use super::Deferred;

    /// Counts its wake-ups; `Arc::strong_count` tells whether a waker was
    /// dropped (consumed) or leaked.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    /// Payloads that count their drops.
    struct Payload(Arc<AtomicUsize>);

    impl Drop for Payload {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The first notification lives outside the drop glue (`ManuallyDrop`):
    /// every way a `Deferred` ends must still wake it exactly once and
    /// release its waker.
    #[test]
    fn deferred_wakes_each_task_once_however_it_ends() {
        // Run explicitly, with one notification.
        let (c, w) = counter();
        let mut d = Deferred::<Payload>::new();
        d.wake(Some(w));
        assert!(!d.is_empty());
        d.run();
        assert_eq!(c.0.load(Ordering::Relaxed), 1);
        assert_eq!(Arc::strong_count(&c), 1, "the waker was released");

        // Dropped without `run` (an early return or an unwinding path).
        let (c, w) = counter();
        {
            let mut d = Deferred::<Payload>::new();
            d.wake(Some(w));
        }
        assert_eq!(c.0.load(Ordering::Relaxed), 1);
        assert_eq!(Arc::strong_count(&c), 1);

        // Several notifications and values to drop: the general path.
        let counters: Vec<_> = (0..3).map(|_| counter()).collect();
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut d = Deferred::<Payload>::new();
        for (_, w) in &counters {
            d.wake(Some(w.clone()));
        }
        d.drop_values(
            (0..4)
                .map(|_| Payload(dropped.clone()))
                .collect::<VecDeque<_>>(),
        );
        d.run();
        for (c, w) in counters {
            drop(w);
            assert_eq!(c.0.load(Ordering::Relaxed), 1);
            assert_eq!(Arc::strong_count(&c), 1);
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 4);

        // Nothing queued: nothing happens.
        let d = Deferred::<Payload>::new();
        assert!(d.is_empty());
        d.run();
    }
}
