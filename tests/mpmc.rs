//! Behaviour of `amphi::mpmc`: the spmc behaviours that carry over (briefly),
//! then what many producers add: senders served in arrival order, slot
//! handoff by cancelled async sends, disconnection only after the last
//! sender clone, sender/receiver counts across clones and conversions, and
//! rendezvous with many senders.
//!
//! Every test body runs under a watchdog, so a hang fails the test.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

mod common;

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use amphi::mpmc::{
    self, AsyncReceiver, AsyncSender, Receiver, RecvError, RecvTimeoutError, SendTimeoutError,
    Sender, TryRecvError, TrySendError,
};
use futures::task::ArcWake;

// ---------------------------------------------------------------- helpers

// Miri runs these bodies tens of times slower (spinning waits included).
const WATCHDOG: Duration = Duration::from_secs(if cfg!(miri) { 120 } else { 20 });
/// How long a thread gets to reach its blocking call before we assume it is
/// blocked there (and how long we wait to see that nothing happens).
const SETTLE: Duration = Duration::from_millis(100);

/// Runs `f` on its own thread; fails the test if it does not finish in time
/// (a hang becomes a failure instead of a stuck test run).
fn watchdog<F: FnOnce() + Send + 'static>(f: F) {
    common::watchdog(WATCHDOG.as_secs(), f)
}

/// Polls `cond` until it holds; fails after a few seconds.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out waiting until {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// A waker that counts its wake-ups.
struct Counter(AtomicUsize);

impl ArcWake for Counter {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct CountingWaker {
    counter: Arc<Counter>,
    waker: Waker,
}

impl CountingWaker {
    fn new() -> Self {
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = futures::task::waker(counter.clone());
        CountingWaker { counter, waker }
    }

    fn count(&self) -> usize {
        self.counter.0.load(Ordering::SeqCst)
    }

    fn poll<F: Future + Unpin>(&self, f: &mut F) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(&self.waker))
    }
}

/// A value that records its drops, per id.
#[derive(Debug)]
struct Tracked {
    id: usize,
    drops: Arc<Vec<AtomicUsize>>,
}

impl PartialEq for Tracked {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

struct Tracker(Arc<Vec<AtomicUsize>>);

impl Tracker {
    fn new(n: usize) -> Self {
        Tracker(Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect()))
    }

    fn make(&self, id: usize) -> Tracked {
        Tracked {
            id,
            drops: self.0.clone(),
        }
    }

    fn drops(&self, id: usize) -> usize {
        self.0[id].load(Ordering::SeqCst)
    }

    fn total(&self) -> usize {
        self.0.iter().map(|d| d.load(Ordering::SeqCst)).sum()
    }
}

/// A thread blocked in a call, with a flag saying whether it returned.
struct Blocked<R> {
    done: Arc<AtomicBool>,
    handle: thread::JoinHandle<R>,
}

impl<R: Send + 'static> Blocked<R> {
    /// Starts `f` on a thread and returns once it has (very probably) reached
    /// its blocking call: it signals just before the call, then we give it
    /// `SETTLE` and check it has not returned.
    fn start(f: impl FnOnce() -> R + Send + 'static) -> Self {
        let started = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let handle = {
            let (started, done) = (started.clone(), done.clone());
            thread::spawn(move || {
                started.store(true, Ordering::SeqCst);
                let r = f();
                done.store(true, Ordering::SeqCst);
                r
            })
        };
        wait_until("the thread started", || started.load(Ordering::SeqCst));
        thread::sleep(SETTLE);
        let b = Blocked { done, handle };
        assert!(!b.is_done(), "the call should be blocked");
        b
    }

    fn is_done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    fn join(self) -> R {
        wait_until("the blocked call returned", || self.is_done());
        self.handle.join().unwrap()
    }
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}
fn assert_unpin<T: Unpin>() {}

// ------------------------------------------- behaviours shared with spmc

#[test]
fn handles_are_send_sync_unpin_and_debug() {
    struct NotDebug;
    assert_send_sync::<Sender<NotDebug>>();
    assert_send_sync::<AsyncSender<NotDebug>>();
    assert_send_sync::<Receiver<NotDebug>>();
    assert_send_sync::<AsyncReceiver<NotDebug>>();
    assert_send::<mpmc::SendFuture<'static, NotDebug>>();
    assert_send::<mpmc::RecvFuture<'static, NotDebug>>();
    assert_send::<mpmc::SendBatchFuture<'static, NotDebug>>();
    assert_unpin::<Sender<NotDebug>>();
    assert_unpin::<AsyncSender<NotDebug>>();
    let (tx, rx) = mpmc::bounded::<NotDebug>(2);
    let (atx, arx) = (tx.clone().into_async(), rx.to_async());
    for s in [
        format!("{tx:?}"),
        format!("{atx:?}"),
        format!("{rx:?}"),
        format!("{arx:?}"),
    ] {
        assert!(!s.is_empty());
    }
}

