//! `Selector`: exactly one arm completes, no losing arm's value is taken,
//! timeouts, disconnection, fairness, and selecting threads waiting in the
//! same FIFO lists as plain threads and tasks.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use amphi::{mpmc, spmc, RecvError, SelectTimeoutError, Selector, SendError};
use common::{join_within, watchdog};

#[test]
fn a_ready_arm_completes_and_the_others_are_untouched() {
    let (mut a_tx, a) = spmc::bounded::<u32>(4);
    let (b_tx, b) = mpmc::bounded::<u32>(4);
    b_tx.send(20).unwrap();
    b_tx.send(21).unwrap();
    let got = Selector::new()
        .recv(&a, |r| ("a", r.unwrap()))
        .recv(&b, |r| ("b", r.unwrap()))
        .wait();
    assert_eq!(got, ("b", 20));
    assert_eq!(b.len(), 1, "only one value taken");
    a_tx.send(10).unwrap();
    assert_eq!(a.len(), 1);
}

#[test]
fn a_losing_send_arm_enqueues_nothing_and_drops_its_value() {
    let drops = Arc::new(AtomicUsize::new(0));
    struct D(Arc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let (x_tx, x) = mpmc::bounded::<D>(1);
    x_tx.send(D(drops.clone())).unwrap(); // full
    let (mut y_tx, y) = spmc::bounded::<u8>(1);
    y_tx.send(1).unwrap();
    let got = Selector::new()
        .send(&x_tx, D(drops.clone()), |r| r.is_ok())
        .recv(&y, |r| r.is_ok())
        .wait();
    assert!(got, "the receive arm won");
    assert_eq!(x.len(), 1, "the send arm enqueued nothing");
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "its value was dropped once"
    );
}

#[test]
fn a_blocked_selector_is_woken_by_either_channel() {
    watchdog(20, || {
        for which in 0..2 {
            let (mut a_tx, a) = spmc::bounded::<u32>(1);
            let (b_tx, b) = mpmc::unbounded::<u32>();
            let h = thread::spawn(move || {
                let r = Selector::new()
                    .recv(&a, |r| (0, r.unwrap()))
                    .recv(&b, |r| (1, r.unwrap()))
                    .wait();
                (r, a, b)
            });
            thread::sleep(Duration::from_millis(50));
            if which == 0 {
                a_tx.send(7).unwrap();
            } else {
                b_tx.send(8).unwrap();
            }
            let (r, a, b) = join_within(h, 10);
            assert_eq!(r, if which == 0 { (0, 7) } else { (1, 8) });
            assert!(a.is_empty() && b.is_empty());
            // The channels still work, and nothing of the selector lingers.
            a_tx.send(1).unwrap();
            b_tx.send(2).unwrap();
            assert_eq!((a.recv(), b.recv()), (Ok(1), Ok(2)));
        }
    });
}

#[test]
fn a_blocked_send_arm_completes_when_room_appears() {
    watchdog(20, || {
        let (tx, rx) = mpmc::bounded::<u32>(1);
        tx.send(0).unwrap();
        let (_other_tx, other) = mpmc::bounded::<u32>(1);
        let h = {
            let tx = tx.clone();
            thread::spawn(move || {
                Selector::new()
                    .send(&tx, 1, |r| r.is_ok())
                    .recv(&other, |_| false)
                    .wait()
            })
        };
        thread::sleep(Duration::from_millis(50));
        assert_eq!(rx.recv(), Ok(0));
        assert!(join_within(h, 10));
        assert_eq!(rx.recv(), Ok(1));
    });
}

