//! loom models of the core's wake-up protocol and of the spmc ring's data
//! path (`ring_*`).
//!
//! Every primitive of the core (mutexes, atomics, `Arc`, thread park/unpark)
//! comes from loom under `cfg(loom)` (see `src/sync.rs`), so these models
//! explore the interleavings of the real code. loom does not model time: a
//! timed park returns at once there and counts as timed out, so the timeout
//! models see a deadline fire at every point loom picks.
//!
//! loom's exploration is not complete (it keeps one last access per atomic;
//! see tokio-rs/loom#166 and #392): with a producer thread `try_send`ing 1
//! then 2 into bounded(1) and a consumer thread making two `try_recv`s, it
//! never runs the schedule in which the consumer gets both, even without a
//! preemption bound. So where a model's point is a race, it asserts with
//! [`Seen`] that loom ran both outcomes, and the racing operations run on
//! spawned threads where that makes loom reach more of them.
//!
//! Run (see RELIABILITY.md; `.ci/extra-checks.sh` does it for CI):
//!
//! ```text
//! LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" cargo test --release --test loom
//! ```
//!
//! The preemption bound defaults to 2 when `LOOM_MAX_PREEMPTIONS` is unset.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use amphi::{mpmc, spmc, RecvError, Selector, TryRecvError, TrySendError};

/// An async spmc channel: `bounded_async(c)` for `Some(c)`, else unbounded.
fn spmc_async(cap: Option<usize>) -> (spmc::AsyncSender<u32>, spmc::AsyncReceiver<u32>) {
    match cap {
        Some(c) => spmc::bounded_async(c),
        None => spmc::unbounded_async(),
    }
}

/// Runs `f` under loom with a preemption bound (2 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise).
fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    run_model(None, f)
}

/// [`model`] with the preemption bound capped at `max`, for a model too
/// large to run at the CI bound (its doc comment says why).
fn model_max_preemptions<F>(max: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    run_model(Some(max), f)
}

fn run_model<F>(max: Option<usize>, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    if let Some(max) = max {
        b.preemption_bound = b.preemption_bound.map(|p| p.min(max));
    }
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    // Shown with `-- --nocapture`.
    println!(
        "loom: {} executions explored (preemption bound {:?})",
        runs.load(std::sync::atomic::Ordering::Relaxed),
        b.preemption_bound
    );
}

/// A waker that counts its wake-ups (the count is a loom atomic, so reading
/// it from another thread is modelled too).
struct CountWaker(AtomicUsize);

impl Wake for CountWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (std::sync::Arc<CountWaker>, Waker) {
    let c = std::sync::Arc::new(CountWaker(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

fn wakes(c: &CountWaker) -> usize {
    c.0.load(Ordering::SeqCst)
}

/// Records which of two outcomes a model's executions reached, so that a
/// test can assert that loom explored both (e.g. the cancelled future had or
/// had not been handed the value when it was dropped).
#[derive(Clone, Default)]
struct Seen(std::sync::Arc<[std::sync::atomic::AtomicBool; 2]>);

impl Seen {
    fn mark(&self, which: bool) {
        self.0[which as usize].store(true, std::sync::atomic::Ordering::Relaxed);
    }
    fn assert_both(&self, what: &str) {
        let [a, b] = &*self.0;
        let both = a.load(std::sync::atomic::Ordering::Relaxed)
            && b.load(std::sync::atomic::Ordering::Relaxed);
        assert!(both, "loom did not explore both cases of: {what}");
    }
}

/// Polls an `Unpin` future once with `waker`.
fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

// ----- (a) a send wakes a waiting receiver

/// A receive's first poll raced a send of `want`, which is done by now:
/// either that poll took the value, or it registered and the send woke it
/// exactly once, and the next poll takes it.
fn took_or_was_woken<F>(
    first: Poll<Result<u32, RecvError>>,
    f: &mut F,
    c: &CountWaker,
    w: &Waker,
    want: u32,
) where
    F: Future<Output = Result<u32, RecvError>> + Unpin,
{
    match first {
        Poll::Ready(v) => assert_eq!(v, Ok(want)),
        Poll::Pending => {
            assert_eq!(wakes(c), 1, "the registered task was not woken once");
            assert_eq!(poll_once(f, w), Poll::Ready(Ok(want)));
        }
    }
}

/// A blocked thread receiver is woken by a send (bounded and unbounded).
#[test]
fn send_wakes_blocked_thread_receiver() {
    for cap in [Some(1), None] {
        model(move || {
            let (mut tx, rx) = match cap {
                Some(c) => spmc::bounded::<u32>(c),
                None => spmc::unbounded(),
            };
            let r = thread::spawn(move || {
                let v = rx.recv();
                (v, rx.try_recv())
            });
            tx.send(7).unwrap();
            let (v, after) = r.join().unwrap();
            assert_eq!(v, Ok(7));
            assert_eq!(after, Err(TryRecvError::Empty));
            assert!(tx.is_empty());
        });
    }
}

/// A pending task receiver (driven by loom's `block_on`) is woken by a send
/// from a blocking sender.
#[test]
fn send_wakes_pending_task_receiver() {
    for cap in [Some(1), None] {
        model(move || {
            let (mut tx, rx) = match cap {
                Some(c) => spmc::bounded::<u32>(c),
                None => spmc::unbounded(),
            };
            let arx = rx.into_async();
            let r = thread::spawn(move || {
                let v = loom::future::block_on(arx.recv());
                (v, arx)
            });
            tx.send(7).unwrap();
            let (v, _arx) = r.join().unwrap();
            assert_eq!(v, Ok(7));
            assert!(tx.is_empty());
            // A value handed to a task is given back to the capacity.
            if cap.is_some() {
                tx.try_send(8).unwrap();
                assert!(tx.try_send(9).unwrap_err().is_full());
            }
        });
    }
}

/// A blocking sender on `bounded(0)` and a task receiver: with a blocking
/// sender alive the receive first looks for a waiting thread sender (the
/// spinning receiver's hint) and then takes the lock. Both values arrive, in
/// order, each send returning only once its value is taken.
#[test]
fn rendezvous_thread_sender_feeds_task_receiver() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(0);
        let arx = rx.into_async();
        let r = thread::spawn(move || {
            let a = loom::future::block_on(arx.recv());
            let b = loom::future::block_on(arx.recv());
            (a, b)
        });
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert!(tx.is_empty());
        assert_eq!(r.join().unwrap(), (Ok(1), Ok(2)));
    });
}

/// The mirror: a task sender on `bounded(0)` and a blocking receiver
/// thread. With a blocking receiver alive the send first looks for a
/// waiting thread receiver (the spinning sender's hint), then takes the
/// lock. Both values arrive in order; each send completes once a receiver
/// has its value.
#[test]
fn rendezvous_task_sender_feeds_thread_receiver() {
    model(|| {
        let (tx, rx) = spmc::bounded::<u32>(0);
        let mut atx = tx.into_async();
        let r = thread::spawn(move || (rx.recv(), rx.recv()));
        loom::future::block_on(async {
            atx.send(1).await.unwrap();
            atx.send(2).await.unwrap();
        });
        assert!(atx.is_empty());
        assert_eq!(r.join().unwrap(), (Ok(1), Ok(2)));
    });
}

// ----- (b) cancellation handoff

/// Two pending async receivers; a send races with the drop of the oldest
/// (which may already have been handed the value): the value must reach the
/// other receiver, which must be woken, and the capacity must be intact.
#[test]
fn cancelled_receiver_passes_value_to_next_task() {
    for cap in [Some(1), None] {
        let seen = Seen::default();
        let s = seen.clone();
        model(move || {
            let (mut tx, rx) = spmc_async(cap);
            let rx2 = rx.clone();
            let (c1, w1) = counting_waker();
            let (c2, w2) = counting_waker();
            let mut f1 = Box::pin(rx.recv());
            let mut f2 = Box::pin(rx2.recv());
            assert!(poll_once(&mut f1, &w1).is_pending());
            assert!(poll_once(&mut f2, &w2).is_pending());
            let tx = thread::spawn(move || {
                loom::future::block_on(tx.send(1)).unwrap();
                tx
            });
            drop(f1);
            let mut tx = tx.join().unwrap();
            // Woken either directly (f1 was gone) or by f1's cancellation.
            assert!(wakes(&c2) >= 1);
            assert_eq!(poll_once(&mut f2, &w2), Poll::Ready(Ok(1)));
            // Whether f1 had been handed the value before it was dropped.
            s.mark(wakes(&c1) > 0);
            drop(f2);
            assert!(rx.is_empty());
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            if cap.is_some() {
                tx.try_send(2).unwrap();
                assert!(tx.try_send(3).unwrap_err().is_full());
                assert_eq!(rx2.try_recv(), Ok(2));
            }
        });
        seen.assert_both("f1 dropped before / after being handed the value");
    }
}