#[test]
fn fifo_across_sender_clones() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded(16);
        let tx2 = tx.clone();
        let atx = tx.clone().into_async();
        for i in 0..12 {
            match i % 3 {
                0 => tx.send(i).unwrap(),
                1 => tx2.try_send(i).unwrap(),
                _ => futures::executor::block_on(atx.send(i)).unwrap(),
            }
        }
        let got: Vec<i32> = rx.try_iter().collect();
        assert_eq!(got, (0..12).collect::<Vec<_>>());
    });
}

#[test]
fn receivers_drain_after_disconnect() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded(8);
        let tx2 = tx.clone();
        let arx = rx.to_async();
        tx.send(1).unwrap();
        tx2.send(2).unwrap();
        tx.send(3).unwrap();
        drop(tx);
        drop(tx2);
        assert!(rx.is_disconnected());
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(futures::executor::block_on(arx.recv()), Ok(2));
        assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv(), Err(RecvError));
        assert_eq!(futures::executor::block_on(arx.recv()), Err(RecvError));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(1)),
            Err(RecvTimeoutError::Disconnected)
        );
        assert_eq!(rx.iter().count(), 0);
    });
}

#[test]
fn values_dropped_exactly_once() {
    watchdog(|| {
        let t = Tracker::new(8);
        let (tx, rx) = mpmc::bounded(4);
        let tx2 = tx.clone();
        let rx2 = rx.clone();
        tx.send(t.make(0)).unwrap();
        tx2.send(t.make(1)).unwrap();
        tx.send(t.make(2)).unwrap();
        // A received value is the receiver's to drop.
        let v0 = rx.recv().unwrap();
        assert_eq!(t.total(), 0);
        drop(v0);
        assert_eq!(t.drops(0), 1);
        // Dropping one of two receivers keeps the buffered values.
        drop(rx);
        assert_eq!(t.total(), 1);
        assert_eq!(rx2.len(), 2);
        // The last receiver drops them at once.
        drop(rx2);
        assert_eq!((t.drops(1), t.drops(2)), (1, 1));
        // Later sends give their value back, undropped.
        let err = tx.send(t.make(3)).unwrap_err();
        assert_eq!(t.drops(3), 0);
        assert_eq!(err.into_inner().id, 3);
        assert_eq!(t.drops(3), 1);
        let err = tx2.try_send(t.make(4)).unwrap_err();
        assert!(err.is_disconnected());
        drop(err);
        let err = futures::executor::block_on(tx2.clone().into_async().send(t.make(5)));
        assert_eq!(err.unwrap_err().0.id, 5);
        for id in 0..6 {
            assert_eq!(t.drops(id), 1, "value {id}");
        }
    });
}

#[test]
fn blocked_sender_gets_value_back_when_receivers_go() {
    watchdog(|| {
        let t = Tracker::new(2);
        let (tx, rx) = mpmc::bounded(1);
        tx.send(t.make(0)).unwrap();
        let rx2 = rx.to_async();
        let blocked = {
            let tx = tx.clone();
            let t1 = t.make(1);
            Blocked::start(move || tx.send(t1).map_err(|e| e.into_inner().id))
        };
        drop(rx);
        thread::sleep(SETTLE);
        assert!(!blocked.is_done(), "a receiver is left");
        assert!(!tx.is_disconnected());
        drop(rx2);
        assert_eq!(blocked.join(), Err(1));
        assert_eq!((t.drops(0), t.drops(1)), (1, 1));
        assert!(tx.is_disconnected());
    });
}

#[test]
fn cancelled_recv_passes_its_value_to_the_next_task() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded_async::<i32>(4);
        let rx2 = rx.clone();
        let (wa, wb) = (CountingWaker::new(), CountingWaker::new());
        let mut a = Box::pin(rx.recv());
        let mut b = Box::pin(rx2.recv());
        assert!(wa.poll(&mut a).is_pending());
        assert!(wb.poll(&mut b).is_pending());
        tx.try_send(7).unwrap();
        assert_eq!(
            (wa.count(), wb.count()),
            (1, 0),
            "the oldest receiver first"
        );
        drop(a);
        assert_eq!(wb.count(), 1, "the unused wake-up passes on");
        assert_eq!(wb.poll(&mut b), Poll::Ready(Ok(7)));
        assert!(rx.is_empty());
    });
}

#[test]
fn cancelled_recv_puts_its_value_back_in_front() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded_async::<i32>(2);
        let w = CountingWaker::new();
        let mut a = Box::pin(rx.recv());
        assert!(w.poll(&mut a).is_pending());
        tx.try_send(1).unwrap();
        tx.clone().try_send(2).unwrap();
        // 1 is handed to `a` and still counts: the channel is full.
        assert!(tx.try_send(3).unwrap_err().is_full());
        drop(a);
        assert_eq!(rx.len(), 2);
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Ok(2));
    });
}