#[test]
fn rendezvous_arms() {
    watchdog(20, || {
        // A selecting receiver on bounded(0) takes from a blocked sender.
        let (tx, rx) = mpmc::bounded::<u32>(0);
        let h = thread::spawn(move || tx.send(5).unwrap());
        let v = Selector::new().recv(&rx, |r| r.unwrap()).wait();
        assert_eq!(v, 5);
        h.join().unwrap();

        // A selecting sender on bounded(0) hands to a blocked receiver.
        let (tx, rx) = mpmc::bounded::<u32>(0);
        let h = thread::spawn(move || rx.recv());
        thread::sleep(Duration::from_millis(50));
        assert!(Selector::new().send(&tx, 6, |r| r.is_ok()).wait());
        assert_eq!(join_within(h, 10), Ok(6));
    });
}

#[test]
fn disconnection_makes_an_arm_ready_with_the_error() {
    let (a_tx, a) = spmc::bounded::<u32>(1);
    let (_b_tx, b) = spmc::bounded::<u32>(1);
    drop(a_tx);
    let r = Selector::new()
        .recv(&b, |r| ("b", r))
        .recv(&a, |r| ("a", r))
        .wait();
    assert_eq!(r, ("a", Err(RecvError)));

    let (tx, rx) = mpmc::bounded::<u32>(1);
    drop(rx);
    let r = Selector::new().send(&tx, 9, |r| r).wait();
    assert_eq!(r, Err(SendError(9)));

    // While waiting.
    watchdog(10, || {
        let (a_tx, a) = spmc::bounded::<u32>(1);
        let (_b_tx, b) = spmc::bounded::<u32>(1);
        let h = thread::spawn(move || {
            Selector::new()
                .recv(&a, |r| ("a", r))
                .recv(&b, |r| ("b", r))
                .wait()
        });
        thread::sleep(Duration::from_millis(50));
        drop(a_tx);
        assert_eq!(join_within(h, 5), ("a", Err(RecvError)));
    });
}

#[test]
fn timeouts_and_deadlines() {
    let (_tx, rx) = spmc::bounded::<u32>(1);
    let t = Instant::now();
    let r = Selector::new()
        .recv(&rx, |r| r.unwrap())
        .wait_timeout(Duration::from_millis(30));
    assert_eq!(r, Err(SelectTimeoutError));
    assert!(t.elapsed() >= Duration::from_millis(30));

    // A ready arm wins over an expired deadline; Duration::MAX is for ever.
    let (mut tx, rx) = spmc::bounded::<u32>(2);
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    let past = Instant::now() - Duration::from_secs(1);
    assert_eq!(
        Selector::new()
            .recv(&rx, |r| r.unwrap())
            .wait_deadline(past),
        Ok(1)
    );
    assert_eq!(
        Selector::new()
            .recv(&rx, |r| r.unwrap())
            .wait_timeout(Duration::MAX),
        Ok(2)
    );

    // No arms: a timed wait just times out.
    let t = Instant::now();
    let r: Result<(), _> = Selector::new().wait_timeout(Duration::from_millis(20));
    assert_eq!(r, Err(SelectTimeoutError));
    assert!(t.elapsed() >= Duration::from_millis(20));

    // A value sent while the selector waits with a timeout is taken once:
    // by the selector, or left in the channel if it timed out first.
    watchdog(20, || {
        for _ in 0..if cfg!(miri) { 3 } else { 50 } {
            let (mut tx, rx) = spmc::bounded::<u32>(1);
            let rx2 = rx.clone();
            let h = thread::spawn(move || {
                Selector::new()
                    .recv(&rx, |r| r.unwrap())
                    .wait_timeout(Duration::from_micros(200))
            });
            thread::sleep(Duration::from_micros(150));
            tx.send(3).unwrap();
            match join_within(h, 5) {
                Ok(v) => {
                    assert_eq!(v, 3);
                    assert!(rx2.is_empty());
                }
                Err(SelectTimeoutError) => assert_eq!(rx2.try_recv(), Ok(3)),
            }
        }
    });
}

#[test]
#[should_panic(expected = "no arms")]
fn waiting_with_no_arms_panics() {
    Selector::<()>::new().wait();
}

