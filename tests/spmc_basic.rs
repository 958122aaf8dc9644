//! `amphi::spmc`: blocking handles, disconnection, drop accounting,
//! rendezvous, timeouts, batches, state queries, conversions, static
//! properties.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

mod common;

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use amphi::spmc::{self, AsyncReceiver, AsyncSender, Receiver, Sender};
use amphi::{RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError};
use common::*;

const SHORT: Duration = Duration::from_millis(50);

// ----- FIFO competition and draining

#[test]
fn fifo_competition_between_receiver_clones() {
    let (mut tx, rx1) = spmc::bounded(16);
    let rx2 = rx1.clone();
    let rx3 = rx1.to_async().into_sync();
    for i in 0..12 {
        tx.send(i).unwrap();
    }
    // Whoever asks gets the oldest value: the queue order is global.
    let mut got = Vec::new();
    for i in 0..12 {
        let v = match i % 3 {
            0 => rx1.recv().unwrap(),
            1 => rx2.try_recv().unwrap(),
            _ => rx3.recv_timeout(SHORT).unwrap(),
        };
        got.push(v);
    }
    assert_eq!(got, (0..12).collect::<Vec<_>>());
    assert_eq!(rx2.try_recv(), Err(TryRecvError::Empty));
}

#[test]
#[cfg_attr(miri, ignore)]
fn competing_threads_each_see_increasing_values() {
    watchdog(30, || {
        let (mut tx, rx) = spmc::bounded(4);
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                thread::spawn(move || rx.iter().collect::<Vec<u64>>())
            })
            .collect();
        drop(rx);
        for i in 0..5_000u64 {
            tx.send(i).unwrap();
        }
        drop(tx);
        let per: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        check_exactly_once(5_000, &per);
    });
}

#[test]
fn receivers_drain_after_sender_drops() {
    for cap in [Some(1), Some(5), None] {
        let (mut tx, rx) = match cap {
            Some(c) => spmc::bounded(c),
            None => spmc::unbounded(),
        };
        let rx2 = rx.clone();
        let n = cap.unwrap_or(5);
        for i in 0..n {
            tx.try_send(i).unwrap();
        }
        assert!(!rx.is_disconnected());
        drop(tx);
        // Disconnected, but the values are still there.
        assert!(rx.is_disconnected());
        assert_eq!(rx.sender_count(), 0);
        assert_eq!(rx.len(), n);
        for i in 0..n {
            let r = if i % 2 == 0 { &rx } else { &rx2 };
            assert_eq!(r.recv(), Ok(i), "cap {cap:?}");
        }
        assert_eq!(rx.recv(), Err(RecvError));
        assert_eq!(rx2.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Disconnected)
        );
        let mut buf = Vec::new();
        assert_eq!(rx.recv_many(&mut buf, 4), 0);
        assert!(buf.is_empty());
    }
}

#[test]
fn blocked_receiver_woken_by_sender_drop() {
    watchdog(10, || {
        let (tx, rx) = spmc::bounded::<u8>(1);
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                thread::spawn(move || rx.recv())
            })
            .collect();
        thread::sleep(SHORT);
        drop(tx);
        for h in hs {
            assert_eq!(join_within(h, 5), Err(RecvError));
        }
    });
}

// ----- disconnection from the receiving side