#[test]
fn cancelled_recv_passes_its_value_to_a_blocked_thread() {
    watchdog(|| {
        let (tx, rx) = mpmc::unbounded::<i32>();
        let arx = rx.to_async();
        let w = CountingWaker::new();
        let mut a = Box::pin(arx.recv());
        assert!(w.poll(&mut a).is_pending());
        let blocked = {
            let rx = rx.clone();
            Blocked::start(move || rx.recv())
        };
        tx.send(5).unwrap();
        assert_eq!(w.count(), 1, "the task waited first");
        thread::sleep(SETTLE);
        assert!(!blocked.is_done(), "the value went to the task");
        drop(a);
        assert_eq!(blocked.join(), Ok(5));
        assert!(rx.is_empty());
    });
}

#[test]
fn newest_waker_is_woken() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded_async::<i32>(1);
        tx.try_send(0).unwrap();
        let (w1, w2) = (CountingWaker::new(), CountingWaker::new());
        let mut s = Box::pin(tx.send(1));
        assert!(w1.poll(&mut s).is_pending());
        assert!(w2.poll(&mut s).is_pending());
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!((w1.count(), w2.count()), (0, 1));
        assert_eq!(w2.poll(&mut s), Poll::Ready(Ok(())));
        drop(s);
        let (w3, w4) = (CountingWaker::new(), CountingWaker::new());
        assert_eq!(rx.try_recv(), Ok(1));
        let mut r = Box::pin(rx.recv());
        assert!(w3.poll(&mut r).is_pending());
        assert!(w4.poll(&mut r).is_pending());
        tx.try_send(2).unwrap();
        assert_eq!((w3.count(), w4.count()), (0, 1));
        assert_eq!(w4.poll(&mut r), Poll::Ready(Ok(2)));
    });
}

#[test]
fn rendezvous_basics() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(0);
        let tx2 = tx.clone();
        assert_eq!(tx.capacity(), Some(0));
        assert!(tx.is_full() && rx.is_full());
        // No receiver waiting: try_send fails; no sender waiting: try_recv fails.
        assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        // A waiting receiver makes try_send succeed.
        let receiver = {
            let rx = rx.clone();
            Blocked::start(move || rx.recv())
        };
        assert_eq!(tx2.try_send(2), Ok(()));
        assert_eq!(receiver.join(), Ok(2));
        // A waiting sender makes try_recv succeed, and its send completes.
        let sender = {
            let tx = tx.clone();
            Blocked::start(move || tx.send(3))
        };
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(sender.join(), Ok(()));
        assert!(rx.is_empty());
        // A timed-out rendezvous send gives its value back.
        let start = Instant::now();
        assert_eq!(
            tx.send_timeout(4, Duration::from_millis(20)),
            Err(SendTimeoutError::Timeout(4))
        );
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

#[test]
fn timeouts_and_deadlines() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(1);
        let tx2 = tx.clone();
        let d = Duration::from_millis(30);

        let start = Instant::now();
        assert_eq!(rx.recv_timeout(d), Err(RecvTimeoutError::Timeout));
        assert!(start.elapsed() >= d);

        tx.send(1).unwrap();
        let start = Instant::now();
        assert_eq!(tx2.send_timeout(2, d), Err(SendTimeoutError::Timeout(2)));
        assert!(start.elapsed() >= d);
        let start = Instant::now();
        let past = Instant::now() - Duration::from_secs(1);
        assert_eq!(
            tx.send_deadline(2, start + d),
            Err(SendTimeoutError::Timeout(2))
        );
        assert!(start.elapsed() >= d);

        // An available value or a free slot wins over an expired deadline.
        assert_eq!(rx.recv_deadline(past), Ok(1));
        assert_eq!(tx2.send_deadline(2, past), Ok(()));
        assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(2));
        // Duration::MAX does not overflow.
        assert_eq!(tx.send_timeout(3, Duration::MAX), Ok(()));
        assert_eq!(rx.recv_timeout(Duration::MAX), Ok(3));

        // A timed-out sender left no trace: a free slot is free for anyone.
        tx.send(4).unwrap();
        assert!(tx2.send_timeout(5, Duration::from_millis(5)).is_err());
        assert_eq!(rx.recv(), Ok(4));
        assert_eq!(tx.try_send(6), Ok(()));
        assert_eq!(rx.recv(), Ok(6));

        drop((tx, tx2));
        assert_eq!(
            rx.recv_timeout(Duration::MAX),
            Err(RecvTimeoutError::Disconnected)
        );
    });
}

#[test]
fn blocked_thread_receivers_wait_with_timeout_then_get_values() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(2);
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                Blocked::start(move || rx.recv_timeout(Duration::from_secs(10)))
            })
            .collect();
        for i in 0..3 {
            tx.clone().send(i).unwrap();
        }
        // Waiting receivers are served in arrival order.
        let got: Vec<_> = waiting.into_iter().map(|b| b.join().unwrap()).collect();
        assert_eq!(got, [0, 1, 2]);
    });
}