/// Two pending async receivers (owned streams, so that a spawned thread can
/// drop them: loom explores races on spawned threads), both dropped (the
/// older first) while a send races: whichever holds the value when it is
/// dropped (the older, handed it by the send, or the younger, handed it by
/// the older's cancellation or by the send) passes it on, and with no
/// receiver left waiting it stays in the channel, once; on `bounded(1)` it
/// fills the capacity exactly. Asserts loom explored the value reaching a
/// receiver before its drop and not at all.
#[test]
fn two_cancelled_receivers_leave_the_value_in_the_channel() {
    use futures_core::Stream;
    for cap in [Some(1), None] {
        let seen = Seen::default();
        let s = seen.clone();
        model(move || {
            let (tx, rx) = spmc_async(cap);
            let (c1, w1) = counting_waker();
            let (c2, w2) = counting_waker();
            let mut s1 = rx.clone().into_stream();
            let mut s2 = rx.clone().into_stream();
            let mut cx1 = Context::from_waker(&w1);
            let mut cx2 = Context::from_waker(&w2);
            assert!(Pin::new(&mut s1).poll_next(&mut cx1).is_pending());
            assert!(Pin::new(&mut s2).poll_next(&mut cx2).is_pending());
            let p = thread::spawn(move || {
                let mut tx = tx.into_sync();
                tx.send(1).unwrap();
                tx
            });
            let d = thread::spawn(move || {
                drop(s1);
                drop(s2);
            });
            d.join().unwrap();
            let mut tx = p.join().unwrap();
            s.mark(wakes(&c1) + wakes(&c2) > 0);
            assert_eq!(rx.len(), 1);
            if cap.is_some() {
                assert!(tx.try_send(2).unwrap_err().is_full());
            }
            assert_eq!(rx.try_recv(), Ok(1));
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            tx.try_send(3).unwrap();
            assert_eq!(rx.try_recv(), Ok(3));
        });
        seen.assert_both("the value reached a receiver before its drop / never");
    }
}

/// A pending async receiver is the oldest waiter, a blocked thread receiver
/// the other; the async one is dropped while a send races: the thread gets
/// the value (handed over, or from the front of the queue).
#[test]
fn cancelled_receiver_passes_value_to_thread() {
    model(|| {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        let (_c1, w1) = counting_waker();
        let mut f1 = Box::pin(rx.recv());
        assert!(poll_once(&mut f1, &w1).is_pending());
        let srx = rx.to_sync();
        let t = thread::spawn(move || srx.recv());
        let s = thread::spawn(move || {
            tx.try_send(5).unwrap();
            tx
        });
        drop(f1);
        assert_eq!(t.join().unwrap(), Ok(5));
        let mut tx = s.join().unwrap();
        assert!(rx.is_empty());
        // Nothing is still `held`: the single slot is free.
        tx.try_send(6).unwrap();
        assert!(tx.is_full());
    });
}

// ----- (c) disconnection wakes every waiter

/// Dropping the last sender wakes a blocked thread, a task on `block_on` and
/// a hand-polled pending future; each reports disconnection.
#[test]
fn sender_drop_wakes_every_receiver() {
    model(|| {
        let (tx, rx) = mpmc::bounded::<u32>(1);
        let arx = rx.to_async();
        let arx2 = rx.to_async();
        let (c3, w3) = counting_waker();
        let mut f3 = Box::pin(arx2.recv());
        assert!(poll_once(&mut f3, &w3).is_pending());
        let t1 = thread::spawn(move || rx.recv());
        let t2 = thread::spawn(move || loom::future::block_on(arx.recv()));
        drop(tx);
        assert_eq!(t1.join().unwrap(), Err(RecvError));
        assert_eq!(t2.join().unwrap(), Err(RecvError));
        assert_eq!(wakes(&c3), 1);
        assert_eq!(poll_once(&mut f3, &w3), Poll::Ready(Err(RecvError)));
        assert!(arx2.is_disconnected());
    });
}

/// Dropping the last receiver wakes a blocked sender (thread) and a pending
/// async sender, and both get their values back.
#[test]
fn receiver_drop_wakes_every_sender() {
    model(|| {
        let (tx, rx) = mpmc::bounded::<u32>(1);
        tx.try_send(0).unwrap();
        let atx = tx.clone().into_async();
        let (c2, w2) = counting_waker();
        let mut s2 = Box::pin(atx.send(2));
        assert!(poll_once(&mut s2, &w2).is_pending());
        let t1 = thread::spawn(move || tx.send(1).map_err(|e| e.into_inner()));
        drop(rx);
        assert_eq!(t1.join().unwrap(), Err(1));
        assert_eq!(wakes(&c2), 1);
        match poll_once(&mut s2, &w2) {
            Poll::Ready(Err(e)) => assert_eq!(e.into_inner(), 2),
            other => panic!("expected the value back, got {other:?}"),
        }
    });
}

// ----- (d) a freed slot wakes a waiting producer

/// bounded(1) full; a blocked thread producer completes once a receive frees
/// the slot; values arrive in order.
#[test]
fn freed_slot_wakes_blocked_thread_sender() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(1);
        tx.send(1).unwrap();
        let p = thread::spawn(move || {
            tx.send(2).unwrap();
            tx
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        let tx = p.join().unwrap();
        assert!(tx.is_empty());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

/// The same with a pending async send driven by `block_on` on another thread.
#[test]
fn freed_slot_wakes_pending_async_sender() {
    model(|| {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        tx.try_send(1).unwrap();
        let p = thread::spawn(move || {
            loom::future::block_on(tx.send(2)).unwrap();
            tx
        });
        let rx = rx.into_sync();
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        let mut tx = p.join().unwrap();
        assert!(tx.is_empty());
        // The granted slot was used, not leaked: capacity is exactly 1 again.
        tx.try_send(3).unwrap();
        assert!(matches!(tx.try_send(4), Err(TrySendError::Full(4))));
    });
}

// ----- (e) rendezvous

/// bounded(0): a blocking send and a blocking receive on two threads; the
/// value is delivered exactly once and nothing stays buffered.
#[test]
fn rendezvous_delivers_exactly_once() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(0);
        let r = thread::spawn(move || {
            let v = rx.recv();
            (v, rx)
        });
        tx.send(9).unwrap();
        let (v, rx) = r.join().unwrap();
        assert_eq!(v, Ok(9));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert!(rx.is_empty());
    });
}

/// bounded(0) with an async sender (block_on) and an async receiver
/// (block_on) on two threads.
#[test]
fn rendezvous_async_delivers_exactly_once() {
    model(|| {
        let (mut tx, rx) = spmc::bounded_async::<u32>(0);
        let r = thread::spawn(move || {
            let v = loom::future::block_on(rx.recv());
            (v, rx)
        });
        loom::future::block_on(tx.send(9)).unwrap();
        let (v, rx) = r.join().unwrap();
        assert_eq!(v, Ok(9));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert!(rx.is_empty());
    });
}

// ----- (f) mpmc: granted slot passes on when the granted send is cancelled

/// bounded(1) full; two pending async sends (s1 older); a receive on another
/// thread races with the drop of s1 (which may already have been granted the
/// freed slot): the slot must pass to s2, s1's value must never be enqueued,
/// and the capacity must be exactly 1 afterwards.
#[test]
fn granted_slot_passes_to_next_async_sender() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (tx, rx) = mpmc::bounded_async::<u32>(1);
        tx.try_send(0).unwrap();
        let tx2 = tx.clone();
        let (c1, w1) = counting_waker();
        let (c2, w2) = counting_waker();
        let mut s1 = Box::pin(tx.send(1));
        let mut s2 = Box::pin(tx2.send(2));
        assert!(poll_once(&mut s1, &w1).is_pending());
        assert!(poll_once(&mut s2, &w2).is_pending());
        let srx = rx.to_sync();
        let r = thread::spawn(move || srx.recv());
        drop(s1);
        assert_eq!(r.join().unwrap(), Ok(0));
        // Whether s1 had been granted the slot before it was dropped.
        s.mark(wakes(&c1) > 0);
        assert!(wakes(&c2) >= 1);
        assert!(matches!(poll_once(&mut s2, &w2), Poll::Ready(Ok(()))));
        drop(s2);
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(3).unwrap();
        assert!(tx.try_send(4).unwrap_err().is_full());
    });
    seen.assert_both("s1 dropped before / after being granted the slot");
}

/// bounded(2) full; two pending async sends; two receiving threads each
/// free a slot. Only a claim that finds the "a sender waits" flag serves,
/// and the flag is set again only by the server: a slot freed in between is
/// served by the server's count of the room (both senders granted in one
/// serve) or by the second claim seeing the flag again. Either way both
/// sends are woken and get in, in order, and the capacity stays 2.
#[test]
fn two_freed_slots_serve_two_async_senders() {
    model(|| {
        let (tx, rx) = mpmc::bounded_async::<u32>(2);
        tx.try_send(0).unwrap();
        tx.try_send(1).unwrap();
        let tx2 = tx.clone();
        let (c1, w1) = counting_waker();
        let (c2, w2) = counting_waker();
        let mut s1 = Box::pin(tx.send(2));
        let mut s2 = Box::pin(tx2.send(3));
        assert!(poll_once(&mut s1, &w1).is_pending());
        assert!(poll_once(&mut s2, &w2).is_pending());
        let (ra, rb) = (rx.to_sync(), rx.to_sync());
        let a = thread::spawn(move || ra.recv());
        let b = thread::spawn(move || rb.recv());
        let mut got = [a.join().unwrap().unwrap(), b.join().unwrap().unwrap()];
        got.sort_unstable();
        assert_eq!(got, [0, 1]);
        assert_eq!((wakes(&c1), wakes(&c2)), (1, 1), "both senders granted");
        assert!(matches!(poll_once(&mut s1, &w1), Poll::Ready(Ok(()))));
        assert!(matches!(poll_once(&mut s2, &w2), Poll::Ready(Ok(()))));
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Ok(3));
        tx.try_send(4).unwrap();
        tx.try_send(5).unwrap();
        assert!(tx.try_send(6).unwrap_err().is_full());
    });
}

