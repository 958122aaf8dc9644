//! Waiting on several channels at once: [`Selector`].
//!
//! A selecting thread first tries every arm without waiting. If none is
//! ready, it links one node per arm into each channel's FIFO list, like any
//! other waiting thread, all sharing one claim word ([`Claim`]). The first
//! channel to notify one of those nodes claims the word for that arm; every
//! other channel then finds the claim taken and drops the selector's node
//! instead of handing it anything. So exactly one arm completes, and no other
//! arm's value is taken. If an arm turns out ready while the selector
//! registers, it aborts its claim, takes every node back and tries again.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};
use std::time::{Duration, Instant};

use crate::core::Chan;
use crate::error::{RecvError, SelectTimeoutError, SendError, TryRecvError, TrySendError};
use crate::mpmc;
use crate::receiver::Receiver;
use crate::waiter::{Claim, Node};

/// Waits on several channels at once, in flume's shape: add receive arms
/// ([`recv`](Selector::recv), for a blocking [`Receiver`] of either flavor)
/// and send arms ([`send`](Selector::send), for an [`mpmc::Sender`]), each
/// with a closure that turns the arm's outcome into the selector's result,
/// then [`wait`](Selector::wait). Exactly one arm completes per wait.
///
/// - A disconnected channel makes its arm ready, with the error.
/// - When several arms are ready, the one tried first is chosen by a
///   rotating start, so no arm starves.
/// - A selecting thread waits in each channel's FIFO list like any other
///   waiter: values sent while it waits go to it in arrival order among the
///   other waiting receivers (threads and tasks).
/// - An async receiver joins through [`AsyncReceiver::to_sync`](crate::AsyncReceiver::to_sync).
///
/// A worker that takes jobs until told to stop:
///
/// ```
/// use std::thread;
///
/// let (jobs_tx, jobs) = amphi::mpmc::bounded::<u32>(16);
/// let (stop_tx, stop) = amphi::mpmc::bounded::<()>(1);
/// let worker = thread::spawn(move || {
///     let mut done = 0;
///     loop {
///         let more = amphi::Selector::new()
///             .recv(&jobs, |job| job.is_ok())
///             .recv(&stop, |_| false)
///             .wait();
///         if !more {
///             return done;
///         }
///         done += 1;
///     }
/// });
/// for job in 0..10 {
///     jobs_tx.send(job).unwrap();
/// }
/// while !jobs_tx.is_empty() {
///     thread::yield_now();
/// }
/// stop_tx.send(()).unwrap();
/// assert_eq!(worker.join().unwrap(), 10);
/// ```
pub struct Selector<'a, R> {
    arms: Vec<Box<dyn Arm<R> + 'a>>,
}

/// One arm of a selector, with its channel, closure and node.
trait Arm<R> {
    /// Tries the operation without waiting; the result if it completed
    /// (disconnection included).
    fn try_now(&mut self) -> Option<R>;
    /// Links a node for arm `arm` of `claim` into the channel; true if the
    /// arm turned out ready instead (then nothing is linked).
    fn register(&mut self, claim: &Claim, arm: usize) -> bool;
    /// Takes the node back; afterwards no channel refers to it.
    fn withdraw(&mut self);
    /// This arm won while registered: waits for its notifier to finish with
    /// the node, then runs the closure on the outcome.
    fn finish(&mut self) -> R;
}

struct RecvArm<'a, T, F> {
    chan: &'a Chan<T>,
    f: Option<F>,
    node: Option<Node<T>>,
}

struct SendArm<'a, T, F> {
    chan: &'a Chan<T>,
    value: Option<T>,
    f: Option<F>,
    node: Option<Node<T>>,
}

impl<T, R, F: FnOnce(Result<T, RecvError>) -> R> Arm<R> for RecvArm<'_, T, F> {
    fn try_now(&mut self) -> Option<R> {
        let r = match self.chan.try_recv() {
            Ok(v) => Ok(v),
            Err(TryRecvError::Disconnected) => Err(RecvError),
            Err(TryRecvError::Empty) => return None,
        };
        Some((self.f.take().expect("an arm completes once"))(r))
    }

    fn register(&mut self, claim: &Claim, arm: usize) -> bool {
        let node = self.node.insert(Node::select(claim, arm, None));
        // SAFETY: the node lives in this boxed arm, which is not moved while
        // the node is linked: `withdraw` or `finish` runs before the arm (or
        // the claim) goes away, also on unwind (`Selector::run`'s guard).
        let ready = unsafe { self.chan.select_recv(node) };
        if ready {
            self.node = None;
        }
        ready
    }

    fn withdraw(&mut self) {
        if let Some(node) = &self.node {
            self.chan.select_withdraw(node, false);
            // A node that lost is released with nothing in it.
            self.node = None;
        }
    }

    fn finish(&mut self) -> R {
        let r = match take_published(&mut self.node) {
            Some(v) => Ok(v),
            // Woken by the last sender's drop: the queue was empty while this
            // arm waited, so the channel is drained.
            None => Err(RecvError),
        };
        (self.f.take().expect("an arm completes once"))(r)
    }
}