#[test]
fn batches_from_several_senders() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded(16);
        let tx2 = tx.clone();
        tx.send_batch(0..5).unwrap();
        tx2.send_batch(vec![5, 6, 7]).unwrap();
        let mut buf = Vec::new();
        assert_eq!(rx.try_recv_many(&mut buf, 3), 3);
        assert_eq!(rx.recv_many(&mut buf, 100), 5);
        assert_eq!(buf, (0..8).collect::<Vec<_>>());

        // A batch larger than the capacity waits for room, in order, while
        // another sender's batch competes.
        let (tx, rx) = mpmc::bounded::<u32>(4);
        let senders: Vec<_> = (0..2u32)
            .map(|p| {
                let tx = tx.clone();
                thread::spawn(move || tx.send_batch((0..500).map(|i| p << 16 | i)).unwrap())
            })
            .collect();
        drop(tx);
        let mut got = Vec::new();
        while rx.recv_many(&mut got, 7) > 0 {}
        senders.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(got.len(), 1000);
        for p in 0..2u32 {
            let mine: Vec<u32> = got
                .iter()
                .filter(|&&v| v >> 16 == p)
                .map(|&v| v & 0xffff)
                .collect();
            assert_eq!(mine, (0..500).collect::<Vec<_>>());
        }

        // Async batches, pending while full.
        let (atx, arx) = mpmc::bounded_async::<u32>(3);
        let atx2 = atx.clone();
        let got = futures::executor::block_on(async {
            let producer = async {
                atx.send_batch(0..20).await.unwrap();
                atx2.send_batch(20..40).await.unwrap();
                drop((atx, atx2));
            };
            let consumer = async {
                let mut got = Vec::new();
                while arx.recv_many(&mut got, 5).await > 0 {}
                got
            };
            futures::join!(producer, consumer).1
        });
        assert_eq!(got, (0..40).collect::<Vec<_>>());

        // Without receivers, the error holds the values not sent.
        let (tx, rx) = mpmc::bounded::<i32>(2);
        drop(rx);
        assert_eq!(
            tx.send_batch([1, 2, 3]).unwrap_err().into_inner(),
            [1, 2, 3]
        );
    });
}

#[test]
fn state_queries_on_all_handles() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(2);
        let atx = tx.clone().into_async();
        let arx = rx.to_async();
        macro_rules! check {
            ($len:expr, $full:expr) => {
                assert_eq!([tx.len(), atx.len(), rx.len(), arx.len()], [$len; 4], "len");
                assert_eq!(
                    [tx.is_empty(), atx.is_empty(), rx.is_empty(), arx.is_empty()],
                    [$len == 0; 4]
                );
                assert_eq!(
                    [tx.is_full(), atx.is_full(), rx.is_full(), arx.is_full()],
                    [$full; 4]
                );
            };
        }
        for c in [tx.capacity(), atx.capacity(), rx.capacity(), arx.capacity()] {
            assert_eq!(c, Some(2));
        }
        check!(0, false);
        tx.send(1).unwrap();
        check!(1, false);
        atx.try_send(2).unwrap();
        check!(2, true);
        rx.recv().unwrap();
        check!(1, false);

        let (utx, urx) = mpmc::unbounded::<i32>();
        assert_eq!((utx.capacity(), urx.capacity()), (None, None));
        utx.send_batch(0..1000).unwrap();
        assert!(!utx.is_full() && !urx.is_full());
        assert_eq!(urx.len(), 1000);

        assert!(!tx.is_disconnected() && !rx.is_disconnected());
        drop((rx, arx));
        assert!(tx.is_disconnected() && atx.is_disconnected());
        let (tx, rx) = mpmc::bounded_async::<i32>(1);
        drop(tx);
        assert!(rx.is_disconnected());
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn conversions_share_one_channel() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(4);
        let atx: AsyncSender<i32> = tx.clone().into();
        let tx_back: Sender<i32> = atx.clone().into_sync();
        let arx: AsyncReceiver<i32> = rx.clone().into();
        let rx_back: Receiver<i32> = arx.to_sync();
        tx.send(1).unwrap();
        futures::executor::block_on(atx.send(2)).unwrap();
        tx_back.send(3).unwrap();
        assert_eq!(futures::executor::block_on(arx.recv()), Ok(1));
        assert_eq!(rx_back.recv(), Ok(2));
        let srx: Receiver<i32> = arx.into();
        assert_eq!(srx.recv(), Ok(3));

        // An async producer outside tokio (futures-lite's `block_on`, as a
        // smol program without I/O would use) feeding threads and a tokio task.
        let (tx, rx) = mpmc::bounded_async::<u32>(2);
        let thread_rx = rx.to_sync();
        let worker = thread::spawn(move || thread_rx.iter().collect::<Vec<_>>());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let task_rx = rx.clone();
        let task = thread::spawn(move || {
            rt.block_on(async {
                let mut got = Vec::new();
                while let Ok(v) = task_rx.recv().await {
                    got.push(v);
                }
                got
            })
        });
        drop(rx);
        futures_lite::future::block_on(async {
            let tx2 = tx.clone();
            for i in 0..100 {
                if i % 2 == 0 { &tx } else { &tx2 }.send(i).await.unwrap();
            }
        });
        drop(tx);
        let mut all = worker.join().unwrap();
        all.extend(task.join().unwrap());
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    });
}