#[test]
fn no_arm_starves_when_several_are_ready() {
    let (mut a_tx, a) = spmc::unbounded::<u32>();
    let (mut b_tx, b) = spmc::unbounded::<u32>();
    for i in 0..200 {
        a_tx.send(i).unwrap();
        b_tx.send(i).unwrap();
    }
    let mut counts = [0; 2];
    for _ in 0..200 {
        let k = Selector::new().recv(&a, |_| 0).recv(&b, |_| 1).wait();
        counts[k] += 1;
    }
    assert!(counts[0] >= 50 && counts[1] >= 50, "{counts:?}");
}

#[test]
fn a_selecting_thread_waits_in_fifo_order_with_plain_receivers() {
    watchdog(20, || {
        let (mut tx, rx) = spmc::bounded::<u32>(4);
        let (_o_tx, other) = spmc::bounded::<u32>(1);
        let sel = {
            let rx = rx.clone();
            thread::spawn(move || {
                Selector::new()
                    .recv(&rx, |r| r.unwrap())
                    .recv(&other, |r| r.unwrap() + 100)
                    .wait()
            })
        };
        thread::sleep(Duration::from_millis(100));
        let plain = {
            let rx = rx.clone();
            thread::spawn(move || rx.recv().unwrap())
        };
        thread::sleep(Duration::from_millis(100));
        tx.send(1).unwrap();
        assert_eq!(join_within(sel, 5), 1, "the selector waited first");
        tx.send(2).unwrap();
        assert_eq!(join_within(plain, 5), 2);
    });
}

#[test]
fn a_selector_is_woken_by_an_async_sender() {
    watchdog(20, || {
        let (tx, rx) = spmc::bounded_async::<u32>(1);
        let srx = rx.to_sync();
        let (_b_tx, b) = mpmc::bounded::<u32>(1);
        let h = thread::spawn(move || {
            Selector::new()
                .recv(&srx, |r| r.unwrap())
                .recv(&b, |r| r.unwrap() + 100)
                .wait()
        });
        thread::sleep(Duration::from_millis(50));
        let mut tx = tx;
        futures::executor::block_on(tx.send(4)).unwrap();
        assert_eq!(join_within(h, 5), 4);
        drop(rx);
    });
}

/// Selecting threads, plain receiving threads and tokio tasks compete for
/// the values of two channels while producers send: every value is received
/// exactly once, and every select completes exactly one arm.
#[test]
#[cfg_attr(miri, ignore)]
fn exactly_once_under_contention() {
    watchdog(60, || {
        const N: u32 = 20_000;
        let (a_tx, a) = mpmc::bounded::<u32>(8);
        let (b_tx, b) = mpmc::bounded::<u32>(0);
        let seen = Arc::new(Mutex::new(Vec::with_capacity(2 * N as usize)));
        let start = Arc::new(Barrier::new(4 + 2));
        let mut hs = Vec::new();
        for _ in 0..3 {
            let (a, b, seen, start) = (a.clone(), b.clone(), seen.clone(), start.clone());
            hs.push(thread::spawn(move || {
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let r = Selector::new()
                        .recv(&a, |r| r.ok())
                        .recv(&b, |r| r.ok().map(|v| v + N))
                        .wait_timeout(Duration::from_millis(200));
                    match r {
                        Ok(Some(v)) => mine.push(v),
                        // One channel disconnected and drained: finish the
                        // other with plain receives.
                        Ok(None) => {
                            mine.extend(a.iter());
                            mine.extend(b.iter().map(|v| v + N));
                            break;
                        }
                        Err(SelectTimeoutError) => {}
                    }
                }
                seen.lock().unwrap().extend(mine);
            }));
        }
        {
            let (a, seen, start) = (a.clone(), seen.clone(), start.clone());
            hs.push(thread::spawn(move || {
                start.wait();
                let mine: Vec<u32> = a.iter().collect();
                seen.lock().unwrap().extend(mine);
            }));
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone().into_async();
                let seen = seen.clone();
                rt.spawn(async move {
                    let mut mine = Vec::new();
                    while let Ok(v) = b.recv().await {
                        mine.push(v + N);
                    }
                    seen.lock().unwrap().extend(mine);
                })
            })
            .collect();
        drop((a, b));
        let p1 = {
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                for i in 0..N {
                    a_tx.send(i).unwrap();
                }
            })
        };
        let p2 = thread::spawn(move || {
            start.wait();
            let tx = b_tx.into_async();
            futures::executor::block_on(async {
                for i in 0..N {
                    tx.send(i).await.unwrap();
                }
            });
        });
        p1.join().unwrap();
        p2.join().unwrap();
        for h in hs {
            h.join().unwrap();
        }
        for t in tasks {
            rt.block_on(t).unwrap();
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2 * N as usize, "lost or duplicated values");
        let set: HashSet<u32> = seen.iter().copied().collect();
        assert_eq!(set.len(), 2 * N as usize, "a value was received twice");
    });
}