/// The same with the second sender a blocked thread: whichever order the
/// waiters registered in, the thread's value gets in once s1 is cancelled,
/// and s1's value never does.
#[test]
fn granted_slot_passes_to_blocked_thread_sender() {
    model(|| {
        let (tx, rx) = mpmc::bounded_async::<u32>(1);
        tx.try_send(0).unwrap();
        let (_c1, w1) = counting_waker();
        let mut s1 = Box::pin(tx.send(1));
        assert!(poll_once(&mut s1, &w1).is_pending());
        let tx2 = tx.clone().into_sync();
        let p = thread::spawn(move || tx2.send(2));
        let srx = rx.to_sync();
        let r = thread::spawn(move || srx.recv());
        drop(s1);
        assert_eq!(r.join().unwrap(), Ok(0));
        assert_eq!(p.join().unwrap(), Ok(()));
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(3).unwrap();
        assert!(tx.is_full());
    });
}

/// A send to a full ring handed to a waiting thread receiver (which takes
/// the ring's oldest value, the sent one going to the back) while an async
/// sender waits and a running receiver takes a value: the slot that take
/// frees reaches the waiting sender. Two woken tasks own the ring's values;
/// a third, cancelled, made the async sender wait; the thread waits behind.
#[test]
fn handoff_past_full_ring_leaves_waiting_sender_served() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (tx, rx) = mpmc::bounded_async::<u32>(2);
        let (_c, w) = counting_waker();
        let mut r1 = Box::pin(rx.recv());
        let mut r2 = Box::pin(rx.recv());
        let mut r3 = Box::pin(rx.recv());
        assert!(poll_once(&mut r1, &w).is_pending());
        assert!(poll_once(&mut r2, &w).is_pending());
        assert!(poll_once(&mut r3, &w).is_pending());
        let srx = rx.to_sync();
        let waiter = thread::spawn(move || srx.recv());
        tx.try_send(0).unwrap();
        tx.try_send(1).unwrap();
        let tx2 = tx.clone();
        let (cs, ws) = counting_waker();
        let mut send = Box::pin(tx2.send(2));
        // Ready if the thread took a value first.
        let waits = poll_once(&mut send, &ws).is_pending();
        drop(r3);
        let rxb = rx.to_sync();
        let taker = thread::spawn(move || rxb.try_recv());
        // Handed to the waiting thread if it is registered by now.
        let handed = tx.try_send(3).is_ok();
        s.mark(handed);
        let _ = taker.join().unwrap();
        assert!(waiter.join().unwrap().is_ok());
        if waits && wakes(&cs) == 0 {
            assert!(tx.is_full(), "room left while a sender waits unwoken");
        }
        drop((r1, r2));
    });
    seen.assert_both("the send was handed to the waiting thread");
}
// ----- more: newest waker, competing receivers, batches, spmc grants

/// A pending future re-polled with a new waker while a send races: if the
/// re-poll returned `Pending`, the wake-up goes to the new waker only.
#[test]
fn repoll_with_new_waker_wakes_the_newest_only() {
    model(|| {
        let (mut tx, rx) = spmc::unbounded_async::<u32>();
        let (c1, w1) = counting_waker();
        let (c2, w2) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert!(poll_once(&mut f, &w1).is_pending());
        let s = thread::spawn(move || {
            tx.try_send(1).unwrap();
            tx
        });
        let second = poll_once(&mut f, &w2);
        let _tx = s.join().unwrap();
        match second {
            Poll::Ready(v) => assert_eq!(v, Ok(1)),
            Poll::Pending => {
                assert_eq!(wakes(&c1), 0, "the stale waker was woken");
                assert_eq!(wakes(&c2), 1);
                assert_eq!(poll_once(&mut f, &w2), Poll::Ready(Ok(1)));
            }
        }
    });
}

/// Two blocked thread receivers, one value, then the sender goes: exactly
/// one receiver gets the value, the other sees the disconnection.
///
/// Run at a preemption bound of at most 3. Since bounded(1) has a ring,
/// each receiver passes the ring's fast path, the spin hint, `SLOW` and the
/// settle check before it waits, and with three threads the extra atomics
/// multiply: ~58,000 executions at bound 5 before the ring, ~2.8 million
/// (over 2 minutes on 2 cores) when it came in; at 077a9ba ~1.5 million
/// at bound 4 (~65 s) and ~233,000 at 3 (~10 s). The ring's races in it
/// are modelled at the CI bound by the `ring_*` models (two consumers,
/// disconnection while draining, receivers registering while the producer
/// publishes).
#[test]
fn competing_receivers_get_the_value_exactly_once() {
    model_max_preemptions(3, || {
        let (mut tx, rx) = spmc::bounded::<u32>(1);
        let rx2 = rx.clone();
        let a = thread::spawn(move || rx.recv());
        let b = thread::spawn(move || rx2.recv());
        tx.send(4).unwrap();
        drop(tx);
        let got = [a.join().unwrap(), b.join().unwrap()];
        assert!(
            got == [Ok(4), Err(RecvError)] || got == [Err(RecvError), Ok(4)],
            "{got:?}"
        );
    });
}

/// A blocking batch send on bounded(1) against a receiver on another
/// thread: every value arrives once, in order.
#[test]
fn batch_send_through_one_slot_keeps_order() {
    model(|| {
        let (tx, rx) = mpmc::bounded::<u32>(1);
        let p = thread::spawn(move || tx.send_batch([1, 2, 3]).unwrap());
        let mut got = Vec::new();
        while got.len() < 3 {
            let before = got.len();
            assert!(rx.recv_many(&mut got, 3) >= 1);
            assert!(got.len() > before);
        }
        p.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(rx.recv(), Err(RecvError));
    });
}

/// spmc bounded(2): a blocking batch send that finds the ring full with
/// nobody waiting hands the refused value back to a single send (which spins
/// for room, then waits) instead of looking under the lock; every value
/// arrives once, in order, against a receiver on another thread.
#[test]
fn spmc_batch_send_past_a_full_ring_keeps_order() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(2);
        let p = thread::spawn(move || tx.send_batch([1, 2, 3]).unwrap());
        let got: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
        p.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(rx.recv(), Err(RecvError));
    });
}

/// spmc bounded(1) full, the producer's async send pending; a receive frees
/// the slot (granting it) while the send is dropped: the value is never
/// enqueued and the capacity is exactly 1 again.
#[test]
fn cancelled_granted_spmc_send_restores_capacity() {
    model(|| {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        tx.try_send(0).unwrap();
        let srx = rx.to_sync();
        let r = thread::spawn(move || srx.recv());
        {
            let (_c, w) = counting_waker();
            let mut s = Box::pin(tx.send(1));
            match poll_once(&mut s, &w) {
                // The receive ran first and the slot was free.
                Poll::Ready(r) => assert!(r.is_ok()),
                Poll::Pending => drop(s),
            }
        }
        assert_eq!(r.join().unwrap(), Ok(0));
        let sent_one = rx.try_recv();
        assert!(sent_one == Ok(1) || sent_one == Err(TryRecvError::Empty));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(2).unwrap();
        assert!(tx.try_send(3).unwrap_err().is_full());
    });
}

// ----- regression: a granted slot used by a direct handoff