// ------------------------------------------------- many-producer behaviour

#[test]
fn blocked_thread_senders_served_in_arrival_order() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(1);
        tx.send(0).unwrap();
        let mut blocked = Vec::new();
        for i in 1..=3 {
            let tx = tx.clone();
            // Each starts only once the previous one is blocked.
            blocked.push(Blocked::start(move || tx.send(i)));
        }
        assert_eq!(rx.len(), 1);
        let got: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 3]);
        for b in blocked {
            assert_eq!(b.join(), Ok(()));
        }
    });
}

#[test]
fn blocked_thread_senders_with_rendezvous_served_in_arrival_order() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(0);
        let mut blocked = Vec::new();
        for i in 1..=4 {
            let tx = tx.clone();
            blocked.push(Blocked::start(move || tx.send(i)));
        }
        let got: Vec<_> = (0..4).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, [1, 2, 3, 4]);
        for b in blocked {
            assert_eq!(b.join(), Ok(()));
        }
    });
}

#[test]
fn pending_async_senders_served_in_arrival_order() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded_async::<i32>(1);
        let tx2 = tx.clone();
        tx.try_send(0).unwrap();
        let w: Vec<CountingWaker> = (0..3).map(|_| CountingWaker::new()).collect();
        let mut f1 = Box::pin(tx.send(1));
        let mut f2 = Box::pin(tx2.send(2));
        let mut f3 = Box::pin(tx.send(3));
        assert!(w[0].poll(&mut f1).is_pending());
        assert!(w[1].poll(&mut f2).is_pending());
        assert!(w[2].poll(&mut f3).is_pending());
        let counts = |w: &[CountingWaker]| w.iter().map(|w| w.count()).collect::<Vec<_>>();

        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!(counts(&w), [1, 0, 0]);
        // The freed slot is reserved for f1: nobody else gets it.
        assert!(tx2.try_send(99).unwrap_err().is_full());
        assert!(w[2].poll(&mut f3).is_pending());
        assert!(w[1].poll(&mut f2).is_pending());
        assert_eq!(w[0].poll(&mut f1), Poll::Ready(Ok(())));
        assert_eq!(rx.len(), 1);

        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(counts(&w), [1, 1, 0]);
        assert_eq!(w[1].poll(&mut f2), Poll::Ready(Ok(())));
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(counts(&w), [1, 1, 1]);
        assert_eq!(w[2].poll(&mut f3), Poll::Ready(Ok(())));
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

#[test]
fn mixed_thread_and_task_senders_served_in_arrival_order() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(1);
        let atx = tx.clone().into_async();
        tx.send(0).unwrap();
        let (w1, w3) = (CountingWaker::new(), CountingWaker::new());
        let mut f1 = Box::pin(atx.send(1));
        assert!(w1.poll(&mut f1).is_pending());
        let t2 = {
            let tx = tx.clone();
            Blocked::start(move || tx.send(2))
        };
        let mut f3 = Box::pin(atx.send(3));
        assert!(w3.poll(&mut f3).is_pending());
        let t4 = {
            let tx = tx.clone();
            Blocked::start(move || tx.send(4))
        };

        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!((w1.count(), w3.count()), (1, 0));
        assert!(!t2.is_done());
        assert_eq!(w1.poll(&mut f1), Poll::Ready(Ok(())));
        assert_eq!(rx.recv(), Ok(1));
        // The blocked thread is next: its value moves in, it returns.
        assert_eq!(t2.join(), Ok(()));
        assert_eq!(w3.count(), 0);
        assert_eq!(rx.len(), 1);
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(w3.count(), 1);
        assert!(!t4.is_done());
        assert_eq!(w3.poll(&mut f3), Poll::Ready(Ok(())));
        assert_eq!(rx.recv(), Ok(3));
        assert_eq!(t4.join(), Ok(()));
        assert_eq!(rx.recv(), Ok(4));
        assert!(rx.is_empty());
    });
}