/// Selecting threads whose arms are a send into X and a receive from Y,
/// against plain consumers of X (a thread and a task) and a producer into Y:
/// every value offered by a winning send arm reaches X's consumers exactly
/// once, a losing send arm's value is never enqueued, and every value sent
/// into Y is received exactly once.
#[test]
#[cfg_attr(miri, ignore)]
fn send_arms_exactly_once_under_contention() {
    watchdog(60, || {
        const N: u32 = 10_000;
        const SELECTORS: u32 = 3;
        let (x_tx, x) = mpmc::bounded::<u32>(2);
        let (y_tx, y) = mpmc::bounded::<u32>(1);
        let sent_by_select = Arc::new(Mutex::new(Vec::new()));
        let got_from_y = Arc::new(Mutex::new(Vec::new()));
        let selectors: Vec<_> = (0..SELECTORS)
            .map(|s| {
                let (x_tx, y) = (x_tx.clone(), y.clone());
                let (sent, got) = (sent_by_select.clone(), got_from_y.clone());
                thread::spawn(move || {
                    let mut next = s;
                    let (mut mine_sent, mut mine_got) = (Vec::new(), Vec::new());
                    loop {
                        let offer = next;
                        let r = Selector::new()
                            .send(&x_tx, offer, |r| r.map(|()| None).map_err(|_| ()))
                            .recv(&y, |r| r.map(Some).map_err(|_| ()))
                            .wait();
                        match r {
                            Ok(None) => {
                                mine_sent.push(offer);
                                next += SELECTORS;
                            }
                            Ok(Some(v)) => mine_got.push(v),
                            // Y is drained and disconnected: offer the rest
                            // with plain sends.
                            Err(()) => {
                                while next < N {
                                    x_tx.send(next).unwrap();
                                    mine_sent.push(next);
                                    next += SELECTORS;
                                }
                                break;
                            }
                        }
                        if next >= N {
                            mine_got.extend(y.iter());
                            break;
                        }
                    }
                    sent.lock().unwrap().extend(mine_sent);
                    got.lock().unwrap().extend(mine_got);
                })
            })
            .collect();
        drop(x_tx);
        let x_seen = Arc::new(Mutex::new(Vec::new()));
        let xc = {
            let (x, seen) = (x.clone(), x_seen.clone());
            thread::spawn(move || {
                let v: Vec<u32> = x.iter().collect();
                seen.lock().unwrap().extend(v);
            })
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let xt = {
            let (x, seen) = (x.into_async(), x_seen.clone());
            thread::spawn(move || {
                rt.block_on(async move {
                    let mut v = Vec::new();
                    while let Ok(x) = x.recv().await {
                        v.push(x);
                    }
                    seen.lock().unwrap().extend(v);
                })
            })
        };
        for i in 0..N {
            y_tx.send(i).unwrap();
        }
        drop(y_tx);
        for h in selectors {
            h.join().unwrap();
        }
        xc.join().unwrap();
        xt.join().unwrap();
        let mut sent = sent_by_select.lock().unwrap().clone();
        let mut seen = x_seen.lock().unwrap().clone();
        sent.sort();
        seen.sort();
        assert_eq!(sent, seen, "values offered by winning send arms");
        assert_eq!(sent.len(), N as usize);
        let mut got = got_from_y.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, (0..N).collect::<Vec<_>>(), "values received from Y");
    });
}

