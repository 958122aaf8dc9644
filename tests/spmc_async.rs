//! `amphi::spmc` async side, driven by hand with counting wakers (no
//! runtime) unless a test says otherwise: wake-up accounting, cancellation,
//! waker replacement, re-entrant and panicking wakers, rendezvous, batches,
//! streams, and threads and tasks waiting together.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use amphi::spmc::{self, AsyncReceiver, AsyncSender};
use amphi::{RecvError, SendError, TryRecvError, TrySendError};
use common::*;
use futures::stream::FusedStream;
use futures::StreamExt;

fn chan<T>(cap: Option<usize>) -> (AsyncSender<T>, AsyncReceiver<T>) {
    match cap {
        Some(c) => spmc::bounded_async(c),
        None => spmc::unbounded_async(),
    }
}

/// The capacities the hand-off tests run on ([`stays_queued`] says which of
/// them hand the value to a waiting task at once). On `bounded(0)` a waiting task is only woken, and takes the
/// value from the waiting sender when it runs (see the rendezvous tests), so
/// that a cancelled receive never leaves a value in the channel.
const HANDOFF_CAPS: [Option<usize>; 3] = [Some(1), Some(8), None];

/// Whether a value sent while a task waits stays in the channel (counted by
/// `len()`, taking room) until a receiver takes it: a bounded channel of
/// capacity above 1 keeps its values in a ring outside the lock and wakes
/// the task instead of handing the value over, so any receiver that runs
/// first may take it (the woken task then waits again). On `bounded(1)` and
/// unbounded channels the value is handed to the task (on `bounded(1)` it
/// takes the one slot until the task takes it).
fn stays_queued(cap: Option<usize>) -> bool {
    matches!(cap, Some(c) if c > 1)
}

fn counts(ws: &[(Arc<CountingWaker>, Waker)]) -> Vec<usize> {
    ws.iter().map(|(c, _)| c.count()).collect()
}

// ----- one send, one wake-up; cancellation passes it on

#[test]
fn one_send_wakes_exactly_one_of_eight_and_cancellation_chains() {
    for cap in HANDOFF_CAPS {
        let (mut tx, rx) = chan::<u64>(cap);
        let rxs: Vec<_> = (0..8).map(|_| rx.clone()).collect();
        let ws: Vec<_> = (0..8).map(|_| counting_waker()).collect();
        let mut futs: Vec<_> = rxs.iter().map(|r| Some(Box::pin(r.recv()))).collect();
        for (f, (_, w)) in futs.iter_mut().zip(&ws) {
            assert_pending(poll_unpin(f.as_mut().unwrap(), w));
        }
        assert_eq!(counts(&ws), [0; 8]);

        tx.try_send(42).unwrap();
        assert_eq!(counts(&ws), [1, 0, 0, 0, 0, 0, 0, 0], "cap {cap:?}");
        assert_eq!(
            rx.len(),
            usize::from(stays_queued(cap)),
            "cap {cap:?}: handed off, or queued for the woken task"
        );

        // Drop each woken future without polling it: the wake-up (and the
        // value) moves to the next one, and only to it.
        for k in 0..7 {
            drop(futs[k].take());
            let mut want = [0; 8];
            want[..=k + 1].fill(1);
            assert_eq!(counts(&ws), want, "cap {cap:?}, after dropping {k}");
        }
        let v = ready(poll_unpin(futs[7].as_mut().unwrap(), &ws[7].1));
        assert_eq!(v, Ok(42));
        drop(futs);
        assert_eq!(counts(&ws).iter().sum::<usize>(), 8);
        assert_eq!(rx.len(), 0);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        if cap == Some(1) {
            // The handed value no longer counts against the capacity.
            tx.try_send(1).unwrap();
            assert!(tx.try_send(2).unwrap_err().is_full());
        }
    }
}

#[test]
fn woken_future_dropped_with_no_other_waiter_requeues_at_front() {
    for cap in [Some(1), Some(4), None] {
        let (mut tx, rx) = chan::<u32>(cap);
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &w));
        tx.try_send(1).unwrap();
        assert_eq!(c.count(), 1);
        if cap == Some(1) {
            // Handed to a task but not taken yet: still occupies the slot.
            assert!(tx.is_full());
            assert!(tx.try_send(2).unwrap_err().is_full());
            drop(f);
            assert_eq!(rx.len(), 1);
            assert!(tx.is_full());
            assert_eq!(rx.try_recv(), Ok(1));
        } else {
            tx.try_send(2).unwrap();
            drop(f);
            assert_eq!(rx.len(), 2);
            assert_eq!(rx.try_recv(), Ok(1), "cancelled value keeps its place");
            assert_eq!(rx.try_recv(), Ok(2));
        }
        assert!(rx.is_empty());
    }
}

#[test]
fn woken_future_dropped_passes_value_to_blocked_thread() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(2);
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &w));
        let srx = rx.to_sync();
        let h = thread::spawn(move || srx.recv());
        thread::sleep(Duration::from_millis(50));
        tx.try_send(5).unwrap();
        assert_eq!(c.count(), 1);
        assert!(!h.is_finished(), "the thread arrived second");
        drop(f);
        assert_eq!(join_within(h, 5), Ok(5));
    });
}

#[test]
fn cancelling_an_unwoken_waiter_just_removes_it() {
    for cap in HANDOFF_CAPS {
        let (mut tx, rx) = chan::<u32>(cap);
        let ws: Vec<_> = (0..4).map(|_| counting_waker()).collect();
        let mut futs: Vec<_> = (0..4).map(|_| Some(Box::pin(rx.recv()))).collect();
        for (f, (_, w)) in futs.iter_mut().zip(&ws) {
            assert_pending(poll_unpin(f.as_mut().unwrap(), w));
        }
        // The channel holds a clone of each waker.
        assert_eq!(Arc::strong_count(&ws[1].0), 3);
        drop(futs[1].take());
        drop(futs[0].take());
        // Removed, and its waker released, without waking anybody.
        assert_eq!(Arc::strong_count(&ws[1].0), 2);
        assert_eq!(Arc::strong_count(&ws[0].0), 2);
        assert_eq!(counts(&ws), [0, 0, 0, 0]);

        tx.try_send(1).unwrap();
        assert_eq!(counts(&ws), [0, 0, 1, 0], "cap {cap:?}");
        if cap == Some(1) {
            // The woken task's value takes the one slot until it is taken.
            assert!(tx.try_send(2).unwrap_err().is_full());
            assert_eq!(
                ready(poll_unpin(futs[2].as_mut().unwrap(), &ws[2].1)),
                Ok(1)
            );
            tx.try_send(2).unwrap();
            assert_eq!(counts(&ws), [0, 0, 1, 1]);
            assert_eq!(
                ready(poll_unpin(futs[3].as_mut().unwrap(), &ws[3].1)),
                Ok(2)
            );
        } else {
            tx.try_send(2).unwrap();
            assert_eq!(counts(&ws), [0, 0, 1, 1]);
            // Handed values go to their tasks; queued ones to whichever
            // task runs first, oldest first.
            let (first, second) = if stays_queued(cap) { (1, 2) } else { (2, 1) };
            assert_eq!(
                ready(poll_unpin(futs[3].as_mut().unwrap(), &ws[3].1)),
                Ok(first)
            );
            assert_eq!(
                ready(poll_unpin(futs[2].as_mut().unwrap(), &ws[2].1)),
                Ok(second)
            );
        }
        drop(futs);
        // Nothing left waiting: the next value is buffered (or, for a
        // rendezvous channel, refused).
        if cap == Some(0) {
            assert!(tx.try_send(3).unwrap_err().is_full());
        } else {
            tx.try_send(3).unwrap();
            assert_eq!(rx.len(), 1);
        }
        assert_eq!(counts(&ws), [0, 0, 1, 1]);
        // The completed futures released their wakers too.
        assert_eq!(Arc::strong_count(&ws[2].0), 2);
        assert_eq!(Arc::strong_count(&ws[3].0), 2);
    }
}