/// mpmc bounded(1) full, two pending async sends (s1 older, s2), one
/// consumer thread doing three receives. The consumer's first receive frees
/// the slot and grants it to s1; if the consumer is already waiting again
/// when s1 is polled, s1's value goes straight to it, and the slot is free
/// again: it must be granted to s2 at that point, or s2 and the consumer wait
/// for each other for ever (loom reports the deadlock).
#[test]
fn granted_send_handing_off_to_a_waiting_thread_regrants_the_slot() {
    model(|| {
        let (tx, rx) = mpmc::bounded_async::<u32>(1);
        tx.try_send(0).unwrap();
        let tx2 = tx.clone();
        let srx = rx.to_sync();
        let c = thread::spawn(move || (0..3).map(|_| srx.recv().unwrap()).collect::<Vec<_>>());
        let mut s1 = Some(Box::pin(tx.send(1)));
        let mut s2 = Some(Box::pin(tx2.send(2)));
        // Poll both sends (s1 first, so it is the older waiter) until both
        // are done; the thread parks in between until woken.
        loom::future::block_on(std::future::poll_fn(|cx| {
            for s in [&mut s1, &mut s2] {
                if let Some(f) = s {
                    if let Poll::Ready(r) = f.as_mut().poll(cx) {
                        r.unwrap();
                        *s = None;
                    }
                }
            }
            if s1.is_none() && s2.is_none() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        // (Order between the two senders is not asserted: s2 may hand its
        // value to the waiting consumer while s1 holds its granted slot.)
        let mut got = c.join().unwrap();
        got.sort();
        assert_eq!(got, [0, 1, 2]);
    });
}

/// mpmc `bounded(cap)` full, one pending async send s1; a consumer thread
/// frees every slot (its first take grants s1 the slot it frees) while a
/// producer thread `try_send`s `cap + 1` values past the fast path: the
/// values in the channel and the grant together never exceed the capacity,
/// a granted s1 then gets in, and every value comes out once. Returns
/// whether s1 was granted and how many values the producer got in.
fn grant_races_fast_sends(cap: u32) -> (bool, usize) {
    let (tx, rx) = mpmc::bounded_async::<u32>(cap as usize);
    for v in 0..cap {
        tx.try_send(v).unwrap();
    }
    let (c1, w1) = counting_waker();
    let mut s1 = Box::pin(tx.send(10));
    assert!(poll_once(&mut s1, &w1).is_pending());
    let srx = rx.to_sync();
    let r = thread::spawn(move || (0..cap).map(|_| srx.try_recv()).collect::<Vec<_>>());
    let tx2 = tx.clone().into_sync();
    let p = thread::spawn(move || {
        (20..21 + cap)
            .filter(|&v| tx2.try_send(v).is_ok())
            .collect::<Vec<_>>()
    });
    let taken = r.join().unwrap();
    let sent = p.join().unwrap();
    let granted = wakes(&c1) > 0;
    assert!(
        rx.len() + usize::from(granted) <= cap as usize,
        "over capacity"
    );
    let mut got: Vec<u32> = taken.iter().filter_map(|t| t.ok()).collect();
    let mut want: Vec<u32> = (0..cap).collect();
    want.extend(&sent);
    if granted {
        assert!(matches!(poll_once(&mut s1, &w1), Poll::Ready(Ok(()))));
        want.push(10);
    }
    drop(s1);
    while let Ok(v) = rx.try_recv() {
        got.push(v);
    }
    got.sort();
    want.sort();
    assert_eq!(got, want);
    (granted, sent.len())
}

/// [`grant_races_fast_sends`] on bounded(2): the first freed slot is granted
/// to s1 and reserved in the ring, and once a locked send has cleared
/// `SLOW`, the producer's sends take the fast path: they must leave the
/// reserved slot free, and a value of theirs may get in beside the grant.
#[test]
fn reserved_grant_keeps_fast_sends_out_of_its_slot() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (granted, sent) = grant_races_fast_sends(2);
        s.mark(granted && sent > 0);
    });
    seen.assert_both("a value got in while s1 held a grant / did not");
}

/// [`grant_races_fast_sends`] on bounded(1): the take grants the one slot
/// without reserving it in the ring (no fast send could use a ring whose one
/// slot is granted); `SLOW`, set by the take's count and kept while the
/// grant is not reserved, keeps the producer's sends on the locked path,
/// which counts the grant, so none gets in beside it.
#[test]
fn unreserved_grant_keeps_the_one_slot() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (granted, sent) = grant_races_fast_sends(1);
        assert!(!granted || sent == 0, "the granted slot was taken");
        s.mark(granted);
    });
    seen.assert_both("s1 was granted the slot / was not");
}

// ----- intrusive nodes: timeouts and the held handshake

/// A blocked receiver's timeout (under loom it fires at any point) races a
/// send that pops its node: the value is delivered exactly once, either to
/// the timed-out receiver (a popped node is always finished and the value
/// wins) or, if the receiver withdrew first, to the queue.
#[test]
fn receive_timeout_racing_a_handoff() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded::<u32>(1);
        let rx2 = rx.clone();
        let r = thread::spawn(move || rx.recv_timeout(std::time::Duration::from_secs(1)));
        tx.send(7).unwrap();
        match r.join().unwrap() {
            Ok(v) => {
                s.mark(true);
                assert_eq!(v, 7);
                assert_eq!(rx2.try_recv(), Err(TryRecvError::Empty));
            }
            Err(e) => {
                assert!(e.is_timeout());
                s.mark(false);
                assert_eq!(rx2.try_recv(), Ok(7));
            }
        }
    });
    seen.assert_both("the timed-out receiver got the value / withdrew first");
}

/// A blocked sender's timeout races the receive that frees its slot: the
/// value is either sent (in the queue) or returned with the timeout, never
/// both, never lost.
#[test]
fn send_timeout_racing_a_receive() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(1);
        tx.send(1).unwrap();
        let s = thread::spawn(move || {
            let r = tx.send_timeout(2, std::time::Duration::from_secs(1));
            (r.map_err(|e| e.into_inner()), tx)
        });
        assert_eq!(rx.recv(), Ok(1));
        let (r, _tx) = s.join().unwrap();
        match r {
            Ok(()) => assert_eq!(rx.try_recv(), Ok(2)),
            Err(v) => {
                assert_eq!(v, 2);
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            }
        }
    });
}

/// bounded(1): a value handed to a pending task is `held` (the channel is
/// full); the task takes it (one atomic subtraction, no lock unless a sender
/// waits) while an async send registers on another thread. Whichever comes
/// second sees the other, so the send always completes.
#[test]
fn held_release_races_a_registering_sender() {
    model(|| {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        let rx2 = rx.clone();
        let (_c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert!(poll_once(&mut f, &w).is_pending());
        tx.try_send(1).unwrap();
        assert!(tx.try_send(9).unwrap_err().is_full(), "held counts");
        let t = thread::spawn(move || loom::future::block_on(tx.send(2)).unwrap());
        assert_eq!(loom::future::block_on(f), Ok(1));
        t.join().unwrap();
        assert_eq!(rx2.try_recv(), Ok(2));
    });
}

/// bounded(1): the "a sender waits" bit outlives the wait it was raised for
/// (a served sender leaves it set, since it most often waits again). With
/// the bit stale, a task takes its held value (the stale bit sends it to the
/// lock, where it finds nobody to serve and clears the bit) while the
/// producer, on another thread, registers its next send: in either order
/// the send completes, and the values arrive in order.
#[test]
fn stale_send_waiting_bit_races_a_registering_sender() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        let rx2 = rx.clone();
        let (c, w) = counting_waker();
        let mut f1 = Box::pin(rx.recv());
        assert!(poll_once(&mut f1, &w).is_pending());
        tx.try_send(1).unwrap();
        {
            let mut s2 = Box::pin(tx.send(2));
            assert!(poll_once(&mut s2, &w).is_pending(), "held counts");
            // The take serves the waiting send; the bit stays set.
            assert_eq!(poll_once(&mut f1, &w), Poll::Ready(Ok(1)));
            assert!(wakes(&c) >= 2, "the send was woken");
            let mut f2 = Box::pin(rx2.recv());
            assert!(poll_once(&mut f2, &w).is_pending());
            // The granted send hands 2 to the waiting task: held again.
            assert_eq!(poll_once(&mut s2, &w), Poll::Ready(Ok(())));
            drop(s2);
            let t = thread::spawn(move || {
                let (_c3, w3) = counting_waker();
                let mut s3 = Box::pin(tx.send(3));
                match poll_once(&mut s3, &w3) {
                    Poll::Pending => {
                        loom::future::block_on(s3).unwrap();
                        true
                    }
                    done => {
                        assert_eq!(done, Poll::Ready(Ok(())));
                        false
                    }
                }
            });
            assert_eq!(loom::future::block_on(f2), Ok(2));
            s.mark(t.join().unwrap());
        }
        assert_eq!(rx.try_recv(), Ok(3));
    });
    seen.assert_both("the send registered before the take / found its room");
}

/// mpmc bounded(1): a pending task is handed the value of whichever of two
/// producers' `try_send`s comes first (each racing the other's lock-free fast
/// path); the value it holds keeps the one slot, so the other is refused,
/// and once the task has taken it the slot is free again: one more value
/// fits, and no second.
#[test]
fn held_value_keeps_the_slot_from_a_second_producer() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (tx, rx) = mpmc::bounded_async::<u32>(1);
        let tx2 = tx.clone();
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert!(poll_once(&mut f, &w).is_pending());
        let t1 = thread::spawn(move || (tx.try_send(1).is_ok(), tx));
        let t2 = thread::spawn(move || tx2.try_send(2).is_ok());
        let (ok1, tx) = t1.join().unwrap();
        let ok2 = t2.join().unwrap();
        assert!(ok1 != ok2, "exactly one value fits: {ok1} {ok2}");
        s.mark(ok1);
        assert_eq!(wakes(&c), 1);
        assert!(tx.is_full(), "the held value keeps its slot");
        let want = if ok1 { 1 } else { 2 };
        assert_eq!(poll_once(&mut f, &w), Poll::Ready(Ok(want)));
        assert!(rx.is_empty());
        tx.try_send(3).unwrap();
        assert!(tx.try_send(4).unwrap_err().is_full());
        assert_eq!(rx.try_recv(), Ok(3));
    });
    seen.assert_both("the first / the second producer's value handed over");
}