#[test]
fn only_last_receiver_drop_disconnects() {
    let (mut tx, rx) = spmc::bounded(8);
    let rx2 = rx.clone();
    let arx = rx.to_async();
    assert_eq!(tx.receiver_count(), 3);
    drop(rx);
    assert!(!tx.is_disconnected());
    tx.send(1).unwrap();
    drop(rx2);
    assert!(!tx.is_disconnected());
    tx.try_send(2).unwrap();
    assert_eq!(arx.try_recv(), Ok(1));
    drop(arx);
    assert!(tx.is_disconnected());
    assert_eq!(tx.receiver_count(), 0);

    // Every send form fails and gives the value back.
    assert_eq!(tx.send(10), Err(SendError(10)));
    assert_eq!(tx.try_send(11), Err(TrySendError::Disconnected(11)));
    assert_eq!(
        tx.send_timeout(12, Duration::from_secs(10)),
        Err(SendTimeoutError::Disconnected(12))
    );
    assert_eq!(
        tx.send_timeout(13, Duration::MAX),
        Err(SendTimeoutError::Disconnected(13))
    );
    assert_eq!(
        tx.send_deadline(14, Instant::now() + Duration::from_secs(10)),
        Err(SendTimeoutError::Disconnected(14))
    );
    assert_eq!(
        tx.send_batch([15, 16, 17]),
        Err(SendError(vec![15, 16, 17]))
    );
    let mut atx = tx.into_async();
    assert_eq!(atx.try_send(18), Err(TrySendError::Disconnected(18)));
    assert_eq!(
        futures::executor::block_on(atx.send(19)),
        Err(SendError(19))
    );
    assert_eq!(
        futures::executor::block_on(atx.send_batch(vec![20, 21])),
        Err(SendError(vec![20, 21]))
    );
}

#[test]
fn failed_sends_return_the_exact_value_not_a_copy() {
    let log = DropLog::new(6);
    let (mut tx, rx) = spmc::bounded(2);
    drop(rx);
    let mut back = Vec::new();
    back.push(tx.send(log.item(0)).unwrap_err().0);
    let e = tx.try_send(log.item(1)).unwrap_err();
    assert!(e.is_disconnected());
    back.push(e.into_inner());
    let e = tx
        .send_timeout(log.item(2), Duration::from_millis(1))
        .unwrap_err();
    assert!(e.is_disconnected());
    back.push(e.into_inner());
    let e = tx
        .send_batch([log.item(3), log.item(4), log.item(5)])
        .unwrap_err();
    back.extend(e.0);
    assert_eq!(
        back.iter().map(|t| t.id).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    // All given back to us, none dropped by the channel.
    assert_eq!(log.total(), 0);
    drop(back);
    log.assert_all_once();
}

#[test]
fn blocked_sender_gets_value_back_when_last_receiver_drops() {
    for cap in [0, 1, 3] {
        watchdog(10, move || {
            let (mut tx, rx) = spmc::bounded(cap);
            for i in 0..cap {
                tx.send(i).unwrap();
            }
            let rx2 = rx.clone();
            let h = thread::spawn(move || {
                let r = tx.send(99);
                (r, tx)
            });
            thread::sleep(SHORT);
            assert!(!h.is_finished(), "send on a full channel returned early");
            drop(rx);
            assert!(!h.is_finished(), "a non-last receiver drop woke the sender");
            drop(rx2);
            let (r, tx) = join_within(h, 5);
            assert_eq!(r, Err(SendError(99)), "cap {cap}");
            assert_eq!(tx.len(), 0, "buffered values dropped");
        });
    }
}

#[test]
fn blocked_send_timeout_gets_value_back_on_disconnect() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(1);
        tx.send(0).unwrap();
        let h = thread::spawn(move || tx.send_timeout(1, Duration::from_secs(30)));
        thread::sleep(SHORT);
        drop(rx);
        assert_eq!(join_within(h, 5), Err(SendTimeoutError::Disconnected(1)));
    });
}

// ----- drop accounting

#[test]
fn buffered_values_dropped_when_last_receiver_goes() {
    let log = DropLog::new(10);
    let (mut tx, rx) = spmc::bounded(8);
    for i in 0..8 {
        tx.try_send(log.item(i)).unwrap();
    }
    let full = tx.try_send(log.item(8)).unwrap_err();
    assert!(full.is_full());
    drop(rx.recv().unwrap());
    drop(rx.try_recv().unwrap());
    assert_eq!(log.total(), 2);
    let rx2 = rx.clone();
    drop(rx);
    // Not the last receiver: nothing dropped.
    assert_eq!(log.total(), 2);
    drop(rx2);
    // Dropped right away, while the sender still exists.
    for i in 2..8 {
        assert_eq!(log.dropped(i), 1, "buffered value {i}");
    }
    assert_eq!(log.dropped(8), 0, "the Full error still owns its value");
    drop(full);
    let e = tx.send(log.item(9)).unwrap_err();
    assert_eq!(log.dropped(9), 0);
    drop(e);
    drop(tx);
    log.assert_all_once();
}