// ----- sender drop

#[test]
fn sender_drop_wakes_all_pending_receivers_which_drain_then_fail() {
    for cap in HANDOFF_CAPS {
        let (mut tx, rx) = chan::<u32>(cap);
        let ws: Vec<_> = (0..5).map(|_| counting_waker()).collect();
        let mut futs: Vec<_> = (0..5).map(|_| Some(Box::pin(rx.recv()))).collect();
        for (f, (_, w)) in futs.iter_mut().zip(&ws) {
            assert_pending(poll_unpin(f.as_mut().unwrap(), w));
        }
        tx.try_send(7).unwrap();
        assert_eq!(counts(&ws), [1, 0, 0, 0, 0]);
        drop(tx);
        assert_eq!(counts(&ws), [1, 1, 1, 1, 1], "cap {cap:?}");
        // The first one's value goes back when it is dropped; the next one
        // drains it, the others see the disconnection.
        drop(futs[0].take());
        assert_eq!(
            ready(poll_unpin(futs[1].as_mut().unwrap(), &ws[1].1)),
            Ok(7)
        );
        for k in 2..5 {
            assert_eq!(
                ready(poll_unpin(futs[k].as_mut().unwrap(), &ws[k].1)),
                Err(RecvError)
            );
        }
        assert_eq!(counts(&ws), [1, 1, 1, 1, 1], "no extra wake-ups");
        let mut f = Box::pin(rx.recv());
        assert_eq!(ready(poll_unpin(&mut f, &ws[0].1)), Err(RecvError));
    }
}

#[test]
fn sender_drop_wakes_blocked_threads_and_tasks() {
    watchdog(10, || {
        let (tx, rx) = spmc::bounded_async::<u32>(4);
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let r = rx.to_sync();
                thread::spawn(move || r.recv())
            })
            .collect();
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &w));
        thread::sleep(Duration::from_millis(30));
        drop(tx);
        assert_eq!(c.count(), 1);
        assert_eq!(ready(poll_unpin(&mut f, &w)), Err(RecvError));
        for h in hs {
            assert_eq!(join_within(h, 5), Err(RecvError));
        }
    });
}

// ----- send progress and cancel safety of sends

#[test]
fn pending_send_progresses_when_a_recv_frees_a_slot() {
    for cap in [1usize, 2, 3, 8] {
        let (mut tx, rx) = spmc::bounded_async::<usize>(cap);
        let mut next = 0;
        for _ in 0..cap {
            tx.try_send(next).unwrap();
            next += 1;
        }
        let mut expect = 0;
        for round in 0..(2 * cap + 1) {
            let (c, w) = counting_waker();
            let mut f = Box::pin(tx.send(next));
            assert_pending(poll_unpin(&mut f, &w));
            assert_pending(poll_unpin(&mut f, &w));
            assert_eq!(c.count(), 0);
            assert_eq!(rx.len(), cap);
            assert!(rx.is_full());
            // Alternate between try_recv and a recv future.
            let got = if round % 2 == 0 {
                rx.try_recv().unwrap()
            } else {
                futures::executor::block_on(rx.recv()).unwrap()
            };
            assert_eq!(got, expect);
            expect += 1;
            assert_eq!(c.count(), 1, "cap {cap}, round {round}: sender not woken");
            assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
            drop(f);
            next += 1;
            assert_eq!(rx.len(), cap);
            assert_eq!(c.count(), 1);
        }
        let rest: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(rest, (expect..next).collect::<Vec<_>>());
    }
}

#[test]
fn pending_send_woken_by_blocking_recv_on_another_thread() {
    for cap in [1usize, 2, 3, 8] {
        watchdog(10, move || {
            let (mut tx, rx) = spmc::bounded_async::<usize>(cap);
            for i in 0..cap {
                tx.try_send(i).unwrap();
            }
            let (c, w) = counting_waker();
            let mut f = Box::pin(tx.send(cap));
            assert_pending(poll_unpin(&mut f, &w));
            let srx = rx.to_sync();
            let h = thread::spawn(move || srx.recv());
            assert_eq!(join_within(h, 5), Ok(0));
            wait_until(5, "the sender's wake-up", || c.count() == 1);
            assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
            drop(f);
            assert_eq!(rx.len(), cap);
            let all: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
            assert_eq!(all, (1..=cap).collect::<Vec<_>>());
        });
    }
}

#[test]
fn cancelled_granted_send_keeps_capacity_exact() {
    for cap in [1usize, 2, 3, 8] {
        for freed in 1..=cap.min(3) {
            let log = DropLog::new(cap + 1);
            let (mut tx, rx) = spmc::bounded_async(cap);
            for i in 0..cap {
                tx.try_send(log.item(i)).unwrap();
            }
            let (c, w) = counting_waker();
            let mut f = Box::pin(tx.send(log.item(cap)));
            assert_pending(poll_unpin(&mut f, &w));
            for _ in 0..freed {
                drop(rx.try_recv().unwrap());
            }
            assert_eq!(c.count(), 1, "granted");
            // Dropped after being woken, before being polled again.
            drop(f);
            assert_eq!(log.dropped(cap), 1, "the cancelled value is dropped");
            assert_eq!(rx.len(), cap - freed, "not enqueued");
            let log2 = DropLog::new(freed + 1);
            for i in 0..freed {
                assert!(tx.try_send(log2.item(i)).is_ok(), "cap {cap}: slot {i}");
            }
            let e = tx.try_send(log2.item(freed)).unwrap_err();
            assert!(
                e.is_full(),
                "cap {cap}, freed {freed}: more than the capacity"
            );
            assert_eq!(rx.len(), cap);
            // The queue holds the old values, then the new ones, in order.
            let ids: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
                .map(|t| t.id)
                .collect();
            let mut want: Vec<_> = (freed..cap).collect();
            want.extend(0..freed);
            assert_eq!(ids, want);
        }
    }
}