/// bounded(0): a pending task is woken (not handed the value) by an async
/// sender on another thread, and is cancelled; the wake-up passes to the
/// next waiting task, which takes the value; nothing stays in the channel.
#[test]
fn rendezvous_cancelled_woken_task_passes_the_wake_up_on() {
    model(|| {
        let (mut tx, rx) = spmc::bounded_async::<u32>(0);
        let (_c1, w1) = counting_waker();
        let mut f1 = Box::pin(rx.recv());
        let mut f2 = Box::pin(rx.recv());
        assert!(poll_once(&mut f1, &w1).is_pending());
        assert!(poll_once(&mut f2, &w1).is_pending());
        let t = thread::spawn(move || loom::future::block_on(tx.send(5)).unwrap());
        drop(f1);
        assert_eq!(loom::future::block_on(f2), Ok(5));
        t.join().unwrap();
        assert!(rx.is_empty());
    });
}

// ----- select: the claim race

/// A selecting thread waits on two channels while two values arrive, one on
/// each, from two threads: exactly one arm completes, and the other value
/// stays in its channel (a channel that found the selector claimed drops the
/// selector's node instead of handing it the value).
#[test]
fn select_claim_race_completes_exactly_one_arm() {
    model(|| {
        let (a_tx, a) = mpmc::bounded::<u32>(1);
        let (b_tx, b) = mpmc::bounded::<u32>(1);
        let (a2, b2) = (a.clone(), b.clone());
        let s = thread::spawn(move || {
            Selector::new()
                .recv(&a2, |r| (0, r.unwrap()))
                .recv(&b2, |r| (1, r.unwrap()))
                .wait()
        });
        let t = thread::spawn(move || b_tx.send(2).unwrap());
        a_tx.send(1).unwrap();
        t.join().unwrap();
        let (arm, v) = s.join().unwrap();
        let (left, other) = if arm == 0 { (&b, 2) } else { (&a, 1) };
        assert_eq!(v, arm as u32 + 1);
        assert_eq!(left.try_recv(), Ok(other), "the losing arm's value stays");
        assert!(a.is_empty() && b.is_empty());
    });
}

/// A selecting thread offers a value on one channel and waits for one on
/// another; a receiver of the first and a sender into the second race:
/// exactly one arm completes, a losing send arm's value is never enqueued.
#[test]
fn select_send_arm_races_a_receive_arm() {
    model(|| {
        let (x_tx, x) = mpmc::bounded::<u32>(1);
        x_tx.send(0).unwrap(); // full: the send arm must wait
        let (y_tx, y) = mpmc::bounded::<u32>(1);
        let y_keep = y.clone();
        let s = {
            let x_tx = x_tx.clone();
            thread::spawn(move || {
                Selector::new()
                    .send(&x_tx, 7, |r| r.is_ok())
                    .recv(&y, |r| r.is_err())
                    .wait()
            })
        };
        let t = thread::spawn(move || y_tx.send(9).unwrap());
        assert_eq!(x.recv(), Ok(0));
        t.join().unwrap();
        let sent = s.join().unwrap();
        if sent {
            assert_eq!(x.try_recv(), Ok(7));
            assert_eq!(y_keep.try_recv(), Ok(9), "the losing receive took nothing");
        } else {
            assert_eq!(
                x.try_recv(),
                Err(TryRecvError::Empty),
                "a losing send enqueued"
            );
        }
    });
}

/// A select's timeout (under loom it fires at any point) races a send: the
/// value is taken exactly once, by the selector or left in the channel.
#[test]
fn select_timeout_racing_a_send() {
    model(|| {
        let (tx, rx) = mpmc::bounded::<u32>(1);
        let rx2 = rx.clone();
        let s = thread::spawn(move || {
            Selector::new()
                .recv(&rx2, |r| r.unwrap())
                .wait_timeout(std::time::Duration::from_secs(1))
        });
        tx.send(5).unwrap();
        match s.join().unwrap() {
            Ok(v) => {
                assert_eq!(v, 5);
                assert!(rx.is_empty());
            }
            Err(_) => assert_eq!(rx.try_recv(), Ok(5)),
        }
    });
}

// ----- the spmc ring (bounded, cap > 0): lock-free data path, locked slow path

/// Asserts that the consumers' values together are `1..=n`, each received
/// exactly once, and that each consumer got its values in increasing order
/// (one producer, FIFO: a later claim of `head` is a later value).
fn assert_each_once_in_order(parts: &[&[u32]], n: u32) {
    let mut all = Vec::new();
    for part in parts {
        assert!(
            part.windows(2).all(|w| w[0] < w[1]),
            "out of order: {parts:?}"
        );
        all.extend_from_slice(part);
    }
    all.sort_unstable();
    assert_eq!(
        all,
        (1..=n).collect::<Vec<_>>(),
        "lost or duplicated: {parts:?}"
    );
}

/// A consumer thread that tries `tries` lock-free receives (each a claim
/// on `head`) and returns what it got, in order.
fn spawn_taker(rx: spmc::Receiver<u32>, tries: usize) -> thread::JoinHandle<Vec<u32>> {
    thread::spawn(move || (0..tries).filter_map(|_| rx.try_recv().ok()).collect())
}

/// Two consumer threads race on `head` (one with two `try_recv`s, one with
/// one) while the producer `try_send`s through the ring: bounded(2) with
/// two values (both fit), bounded(1) with two values, the second of which
/// fits only if a consumer's claim came first (the producer may then wait,
/// under the lock, for that consumer to stamp the slot free). Every value
/// sent is received exactly once, each consumer's values in order. Asserts
/// loom explored each consumer getting nothing and something, and on
/// bounded(1) both outcomes of the second send.
///
/// (bounded(2) with a third value, which wraps around and may find the
/// ring full, explores ~940,000 executions at the CI bound, about 40 s on
/// 2 cores: `ring_slots_are_reused_across_laps` covers the wrap-around.)
#[test]
fn ring_two_consumers_receive_each_value_once() {
    for cap in [1, 2] {
        let seen = [Seen::default(), Seen::default(), Seen::default()];
        let s = seen.clone();
        model(move || {
            let (mut tx, rx) = spmc::bounded::<u32>(cap);
            let (rx_a, rx_b) = (rx.clone(), rx.clone());
            let a = spawn_taker(rx_a, 2);
            let b = spawn_taker(rx_b, 1);
            tx.try_send(1).unwrap();
            let n = match tx.try_send(2) {
                Ok(()) => 2,
                Err(e) => {
                    assert!(cap == 1 && e.is_full(), "{e:?}");
                    1
                }
            };
            let a = a.join().unwrap();
            let b = b.join().unwrap();
            let mut rest = Vec::new();
            while let Ok(v) = rx.try_recv() {
                rest.push(v);
            }
            s[0].mark(n == 2);
            s[1].mark(a.is_empty());
            s[2].mark(b.is_empty());
            assert_each_once_in_order(&[&a, &b, &rest], n);
            assert!(tx.is_empty());
        });
        if cap == 1 {
            seen[0].assert_both("the second send found room / the ring full");
        }
        seen[1].assert_both("the two-claim consumer got nothing / something");
        seen[2].assert_both("the one-claim consumer got nothing / something");
    }
}

/// A consumer claims a slot from the word another consumer left beside
/// `head` (the next slot already held its value when that consumer looked,
/// right after its own claim), without reading the slot's stamp itself:
/// the producer `try_send`s 1 and 2 into bounded(2) while two consumer
/// threads make one `try_recv` each. The value's write reaches the second
/// consumer only through that word (stored with Release, loaded with
/// Acquire); with either side Relaxed loom reports the read of the slot as
/// racing the producer's write. Each value arrives once, in order. Asserts
/// loom explored both consumers getting a value.
#[test]
fn ring_claim_from_the_word_another_consumer_saw_ready() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded::<u32>(2);
        let a = spawn_taker(rx.clone(), 1);
        let b = spawn_taker(rx.clone(), 1);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let a = a.join().unwrap();
        let b = b.join().unwrap();
        let mut rest = Vec::new();
        while let Ok(v) = rx.try_recv() {
            rest.push(v);
        }
        s.mark(!a.is_empty() && !b.is_empty());
        assert_each_once_in_order(&[&a, &b, &rest], 2);
        assert!(tx.is_empty());
    });
    seen.assert_both("both consumers got a value / not both");
}

/// mpmc: a producer claims a slot below the limit another producer stored
/// beside `tail` (the slots it saw free right after its own claim),
/// without reading the slot's stamp itself. bounded(2) is filled and a
/// consumer thread takes both values while the first producer and a clone
/// in another thread `try_send` one value each into the next lap. The
/// consumer's read of a slot reaches the second producer's write there
/// only through that limit (stored with Release, loaded with Acquire);
/// with either side Relaxed loom reports the write as racing the read.
/// Every value that went in arrives once. Asserts loom explored both sends
/// succeeding and not.
#[test]
fn ring_claim_below_the_limit_another_producer_saw_free() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (tx, rx) = mpmc::bounded::<u32>(2);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let rx_c = rx.clone();
        let c = thread::spawn(move || (0..2).filter_map(|_| rx_c.try_recv().ok()).collect());
        let tx_b = tx.clone();
        let b = thread::spawn(move || tx_b.try_send(4).is_ok());
        let a_sent = tx.try_send(3).is_ok();
        let c: Vec<u32> = c.join().unwrap();
        let b_sent = b.join().unwrap();
        let mut all = c.clone();
        while let Ok(v) = rx.try_recv() {
            all.push(v);
        }
        s.mark(a_sent && b_sent);
        assert!(c.windows(2).all(|w| w[0] < w[1]), "out of order: {c:?}");
        all.sort_unstable();
        let mut sent = vec![1, 2];
        sent.extend(a_sent.then_some(3));
        sent.extend(b_sent.then_some(4));
        assert_eq!(all, sent, "lost or duplicated");
        assert!(tx.is_empty());
    });
    seen.assert_both("both later sends went in / not both");
}