#[test]
fn values_left_when_everything_drops_are_dropped_once() {
    for order in 0..2 {
        let log = DropLog::new(5);
        let (mut tx, rx) = spmc::unbounded();
        for i in 0..5 {
            tx.send(log.item(i)).unwrap();
        }
        if order == 0 {
            drop(tx);
            assert_eq!(log.total(), 0, "sender drop keeps the values");
            drop(rx);
        } else {
            drop(rx);
            assert_eq!(log.total(), 5);
            drop(tx);
        }
        log.assert_all_once();
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn each_value_dropped_exactly_once_under_concurrency() {
    watchdog(30, || {
        const N: usize = 3_000;
        let log = DropLog::new(N);
        let (mut tx, rx) = spmc::bounded(3);
        let hs: Vec<_> = (0..4)
            .map(|k| {
                let rx = rx.clone();
                thread::spawn(move || {
                    // Each consumer quits after a while; the last one to go
                    // disconnects the channel and drops what is buffered.
                    for _ in 0..(200 + k * 150) {
                        match rx.recv() {
                            Ok(v) => drop(v),
                            Err(_) => break,
                        }
                    }
                })
            })
            .collect();
        drop(rx);
        let mut failed_at = None;
        for i in 0..N {
            if let Err(SendError(v)) = tx.send(log.item(i)) {
                assert_eq!(v.id, i);
                failed_at = Some(i);
                break;
            }
        }
        for h in hs {
            join_within(h, 10);
        }
        let first_unsent = failed_at.expect("consumers quit early, so a send must fail");
        // The values never sent are ours to drop.
        for i in first_unsent + 1..N {
            drop(log.item(i));
        }
        log.assert_all_once();
    });
}

#[test]
// The values after the panicking one are leaked on purpose (P7), which
// Miri's leak check reports: .ci/extra-checks.sh runs this test under Miri
// separately, with -Zmiri-ignore-leaks.
#[cfg_attr(miri, ignore = "leaks on purpose; run with -Zmiri-ignore-leaks")]
fn panicking_payload_drop_on_last_receiver_drop() {
    watchdog(10, || {
        let log = DropLog::new(4);
        let (mut tx, rx) = spmc::bounded(4);
        tx.send(log.item(0)).unwrap();
        tx.send(log.panicky(1)).unwrap();
        tx.send(log.item(2)).unwrap();
        tx.send(log.item(3)).unwrap();
        let msg = expect_panic(move || drop(rx));
        assert!(msg.contains("payload 1 panics"), "{msg}");
        assert_eq!(log.dropped(0), 1);
        assert_eq!(log.dropped(1), 1);
        // Leaked, never dropped twice (Tracked asserts that) nor during the
        // unwinding (which would abort).
        assert_eq!(log.dropped(2), 0);
        assert_eq!(log.dropped(3), 0);
        // The lock is free and the state consistent.
        assert_eq!(tx.len(), 0);
        assert!(tx.is_disconnected());
        let log2 = DropLog::new(1);
        let e = tx.try_send(log2.item(0)).unwrap_err();
        assert!(e.is_disconnected());
        drop(e);
        assert_eq!(log2.dropped(0), 1);
        drop(tx);
        assert_eq!(log.total(), 2);
    });
}

// ----- blocking send progress

#[test]
fn blocking_send_woken_by_recv_on_another_thread() {
    for cap in [1usize, 2, 3, 8] {
        watchdog(10, move || {
            let (mut tx, rx) = spmc::bounded(cap);
            for i in 0..cap {
                tx.send(i).unwrap();
            }
            assert!(tx.is_full());
            let done = flag();
            let h = {
                let done = done.clone();
                thread::spawn(move || {
                    tx.send(cap).unwrap();
                    done.store(true, Ordering::SeqCst);
                    tx
                })
            };
            thread::sleep(SHORT);
            assert!(!done.load(Ordering::SeqCst), "cap {cap}: send did not wait");
            assert_eq!(rx.len(), cap, "never more than the capacity");
            let r = thread::spawn(move || {
                let v = rx.recv().unwrap();
                (v, rx)
            });
            let (v, rx) = join_within(r, 5);
            assert_eq!(v, 0);
            let tx = join_within(h, 5);
            assert!(done.load(Ordering::SeqCst));
            assert_eq!(tx.len(), cap);
            assert_eq!(
                rx.try_iter().collect::<Vec<_>>(),
                (1..=cap).collect::<Vec<_>>()
            );
        });
    }
}

#[test]
fn unbounded_send_never_waits() {
    let (mut tx, rx) = spmc::unbounded();
    for i in 0..10_000 {
        tx.send(i).unwrap();
    }
    assert_eq!(tx.send_timeout(10_000, Duration::ZERO), Ok(()));
    assert!(!tx.is_full());
    assert_eq!(rx.len(), 10_001);
    assert_eq!(rx.iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
}

// ----- rendezvous

#[test]
fn rendezvous_blocking_send_completes_only_when_received() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(0);
        assert_eq!(tx.capacity(), Some(0));
        assert!(tx.is_full());
        let sent = flag();
        let h = {
            let sent = sent.clone();
            thread::spawn(move || {
                tx.send(7).unwrap();
                sent.store(true, Ordering::SeqCst);
                tx
            })
        };
        thread::sleep(SHORT);
        assert!(
            !sent.load(Ordering::SeqCst),
            "rendezvous send returned early"
        );
        assert_eq!(rx.len(), 0);
        assert_eq!(rx.recv(), Ok(7));
        let tx = join_within(h, 5);
        assert!(sent.load(Ordering::SeqCst));
        assert_eq!(tx.len(), 0);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

#[test]
fn rendezvous_try_send_needs_a_waiting_receiver() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(0);
        assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
        assert_eq!(tx.len(), 0);
        let rx2 = rx.clone();
        let h = thread::spawn(move || rx2.recv());
        let mut v = 2;
        loop {
            match tx.try_send(v) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) => {
                    assert_eq!(back, v);
                    v += 1;
                    thread::yield_now();
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(join_within(h, 5), Ok(v));
        // Nobody waits any more.
        assert!(tx.try_send(0).unwrap_err().is_full());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

#[test]
fn rendezvous_try_recv_needs_a_waiting_sender() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded::<u32>(0);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        let h = thread::spawn(move || {
            tx.send(8).unwrap();
            tx
        });
        let mut got = None;
        wait_until(5, "a blocked rendezvous sender", || {
            got = rx.try_recv().ok();
            got.is_some()
        });
        assert_eq!(got, Some(8));
        let tx = join_within(h, 5);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
}

#[test]
fn rendezvous_many_values_keep_order() {
    watchdog(20, || {
        let (mut tx, rx) = spmc::bounded(0);
        let h = thread::spawn(move || {
            for i in 0..500u64 {
                tx.send(i).unwrap();
            }
        });
        let got: Vec<u64> = rx.iter().collect();
        join_within(h, 5);
        assert_eq!(got, (0..500).collect::<Vec<_>>());
    });
}

#[test]
fn rendezvous_send_timeout_times_out_without_receiver() {
    let (mut tx, rx) = spmc::bounded(0);
    let t = Instant::now();
    assert_eq!(tx.send_timeout(3, SHORT), Err(SendTimeoutError::Timeout(3)));
    assert!(t.elapsed() >= SHORT);
    // The timed-out value is not left behind for a receiver.
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(rx.len(), 0);
}

// ----- timeouts

#[test]
fn recv_timeout_reports_timeout_only_after_the_duration() {
    let (tx, rx) = spmc::bounded::<i32>(1);
    for d in [Duration::from_millis(1), Duration::from_millis(30), SHORT] {
        let t = Instant::now();
        assert_eq!(rx.recv_timeout(d), Err(RecvTimeoutError::Timeout));
        assert!(t.elapsed() >= d, "{:?} < {d:?}", t.elapsed());
    }
    let t = Instant::now();
    let at = t + SHORT;
    assert_eq!(rx.recv_deadline(at), Err(RecvTimeoutError::Timeout));
    assert!(Instant::now() >= at);
    drop(tx);
}

#[test]
fn timed_out_receiver_does_not_swallow_a_later_value() {
    let (mut tx, rx) = spmc::bounded(2);
    assert!(rx.recv_timeout(Duration::from_millis(5)).is_err());
    tx.try_send(1).unwrap();
    assert_eq!(rx.len(), 1, "the value went to a stale waiter");
    assert_eq!(rx.try_recv(), Ok(1));
}

#[test]
fn send_timeout_reports_timeout_only_after_the_duration() {
    let (mut tx, rx) = spmc::bounded(1);
    tx.send(0).unwrap();
    let t = Instant::now();
    assert_eq!(tx.send_timeout(1, SHORT), Err(SendTimeoutError::Timeout(1)));
    assert!(t.elapsed() >= SHORT);
    let at = Instant::now() + SHORT;
    let e = tx.send_deadline(2, at).unwrap_err();
    assert!(e.is_timeout());
    assert_eq!(e.into_inner(), 2);
    assert!(Instant::now() >= at);
    // The timed-out values were not enqueued, and the capacity is intact.
    assert_eq!(rx.len(), 1);
    assert_eq!(rx.try_recv(), Ok(0));
    tx.try_send(3).unwrap();
    assert!(tx.try_send(4).unwrap_err().is_full());
}

#[test]
fn available_value_or_slot_wins_over_expired_deadline() {
    let (mut tx, rx) = spmc::bounded(2);
    let past = Instant::now() - Duration::from_secs(1);
    assert_eq!(tx.send_deadline(1, past), Ok(()));
    assert_eq!(tx.send_timeout(2, Duration::ZERO), Ok(()));
    assert_eq!(
        tx.send_timeout(3, Duration::ZERO),
        Err(SendTimeoutError::Timeout(3))
    );
    assert_eq!(rx.recv_deadline(past), Ok(1));
    assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(2));
    assert_eq!(
        rx.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
    // Rendezvous: a waiting receiver is a free slot too.
    watchdog(10, move || {
        let (mut tx, rx) = spmc::bounded(0);
        let h = thread::spawn(move || rx.recv());
        let past = Instant::now() - Duration::from_secs(1);
        let mut v = 0;
        loop {
            match tx.send_deadline(v, past) {
                Ok(()) => break,
                Err(SendTimeoutError::Timeout(back)) => {
                    assert_eq!(back, v);
                    v += 1;
                    thread::yield_now();
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(join_within(h, 5), Ok(v));
    });
}

#[test]
fn duration_max_does_not_panic() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(1);
        assert_eq!(tx.send_timeout(1, Duration::MAX), Ok(()));
        assert_eq!(rx.recv_timeout(Duration::MAX), Ok(1));
        // Waiting with Duration::MAX, then getting the value / the slot.
        let h = thread::spawn(move || rx.recv_timeout(Duration::MAX).map(|v| (v, rx)));
        thread::sleep(Duration::from_millis(20));
        tx.send(2).unwrap();
        let (v, rx) = join_within(h, 5).unwrap();
        assert_eq!(v, 2);
        tx.send(3).unwrap();
        let h = thread::spawn(move || tx.send_timeout(4, Duration::MAX).map(|()| tx));
        thread::sleep(Duration::from_millis(20));
        assert_eq!(rx.recv(), Ok(3));
        let tx = join_within(h, 5).unwrap();
        assert_eq!(rx.recv(), Ok(4));
        drop(tx);
        assert_eq!(
            rx.recv_timeout(Duration::MAX),
            Err(RecvTimeoutError::Disconnected)
        );
    });
}

#[test]
fn recv_timeout_returns_early_when_a_value_arrives() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(1);
        let t = Instant::now();
        let h = thread::spawn(move || rx.recv_timeout(Duration::from_secs(20)));
        thread::sleep(Duration::from_millis(20));
        tx.send(5).unwrap();
        assert_eq!(join_within(h, 5), Ok(5));
        assert!(t.elapsed() < Duration::from_secs(10));
    });
}