#[test]
fn cancelled_ungranted_send_keeps_capacity_exact() {
    for cap in [1usize, 2, 3, 8] {
        let log = DropLog::new(cap + 4);
        let (mut tx, rx) = spmc::bounded_async(cap);
        for i in 0..cap {
            tx.try_send(log.item(i)).unwrap();
        }
        let (c, w) = counting_waker();
        let mut f = Box::pin(tx.send(log.item(cap)));
        assert!(poll_unpin(&mut f, &w).is_pending());
        drop(f);
        assert_eq!(log.dropped(cap), 1);
        assert_eq!(c.count(), 0);
        assert_eq!(Arc::strong_count(&c), 2, "waker released");
        assert_eq!(rx.len(), cap);
        assert!(tx.try_send(log.item(cap + 1)).unwrap_err().is_full());
        assert_eq!(rx.try_recv().unwrap().id, 0);
        assert_eq!(c.count(), 0, "a cancelled sender was woken");
        tx.try_send(log.item(cap + 2)).unwrap();
        assert!(tx.try_send(log.item(cap + 3)).unwrap_err().is_full());
        assert_eq!(rx.len(), cap);
        drop(rx);
        log.assert_all_once();
    }
}

#[test]
fn cancelled_handed_recv_keeps_capacity_exact() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(1);
    let (_c, w) = counting_waker();
    let mut f = Box::pin(rx.recv());
    assert_pending(poll_unpin(&mut f, &w));
    tx.try_send(1).unwrap();
    assert!(tx.is_full());
    assert!(tx.try_send(2).unwrap_err().is_full());
    drop(f);
    assert_eq!(rx.len(), 1);
    assert!(tx.try_send(3).unwrap_err().is_full());
    assert_eq!(rx.try_recv(), Ok(1));
    tx.try_send(4).unwrap();
    assert!(tx.try_send(5).unwrap_err().is_full());
}

#[test]
fn cancelled_send_batch_keeps_sent_values_and_capacity() {
    let log = DropLog::new(6);
    let (mut tx, rx) = spmc::bounded_async(2);
    let (c, w) = counting_waker();
    let mut f = Box::pin(tx.send_batch((0..6).map(|i| log.item(i)).collect::<Vec<_>>()));
    assert_pending(poll_unpin(&mut f, &w));
    assert_eq!(rx.len(), 2);
    drop(rx.try_recv().unwrap());
    assert_eq!(c.count(), 1);
    drop(f);
    // 0 received, 1 still queued, 2..6 dropped unsent.
    for i in 2..6 {
        assert_eq!(log.dropped(i), 1, "unsent value {i}");
    }
    assert_eq!(log.dropped(1), 0);
    assert_eq!(rx.len(), 1);
    let log2 = DropLog::new(2);
    assert!(tx.try_send(log2.item(0)).is_ok());
    assert!(tx.try_send(log2.item(1)).unwrap_err().is_full());
    let ids: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, [1, 0]);
    log.assert_all_once();
}

#[test]
fn pending_send_fails_with_value_when_last_receiver_drops() {
    // Not yet granted, and granted but not polled again.
    for granted in [false, true] {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        tx.try_send(0).unwrap();
        let rx2 = rx.clone();
        let (c, w) = counting_waker();
        let mut f = Box::pin(tx.send(9));
        assert_pending(poll_unpin(&mut f, &w));
        if granted {
            assert_eq!(rx.try_recv(), Ok(0));
            assert_eq!(c.count(), 1);
        }
        drop(rx);
        assert_eq!(c.count(), usize::from(granted), "non-last drop woke it");
        drop(rx2);
        assert_eq!(c.count(), 1);
        assert_eq!(ready(poll_unpin(&mut f, &w)), Err(SendError(9)));
    }
    // Rendezvous: the value comes back from the slot.
    let (mut tx, rx) = spmc::bounded_async::<u32>(0);
    let (c, w) = counting_waker();
    let mut f = Box::pin(tx.send(4));
    assert_pending(poll_unpin(&mut f, &w));
    drop(rx);
    assert_eq!(c.count(), 1);
    assert_eq!(ready(poll_unpin(&mut f, &w)), Err(SendError(4)));
}

#[test]
fn pending_send_batch_fails_with_rest_when_last_receiver_drops() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(2);
    let (c, w) = counting_waker();
    let mut f = Box::pin(tx.send_batch(0..5));
    assert_pending(poll_unpin(&mut f, &w));
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(c.count(), 1);
    drop(rx);
    let e = ready(poll_unpin(&mut f, &w)).unwrap_err();
    assert_eq!(e.into_inner(), [2, 3, 4]);
}

// ----- waker replacement

#[test]
fn repolled_recv_is_woken_through_newest_waker_only() {
    for cap in HANDOFF_CAPS {
        let (mut tx, rx) = chan::<u32>(cap);
        let (a, wa) = counting_waker();
        let (b, wb) = counting_waker();
        let (cc, wc) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &wa));
        assert_pending(poll_unpin(&mut f, &wb));
        assert_eq!(Arc::strong_count(&a), 2, "old waker released");
        // Same waker again: nothing changes.
        assert_pending(poll_unpin(&mut f, &wb));
        assert_pending(poll_unpin(&mut f, &wc));
        assert_pending(poll_unpin(&mut f, &wb));
        tx.try_send(1).unwrap();
        assert_eq!((a.count(), b.count(), cc.count()), (0, 1, 0), "cap {cap:?}");
        assert_eq!(ready(poll_unpin(&mut f, &wa)), Ok(1));
    }
}

#[test]
fn repolled_send_is_woken_through_newest_waker_only() {
    for cap in [0usize, 1, 3] {
        let (mut tx, rx) = spmc::bounded_async::<usize>(cap);
        for i in 0..cap {
            tx.try_send(i).unwrap();
        }
        let (a, wa) = counting_waker();
        let (b, wb) = counting_waker();
        let mut f = Box::pin(tx.send(cap));
        assert_pending(poll_unpin(&mut f, &wa));
        assert_pending(poll_unpin(&mut f, &wb));
        assert_eq!(Arc::strong_count(&a), 2, "old waker released");
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!((a.count(), b.count()), (0, 1), "cap {cap}");
        assert_eq!(ready(poll_unpin(&mut f, &wa)), Ok(()));
    }
}

#[test]
fn repolled_stream_is_woken_through_newest_waker_only() {
    let (mut tx, rx) = spmc::unbounded_async::<u32>();
    let mut s = rx.stream();
    let (a, wa) = counting_waker();
    let (b, wb) = counting_waker();
    assert_pending(poll_next(&mut s, &wa));
    assert_pending(poll_next(&mut s, &wb));
    tx.try_send(3).unwrap();
    assert_eq!((a.count(), b.count()), (0, 1));
    assert_eq!(ready(poll_next(&mut s, &wb)), Some(3));
}

// ----- wakers that re-enter the channel