impl<T, R, F: FnOnce(Result<(), SendError<T>>) -> R> Arm<R> for SendArm<'_, T, F> {
    fn try_now(&mut self) -> Option<R> {
        let v = self.value.take().expect("a send arm holds its value");
        let r = match self.chan.try_send(v) {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(v)) => Err(SendError(v)),
            Err(TrySendError::Full(v)) => {
                self.value = Some(v);
                return None;
            }
        };
        Some((self.f.take().expect("an arm completes once"))(r))
    }

    fn register(&mut self, claim: &Claim, arm: usize) -> bool {
        let value = self.value.take();
        let node = self.node.insert(Node::select(claim, arm, value));
        // SAFETY: as for `RecvArm::register`.
        let ready = unsafe { self.chan.select_send(node) };
        if ready {
            // Never linked: the value is still ours.
            // SAFETY: nobody else has seen the node.
            self.value = unsafe { node.take_value() };
            self.node = None;
        }
        ready
    }

    fn withdraw(&mut self) {
        if let Some(node) = &self.node {
            self.chan.select_withdraw(node, true);
            // Withdrawn or dropped by a channel that found the selector
            // claimed elsewhere: either way the value was not taken.
            // SAFETY: no channel refers to the node any more.
            self.value = unsafe { node.take_value() };
            self.node = None;
        }
    }

    fn finish(&mut self) -> R {
        let r = match take_published(&mut self.node) {
            // A receiver took it, or it went into the queue.
            None => Ok(()),
            // Woken because every receiver is gone.
            Some(v) => Err(SendError(v)),
        };
        (self.f.take().expect("an arm completes once"))(r)
    }
}

/// The winning arm's node, once its notifier has published it (the node
/// stays where it is until then): what it holds.
fn take_published<T>(slot: &mut Option<Node<T>>) -> Option<T> {
    let node = slot.as_ref().expect("the winning arm is registered");
    node.wait_published();
    // SAFETY: published: the notifier is done with the node.
    let value = unsafe { node.take_value() };
    *slot = None;
    value
}

/// Where a selection starts trying its arms: rotates, so that when several
/// arms are ready none starves.
static NEXT_START: AtomicUsize = AtomicUsize::new(0);

impl<'a, R> Selector<'a, R> {
    /// A selector with no arms yet.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded::<i32>(1);
    /// tx.send(1).unwrap();
    /// let got = amphi::Selector::new().recv(&rx, |r| r.unwrap()).wait();
    /// assert_eq!(got, 1);
    /// ```
    pub fn new() -> Self {
        Selector { arms: Vec::new() }
    }

    /// Adds a receive arm on a blocking receiver of either flavor (an async
    /// receiver joins through `to_sync()`). If this arm completes, `f` gets
    /// the value, or [`RecvError`] if the channel is empty and every sender
    /// is gone.
    ///
    /// ```
    /// let (mut a_tx, a) = amphi::spmc::bounded::<u8>(1);
    /// let (_b_tx, b) = amphi::mpmc::bounded::<&str>(1);
    /// a_tx.send(7).unwrap();
    /// let got = amphi::Selector::new()
    ///     .recv(&a, |r| format!("a: {}", r.unwrap()))
    ///     .recv(&b, |r| format!("b: {}", r.unwrap()))
    ///     .wait();
    /// assert_eq!(got, "a: 7");
    /// ```
    pub fn recv<T, F>(mut self, rx: &'a Receiver<T>, f: F) -> Self
    where
        T: 'a,
        F: FnOnce(Result<T, RecvError>) -> R + 'a,
    {
        self.arms.push(Box::new(RecvArm {
            chan: rx.chan(),
            f: Some(f),
            node: None,
        }));
        self
    }

    /// Adds a send arm on an mpmc sender. If this arm completes, `value` was
    /// sent and `f` gets `Ok(())`, or every receiver is gone and `f` gets the
    /// value back in [`SendError`]. If another arm completes, `value` is
    /// dropped unsent.
    ///
    /// ```
    /// let (tx, rx) = amphi::mpmc::bounded::<u32>(1);
    /// let (_full_tx, full_rx) = amphi::mpmc::bounded::<u32>(0);
    /// let sent = amphi::Selector::new()
    ///     .send(&tx, 5, |r| r.is_ok())
    ///     .recv(&full_rx, |_| false)
    ///     .wait();
    /// assert!(sent);
    /// assert_eq!(rx.recv(), Ok(5));
    /// ```
    pub fn send<T, F>(mut self, tx: &'a mpmc::Sender<T>, value: T, f: F) -> Self
    where
        T: 'a,
        F: FnOnce(Result<(), SendError<T>>) -> R + 'a,
    {
        self.arms.push(Box::new(SendArm {
            chan: tx.chan(),
            value: Some(value),
            f: Some(f),
            node: None,
        }));
        self
    }

    /// Waits until one arm completes and returns what its closure returned.
    ///
    /// # Panics
    ///
    /// If the selector has no arms (it would wait for ever), as
    /// crossbeam-channel's `Select` does.
    ///
    /// ```
    /// use std::thread;
    /// let (tx, rx) = amphi::mpmc::bounded::<i32>(0);
    /// let h = thread::spawn(move || tx.send(3).unwrap());
    /// let v = amphi::Selector::new().recv(&rx, |r| r.unwrap()).wait();
    /// assert_eq!(v, 3);
    /// h.join().unwrap();
    /// ```
    pub fn wait(self) -> R {
        assert!(
            !self.arms.is_empty(),
            "amphi::Selector::wait with no arms would wait for ever"
        );
        match self.run(None) {
            Ok(r) => r,
            Err(SelectTimeoutError) => unreachable!("no deadline"),
        }
    }

    /// Waits at most `timeout` for an arm to complete. A ready arm wins over
    /// an expired timeout; `Duration::MAX` waits for ever.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_tx, rx) = amphi::spmc::bounded::<i32>(1);
    /// let r = amphi::Selector::new()
    ///     .recv(&rx, |r| r.unwrap())
    ///     .wait_timeout(Duration::from_millis(10));
    /// assert!(r.is_err());
    /// ```
    pub fn wait_timeout(self, timeout: Duration) -> Result<R, SelectTimeoutError> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.run(Some(deadline)),
            None => Ok(self.wait()),
        }
    }