// ----- batches

#[test]
fn send_batch_waits_for_space_mid_batch() {
    watchdog(20, || {
        let (mut tx, rx) = spmc::bounded(4);
        let h = thread::spawn(move || tx.send_batch(0..100u32));
        let mut all = Vec::new();
        loop {
            assert!(rx.len() <= 4, "more than the capacity buffered");
            let mut buf = Vec::new();
            let n = rx.recv_many(&mut buf, 7);
            assert_eq!(n, buf.len());
            assert!(n <= 7);
            if n == 0 {
                break;
            }
            all.extend(buf);
        }
        assert_eq!(join_within(h, 5), Ok(()));
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    });
}

#[test]
fn send_batch_on_rendezvous_and_unbounded() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(0);
        let h = thread::spawn(move || tx.send_batch(0..20u32));
        let got: Vec<u32> = rx.iter().collect();
        assert_eq!(join_within(h, 5), Ok(()));
        assert_eq!(got, (0..20).collect::<Vec<_>>());

        let (mut tx, rx) = spmc::unbounded();
        tx.send_batch(Vec::<u32>::new()).unwrap();
        assert!(rx.is_empty());
        tx.send_batch(0..1000u32).unwrap();
        assert_eq!(rx.len(), 1000);
        let mut buf = vec![77];
        assert_eq!(rx.try_recv_many(&mut buf, 10), 10);
        assert_eq!(buf, [77, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
}

#[test]
fn send_batch_disconnect_mid_batch_returns_the_unsent_suffix() {
    watchdog(10, || {
        let log = DropLog::new(10);
        let (mut tx, rx) = spmc::bounded(2);
        let items: Vec<_> = (0..10).map(|i| log.item(i)).collect();
        let h = thread::spawn(move || tx.send_batch(items));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(rx.recv().unwrap().id);
        }
        assert_eq!(got, [0, 1, 2]);
        drop(rx);
        let rest = join_within(h, 5).unwrap_err().into_inner();
        let ids: Vec<_> = rest.iter().map(|t| t.id).collect();
        let first = *ids.first().expect("some values were not sent");
        assert!((3..=5).contains(&first), "unsent suffix starts at {first}");
        assert_eq!(ids, (first..10).collect::<Vec<_>>());
        // Sent-but-unreceived values were dropped with the last receiver.
        for i in 3..first {
            assert_eq!(log.dropped(i), 1);
        }
        drop(rest);
        log.assert_all_once();
    });
}