#[test]
fn waker_wake_reentering_the_channel_does_not_deadlock() {
    watchdog(10, || {
        let (tx, rx) = spmc::bounded_async::<u32>(4);
        let tx = Arc::new(Mutex::new(Some(tx)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (fw, w_fn) = {
            let rx = rx.clone();
            let tx = tx.clone();
            let seen = seen.clone();
            fn_waker(move || {
                let mut s = seen.lock().unwrap();
                s.push(format!(
                    "len={} empty={} full={} rc={} disc={}",
                    rx.len(),
                    rx.is_empty(),
                    rx.is_full(),
                    rx.receiver_count(),
                    rx.is_disconnected()
                ));
                s.push(format!("try_recv={:?}", rx.try_recv()));
                if let Ok(mut tx) = tx.try_lock() {
                    if let Some(tx) = tx.as_mut() {
                        s.push(format!("try_send={:?}", tx.try_send(100)));
                        s.push(format!("tx.len={}", tx.len()));
                    }
                }
            })
        };
        let (c0, w0) = counting_waker();
        let mut f0 = Box::pin(rx.recv());
        let mut f1 = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f0, &w0));
        assert_pending(poll_unpin(&mut f1, &w_fn));
        tx.lock().unwrap().as_mut().unwrap().try_send(1).unwrap();
        assert_eq!(c0.count(), 1);
        assert_eq!(fw.count(), 0);
        // The wake-up passes to f1 from inside the channel; its waker calls
        // back into the channel (including a send). The value stays in a
        // bounded spmc channel until a receiver takes it, so the waker's own
        // `try_recv` takes it, and f1 gets the value the waker sent.
        drop(f0);
        assert_eq!(fw.count(), 1);
        assert_eq!(ready(poll_unpin(&mut f1, &w_fn)), Ok(100));
        let s = seen.lock().unwrap().clone();
        assert_eq!(s[1], "try_recv=Ok(1)");
        assert_eq!(s[2], "try_send=Ok(())");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

        // Re-entry while the channel wakes everyone on sender drop.
        let mut f2 = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f2, &w_fn));
        let sender = tx.lock().unwrap().take();
        drop(sender);
        assert_eq!(fw.count(), 2);
        assert_eq!(ready(poll_unpin(&mut f2, &w_fn)), Err(RecvError));
    });
}

#[test]
fn sender_waker_reentering_from_wake_does_not_deadlock() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(2);
        let out = Arc::new(Mutex::new(Vec::new()));
        let (fw, w) = {
            let rx = rx.clone();
            let out = out.clone();
            fn_waker(move || {
                // Takes a value from inside the wake-up of the sender.
                let r = rx.try_recv();
                out.lock().unwrap().push((r, rx.len(), rx.is_full()));
            })
        };
        tx.try_send(0).unwrap();
        tx.try_send(1).unwrap();
        let mut f = Box::pin(tx.send(2));
        assert_pending(poll_unpin(&mut f, &w));
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!(fw.count(), 1);
        assert_eq!(out.lock().unwrap()[0].0, Ok(1));
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
        drop(f);
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(rx.len(), 0);
        tx.try_send(3).unwrap();
        tx.try_send(4).unwrap();
        assert!(tx.try_send(5).unwrap_err().is_full());
    });
}

/// A waker that re-enters the channel from `wake` and from its `Drop`.
struct ReenterOnDrop {
    rx: AsyncReceiver<u32>,
    wakes: AtomicUsize,
    drops: Arc<AtomicUsize>,
}

impl Wake for ReenterOnDrop {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        let _ = (self.rx.len(), self.rx.try_recv());
    }
}

impl Drop for ReenterOnDrop {
    fn drop(&mut self) {
        let _ = (self.rx.len(), self.rx.is_full(), self.rx.try_recv());
        let mut f = Box::pin(self.rx.recv());
        let (_c, w) = counting_waker();
        let _ = poll_unpin(&mut f, &w);
        drop(f);
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn reentering_waker(rx: &AsyncReceiver<u32>, drops: &Arc<AtomicUsize>) -> Waker {
    Waker::from(Arc::new(ReenterOnDrop {
        rx: rx.clone(),
        wakes: AtomicUsize::new(0),
        drops: drops.clone(),
    }))
}

#[test]
fn waker_drop_reentering_the_channel_does_not_deadlock() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(4);
        let drops = Arc::new(AtomicUsize::new(0));

        // 1. Woken by a send: the channel's clone is the last one.
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &reentering_waker(&rx, &drops)));
        tx.try_send(1).unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        // The waker's own `try_recv` (in `wake`) took the value, which stays
        // in a bounded spmc channel until a receiver takes it: the future
        // finds nothing and waits again.
        let (_c, w) = counting_waker();
        assert_pending(poll_unpin(&mut f, &w));
        tx.try_send(1).unwrap();
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(1));
        drop(f);

        // 2. Replaced by a newer waker.
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &reentering_waker(&rx, &drops)));
        assert_pending(poll_unpin(&mut f, &w));
        assert_eq!(drops.load(Ordering::SeqCst), 2);

        // 3. Dropped with a cancelled future.
        let mut g = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut g, &reentering_waker(&rx, &drops)));
        drop(g);
        assert_eq!(drops.load(Ordering::SeqCst), 3);

        // 4. A pending send's waker, released when the send completes.
        tx.try_send(2).unwrap();
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(2));
        drop(f);
        for i in 0..4 {
            tx.try_send(i).unwrap();
        }
        let mut s = Box::pin(tx.send(9));
        assert_pending(poll_unpin(&mut s, &reentering_waker(&rx, &drops)));
        // The recv frees a slot; the waker's own try_recv (in wake) and the
        // recv in its drop take two more values.
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!(drops.load(Ordering::SeqCst), 4);
        assert_eq!(ready(poll_unpin(&mut s, &w)), Ok(()));
        drop(s);
        let rest: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(rest.last(), Some(&9));
        assert!(rest.windows(2).all(|p| p[0] < p[1]));
        assert!(rx.is_empty());
        tx.try_send(5).unwrap();
        assert_eq!(rx.try_recv(), Ok(5));
    });
}

// ----- panicking wakers

fn panicking_waker() -> (Arc<FnWaker<impl Fn() + Send + Sync>>, Waker) {
    fn_waker(|| panic!("waker panics on purpose"))
}