#[test]
fn cancelled_granted_send_hands_its_slot_on() {
    watchdog(|| {
        let t = Tracker::new(6);
        let (tx, rx) = mpmc::bounded_async(1);
        let tx2 = tx.clone();
        tx.try_send(t.make(0)).unwrap();
        let (wa, wb) = (CountingWaker::new(), CountingWaker::new());
        let mut a = Box::pin(tx.send(t.make(1)));
        let mut b = Box::pin(tx2.send(t.make(2)));
        assert!(wa.poll(&mut a).is_pending());
        assert!(wb.poll(&mut b).is_pending());

        let v0 = rx.try_recv().unwrap();
        assert_eq!(v0.id, 0);
        drop(v0);
        assert_eq!((wa.count(), wb.count()), (1, 0), "A was first");
        assert_eq!(rx.len(), 0);
        assert!(rx.is_full(), "the slot is reserved for A");
        assert!(tx2.try_send(t.make(3)).unwrap_err().is_full());
        assert_eq!(t.drops(3), 1);

        // A is cancelled without being polled again: the slot goes to B.
        drop(a);
        assert_eq!(t.drops(1), 1, "A's value is dropped");
        assert_eq!(rx.len(), 0, "and not enqueued");
        assert_eq!(wb.count(), 1, "B is woken");
        assert_eq!(wb.poll(&mut b), Poll::Ready(Ok(())));
        drop(b);
        assert_eq!(rx.len(), 1);
        assert!(rx.is_full());
        let v = rx.try_recv().unwrap();
        assert_eq!(v.id, 2);
        drop(v);
        assert_eq!(rx.try_recv().map(|v| v.id), Err(TryRecvError::Empty));
        // Capacity is exactly as before: one slot.
        tx.try_send(t.make(4)).map_err(|_| ()).unwrap();
        assert!(tx2.try_send(t.make(5)).unwrap_err().is_full());
        drop(rx);
        for id in 0..6 {
            assert_eq!(t.drops(id), 1, "value {id}");
        }
    });
}

#[test]
fn cancelled_waiting_send_leaves_the_queue() {
    watchdog(|| {
        let t = Tracker::new(4);
        let (tx, rx) = mpmc::bounded_async(1);
        tx.try_send(t.make(0)).unwrap();
        let (wa, wb) = (CountingWaker::new(), CountingWaker::new());
        let mut a = Box::pin(tx.send(t.make(1)));
        let mut b = Box::pin(tx.send(t.make(2)));
        assert!(wa.poll(&mut a).is_pending());
        assert!(wb.poll(&mut b).is_pending());
        // A is dropped while still waiting (no slot granted yet).
        drop(a);
        assert_eq!(t.drops(1), 1);
        assert_eq!(wb.count(), 0);
        assert_eq!(rx.try_recv().unwrap().id, 0);
        assert_eq!(wb.count(), 1, "B is now first");
        assert_eq!(wb.poll(&mut b), Poll::Ready(Ok(())));
        assert_eq!(rx.try_recv().unwrap().id, 2);
        // Nobody waits: a free slot is free.
        tx.try_send(t.make(3)).map_err(|_| ()).unwrap();
        assert_eq!(wa.count(), 0);
    });
}

#[test]
fn sender_never_waits_for_a_free_slot() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(4);
        let clones: Vec<Sender<i32>> = (0..4).map(|_| tx.clone()).collect();
        // Every clone finds room until the capacity is reached.
        for (i, c) in clones.iter().enumerate() {
            c.try_send(i as i32).unwrap();
        }
        assert!(tx.try_send(9).unwrap_err().is_full());
        assert_eq!(rx.recv(), Ok(0));
        // A blocking send with room returns at once, even with a past deadline.
        let past = Instant::now() - Duration::from_secs(1);
        assert_eq!(clones[3].send_deadline(4, past), Ok(()));
        assert_eq!(rx.recv(), Ok(1));
        let atx = clones[2].clone().into_async();
        let w = CountingWaker::new();
        let mut f = Box::pin(atx.send(5));
        assert_eq!(w.poll(&mut f), Poll::Ready(Ok(())), "ready on first poll");
        drop(f);
        // A blocking send in another thread with room: no receiver needed.
        assert_eq!(rx.recv(), Ok(2));
        let tx3 = clones[1].clone();
        thread::spawn(move || tx3.send(6)).join().unwrap().unwrap();
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [3, 4, 5, 6]);

        // After every waiter was served, room is free for anyone.
        tx.send_batch([7, 8, 9, 10]).unwrap();
        let waiting = {
            let tx = clones[0].clone();
            Blocked::start(move || tx.send(11))
        };
        assert_eq!(rx.recv(), Ok(7));
        assert_eq!(waiting.join(), Ok(()));
        assert_eq!(rx.recv(), Ok(8));
        assert_eq!(clones[1].try_send(12), Ok(()));
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [9, 10, 11, 12]);
    });
}

#[test]
fn disconnect_only_after_the_last_sender() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(4);
        let arx = rx.to_async();
        let tx2 = tx.clone();
        let atx = tx.clone().into_async();
        let atx2 = atx.clone();
        let stx: Sender<i32> = atx2.clone().into();
        let atx3: AsyncSender<i32> = tx2.clone().into();
        assert_eq!(rx.sender_count(), 6);

        let thread_rx = rx.clone();
        let blocked = Blocked::start(move || thread_rx.recv());
        let w = CountingWaker::new();
        let mut pending = Box::pin(arx.recv());
        assert!(w.poll(&mut pending).is_pending());

        let mut drops: Vec<Box<dyn FnOnce()>> = vec![
            Box::new(move || drop(tx)),
            Box::new(move || drop(atx)),
            Box::new(move || drop(stx)),
            Box::new(move || drop(tx2)),
            Box::new(move || drop(atx3)),
        ];
        let mut left = 6;
        for d in drops.drain(..) {
            d();
            left -= 1;
            assert_eq!(rx.sender_count(), left);
            assert!(!rx.is_disconnected() && !arx.is_disconnected());
            thread::sleep(Duration::from_millis(10));
            assert!(
                !blocked.is_done(),
                "receiver thread woke with {left} senders left"
            );
            assert_eq!(w.count(), 0, "receiver task woken with {left} senders left");
            assert!(w.poll(&mut pending).is_pending());
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        }
        drop(atx2);
        assert_eq!(rx.sender_count(), 0);
        assert!(rx.is_disconnected() && arx.is_disconnected());
        assert_eq!(blocked.join(), Err(RecvError));
        assert_eq!(w.count(), 1);
        assert_eq!(w.poll(&mut pending), Poll::Ready(Err(RecvError)));
    });
}