#[test]
fn recv_many_and_try_recv_many_basics() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(8);
        let mut buf = Vec::new();
        assert_eq!(rx.try_recv_many(&mut buf, 4), 0);
        // limit 0 returns at once even though the channel is empty.
        assert_eq!(rx.recv_many(&mut buf, 0), 0);
        tx.send_batch(0..6).unwrap();
        assert_eq!(rx.try_recv_many(&mut buf, 0), 0);
        assert_eq!(rx.recv_many(&mut buf, 4), 4);
        assert_eq!(rx.try_recv_many(&mut buf, 10), 2);
        assert_eq!(buf, [0, 1, 2, 3, 4, 5]);
        assert!(rx.is_empty());
        // recv_many waits for the first value.
        let rx2 = rx.clone();
        let h = thread::spawn(move || {
            let mut buf = Vec::new();
            let n = rx2.recv_many(&mut buf, 10);
            (n, buf)
        });
        thread::sleep(Duration::from_millis(20));
        assert!(!h.is_finished(), "recv_many returned with nothing");
        tx.send(9).unwrap();
        let (n, got) = join_within(h, 5);
        assert!(n >= 1 && got[0] == 9 && got.len() == n);
        // Freed space lets a blocked batch continue.
        drop(tx);
        assert_eq!(rx.recv_many(&mut buf, 10), 0);
    });
}