/// A batch receive races a consumer and the producer: one consumer takes up
/// to two values with `try_recv_many` (claim by claim on the ring's fast
/// path, as the other consumer's `try_recv` does, while the producer's
/// `try_send`s use theirs), into bounded(2). Every value is received once,
/// each consumer's in order.
#[test]
fn ring_batch_receive_races_a_consumer_and_the_producer() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded::<u32>(2);
        let rx_a = rx.clone();
        let a = thread::spawn(move || {
            let mut got = Vec::new();
            rx_a.try_recv_many(&mut got, 2);
            got
        });
        let b = spawn_taker(rx.clone(), 1);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let a = a.join().unwrap();
        let b = b.join().unwrap();
        let mut rest = Vec::new();
        rx.try_recv_many(&mut rest, 4);
        s.mark(a.len() == 2);
        assert_each_once_in_order(&[&a, &b, &rest], 2);
        assert!(tx.is_empty());
    });
    seen.assert_both("the batch took both values / fewer");
}

/// A producer thread blocks on a full bounded(2) while a consumer takes
/// values in batches (`try_recv_many`): the takes that free room must serve
/// the producer, whichever way its registration and the takes interleave. Every value arrives once, in order, and the producer
/// finishes.
#[test]
fn batch_receive_serves_a_producer_blocked_on_a_full_ring() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(2);
        let p = thread::spawn(move || {
            for i in 0..3 {
                tx.send(i).unwrap();
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            if rx.try_recv_many(&mut got, 3) == 0 {
                thread::yield_now();
            }
        }
        p.join().unwrap();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(rx.recv(), Err(RecvError));
    });
}

/// mpmc: two producers' `send_batch`es claim runs of the unbounded ring's
/// first block (three slots under loom) against each other, so a run may
/// lose its claim to the other producer's and go on as single sends, and
/// the block's last slot links the next block. Afterwards every value is
/// there once, each producer's in order, and every block is freed
/// (`blocks_model`).
#[test]
fn mpmc_unbounded_batch_runs_race_between_producers() {
    blocks_model(2, || {
        let (tx, rx) = mpmc::unbounded::<u32>();
        let tx2 = tx.clone();
        let a = thread::spawn(move || tx.send_batch([1, 2]).unwrap());
        tx2.send_batch([11, 12]).unwrap();
        a.join().unwrap();
        let mut got = Vec::new();
        assert_eq!(rx.try_recv_many(&mut got, 8), 4);
        let ours: Vec<u32> = got.iter().copied().filter(|v| *v < 10).collect();
        let theirs: Vec<u32> = got.iter().copied().filter(|v| *v > 10).collect();
        assert_eq!(ours, [1, 2], "{got:?}");
        assert_eq!(theirs, [11, 12], "{got:?}");
    });
}

/// Runs through the unbounded ring's blocks (three slots each under loom):
/// the producer's `send_batch` of three values claims the first block's
/// first two positions at once, then the block's last slot alone (linking
/// the next block), while a consumer thread takes a batch with
/// `try_recv_many` (under the lock, one claim per value, which may come
/// before the producer has written that value). Every value is received
/// once, in order, and every block is freed (`blocks_model`).
#[test]
fn unbounded_batch_send_runs_race_a_batch_consumer() {
    let seen = Seen::default();
    let s = seen.clone();
    blocks_model(2, move || {
        let (mut tx, rx) = spmc::unbounded::<u32>();
        let rx_a = rx.clone();
        let a = thread::spawn(move || {
            let mut got = Vec::new();
            rx_a.try_recv_many(&mut got, 3);
            got
        });
        tx.send_batch([1, 2, 3]).unwrap();
        let a = a.join().unwrap();
        let mut rest = Vec::new();
        rx.try_recv_many(&mut rest, 4);
        s.mark(a.len() >= 2);
        assert_each_once_in_order(&[&a, &rest], 3);
    });
    seen.assert_both("the batch consumer took two or more / at most one");
}

/// More values than slots: bounded(2) with 3 values between a producer
/// thread (blocking `send`) and a consumer thread (blocking `recv`), so the
/// first slot is reused on the next lap (its stamp goes from "holds lap 0"
/// to "free for lap 1") while the producer may be waiting for it.
/// Everything arrives once, in order, and the ring ends empty with its
/// whole capacity free.
///
/// (bounded(1) reuses its one slot in most models here; 3 values through
/// it add ~260,000 executions, 4 values through bounded(2) ~4 million.)
#[test]
fn ring_slots_are_reused_across_laps() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(2);
        let c = thread::spawn(move || {
            let got: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
            (got, rx)
        });
        for v in 1..=3 {
            tx.send(v).unwrap();
        }
        let (got, rx) = c.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(4).unwrap();
        tx.try_send(5).unwrap();
        assert!(tx.try_send(6).unwrap_err().is_full());
    });
}

/// A blocking `recv` (trying the ring, then announcing itself with `SLOW`
/// under the lock, re-checking the ring and registering) races the
/// producer publishing two values: `send` on bounded(1) (the second waits
/// for room), `try_send` on bounded(2) (its fast-path claim fails if `SLOW`
/// was set meanwhile, and the value goes through the lock). The receiver
/// gets both, in order, and afterwards the capacity is whole again (`SLOW`
/// and the accounting are settled).
#[test]
fn ring_blocked_receiver_registers_while_producer_publishes() {
    for cap in [1, 2] {
        model(move || {
            let (mut tx, rx) = spmc::bounded::<u32>(cap);
            let r = thread::spawn(move || {
                let got = [rx.recv(), rx.recv()];
                (got, rx)
            });
            if cap == 1 {
                tx.send(1).unwrap();
                tx.send(2).unwrap();
            } else {
                tx.try_send(1).unwrap();
                tx.try_send(2).unwrap();
            }
            let (got, rx) = r.join().unwrap();
            assert_eq!(got, [Ok(1), Ok(2)]);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            for v in 0..cap as u32 {
                tx.try_send(v).unwrap();
            }
            assert!(tx.try_send(9).unwrap_err().is_full());
        });
    }
}

/// An async `recv` polled on the main thread races a producer thread
/// `try_send`ing `cap` values. Either the poll finds the first value, or it
/// registers (setting `SLOW`) and the producer, going through the lock,
/// wakes it exactly once with the value put in the ring; the re-poll takes
/// it. The rest stays queued in order, and the capacity is whole again.
/// Asserts loom explored both outcomes of the first poll.
#[test]
fn ring_async_receiver_registers_while_producer_publishes() {
    for cap in [1, 2] {
        let seen = Seen::default();
        let s = seen.clone();
        model(move || {
            let (mut tx, rx) = spmc::bounded_async::<u32>(cap);
            let n = cap as u32;
            let p = thread::spawn(move || {
                for v in 1..=n {
                    tx.try_send(v).unwrap();
                }
                tx
            });
            let (c, w) = counting_waker();
            let mut f = Box::pin(rx.recv());
            let first = poll_once(&mut f, &w);
            let mut tx = p.join().unwrap();
            s.mark(first.is_ready());
            took_or_was_woken(first, &mut f, &c, &w, 1);
            drop(f);
            for v in 2..=n {
                assert_eq!(rx.try_recv(), Ok(v));
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            for v in 0..n {
                tx.try_send(v).unwrap();
            }
            assert!(tx.try_send(9).unwrap_err().is_full());
        });
        seen.assert_both("the first poll found the value / registered");
    }
}

/// bounded_async(2), three pending futures (f1 oldest). A producer thread
/// `try_send`s two values, each waking the oldest waiter (the value is put
/// in the ring for it), while f1 is dropped without being polled. If f1
/// had been woken, its wake-up must pass on (`pass_wake`) while the ring
/// holds a value: otherwise the second send wakes f2 and f3 sleeps with a
/// value there for it. So f2 and f3 are both woken and take the two
/// values in order; nothing is left and the capacity is whole again.
/// Asserts loom explored f1 dropped before and after being woken.
#[test]
fn ring_cancelled_woken_task_passes_the_wake_up_to_next_task() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(2);
        let (c1, w1) = counting_waker();
        let (c2, w2) = counting_waker();
        let (c3, w3) = counting_waker();
        let mut f1 = Box::pin(rx.recv());
        let mut f2 = Box::pin(rx.recv());
        let mut f3 = Box::pin(rx.recv());
        assert!(poll_once(&mut f1, &w1).is_pending());
        assert!(poll_once(&mut f2, &w2).is_pending());
        assert!(poll_once(&mut f3, &w3).is_pending());
        let p = thread::spawn(move || {
            tx.try_send(1).unwrap();
            tx.try_send(2).unwrap();
            tx
        });
        drop(f1);
        let mut tx = p.join().unwrap();
        s.mark(wakes(&c1) > 0);
        assert!(wakes(&c2) >= 1, "f2 was not woken");
        assert!(wakes(&c3) >= 1, "f1's wake-up was not passed on");
        assert_eq!(poll_once(&mut f2, &w2), Poll::Ready(Ok(1)));
        assert_eq!(poll_once(&mut f3, &w3), Poll::Ready(Ok(2)));
        drop((f2, f3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(3).unwrap();
        tx.try_send(4).unwrap();
        assert!(tx.try_send(5).unwrap_err().is_full());
    });
    seen.assert_both("f1 dropped before / after being woken");
}