#[test]
fn drain_waits_for_the_last_sender() {
    watchdog(|| {
        let (tx, rx) = mpmc::unbounded::<i32>();
        let atx = tx.clone().into_async();
        let tx2 = tx.clone();
        tx.send(1).unwrap();
        atx.try_send(2).unwrap();
        drop(tx);
        drop(atx);
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "tx2 is alive");
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(10)),
            Err(RecvTimeoutError::Timeout)
        );
        tx2.send(3).unwrap();
        drop(tx2);
        assert_eq!(rx.recv(), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv(), Err(RecvError));
    });
}

#[test]
fn counts_track_clones_drops_and_conversions() {
    watchdog(|| {
        let (tx, rx) = mpmc::bounded::<i32>(1);
        let counts = |rx: &Receiver<i32>| (rx.sender_count(), rx.receiver_count());
        assert_eq!(counts(&rx), (1, 1));
        assert_eq!((tx.sender_count(), tx.receiver_count()), (1, 1));

        let tx2 = tx.clone();
        assert_eq!(counts(&rx), (2, 1));
        let atx = tx2.into_async(); // a move: no change
        assert_eq!(counts(&rx), (2, 1));
        assert_eq!(atx.sender_count(), 2);
        let atx2 = atx.clone();
        assert_eq!(counts(&rx), (3, 1));
        let stx: Sender<i32> = atx2.into(); // From: no change
        assert_eq!(counts(&rx), (3, 1));
        let stx = AsyncSender::from(stx).into_sync();
        assert_eq!(counts(&rx), (3, 1));

        let arx = rx.to_async(); // a new receiver
        assert_eq!(counts(&rx), (3, 2));
        let srx = arx.to_sync();
        assert_eq!(counts(&rx), (3, 3));
        let arx2 = srx.into_async(); // a move
        assert_eq!(counts(&rx), (3, 3));
        let arx3 = arx2.clone();
        assert_eq!(counts(&rx), (3, 4));
        let rx2: Receiver<i32> = arx3.into();
        assert_eq!(counts(&rx), (3, 4));
        assert_eq!(
            (
                tx.receiver_count(),
                atx.receiver_count(),
                stx.receiver_count()
            ),
            (4, 4, 4)
        );
        assert_eq!(
            (arx.sender_count(), arx2.sender_count(), rx2.sender_count()),
            (3, 3, 3)
        );
        assert_eq!(arx.receiver_count(), 4);

        drop(stx);
        assert_eq!(counts(&rx), (2, 4));
        drop(arx);
        drop(arx2);
        assert_eq!(counts(&rx), (2, 2));
        drop(tx);
        assert_eq!(counts(&rx), (1, 2));
        assert!(!rx.is_disconnected());
        drop(rx2);
        assert_eq!((atx.sender_count(), atx.receiver_count()), (1, 1));
        drop(atx);
        assert_eq!(counts(&rx), (0, 1));
        assert!(rx.is_disconnected());
    });
}

#[test]
fn rendezvous_send_completes_only_when_taken() {
    watchdog(|| {
        const N: usize = 6;
        let (tx, rx) = mpmc::bounded::<usize>(0);
        let completed: Arc<Vec<AtomicBool>> =
            Arc::new((0..N).map(|_| AtomicBool::new(false)).collect());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        // Half of the senders are threads, half are tasks.
        let mut threads = Vec::new();
        for id in 0..N {
            let completed = completed.clone();
            if id % 2 == 0 {
                let tx = tx.clone();
                threads.push(thread::spawn(move || {
                    tx.send(id).unwrap();
                    completed[id].store(true, Ordering::SeqCst);
                }));
            } else {
                let tx = tx.clone().into_async();
                rt.spawn(async move {
                    tx.send(id).await.unwrap();
                    completed[id].store(true, Ordering::SeqCst);
                });
            }
        }
        drop(tx);
        thread::sleep(SETTLE);
        let done = |c: &[AtomicBool]| {
            (0..N)
                .filter(|&i| c[i].load(Ordering::SeqCst))
                .collect::<HashSet<_>>()
        };
        assert!(done(&completed).is_empty(), "no send completes untaken");
        let mut taken = HashSet::new();
        for _ in 0..N {
            let v = rx.recv().unwrap();
            assert!(taken.insert(v), "{v} taken twice");
            wait_until("the send of a taken value completed", || {
                completed[v].load(Ordering::SeqCst)
            });
            // Nothing else completed: every completed send had its value taken.
            assert_eq!(done(&completed), taken);
        }
        threads.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(rx.recv(), Err(RecvError));
    });
}