#[test]
fn panicking_waker_on_send_propagates_and_strands_no_one() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(4);
        let (p, wp) = panicking_waker();
        let ws: Vec<_> = (0..2).map(|_| counting_waker()).collect();
        let mut fp = Box::pin(rx.recv());
        let mut fs: Vec<_> = (0..2).map(|_| Box::pin(rx.recv())).collect();
        assert_pending(poll_unpin(&mut fp, &wp));
        for (f, (_, w)) in fs.iter_mut().zip(&ws) {
            assert_pending(poll_unpin(f, w));
        }
        let msg = expect_panic(|| tx.try_send(1));
        assert!(msg.contains("waker panics"), "{msg}");
        assert_eq!(p.count(), 1);
        assert_eq!(counts(&ws), [0, 0]);
        // The value reached the panicking waker's future, which still gets it.
        let (_c, good) = counting_waker();
        assert_eq!(ready(poll_unpin(&mut fp, &good)), Ok(1));
        // The channel still works; the others are served in order.
        tx.try_send(2).unwrap();
        tx.try_send(3).unwrap();
        assert_eq!(counts(&ws), [1, 1]);
        assert_eq!(ready(poll_unpin(&mut fs[0], &ws[0].1)), Ok(2));
        assert_eq!(ready(poll_unpin(&mut fs[1], &ws[1].1)), Ok(3));
        tx.try_send(4).unwrap();
        assert_eq!(rx.len(), 1);
        assert_eq!(rx.try_recv(), Ok(4));
    });
}

#[test]
fn panicking_waker_on_sender_drop_still_wakes_everyone() {
    watchdog(10, || {
        let (tx, rx) = spmc::bounded_async::<u32>(4);
        let srx = rx.to_sync();
        let h = thread::spawn(move || srx.recv());
        thread::sleep(Duration::from_millis(30));
        let (p, wp) = panicking_waker();
        let ws: Vec<_> = (0..3).map(|_| counting_waker()).collect();
        let mut fp = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut fp, &wp));
        let mut fs: Vec<_> = (0..3).map(|_| Box::pin(rx.recv())).collect();
        for (f, (_, w)) in fs.iter_mut().zip(&ws) {
            assert_pending(poll_unpin(f, w));
        }
        let msg = expect_panic(move || drop(tx));
        assert!(msg.contains("waker panics"), "{msg}");
        assert_eq!(p.count(), 1);
        assert_eq!(counts(&ws), [1, 1, 1], "a waiter was stranded");
        assert_eq!(join_within(h, 5), Err(RecvError));
        let (_c, good) = counting_waker();
        assert_eq!(ready(poll_unpin(&mut fp, &good)), Err(RecvError));
        for (f, (_, w)) in fs.iter_mut().zip(&ws) {
            assert_eq!(ready(poll_unpin(f, w)), Err(RecvError));
        }
        assert!(rx.is_disconnected());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
}

#[test]
fn panicking_sender_waker_on_recv_leaves_channel_working() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        tx.try_send(0).unwrap();
        let (p, wp) = panicking_waker();
        let mut f = Box::pin(tx.send(1));
        assert_pending(poll_unpin(&mut f, &wp));
        // The recv that frees the slot wakes the sender; the panic reaches
        // the receiving caller, and the value that recv took is not lost: it
        // goes back to the front of the channel.
        let msg = expect_panic(|| rx.try_recv());
        assert!(msg.contains("waker panics"), "{msg}");
        assert_eq!(p.count(), 1);
        assert_eq!(rx.len(), 1);
        // The capacity stays exact: the value came back into the slot that
        // had been granted to the send, so that grant is void and the send
        // waits again.
        let (c, good) = counting_waker();
        assert_pending(poll_unpin(&mut f, &good));
        assert_eq!(rx.len(), 1);
        assert!(rx.is_full());
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!(c.count(), 1);
        assert_eq!(ready(poll_unpin(&mut f, &good)), Ok(()));
        drop(f);
        assert_eq!(rx.len(), 1);
        assert!(tx.try_send(2).unwrap_err().is_full());
        assert_eq!(rx.try_recv(), Ok(1));
        tx.try_send(3).unwrap();
        assert_eq!(rx.try_recv(), Ok(3));
    });
}

/// `bounded(1)` hands a value to a waiting task and counts it until the
/// task takes it. The task's take frees the slot and grants it to a waiting
/// sender whose waker panics: the panic reaches the receiving task, and the
/// value it took is not lost: it goes back to the front of the channel,
/// into the slot, whose grant is void.
#[test]
fn panicking_sender_waker_on_held_take_loses_nothing() {
    watchdog(10, || {
        let log = DropLog::new(2);
        let (mut tx, rx) = spmc::bounded_async(1);
        let (_cr, wr) = counting_waker();
        let mut r = Box::pin(rx.recv());
        assert!(poll_unpin(&mut r, &wr).is_pending());
        // Handed to the waiting task, and counted: the channel is full.
        tx.try_send(log.item(0)).unwrap();
        assert!(rx.is_full());
        let (p, wp) = panicking_waker();
        let mut f = Box::pin(tx.send(log.item(1)));
        assert!(poll_unpin(&mut f, &wp).is_pending());
        let msg = expect_panic(|| poll_unpin(&mut r, &wr));
        assert!(msg.contains("waker panics"), "{msg}");
        assert_eq!(p.count(), 1);
        assert_eq!(log.dropped(0), 0, "the taken value was lost");
        assert_eq!(rx.len(), 1);
        assert!(rx.is_full());
        // The grant is void: the send waits again, and gets the slot once
        // the value is taken.
        let (c, good) = counting_waker();
        assert!(poll_unpin(&mut f, &good).is_pending());
        assert_eq!(rx.try_recv().map(|t| t.id), Ok(0));
        assert_eq!(c.count(), 1);
        assert!(ready(poll_unpin(&mut f, &good)).is_ok());
        drop(f);
        assert!(rx.is_full());
        assert_eq!(rx.try_recv().map(|t| t.id), Ok(1));
        drop(r);
        drop((rx, tx));
        log.assert_all_once();
    });
}