#[test]
fn try_recv_many_takes_from_blocked_rendezvous_sender() {
    watchdog(10, || {
        let (mut tx, rx) = spmc::bounded(0);
        let h = thread::spawn(move || tx.send(1));
        let mut buf = Vec::new();
        wait_until(5, "rendezvous sender", || rx.try_recv_many(&mut buf, 5) > 0);
        assert_eq!(buf, [1]);
        assert_eq!(join_within(h, 5), Ok(()));
    });
}

// ----- iterators

#[test]
fn iterators() {
    let (mut tx, rx) = spmc::unbounded();
    tx.send_batch(0..5).unwrap();
    assert_eq!(rx.try_iter().take(2).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [2, 3, 4]);
    assert_eq!(rx.try_iter().next(), None);
    tx.send_batch(5..8).unwrap();
    drop(tx);
    let mut seen = Vec::new();
    for v in &rx {
        seen.push(v);
        if v == 5 {
            break;
        }
    }
    assert_eq!(seen, [5]);
    assert_eq!(rx.into_iter().collect::<Vec<_>>(), [6, 7]);
}

// ----- state queries and conversions

#[test]
fn state_queries() {
    let (mut tx, rx) = spmc::bounded(2);
    assert_eq!((tx.len(), rx.len()), (0, 0));
    assert!(tx.is_empty() && rx.is_empty());
    assert!(!tx.is_full() && !rx.is_full());
    assert_eq!(tx.capacity(), Some(2));
    assert_eq!(rx.capacity(), Some(2));
    tx.send(1).unwrap();
    assert_eq!(rx.len(), 1);
    assert!(!rx.is_empty() && !rx.is_full());
    tx.send(2).unwrap();
    assert!(tx.is_full() && rx.is_full());
    assert_eq!(tx.len(), 2);
    rx.recv().unwrap();
    assert!(!tx.is_full());
    assert_eq!(tx.len(), 1);

    let (tx, rx) = spmc::unbounded::<u8>();
    assert_eq!(tx.capacity(), None);
    assert_eq!(rx.capacity(), None);
    assert!(!tx.is_full());

    let (tx, rx) = spmc::bounded::<u8>(0);
    assert_eq!(rx.capacity(), Some(0));
    assert!(tx.is_full() && rx.is_full());
    assert!(tx.is_empty());

    let (tx, rx) = spmc::bounded_async::<u8>(3);
    assert_eq!((tx.capacity(), rx.capacity()), (Some(3), Some(3)));
    assert!(tx.is_empty() && rx.is_empty() && !tx.is_full() && !rx.is_full());
    let (tx, rx) = spmc::unbounded_async::<u8>();
    assert_eq!((tx.capacity(), rx.capacity()), (None, None));
}