#[test]
fn rendezvous_pending_async_sends() {
    watchdog(|| {
        let t = Tracker::new(4);
        let (tx, rx) = mpmc::bounded_async(0);
        let tx2 = tx.clone();
        let w: Vec<CountingWaker> = (0..3).map(|_| CountingWaker::new()).collect();
        let mut f0 = Box::pin(tx.send(t.make(0)));
        let mut f1 = Box::pin(tx2.send(t.make(1)));
        let mut f2 = Box::pin(tx.send(t.make(2)));
        assert!(w[0].poll(&mut f0).is_pending());
        assert!(w[1].poll(&mut f1).is_pending());
        assert!(w[2].poll(&mut f2).is_pending());
        assert!(w[0].poll(&mut f0).is_pending(), "not taken yet");

        let v = rx.try_recv().unwrap();
        assert_eq!(v.id, 0, "the oldest sender's value");
        assert_eq!(w.iter().map(|w| w.count()).collect::<Vec<_>>(), [1, 0, 0]);
        assert!(w[1].poll(&mut f1).is_pending());
        assert!(matches!(w[0].poll(&mut f0), Poll::Ready(Ok(()))));
        drop(v);

        // A pending, untaken send dropped: its value is gone, not sendable.
        drop(f1);
        assert_eq!(t.drops(1), 1);
        let v = rx.try_recv().unwrap();
        assert_eq!(v.id, 2);
        // Dropped after its value was taken, before being polled: stays sent.
        drop(f2);
        assert_eq!(t.drops(2), 0);
        drop(v);
        assert!(rx.try_recv().is_err());
        drop(f0);
        for id in 0..3 {
            assert_eq!(t.drops(id), 1, "value {id}");
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn rendezvous_many_senders_many_receivers() {
    watchdog(|| {
        const SENDERS: usize = 8;
        const PER: usize = 300;
        let (tx, rx) = mpmc::bounded::<usize>(0);
        let seen: Arc<Vec<AtomicUsize>> =
            Arc::new((0..SENDERS * PER).map(|_| AtomicUsize::new(0)).collect());
        let receivers: Vec<_> = (0..4)
            .map(|_| {
                let (rx, seen) = (rx.clone(), seen.clone());
                thread::spawn(move || {
                    let mut last: [Option<usize>; SENDERS] = [None; SENDERS];
                    for v in &rx {
                        seen[v].fetch_add(1, Ordering::SeqCst);
                        let (s, i) = (v / PER, v % PER);
                        assert!(last[s].map_or(true, |l| i > l), "order of sender {s}");
                        last[s] = Some(i);
                    }
                })
            })
            .collect();
        let senders: Vec<_> = (0..SENDERS)
            .map(|s| {
                let tx = tx.clone();
                thread::spawn(move || {
                    for i in 0..PER {
                        tx.send(s * PER + i).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        senders.into_iter().for_each(|h| h.join().unwrap());
        // Every send completed, so every value was taken: none is left.
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        drop(rx);
        receivers.into_iter().for_each(|h| h.join().unwrap());
        for (v, n) in seen.iter().enumerate() {
            assert_eq!(n.load(Ordering::SeqCst), 1, "value {v}");
        }
    });
}

#[test]
fn async_receivers_on_tokio_compete_with_threads() {
    watchdog(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let (tx, rx) = mpmc::bounded::<u32>(2);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let (rx, seen) = (rx.to_async(), seen.clone());
                rt.spawn(async move {
                    let mut s = rx.stream();
                    while let Some(v) = futures::StreamExt::next(&mut s).await {
                        seen.lock().unwrap().push(v);
                    }
                })
            })
            .collect();
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (rx, seen) = (rx.clone(), seen.clone());
                thread::spawn(move || rx.iter().for_each(|v| seen.lock().unwrap().push(v)))
            })
            .collect();
        drop(rx);
        let senders: Vec<_> = (0..3u32)
            .map(|p| {
                let tx = tx.clone();
                thread::spawn(move || (0..200).for_each(|i| tx.send(p * 1000 + i).unwrap()))
            })
            .collect();
        drop(tx);
        senders.into_iter().for_each(|h| h.join().unwrap());
        workers.into_iter().for_each(|h| h.join().unwrap());
        rt.block_on(async {
            for t in tasks {
                tokio::time::timeout(Duration::from_secs(10), t)
                    .await
                    .expect("task hung")
                    .unwrap();
            }
        });
        let mut seen = seen.lock().unwrap().clone();
        seen.sort_unstable();
        let expected: Vec<u32> = (0..3)
            .flat_map(|p| (0..200).map(move |i| p * 1000 + i))
            .collect();
        assert_eq!(seen, expected);
    });
}