    /// Waits until `deadline` for an arm to complete. A ready arm wins over
    /// an expired deadline.
    ///
    /// ```
    /// use std::time::Instant;
    /// let (mut tx, rx) = amphi::spmc::bounded::<i32>(1);
    /// tx.send(1).unwrap();
    /// let r = amphi::Selector::new()
    ///     .recv(&rx, |r| r.unwrap())
    ///     .wait_deadline(Instant::now());
    /// assert_eq!(r, Ok(1));
    /// ```
    pub fn wait_deadline(self, deadline: Instant) -> Result<R, SelectTimeoutError> {
        self.run(Some(deadline))
    }

    fn run(mut self, deadline: Option<Instant>) -> Result<R, SelectTimeoutError> {
        let n = self.arms.len();
        // loom replays each execution and needs it deterministic: no global
        // rotation there.
        let start = if n == 0 || cfg!(loom) {
            0
        } else {
            NEXT_START.fetch_add(1, StdOrdering::Relaxed) % n
        };
        let order: Vec<usize> = (0..n).map(|k| (start + k) % n).collect();
        loop {
            if let Some(r) = self.try_all(&order) {
                return Ok(r);
            }
            if n == 0 {
                if let Some(d) = deadline {
                    let now = Instant::now();
                    if now < d {
                        std::thread::sleep(d - now);
                    }
                }
                return Err(SelectTimeoutError);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(SelectTimeoutError);
            }

            let claim = Claim::new();
            // Takes every node back if anything below unwinds, so that no
            // channel keeps a pointer into this frame.
            struct WithdrawAll<'s, 'a, R>(&'s mut Vec<Box<dyn Arm<R> + 'a>>);
            impl<R> Drop for WithdrawAll<'_, '_, R> {
                fn drop(&mut self) {
                    for arm in self.0.iter_mut() {
                        arm.withdraw();
                    }
                }
            }
            let guard = WithdrawAll(&mut self.arms);
            let mut ready = false;
            for &i in &order {
                if guard.0[i].register(&claim, i) {
                    ready = true;
                    break;
                }
            }
            let winner = if ready {
                claim.abort()
            } else {
                claim.wait(deadline)
            };
            let arms = &mut *guard.0;
            for (i, arm) in arms.iter_mut().enumerate() {
                if Some(i) != winner {
                    arm.withdraw();
                }
            }
            if let Some(i) = winner {
                let r = arms[i].finish();
                drop(guard);
                return Ok(r);
            }
            drop(guard);
            if !ready {
                // Timed out: a ready arm still wins over the deadline.
                return self.try_all(&order).ok_or(SelectTimeoutError);
            }
            // An arm was ready while registering: try them all again.
        }
    }

    fn try_all(&mut self, order: &[usize]) -> Option<R> {
        order.iter().find_map(|&i| self.arms[i].try_now())
    }
}

impl<R> Default for Selector<'_, R> {
    fn default() -> Self {
        Selector::new()
    }
}

impl<R> fmt::Debug for Selector<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selector")
            .field("arms", &self.arms.len())
            .finish()
    }
}