/// A waker whose every drop (of any clone) panics while `armed` is set.
fn drop_panicking_waker(armed: &'static AtomicBool) -> Waker {
    use std::task::{RawWaker, RawWakerVTable};
    unsafe fn clone(p: *const ()) -> RawWaker {
        RawWaker::new(p, &VTABLE)
    }
    unsafe fn wake(p: *const ()) {
        unsafe { drop_it(p) }
    }
    unsafe fn wake_by_ref(_: *const ()) {}
    unsafe fn drop_it(p: *const ()) {
        // SAFETY: `p` is the `&'static AtomicBool` given below.
        let armed = unsafe { &*(p as *const AtomicBool) };
        if armed.load(Ordering::SeqCst) && !thread::panicking() {
            panic!("waker drop panics on purpose");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_it);
    let raw = RawWaker::new(armed as *const AtomicBool as *const (), &VTABLE);
    // SAFETY: the vtable's functions uphold `RawWaker`'s contract: the data
    // is a `'static` reference, shared by every clone.
    unsafe { Waker::from_raw(raw) }
}

/// A receive that clones its waker to wait and then finds a value after
/// all (here one a cancelled receive returned to the front of the queue)
/// drops the unused clone after the lock. If that drop panics, the value
/// it took goes back to the front of the channel instead of being lost.
#[test]
fn panicking_waker_drop_after_a_take_loses_nothing() {
    static ARMED: AtomicBool = AtomicBool::new(false);
    watchdog(10, || {
        let log = DropLog::new(3);
        let (mut tx, rx) = spmc::bounded_async(1);
        let (_c, w) = counting_waker();
        let mut r1 = Box::pin(rx.recv());
        assert!(poll_unpin(&mut r1, &w).is_pending());
        // Handed to r1, which is cancelled: the value returns to the queue.
        tx.try_send(log.item(0)).unwrap();
        drop(r1);
        assert_eq!(rx.len(), 1);
        let pw = drop_panicking_waker(&ARMED);
        let mut r2 = Box::pin(rx.recv());
        ARMED.store(true, Ordering::SeqCst);
        let msg = expect_panic(|| poll_unpin(&mut r2, &pw));
        ARMED.store(false, Ordering::SeqCst);
        assert!(msg.contains("waker drop panics"), "{msg}");
        assert_eq!(log.dropped(0), 0, "the taken value was lost");
        assert_eq!(rx.len(), 1);
        assert!(tx.try_send(log.item(1)).unwrap_err().is_full());
        assert_eq!(rx.try_recv().map(|t| t.id), Ok(0));
        tx.try_send(log.item(2)).unwrap();
        drop(r2);
        drop((rx, tx));
        log.assert_all_once();
    });
}

#[test]
fn waker_whose_drop_panics_on_cancel() {
    struct PanicOnDrop;
    impl Wake for PanicOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            if !thread::panicking() {
                panic!("waker drop panics on purpose");
            }
        }
    }
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(2);
        let (c, w) = counting_waker();
        let mut f0 = Box::pin(rx.recv());
        let mut f1 = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f0, &Waker::from(Arc::new(PanicOnDrop))));
        assert_pending(poll_unpin(&mut f1, &w));
        let msg = expect_panic(move || drop(f0));
        assert!(msg.contains("waker drop panics"), "{msg}");
        // f0 was removed; the next value goes to f1 and the lock is free.
        tx.try_send(1).unwrap();
        assert_eq!(c.count(), 1);
        assert_eq!(ready(poll_unpin(&mut f1, &w)), Ok(1));
        tx.try_send(2).unwrap();
        assert_eq!(rx.try_recv(), Ok(2));
    });
}

// ----- threads and tasks in one FIFO

#[test]
fn blocked_thread_and_pending_task_are_served_in_arrival_order() {
    // bounded(0): `rendezvous_thread_and_task_are_served_in_arrival_order`.
    for cap in [Some(4), None] {
        watchdog(10, move || {
            // Thread first.
            let (tx, rx) = chan::<u32>(cap);
            let mut tx = tx.into_sync();
            let srx = rx.to_sync();
            let h = thread::spawn(move || srx.recv());
            thread::sleep(Duration::from_millis(150));
            let (c, w) = counting_waker();
            let mut f = Box::pin(rx.recv());
            assert_pending(poll_unpin(&mut f, &w));
            tx.send(1).unwrap();
            assert_eq!(join_within(h, 5), Ok(1), "cap {cap:?}: thread waited first");
            assert_eq!(c.count(), 0);
            tx.send(2).unwrap();
            assert_eq!(c.count(), 1);
            assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(2));
            drop(f);

            // Task first.
            let mut f = Box::pin(rx.recv());
            assert_pending(poll_unpin(&mut f, &w));
            let srx = rx.to_sync();
            let h = thread::spawn(move || srx.recv());
            thread::sleep(Duration::from_millis(150));
            tx.send(3).unwrap();
            assert_eq!(c.count(), 2);
            assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(3));
            thread::sleep(Duration::from_millis(20));
            assert!(
                !h.is_finished(),
                "the thread took a value meant for the task"
            );
            tx.send(4).unwrap();
            assert_eq!(join_within(h, 5), Ok(4));
        });
    }
}

// ----- rendezvous

#[test]
fn rendezvous_async_send_pending_until_a_receiver_took_the_value() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(0);
    assert!(tx.try_send(1).unwrap_err().is_full());
    let (c, w) = counting_waker();
    {
        let mut f = Box::pin(tx.send(5));
        for _ in 0..3 {
            assert_pending(poll_unpin(&mut f, &w));
        }
        assert_eq!(c.count(), 0);
        assert_eq!(rx.try_recv(), Ok(5));
        assert_eq!(c.count(), 1);
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

    // A receiver future takes from a pending sender at once.
    let mut f = Box::pin(tx.send(6));
    assert_pending(poll_unpin(&mut f, &w));
    let (_r, rw) = counting_waker();
    let mut rf = Box::pin(rx.recv());
    assert_eq!(ready(poll_unpin(&mut rf, &rw)), Ok(6));
    assert_eq!(c.count(), 2);
    assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
    drop(f);

    // A waiting receiver future cannot take a value at once: try_send
    // finds no receiver ready. An async send wakes the future, which takes
    // the value when it runs; the send completes only then.
    let mut rf = Box::pin(rx.recv());
    assert_pending(poll_unpin(&mut rf, &rw));
    assert!(tx.try_send(7).unwrap_err().is_full());
    let mut f = Box::pin(tx.send(7));
    assert_pending(poll_unpin(&mut f, &w));
    assert_eq!(_r.count(), 1, "the waiting receiver was woken");
    assert_eq!(rx.len(), 0);
    assert_pending(poll_unpin(&mut f, &w));
    assert_eq!(ready(poll_unpin(&mut rf, &rw)), Ok(7));
    assert_eq!(c.count(), 3);
    assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
    drop(f);
    assert!(tx.try_send(8).unwrap_err().is_full());
}

#[test]
fn rendezvous_async_send_completes_when_a_thread_receives() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(0);
        let (c, w) = counting_waker();
        let mut f = Box::pin(tx.send(5));
        assert_pending(poll_unpin(&mut f, &w));
        let srx = rx.to_sync();
        let h = thread::spawn(move || srx.recv());
        assert_eq!(join_within(h, 5), Ok(5));
        wait_until(5, "the sender's wake-up", || c.count() == 1);
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(()));
    });
}

#[test]
fn rendezvous_cancelled_send_leaves_nothing_behind() {
    let log = DropLog::new(1);
    let (mut tx, rx) = spmc::bounded_async(0);
    let (_c, w) = counting_waker();
    let mut f = Box::pin(tx.send(log.item(0)));
    assert_pending(poll_unpin(&mut f, &w));
    drop(f);
    assert_eq!(log.dropped(0), 1);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
    assert_eq!(rx.len(), 0);
}

// ----- batches and recv_many