#[test]
fn conversions_keep_counts_right() {
    let (tx, rx) = spmc::bounded::<u32>(4);
    assert_eq!(tx.receiver_count(), 1);
    assert_eq!(rx.sender_count(), 1);
    // into_* moves: counts unchanged.
    let arx: AsyncReceiver<u32> = rx.into_async();
    assert_eq!(arx.receiver_count(), 1);
    let rx: Receiver<u32> = arx.into_sync();
    assert_eq!(rx.receiver_count(), 1);
    let arx = AsyncReceiver::from(rx);
    let rx = Receiver::from(arx);
    assert_eq!(tx.receiver_count(), 1);
    // to_* and clone add a receiver.
    let arx = rx.to_async();
    assert_eq!(tx.receiver_count(), 2);
    let rx2 = arx.to_sync();
    let arx2 = arx.clone();
    assert_eq!(tx.receiver_count(), 4);
    assert_eq!(rx2.receiver_count(), 4);
    drop(arx);
    drop(rx2);
    assert_eq!(tx.receiver_count(), 2);

    let atx: AsyncSender<u32> = tx.into_async();
    assert_eq!(rx.sender_count(), 1);
    assert!(!rx.is_disconnected());
    let tx: Sender<u32> = atx.into_sync();
    let atx = AsyncSender::from(tx);
    let mut tx = Sender::from(atx);
    assert_eq!(arx2.sender_count(), 1);
    assert!(!arx2.is_disconnected() && !tx.is_disconnected());
    tx.send(1).unwrap();
    // Both views see the same queue.
    assert_eq!(arx2.len(), 1);
    assert_eq!(arx2.try_recv(), Ok(1));
    let atx = tx.into_async();
    drop(atx);
    assert!(rx.is_disconnected() && arx2.is_disconnected());
    assert_eq!(rx.sender_count(), 0);
    drop(rx);
    assert_eq!(arx2.receiver_count(), 1);
}

