//! Helpers shared by the integration tests: counting wakers, manual polling,
//! drop counting, payloads that panic on drop, a watchdog, and delivery
//! checks.
#![allow(dead_code)]

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

// ----- wakers

/// A waker that counts its wake-ups.
#[derive(Default)]
pub struct CountingWaker {
    wakes: AtomicUsize,
}

impl CountingWaker {
    pub fn new() -> Arc<Self> {
        Arc::new(CountingWaker::default())
    }

    pub fn count(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

/// A counting waker and a `Waker` for it.
pub fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let c = CountingWaker::new();
    let w = Waker::from(c.clone());
    (c, w)
}

/// A waker whose `wake` runs a closure (which may re-enter the channel or
/// panic), counting the calls first.
pub struct FnWaker<F: Fn() + Send + Sync + 'static> {
    pub wakes: AtomicUsize,
    f: F,
}

impl<F: Fn() + Send + Sync + 'static> FnWaker<F> {
    pub fn count(&self) -> usize {
        self.wakes.load(Ordering::SeqCst)
    }
}

impl<F: Fn() + Send + Sync + 'static> Wake for FnWaker<F> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        (self.f)();
    }
}

pub fn fn_waker<F: Fn() + Send + Sync + 'static>(f: F) -> (Arc<FnWaker<F>>, Waker) {
    let c = Arc::new(FnWaker {
        wakes: AtomicUsize::new(0),
        f,
    });
    let w = Waker::from(c.clone());
    (c, w)
}

/// Polls a pinned future once with `waker`.
pub fn poll_with<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    let mut cx = Context::from_waker(waker);
    fut.poll(&mut cx)
}

/// Polls an `Unpin` future once with `waker`.
pub fn poll_unpin<F: Future + Unpin + ?Sized>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    poll_with(Pin::new(fut), waker)
}

/// Polls a stream once with `waker`.
pub fn poll_next<S: futures::Stream + Unpin + ?Sized>(
    s: &mut S,
    waker: &Waker,
) -> Poll<Option<S::Item>> {
    let mut cx = Context::from_waker(waker);
    Pin::new(s).poll_next(&mut cx)
}

/// Asserts the poll is pending.
#[track_caller]
pub fn assert_pending<T: std::fmt::Debug>(p: Poll<T>) {
    assert!(p.is_pending(), "expected Pending, got {p:?}");
}

/// Unwraps a ready poll.
#[track_caller]
pub fn ready<T: std::fmt::Debug>(p: Poll<T>) -> T {
    match p {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("expected Ready, got Pending"),
    }
}

// ----- drop counting

/// Records how many times each tracked value was dropped.
pub struct DropLog {
    counts: Vec<AtomicUsize>,
}

impl DropLog {
    pub fn new(n: usize) -> Arc<Self> {
        Arc::new(DropLog {
            counts: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    pub fn dropped(&self, id: usize) -> usize {
        self.counts[id].load(Ordering::SeqCst)
    }

    pub fn total(&self) -> usize {
        self.counts.iter().map(|c| c.load(Ordering::SeqCst)).sum()
    }

    /// Every id dropped exactly once.
    #[track_caller]
    pub fn assert_all_once(&self) {
        for (id, c) in self.counts.iter().enumerate() {
            assert_eq!(c.load(Ordering::SeqCst), 1, "value {id} drop count");
        }
    }

    pub fn item(self: &Arc<Self>, id: usize) -> Tracked {
        Tracked {
            id,
            log: self.clone(),
            panic_on_drop: false,
        }
    }

    pub fn panicky(self: &Arc<Self>, id: usize) -> Tracked {
        Tracked {
            id,
            log: self.clone(),
            panic_on_drop: true,
        }
    }
}

/// A payload that records its drop (and optionally panics in `Drop`, after
/// recording it). Deliberately not `Debug`.
pub struct Tracked {
    pub id: usize,
    log: Arc<DropLog>,
    panic_on_drop: bool,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let prev = self.log.counts[self.id].fetch_add(1, Ordering::SeqCst);
        assert_eq!(prev, 0, "value {} dropped twice", self.id);
        if self.panic_on_drop && !thread::panicking() {
            panic!("payload {} panics in drop", self.id);
        }
    }
}

/// A type without `Debug`, for the "`Debug` without `T: Debug`" checks.
pub struct NotDebug(pub u8);

// ----- watchdog

/// Runs `f` on a thread and fails the test if it does not finish within
/// `secs` seconds (a hang becomes a failure). Panics inside `f` propagate.
#[track_caller]
pub fn watchdog<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (done_tx, done_rx) = mpsc::channel();
    let h = thread::Builder::new()
        .name("watched".into())
        .spawn(move || {
            let r = panic::catch_unwind(AssertUnwindSafe(f));
            let _ = done_tx.send(());
            r
        })
        .expect("spawn");
    match done_rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => match h.join().expect("joined") {
            Ok(r) => r,
            Err(p) => panic::resume_unwind(p),
        },
        Err(_) => panic!("watchdog: test body did not finish within {secs}s (hang/deadlock)"),
    }
}

/// Joins a thread, failing if it takes longer than `secs`.
#[track_caller]
pub fn join_within<R: Send + 'static>(h: thread::JoinHandle<R>, secs: u64) -> R {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !h.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "thread did not finish within {secs}s"
        );
        thread::sleep(Duration::from_millis(1));
    }
    match h.join() {
        Ok(r) => r,
        Err(p) => panic::resume_unwind(p),
    }
}

/// Waits until `cond` holds, failing after `secs`.
#[track_caller]
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// A flag shared with another thread.
pub fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// Runs `f`, expecting it to panic; returns the panic message.
#[track_caller]
pub fn expect_panic<R>(f: impl FnOnce() -> R) -> String {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic"),
        Err(p) => panic_message(&*p),
    }
}

pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic>".to_string()
    }
}

// ----- delivery checks

/// Checks that the per-consumer sequences together hold every value of
/// `0..n` exactly once (bitmap, count, checksum) and that each consumer saw
/// its values in strictly increasing order.
#[track_caller]
pub fn check_exactly_once(n: u64, per_consumer: &[Vec<u64>]) {
    for (c, vals) in per_consumer.iter().enumerate() {
        for w in vals.windows(2) {
            assert!(
                w[0] < w[1],
                "consumer {c} saw {} then {}: not increasing",
                w[0],
                w[1]
            );
        }
    }
    check_delivered_once(n, per_consumer);
}

/// Checks that the per-consumer sequences together hold every value of
/// `0..n` exactly once (bitmap, count, checksum), in any order.
#[track_caller]
pub fn check_delivered_once(n: u64, per_consumer: &[Vec<u64>]) {
    let mut seen = vec![false; n as usize];
    let mut count = 0u64;
    let mut sum = 0u64;
    for (c, vals) in per_consumer.iter().enumerate() {
        for &v in vals {
            assert!(v < n, "consumer {c} got out-of-range value {v}");
            assert!(!seen[v as usize], "value {v} delivered twice");
            seen[v as usize] = true;
            count += 1;
            sum += v;
        }
    }
    assert_eq!(count, n, "values delivered");
    assert_eq!(sum, n * (n - 1) / 2, "checksum");
    if let Some(missing) = seen.iter().position(|s| !s) {
        panic!("value {missing} never delivered");
    }
}