#[test]
fn async_send_batch_waits_for_space_mid_batch() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(2);
    let (c, w) = counting_waker();
    let mut f = Box::pin(tx.send_batch(0..7));
    let mut got = Vec::new();
    let mut polls = 0;
    loop {
        polls += 1;
        assert!(polls < 100);
        match poll_unpin(&mut f, &w) {
            Poll::Ready(r) => {
                assert_eq!(r, Ok(()));
                break;
            }
            Poll::Pending => {
                assert_eq!(rx.len(), 2, "pending only while full");
                let before = c.count();
                got.push(rx.try_recv().unwrap());
                assert_eq!(c.count(), before + 1, "the batch was not woken");
            }
        }
    }
    drop(f);
    got.extend(std::iter::from_fn(|| rx.try_recv().ok()));
    assert_eq!(got, (0..7).collect::<Vec<_>>());
    assert!(polls > 3);
}

#[test]
fn async_send_batch_on_rendezvous_channel() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(0);
        let srx = rx.to_sync();
        let h = thread::spawn(move || srx.iter().collect::<Vec<_>>());
        drop(rx);
        futures::executor::block_on(tx.send_batch(0..50)).unwrap();
        drop(tx);
        assert_eq!(join_within(h, 5), (0..50).collect::<Vec<_>>());
    });
}

#[test]
fn async_recv_many() {
    let (mut tx, rx) = spmc::unbounded_async::<u32>();
    let mut buf = Vec::new();
    {
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv_many(&mut buf, 4));
        assert_pending(poll_with(f.as_mut(), &w));
        tx.try_send(0).unwrap();
        tx.try_send(1).unwrap();
        assert_eq!(c.count(), 1);
        assert_eq!(ready(poll_with(f.as_mut(), &w)), 2);
    }
    assert_eq!(buf, [0, 1]);
    futures::executor::block_on(tx.send_batch(2..12)).unwrap();
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 4)), 4);
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 0)), 0);
    assert_eq!(rx.try_recv_many(&mut buf, 100), 6);
    assert_eq!(buf, (0..12).collect::<Vec<_>>());
    drop(tx);
    assert_eq!(futures::executor::block_on(rx.recv_many(&mut buf, 4)), 0);
    assert_eq!(buf.len(), 12);
}

#[test]
fn cancelled_recv_many_loses_nothing() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(4);
    let mut buf = Vec::new();
    {
        let (_c, w) = counting_waker();
        let mut f = Box::pin(rx.recv_many(&mut buf, 4));
        assert_pending(poll_with(f.as_mut(), &w));
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
    }
    assert!(buf.is_empty());
    assert_eq!(rx.try_recv_many(&mut buf, 10), 2);
    assert_eq!(buf, [1, 2]);
}

// ----- streams

#[test]
fn stream_ends_after_last_value_and_is_terminated() {
    let (mut tx, rx) = spmc::unbounded_async::<u32>();
    let mut s = rx.stream();
    let (c, w) = counting_waker();
    assert!(!s.is_terminated());
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    assert_eq!(ready(poll_next(&mut s, &w)), Some(1));
    assert_eq!(ready(poll_next(&mut s, &w)), Some(2));
    assert_pending(poll_next(&mut s, &w));
    assert!(!s.is_terminated());
    tx.try_send(3).unwrap();
    assert_eq!(c.count(), 1);
    drop(tx);
    assert_eq!(ready(poll_next(&mut s, &w)), Some(3));
    assert!(!s.is_terminated(), "terminated before the end was seen");
    assert_eq!(ready(poll_next(&mut s, &w)), None);
    assert!(s.is_terminated());
    assert_eq!(ready(poll_next(&mut s, &w)), None);
    assert!(s.is_terminated());
}

#[test]
fn stream_pending_end_is_woken_by_sender_drop() {
    let (tx, rx) = spmc::bounded_async::<u32>(2);
    let mut s = rx.into_stream();
    let (c, w) = counting_waker();
    assert_pending(poll_next(&mut s, &w));
    drop(tx);
    assert_eq!(c.count(), 1);
    assert_eq!(ready(poll_next(&mut s, &w)), None);
    assert!(s.is_terminated());
}

#[test]
fn into_stream_owns_the_receiver() {
    watchdog(10, || {
        let (tx, rx) = spmc::bounded_async::<u32>(3);
        let probe = rx.clone();
        let s = rx.into_stream();
        assert_eq!(probe.receiver_count(), 2);
        let mut tx = tx.into_sync();
        let h = thread::spawn(move || {
            for i in 0..100 {
                tx.send(i).unwrap();
            }
        });
        let got: Vec<u32> = futures::executor::block_on(s.collect());
        join_within(h, 5);
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert_eq!(probe.receiver_count(), 1, "the stream dropped its receiver");
    });
}

#[test]
fn dropped_stream_with_handed_value_passes_it_on() {
    let (mut tx, rx) = spmc::unbounded_async::<u32>();
    let (_c, w) = counting_waker();
    let mut s = rx.stream();
    assert_pending(poll_next(&mut s, &w));
    let mut f = Box::pin(rx.recv());
    let (c2, w2) = counting_waker();
    assert_pending(poll_unpin(&mut f, &w2));
    tx.try_send(1).unwrap();
    drop(s);
    assert_eq!(c2.count(), 1);
    assert_eq!(ready(poll_unpin(&mut f, &w2)), Ok(1));
}

#[test]
fn fused_stream_in_select() {
    let (mut tx, rx) = spmc::unbounded_async::<u32>();
    let (mut tx2, rx2) = spmc::unbounded_async::<u32>();
    tx.try_send(1).unwrap();
    tx2.try_send(10).unwrap();
    drop(tx);
    drop(tx2);
    let mut a = rx.into_stream();
    let mut b = rx2.into_stream();
    let sum = futures::executor::block_on(async {
        let mut sum = 0;
        loop {
            futures::select! {
                v = a.next() => if let Some(v) = v { sum += v },
                v = b.next() => if let Some(v) = v { sum += v },
                complete => break,
            }
        }
        sum
    });
    assert_eq!(sum, 11);
    assert!(a.is_terminated() && b.is_terminated());
}

// ----- on a runtime

#[test]
fn tokio_send_and_recv_across_tasks() {
    watchdog(20, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut tx, rx) = spmc::bounded_async::<u32>(1);
            let h = tokio::spawn(async move {
                let mut v = Vec::new();
                while let Ok(x) = rx.recv().await {
                    v.push(x);
                }
                v
            });
            for i in 0..200 {
                tx.send(i).await.unwrap();
            }
            tx.send_batch(200..300).await.unwrap();
            drop(tx);
            let v = tokio::time::timeout(Duration::from_secs(10), h)
                .await
                .expect("consumer hung")
                .unwrap();
            assert_eq!(v, (0..300).collect::<Vec<_>>());
        });
    });
}

#[test]
fn tokio_select_cancels_recv_without_losing_values() {
    watchdog(20, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let (tx, rx) = spmc::bounded_async::<u32>(2);
            let mut tx = tx.into_sync();
            let h = thread::spawn(move || {
                for i in 0..300 {
                    tx.send(i).unwrap();
                    if i % 50 == 0 {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
            });
            let mut got = Vec::new();
            loop {
                tokio::select! {
                    r = rx.recv() => match r {
                        Ok(v) => got.push(v),
                        Err(_) => break,
                    },
                    _ = tokio::time::sleep(Duration::from_micros(50)) => {}
                }
            }
            h.join().unwrap();
            assert_eq!(got, (0..300).collect::<Vec<_>>());
        });
    });
}