/// bounded_async(2): two pending futures (f1 older) and a blocked thread
/// receiver behind them (unless it finds a value before it waits). A
/// producer thread `try_send`s two values, each waking the oldest waiter,
/// while f1 is dropped without being polled. If f1 had been woken, its
/// wake-up must pass to the thread (`pass_wake`), or the thread sleeps for
/// ever with a value in the ring (loom reports the deadlock). The thread
/// gets the first value, f2 the second; nothing is left.
#[test]
fn ring_cancelled_woken_task_passes_the_wake_up_to_thread() {
    let seen = Seen::default();
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(2);
        let (c1, w1) = counting_waker();
        let (c2, w2) = counting_waker();
        let mut f1 = Box::pin(rx.recv());
        let mut f2 = Box::pin(rx.recv());
        assert!(poll_once(&mut f1, &w1).is_pending());
        assert!(poll_once(&mut f2, &w2).is_pending());
        let srx = rx.to_sync();
        let t = thread::spawn(move || srx.recv());
        let p = thread::spawn(move || {
            tx.try_send(1).unwrap();
            tx.try_send(2).unwrap();
            tx
        });
        drop(f1);
        assert_eq!(t.join().unwrap(), Ok(1));
        let mut tx = p.join().unwrap();
        s.mark(wakes(&c1) > 0);
        assert!(wakes(&c2) >= 1, "f2 was not woken");
        assert_eq!(poll_once(&mut f2, &w2), Poll::Ready(Ok(2)));
        drop(f2);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(3).unwrap();
        tx.try_send(4).unwrap();
        assert!(tx.is_full());
    });
    seen.assert_both("f1 dropped before / after being woken");
}

/// One pending future, the only waiter, on the channels that hand a waiting
/// task its value (`bounded(1)`, unbounded). A producer thread sends 1 (to
/// the future, or into the ring if the future is gone) and then 2 (into the
/// ring on unbounded, past the lock-free path if `SLOW` is clear; on
/// `bounded(1)` it waits for room) while the future is dropped. A value the
/// future was holding goes back ahead of everything in the ring: the main
/// thread then receives 1 before 2, each once, and the capacity is whole
/// again. Asserts loom explored the future dropped holding 1 and not.
#[test]
fn ring_cancelled_holder_returns_its_value_ahead_of_the_ring() {
    for cap in [Some(1), None] {
        let seen = Seen::default();
        let s = seen.clone();
        model(move || {
            let (tx, rx) = spmc_async(cap);
            let (c1, w1) = counting_waker();
            let mut f1 = Box::pin(rx.recv());
            assert!(poll_once(&mut f1, &w1).is_pending());
            let p = thread::spawn(move || {
                let mut tx = tx.into_sync();
                tx.send(1).unwrap();
                tx.send(2).unwrap();
                tx
            });
            drop(f1);
            let srx = rx.to_sync();
            assert_eq!(srx.recv(), Ok(1));
            assert_eq!(srx.recv(), Ok(2));
            let mut tx = p.join().unwrap();
            // A wake-up comes after the handoff's unlock: all are done now.
            s.mark(wakes(&c1) > 0);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            if cap.is_some() {
                tx.try_send(3).unwrap();
                assert!(tx.try_send(4).unwrap_err().is_full());
            }
        });
        seen.assert_both("f1 dropped after / before the send reached it");
    }
}

/// The producer `try_send`s `cap` values and drops, setting `TX_GONE` after
/// its last publish, while a consumer thread makes `cap + 1` lock-free
/// `try_recv`s. It may see `Disconnected` only once the channel is drained:
/// from then on it sees nothing else, and nothing is left for the main
/// thread, which drains what the consumer did not take and then sees the
/// disconnection too. Every value arrives exactly once, in order. Asserts
/// loom explored the consumer seeing the disconnection and not.
#[test]
fn ring_consumer_drains_then_sees_disconnection() {
    for cap in [1, 2] {
        let seen = Seen::default();
        let s = seen.clone();
        model(move || {
            let (mut tx, rx) = spmc::bounded::<u32>(cap);
            let rx2 = rx.clone();
            let c = thread::spawn(move || (0..=cap).map(|_| rx2.try_recv()).collect::<Vec<_>>());
            for v in 1..=cap as u32 {
                tx.try_send(v).unwrap();
            }
            drop(tx);
            let tries = c.join().unwrap();
            let gone = tries
                .iter()
                .position(|r| *r == Err(TryRecvError::Disconnected));
            s.mark(gone.is_some());
            if let Some(i) = gone {
                // Once disconnected, always: nothing more can come.
                assert!(
                    tries[i..]
                        .iter()
                        .all(|r| *r == Err(TryRecvError::Disconnected)),
                    "{tries:?}"
                );
            }
            let got: Vec<u32> = tries.iter().filter_map(|r| r.ok()).collect();
            let mut rest = Vec::new();
            let end = loop {
                match rx.try_recv() {
                    Ok(v) => rest.push(v),
                    Err(e) => break e,
                }
            };
            assert!(
                gone.is_none() || rest.is_empty(),
                "disconnected with {rest:?} left"
            );
            assert_eq!(end, TryRecvError::Disconnected);
            assert_each_once_in_order(&[&[got, rest].concat()], cap as u32);
            assert_eq!(rx.recv(), Err(RecvError));
        });
        seen.assert_both("the consumer saw the disconnection / not");
    }
}

/// The blocking form: a consumer thread `recv`s until `Err(RecvError)`
/// while the producer `send`s two values (on bounded(1) the second waits
/// for room) and drops; the consumer's last wait is ended by the producer's
/// drop, or it finds `TX_GONE` before it waits. It gets every value once,
/// in order, and only then the disconnection.
#[test]
fn ring_blocked_consumer_drains_then_sees_disconnection() {
    for cap in [1, 2] {
        model(move || {
            let (mut tx, rx) = spmc::bounded::<u32>(cap);
            let c = thread::spawn(move || {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv() {
                    got.push(v);
                }
                (got, rx)
            });
            tx.send(1).unwrap();
            tx.send(2).unwrap();
            drop(tx);
            let (got, rx) = c.join().unwrap();
            assert_eq!(got, [1, 2]);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        });
    }
}

/// bounded(1) full; the producer's blocking `send` (spinning on nothing
/// under loom, then registering and setting `SEND_WAITING` with `fetch_or`,
/// then checking the room with the `head` it gets back) races a consumer
/// thread's lock-free `try_recv`, whose claim either comes first (the
/// producer sees the room) or clears the flag and serves the producer under
/// the lock. The send always completes, and the value is queued.
#[test]
fn ring_pop_wakes_producer_blocked_on_full_ring() {
    model(|| {
        let (mut tx, rx) = spmc::bounded::<u32>(1);
        tx.send(1).unwrap();
        let rx2 = rx.clone();
        let c = thread::spawn(move || rx2.try_recv());
        tx.send(2).unwrap();
        assert_eq!(c.join().unwrap(), Ok(1));
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(3).unwrap();
        assert!(tx.is_full());
    });
}

/// The same with an async `send` polled by hand, on `bounded(1)` and
/// `bounded(2)`: if its first poll is `Pending` (registered, `SEND_WAITING`
/// set before it counted the room), the consumer's claim must grant it the
/// freed slot and wake it exactly once; the re-poll sends. The grant is
/// used, not leaked: the capacity is exact afterwards. Asserts loom
/// explored both outcomes of the first poll.
#[test]
fn ring_pop_wakes_async_producer_blocked_on_full_ring() {
    for cap in [1, 2] {
        let seen = Seen::default();
        let s = seen.clone();
        model(move || {
            let (mut tx, rx) = spmc::bounded_async::<u32>(cap);
            let n = cap as u32;
            for v in 1..=n {
                tx.try_send(v).unwrap();
            }
            let rx2 = rx.clone();
            let c = thread::spawn(move || rx2.try_recv());
            let (cw, w) = counting_waker();
            {
                let mut f = Box::pin(tx.send(n + 1));
                let first = poll_once(&mut f, &w);
                assert_eq!(c.join().unwrap(), Ok(1));
                s.mark(first.is_ready());
                match first {
                    Poll::Ready(r) => assert!(r.is_ok()),
                    Poll::Pending => {
                        assert_eq!(wakes(&cw), 1, "the waiting producer was not woken once");
                        assert!(matches!(poll_once(&mut f, &w), Poll::Ready(Ok(()))));
                    }
                }
            }
            for v in 2..=n + 1 {
                assert_eq!(rx.try_recv(), Ok(v));
            }
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            for v in 0..n {
                tx.try_send(v).unwrap();
            }
            assert!(matches!(tx.try_send(9), Err(TrySendError::Full(9))));
        });
        seen.assert_both("the first poll found room / registered");
    }
}