/// `RecvFuture` and `SendFuture` are `FusedFuture`s: terminated once they
/// have returned `Ready`, not before (what `futures::select!` relies on).
#[test]
fn futures_report_termination() {
    use futures::future::FusedFuture;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll};

    let (mut tx, rx) = spmc::bounded_async::<u32>(1);
    let (c, w) = common::counting_waker();
    let mut cx = Context::from_waker(&w);
    let mut r = pin!(rx.recv());
    assert!(!r.is_terminated());
    assert!(r.as_mut().poll(&mut cx).is_pending());
    assert!(!r.is_terminated(), "pending is not terminated");
    {
        let mut s = pin!(tx.send(5));
        assert!(!s.is_terminated());
        assert_eq!(s.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
        assert!(s.is_terminated());
    }
    assert_eq!(c.count(), 1);
    assert_eq!(r.as_mut().poll(&mut cx), Poll::Ready(Ok(5)));
    assert!(r.is_terminated());
}

/// A `SendFuture` is terminated exactly when it has returned `Ready`: not
/// while it waits (with its value in the future on a full `bounded(1)`, or
/// handed to its node on `bounded(0)`), and after an error as after a send.
#[test]
fn send_future_terminates_on_every_ready() {
    use futures::future::FusedFuture;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll};

    let (c, w) = common::counting_waker();
    let mut cx = Context::from_waker(&w);

    // Full bounded(1): pending, then granted a slot.
    let (mut tx, rx) = spmc::bounded_async::<u32>(1);
    {
        let mut first = pin!(tx.send(1));
        assert_eq!(first.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
        assert!(first.is_terminated());
    }
    {
        let mut s = pin!(tx.send(2));
        assert!(s.as_mut().poll(&mut cx).is_pending());
        assert!(!s.is_terminated(), "a waiting send is not terminated");
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(c.count(), 1);
        assert!(!s.is_terminated(), "woken, not yet polled");
        assert_eq!(s.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
        assert!(s.is_terminated());
    }
    assert_eq!(rx.try_recv(), Ok(2));

    // bounded(0): the value waits in the node, and the send is pending
    // until a receiver has taken it.
    let (tx0, rx0) = mpmc::bounded_async::<u32>(0);
    {
        let mut s = pin!(tx0.send(3));
        assert!(s.as_mut().poll(&mut cx).is_pending());
        assert!(!s.is_terminated(), "a rendezvous send in its node");
        assert_eq!(rx0.try_recv(), Ok(3));
        assert_eq!(s.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
        assert!(s.is_terminated());
    }

    // Every receiver gone: `Ready(Err)` terminates it too.
    drop(rx);
    let mut s = pin!(tx.send(4));
    assert_eq!(s.as_mut().poll(&mut cx), Poll::Ready(Err(SendError(4))));
    assert!(s.is_terminated());
}

#[test]
#[should_panic(expected = "SendFuture polled after completion")]
fn send_future_polled_after_completion_panics() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::Context;

    let (mut tx, _rx) = spmc::bounded_async::<u32>(4);
    let (_c, w) = common::counting_waker();
    let mut cx = Context::from_waker(&w);
    let mut s = pin!(tx.send(1));
    assert!(s.as_mut().poll(&mut cx).is_ready());
    let _ = s.as_mut().poll(&mut cx);
}