#[test]
fn async_disconnection_forms_return_the_value() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(1);
    let rx2 = rx.clone();
    drop(rx);
    assert!(futures::executor::block_on(tx.send(1)).is_ok());
    drop(rx2);
    assert_eq!(futures::executor::block_on(tx.send(2)), Err(SendError(2)));
    assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
    assert_eq!(
        futures::executor::block_on(tx.send_batch([4, 5])),
        Err(SendError(vec![4, 5]))
    );
}

#[test]
fn dropping_last_receiver_as_pending_stream_drops_handed_value_once() {
    for cap in HANDOFF_CAPS {
        let log = DropLog::new(2);
        let (mut tx, rx) = chan(cap);
        let mut s = rx.into_stream();
        let (c, w) = counting_waker();
        assert!(poll_next(&mut s, &w).is_pending());
        assert!(tx.try_send(log.item(0)).is_ok());
        assert_eq!(c.count(), 1);
        assert_eq!(log.total(), 0);
        // The stream owns the last receiver: its handed value is dropped now.
        drop(s);
        assert_eq!(log.dropped(0), 1, "cap {cap:?}");
        assert!(tx.is_disconnected());
        assert_eq!(tx.len(), 0);
        let e = tx.try_send(log.item(1)).unwrap_err();
        assert!(e.is_disconnected());
        drop(e);
        log.assert_all_once();
    }
}

/// bounded(0): a woken receiver that is cancelled passes its wake-up on;
/// the value stays with its sender, never in the channel (`len()` stays 0).
#[test]
fn rendezvous_cancelled_receiver_passes_wake_up_and_leaves_nothing() {
    let (mut tx, rx) = spmc::bounded_async::<u32>(0);
    let (c1, w1) = counting_waker();
    let (c2, w2) = counting_waker();
    let (cs, ws) = counting_waker();
    let mut f1 = Box::pin(rx.recv());
    let mut f2 = Box::pin(rx.recv());
    assert_pending(poll_unpin(&mut f1, &w1));
    assert_pending(poll_unpin(&mut f2, &w2));
    {
        let mut s = Box::pin(tx.send(1));
        assert_pending(poll_unpin(&mut s, &ws));
        assert_eq!((c1.count(), c2.count()), (1, 0), "the oldest is woken");
        drop(f1);
        assert_eq!(c2.count(), 1, "the wake-up passed on");
        assert_eq!(rx.len(), 0);
        assert_eq!(ready(poll_unpin(&mut f2, &w2)), Ok(1));
        assert_eq!(cs.count(), 1);
        assert_eq!(ready(poll_unpin(&mut s, &ws)), Ok(()));
    }
    // The only waiting receiver is woken, then cancelled: the send stays
    // pending with its value, and the next receiver takes it.
    let mut f3 = Box::pin(rx.recv());
    assert_pending(poll_unpin(&mut f3, &w1));
    let mut s = Box::pin(tx.send(2));
    assert_pending(poll_unpin(&mut s, &ws));
    assert_eq!(c1.count(), 2);
    drop(f3);
    assert_eq!(rx.len(), 0);
    assert!(rx.is_empty());
    assert_pending(poll_unpin(&mut s, &ws));
    assert_eq!(futures::executor::block_on(rx.recv()), Ok(2));
    assert_eq!(ready(poll_unpin(&mut s, &ws)), Ok(()));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// bounded(0) with threads and tasks waiting together: served in arrival
/// order, a blocking send completing when the receiver has taken its value.
#[test]
fn rendezvous_thread_and_task_are_served_in_arrival_order() {
    watchdog(10, || {
        let (tx, rx) = spmc::bounded_async::<u32>(0);
        let mut tx = tx.into_sync();
        // Thread first.
        let srx = rx.to_sync();
        let h = thread::spawn(move || srx.recv());
        thread::sleep(Duration::from_millis(150));
        let (c, w) = counting_waker();
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &w));
        tx.send(1).unwrap();
        assert_eq!(join_within(h, 5), Ok(1), "the thread waited first");
        assert_eq!(c.count(), 0);
        // The task now: the blocking send waits until the task has taken it.
        let p = thread::spawn(move || {
            tx.send(2).unwrap();
            tx
        });
        wait_until(5, "the task's wake-up", || c.count() == 1);
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(2));
        let mut tx = join_within(p, 5);
        drop(f);

        // Task first.
        let mut f = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut f, &w));
        let srx = rx.to_sync();
        let h = thread::spawn(move || srx.recv());
        thread::sleep(Duration::from_millis(150));
        let p = thread::spawn(move || {
            tx.send(3).unwrap();
            tx.send(4).unwrap();
        });
        wait_until(5, "the task's wake-up", || c.count() == 2);
        thread::sleep(Duration::from_millis(20));
        assert!(
            !h.is_finished(),
            "the thread took a value meant for the task"
        );
        assert_eq!(ready(poll_unpin(&mut f, &w)), Ok(3));
        assert_eq!(join_within(h, 5), Ok(4));
        join_within(p, 5);
        assert_eq!(rx.len(), 0);
    });
}

/// A cancelled receive whose value goes to a waiting *thread* frees the room
/// that value held: a pending async send must be granted it, or it waits for
/// ever on an empty channel.
#[test]
#[cfg_attr(miri, ignore)]
fn cancelled_receive_handing_value_to_thread_grants_pending_send() {
    watchdog(20, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(1);
        let (_ac, aw) = counting_waker();
        let mut a = Box::pin(rx.recv());
        assert_pending(poll_unpin(&mut a, &aw));
        // Handed to the pending task: it holds the one slot until taken.
        tx.try_send(1).unwrap();
        assert!(tx.try_send(9).unwrap_err().is_full());
        let (sc, sw) = counting_waker();
        let mut s = Box::pin(tx.send(2));
        assert_pending(poll_unpin(&mut s, &sw));
        let srx = rx.to_sync();
        let waiting = flag();
        let b = {
            let waiting = waiting.clone();
            thread::spawn(move || {
                waiting.store(true, Ordering::SeqCst);
                srx.recv()
            })
        };
        wait_until(10, "thread about to block", || {
            waiting.load(Ordering::SeqCst)
        });
        thread::sleep(Duration::from_millis(150));
        // The cancelled future's value goes to the blocked thread, and its
        // slot to the pending send.
        drop(a);
        assert_eq!(join_within(b, 10), Ok(1));
        assert_eq!(
            sc.count(),
            1,
            "the pending send was not granted the freed slot"
        );
        assert_eq!(ready(poll_unpin(&mut s, &sw)), Ok(()));
        drop(s);
        assert_eq!(rx.try_recv(), Ok(2));
    });
}