#[test]
fn sender_sees_disconnection_through_any_view() {
    let (tx, rx) = spmc::bounded::<u8>(1);
    let arx = rx.into_async();
    let mut atx = tx.into_async();
    assert!(!atx.is_disconnected());
    drop(arx);
    assert!(atx.is_disconnected());
    assert_eq!(atx.receiver_count(), 0);
    assert!(atx.try_send(1).unwrap_err().is_disconnected());
}

// ----- static properties

fn assert_send_sync_unpin<X: Send + Sync + Unpin>() {}
fn assert_send_unpin<X: Send + Unpin>() {}
fn assert_send<X: Send>() {}
fn assert_debug<X: std::fmt::Debug>() {}

#[test]
fn handles_and_futures_are_send_sync_unpin_debug() {
    type T = NotDebug;
    assert_send_sync_unpin::<Sender<T>>();
    assert_send_sync_unpin::<Receiver<T>>();
    assert_send_sync_unpin::<AsyncSender<T>>();
    assert_send_sync_unpin::<AsyncReceiver<T>>();
    assert_debug::<Sender<T>>();
    assert_debug::<Receiver<T>>();
    assert_debug::<AsyncSender<T>>();
    assert_debug::<AsyncReceiver<T>>();

    // Futures hold their waiter node, so they are `!Unpin` (API.md allows
    // it); they stay `Send`.
    assert_send::<spmc::RecvFuture<'static, T>>();
    assert_send::<spmc::SendFuture<'static, T>>();
    assert_send::<spmc::SendBatchFuture<'static, T>>();
    assert_send_unpin::<spmc::RecvStream<'static, T>>();
    assert_debug::<spmc::RecvFuture<'static, T>>();
    assert_debug::<spmc::SendFuture<'static, T>>();
    assert_debug::<spmc::SendBatchFuture<'static, T>>();
    assert_debug::<spmc::RecvStream<'static, T>>();

    assert_send_sync_unpin::<spmc::Iter<'static, T>>();
    assert_send_sync_unpin::<spmc::TryIter<'static, T>>();
    assert_send_sync_unpin::<spmc::IntoIter<T>>();
    assert_debug::<spmc::Iter<'static, T>>();
    assert_debug::<spmc::TryIter<'static, T>>();
    assert_debug::<spmc::IntoIter<T>>();

    assert_debug::<SendError<T>>();
    assert_debug::<TrySendError<T>>();
    assert_debug::<SendTimeoutError<T>>();

    // The futures that methods return are Send when T is.
    fn is_send<X: Send>(_: &X) {}
    let (mut tx, rx) = spmc::bounded_async::<T>(1);
    let mut buf = Vec::new();
    {
        let f = rx.recv_many(&mut buf, 2);
        is_send(&f);
    }
    let f = rx.recv();
    is_send(&f);
    drop(f);
    let f = tx.send(NotDebug(1));
    is_send(&f);
    drop(f);

    // Debug output names the type and works for a non-Debug T.
    let (stx, srx) = spmc::bounded::<T>(2);
    assert!(format!("{stx:?}").contains("Sender"));
    assert!(format!("{srx:?}").contains("Receiver"));
    assert!(format!("{tx:?}").contains("AsyncSender"));
    assert!(format!("{rx:?}").contains("AsyncReceiver"));
    assert!(format!("{:?}", rx.recv()).contains("RecvFuture"));
    assert!(format!("{:?}", rx.stream()).contains("RecvStream"));
    assert!(format!("{:?}", srx.iter()).contains("Iter"));
    assert!(!format!("{:?}", SendError(NotDebug(0))).is_empty());
}

#[test]
#[should_panic(expected = "cannot allocate")]
fn bounded_usize_max_panics() {
    let _ = spmc::bounded::<u64>(usize::MAX);
}

#[test]
#[should_panic(expected = "cannot allocate")]
fn bounded_async_usize_max_panics() {
    let _ = spmc::bounded_async::<u64>(usize::MAX);
}

#[test]
fn bounded_large_cap_of_zero_sized_type_is_fine() {
    let (mut tx, rx) = spmc::bounded::<()>(usize::MAX);
    tx.send(()).unwrap();
    assert_eq!(rx.recv(), Ok(()));
}