// ----- the unbounded blocks (`src/ring/blocks.rs`; 3 slots a block under loom)

/// [`model_max_preemptions`] for the blocks models, which also checks that
/// every block the channel allocated is freed once the model's handles are
/// gone (and, through `Block::free`, that no block is freed under a reader).
/// The bound is capped per model where a larger one costs minutes: at
/// bound 5 the two largest models take over a minute each, at 3 they
/// explore 130,000 and 330,000 executions in about 20 s together.
fn blocks_model<F>(max: usize, f: F)
where
    F: Fn() + Send + Sync + 'static,
{
    model_max_preemptions(max, move || {
        f();
        assert_eq!(amphi::__loom_live_blocks(), 0, "a block was not freed");
    });
}

/// Two values sent before two consumer threads start (slots 0 and 1 of the
/// first block), then two more while they race: the third claims the
/// block's last slot and links the next block, the fourth goes there. One
/// consumer takes twice, the other once, so a block's last reader may retire
/// it while another consumer is still reading an earlier slot (the block
/// stays retired until it is read out; here the channel's drop frees it, and
/// `Block::free` under loom would see a race with the read). Every value is
/// received exactly once, each consumer's in order, and `len` is right
/// afterwards. Asserts loom explored each consumer getting the block's last
/// slot.
#[test]
fn blocks_consumers_race_across_a_block_link() {
    let seen = Seen::default();
    let s = seen.clone();
    blocks_model(3, move || {
        let (mut tx, rx) = spmc::unbounded::<u32>();
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let (rx_a, rx_b) = (rx.clone(), rx.clone());
        let a = spawn_taker(rx_a, 2);
        let b = spawn_taker(rx_b, 1);
        tx.try_send(3).unwrap();
        tx.try_send(4).unwrap();
        let a = a.join().unwrap();
        let b = b.join().unwrap();
        s.mark(a.contains(&3));
        assert_eq!(rx.len(), 4 - a.len() - b.len());
        let mut rest = Vec::new();
        while let Ok(v) = rx.try_recv() {
            rest.push(v);
        }
        assert_each_once_in_order(&[&a, &b, &rest], 4);
        assert!(rx.is_empty());
    });
    seen.assert_both("the two-claim consumer got the block's last slot / not");
}

/// mpmc unbounded with two values in (slots 0 and 1): two producer threads
/// race for slot 2, the block's last (whose claimer links the next block),
/// and the first position of the next block (whose claimer may find `tail`
/// on the "next block" mark and wait for the link), while the main thread
/// takes twice. Every value arrives exactly once; the first two in order.
#[test]
fn blocks_producers_race_on_the_block_link() {
    blocks_model(5, || {
        let (tx, rx) = mpmc::unbounded::<u32>();
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let (t3, t4) = (tx.clone(), tx.clone());
        let p3 = thread::spawn(move || t3.try_send(3).unwrap());
        let p4 = thread::spawn(move || t4.try_send(4).unwrap());
        let mut got: Vec<u32> = [rx.try_recv(), rx.try_recv()]
            .into_iter()
            .filter_map(Result::ok)
            .collect();
        p3.join().unwrap();
        p4.join().unwrap();
        assert_eq!(&got[..2.min(got.len())], &[1, 2][..2.min(got.len())]);
        while let Ok(v) = rx.try_recv() {
            got.push(v);
        }
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3, 4]);
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
}

/// A blocking `recv` (announcing itself with `SLOW`, looking under the
/// lock, registering) races the producer publishing across a block link:
/// two values are in already, the producer `try_send`s two more (the first
/// of them links the next block; either claim may fail on `SLOW` and go
/// through the lock) and drops. The receiver gets all four in order, then
/// the disconnection.
#[test]
fn blocks_blocked_receiver_registers_while_producer_links_a_block() {
    blocks_model(3, || {
        let (mut tx, rx) = spmc::unbounded::<u32>();
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let r = thread::spawn(move || {
            let mut got = Vec::new();
            while let Ok(v) = rx.recv() {
                got.push(v);
            }
            got
        });
        tx.try_send(3).unwrap();
        tx.try_send(4).unwrap();
        drop(tx);
        assert_eq!(r.join().unwrap(), [1, 2, 3, 4]);
    });
}

/// An async receive registers (its locked look finds the ring empty by
/// comparing `head` and `tail`) while the producer thread sends into the
/// block's last slot, linking the next block, and into that block. Values
/// 1 and 2 are taken first, so `head` sits at the last slot: the look sees
/// the claim or its own flag turns the send to the lock, which wakes it.
/// Either the first poll takes 3, or the task is woken once and then takes
/// it; 4 follows and every block is freed. Asserts loom explored both.
#[test]
fn blocks_async_receiver_registers_while_producer_links_a_block() {
    let seen = Seen::default();
    let s = seen.clone();
    blocks_model(3, move || {
        let (mut tx, rx) = spmc::unbounded_async::<u32>();
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Ok(2));
        let p = thread::spawn(move || {
            tx.try_send(3).unwrap();
            tx.try_send(4).unwrap();
        });
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        let first = poll_once(&mut f, &w);
        p.join().unwrap();
        s.mark(first.is_ready());
        took_or_was_woken(first, &mut f, &c, &w, 3);
        drop(f);
        assert_eq!(rx.try_recv(), Ok(4));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
    seen.assert_both("the first poll took the value / registered");
}

/// A consumer thread `try_recv`s four times while the producer sends a
/// value into the block's last slot (linking the next) and drops: it may
/// see `Disconnected` only once everything is drained, and then for good;
/// what it leaves, the main thread drains. Values are dropped, not leaked,
/// when the channel goes (`String`s: Miri and loom see no leak).
#[test]
fn blocks_consumer_drains_then_sees_disconnection() {
    blocks_model(4, || {
        let (mut tx, rx) = spmc::unbounded::<String>();
        tx.try_send("1".into()).unwrap();
        tx.try_send("2".into()).unwrap();
        let rx2 = rx.clone();
        let c = thread::spawn(move || (0..4).map(|_| rx2.try_recv()).collect::<Vec<_>>());
        tx.try_send("3".into()).unwrap();
        drop(tx);
        let tries = c.join().unwrap();
        if let Some(i) = tries
            .iter()
            .position(|r| *r == Err(TryRecvError::Disconnected))
        {
            assert!(
                tries[..i].iter().filter(|r| r.is_ok()).count() == 3,
                "{tries:?}"
            );
            assert!(tries[i..]
                .iter()
                .all(|r| *r == Err(TryRecvError::Disconnected)));
        }
        let got: Vec<String> = tries.into_iter().filter_map(Result::ok).collect();
        let n = got.len();
        let rest: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!([got, rest].concat(), ["1", "2", "3"]);
        assert!(n <= 3);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
}

/// A block is reused once read out: five values are in (block 0 full, two
/// in block 1), two consumer threads take the first three (one once, one
/// twice), so the reader of block 0's last slot retires it while the other
/// may still be reading an earlier slot. Meanwhile the producer sends into
/// block 1's last slot (which takes a block for the link: block 0 if every
/// slot of it is read, else a new one) and into the block after. Every
/// value arrives exactly once, in order per consumer, every block is freed
/// once, and loom explored both a reuse and a fresh allocation (two blocks
/// live after the sends, or three).
#[test]
fn blocks_producer_reuses_a_block_only_once_read_out() {
    let seen = Seen::default();
    let s = seen.clone();
    blocks_model(4, move || {
        let (mut tx, rx) = spmc::unbounded::<u32>();
        for v in 1..=5 {
            tx.try_send(v).unwrap();
        }
        let (rx_a, rx_b) = (rx.clone(), rx.clone());
        let a = spawn_taker(rx_a, 1);
        let b = spawn_taker(rx_b, 2);
        tx.try_send(6).unwrap();
        tx.try_send(7).unwrap();
        s.mark(amphi::__loom_live_blocks() == 2);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let rest: Vec<u32> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_each_once_in_order(&[&a, &b, &rest], 7);
    });
    seen.assert_both("the producer reused block 0 / allocated a block");
}

// ----- the models explore more than one schedule

/// A race whose outcome depends on the schedule: loom must explore both a
/// schedule where `try_recv` runs before the send and one where it runs
/// after (so a model above that passes is not passing on one lucky order).
#[test]
fn loom_explores_both_orders_of_a_race() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let seen = std::sync::Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    let s = seen.clone();
    model(move || {
        let (mut tx, rx) = spmc::bounded::<u32>(1);
        let r = thread::spawn(move || (rx.try_recv(), rx));
        tx.send(7).unwrap();
        let (got, rx) = r.join().unwrap();
        match got {
            Err(TryRecvError::Empty) => {
                s[0].store(true, Relaxed);
                assert_eq!(rx.try_recv(), Ok(7));
            }
            Ok(v) => {
                assert_eq!(v, 7);
                s[1].store(true, Relaxed);
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    });
    assert!(seen[0].load(Relaxed) && seen[1].load(Relaxed));
}
