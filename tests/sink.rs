//! `SendSink`: `poll_ready` holds room for the next `start_send`, a dropped
//! sink gives it back, disconnection returns the item, `into_sink` + close
//! drops the sender, and the rendezvous / unbounded behaviour documented on
//! the type.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

mod common;

use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use amphi::{mpmc, spmc, SendError, SendSink, TryRecvError, TrySendError};
use common::*;
use futures::{stream, Sink, SinkExt, StreamExt};

fn poll_ready<T>(s: &mut SendSink<'_, T>, w: &Waker) -> Poll<Result<(), SendError<T>>> {
    Pin::new(s).poll_ready(&mut Context::from_waker(w))
}

fn poll_flush<T>(s: &mut SendSink<'_, T>, w: &Waker) -> Poll<Result<(), SendError<T>>> {
    Pin::new(s).poll_flush(&mut Context::from_waker(w))
}

fn poll_close<T>(s: &mut SendSink<'_, T>, w: &Waker) -> Poll<Result<(), SendError<T>>> {
    Pin::new(s).poll_close(&mut Context::from_waker(w))
}

fn start_send<T>(s: &mut SendSink<'_, T>, v: T) -> Result<(), SendError<T>> {
    Pin::new(s).start_send(v)
}

/// Every value ready now, in order.
fn drain<T>(rx: &amphi::AsyncReceiver<T>) -> Vec<T> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

fn noop() -> Waker {
    futures::task::noop_waker()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

// ----- forward

#[test]
#[cfg_attr(miri, ignore)] // a tokio multi-thread runtime (not supported by Miri)
fn forward_1000_values_through_bounded_4_mpmc_and_spmc() {
    watchdog(60, || {
        let rt = runtime();
        rt.block_on(async {
            let (tx, rx) = mpmc::bounded_async::<u64>(4);
            let consumer = tokio::spawn(async move {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv().await {
                    got.push(v);
                }
                got
            });
            stream::iter(0..1000u64)
                .map(Ok)
                .forward(tx.into_sink())
                .await
                .unwrap();
            let got = consumer.await.unwrap();
            assert_eq!(got, (0..1000).collect::<Vec<_>>());
        });
        rt.block_on(async {
            let (mut tx, rx) = spmc::bounded_async::<u64>(4);
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let rx = rx.clone();
                    tokio::spawn(async move { rx.stream().collect::<Vec<_>>().await })
                })
                .collect();
            drop(rx);
            // A borrowing sink, then the sender itself, then drop.
            stream::iter(0..1000u64)
                .map(Ok)
                .forward(tx.sink())
                .await
                .unwrap();
            drop(tx);
            let mut per = Vec::new();
            for c in consumers {
                per.push(c.await.unwrap());
            }
            check_exactly_once(1000, &per);
        });
    });
}

#[test]
fn sink_ext_send_waits_for_a_thread_receiver() {
    watchdog(30, || {
        let (tx, rx) = spmc::bounded_async::<u32>(2);
        let reader = thread::spawn(move || rx.into_sync().into_iter().collect::<Vec<_>>());
        futures::executor::block_on(async move {
            let mut sink = tx.into_sink();
            for i in 0..100 {
                sink.send(i).await.unwrap();
            }
            sink.close().await.unwrap();
        });
        assert_eq!(join_within(reader, 20), (0..100).collect::<Vec<_>>());
    });
}

// ----- room held by poll_ready

#[test]
fn poll_ready_holds_the_only_free_slot() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    let other = tx.clone().into_sync();
    let mut sink = tx.sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    // Nothing is enqueued, but the slot is taken.
    assert_eq!(rx.len(), 0);
    assert!(rx.is_full());
    assert!(other.try_send(9).unwrap_err().is_full());
    assert!(other
        .send_timeout(9, Duration::from_millis(20))
        .unwrap_err()
        .is_timeout());
    start_send(&mut sink, 1).unwrap();
    assert_eq!(ready(poll_flush(&mut sink, &noop())), Ok(()));
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    // Used: the slot is free again.
    other.try_send(2).unwrap();
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn poll_ready_holds_room_on_spmc() {
    let (mut tx, rx) = spmc::bounded_async::<i32>(2);
    tx.try_send(0).unwrap();
    let mut sink = tx.sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    assert_eq!(rx.len(), 1);
    assert!(rx.is_full());
    start_send(&mut sink, 1).unwrap();
    drop(sink);
    assert!(tx.try_send(2).unwrap_err().is_full());
    assert_eq!(drain(&rx), [0, 1]);
}

#[test]
fn readying_twice_holds_one_slot() {
    let (tx, rx) = mpmc::bounded_async::<i32>(2);
    let other = tx.clone();
    let mut sink = tx.sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    // One of the two slots is left for others.
    other.try_send(10).unwrap();
    assert!(other.try_send(11).unwrap_err().is_full());
    start_send(&mut sink, 1).unwrap();
    assert_eq!(rx.try_recv(), Ok(10));
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_dropped_ready_sink_gives_the_slot_back_and_enqueues_nothing() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    let mut sink = tx.sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    assert!(tx.try_send(5).unwrap_err().is_full());
    drop(sink);
    tx.try_send(5).unwrap();
    assert_eq!(rx.try_recv(), Ok(5));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

    // The same on spmc, with the owning sink.
    let (tx, rx) = spmc::bounded_async::<i32>(1);
    let mut sink = tx.into_sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    assert!(rx.is_full());
    drop(sink);
    assert!(!rx.is_full());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn a_sink_dropped_while_holding_passes_the_slot_to_a_waiting_sender() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    let tx2 = tx.clone();
    let mut sink = tx.sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    let (wakes, w) = counting_waker();
    let mut fut = pin!(tx2.send(7));
    assert_pending(poll_with(fut.as_mut(), &w));
    drop(sink);
    assert_eq!(wakes.count(), 1);
    assert_eq!(ready(poll_with(fut.as_mut(), &w)), Ok(()));
    assert_eq!(rx.try_recv(), Ok(7));
}

// ----- waiting for room

#[test]
fn poll_ready_on_a_full_channel_waits_and_is_woken_by_a_receive() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    let other = tx.clone();
    tx.try_send(1).unwrap();
    let mut sink = tx.sink();
    let (wakes, w) = counting_waker();
    assert_pending(poll_ready(&mut sink, &w));
    assert_pending(poll_ready(&mut sink, &w));
    assert_eq!(wakes.count(), 0);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(wakes.count(), 1);
    // The freed slot was granted to the sink: nobody else can take it.
    assert!(other.try_send(9).unwrap_err().is_full());
    assert_eq!(ready(poll_ready(&mut sink, &w)), Ok(()));
    assert!(other.try_send(9).unwrap_err().is_full());
    start_send(&mut sink, 2).unwrap();
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn a_re_poll_with_a_new_waker_is_the_one_woken() {
    let (mut tx, rx) = spmc::bounded_async::<i32>(1);
    tx.try_send(1).unwrap();
    let mut sink = tx.sink();
    let (old, w1) = counting_waker();
    let (new, w2) = counting_waker();
    assert_pending(poll_ready(&mut sink, &w1));
    assert_pending(poll_ready(&mut sink, &w2));
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!((old.count(), new.count()), (0, 1));
    assert_eq!(ready(poll_ready(&mut sink, &w2)), Ok(()));
}

#[test]
fn a_waiting_sink_keeps_its_fifo_place_among_senders() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    tx.try_send(0).unwrap();
    let tx2 = tx.clone();
    let mut sink = tx.sink();
    let (sw, w) = counting_waker();
    assert_pending(poll_ready(&mut sink, &w));
    // A later sender waits behind the sink.
    let (fw, fwk) = counting_waker();
    let mut fut = pin!(tx2.send(2));
    assert_pending(poll_with(fut.as_mut(), &fwk));
    assert!(tx2.try_send(3).unwrap_err().is_full());
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!((sw.count(), fw.count()), (1, 0));
    assert_eq!(ready(poll_ready(&mut sink, &w)), Ok(()));
    start_send(&mut sink, 1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(fw.count(), 1);
    assert_eq!(ready(poll_with(fut.as_mut(), &fwk)), Ok(()));
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn dropping_a_granted_waiting_sink_passes_the_slot_to_the_next_async_sender() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    tx.try_send(0).unwrap();
    let tx2 = tx.clone();
    let mut sink = tx.sink();
    let (sw, w) = counting_waker();
    assert_pending(poll_ready(&mut sink, &w));
    let (fw, fwk) = counting_waker();
    let mut fut = pin!(tx2.send(2));
    assert_pending(poll_with(fut.as_mut(), &fwk));
    // The slot goes to the sink (first in line), which is then dropped
    // without looking at it.
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!((sw.count(), fw.count()), (1, 0));
    drop(sink);
    assert_eq!(fw.count(), 1);
    assert_eq!(ready(poll_with(fut.as_mut(), &fwk)), Ok(()));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn dropping_a_waiting_sink_before_any_grant_leaves_the_line() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    tx.try_send(0).unwrap();
    let tx2 = tx.clone();
    let mut sink = tx.sink();
    assert_pending(poll_ready(&mut sink, &noop()));
    let (fw, fwk) = counting_waker();
    let mut fut = pin!(tx2.send(2));
    assert_pending(poll_with(fut.as_mut(), &fwk));
    drop(sink);
    assert_eq!(fw.count(), 0);
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(fw.count(), 1);
    assert_eq!(ready(poll_with(fut.as_mut(), &fwk)), Ok(()));
    assert_eq!(rx.try_recv(), Ok(2));
}

// ----- disconnection

#[test]
fn after_every_receiver_is_gone_start_send_returns_the_item() {
    // Idle sink.
    let (tx, rx) = mpmc::bounded_async::<String>(1);
    drop(rx);
    let mut sink = tx.sink();
    assert!(matches!(ready(poll_ready(&mut sink, &noop())), Ok(())));
    let err = start_send(&mut sink, "a".to_string()).unwrap_err();
    assert_eq!(err.into_inner(), "a");

    // A sink holding room when the receivers go.
    let (mut tx, rx) = spmc::bounded_async::<String>(1);
    let mut sink = tx.sink();
    assert!(matches!(ready(poll_ready(&mut sink, &noop())), Ok(())));
    drop(rx);
    let err = start_send(&mut sink, "b".to_string()).unwrap_err();
    assert_eq!(err.into_inner(), "b");

    // A sink waiting for room is woken by the disconnection.
    let (tx, rx) = mpmc::bounded_async::<String>(1);
    tx.try_send("full".to_string()).unwrap();
    let mut sink = tx.sink();
    let (wakes, w) = counting_waker();
    assert!(poll_ready(&mut sink, &w).is_pending());
    drop(rx);
    assert_eq!(wakes.count(), 1);
    assert!(matches!(ready(poll_ready(&mut sink, &w)), Ok(())));
    let err = start_send(&mut sink, "c".to_string()).unwrap_err();
    assert_eq!(err.into_inner(), "c");

    // Through SinkExt and forward.
    futures::executor::block_on(async {
        let (tx, rx) = mpmc::unbounded_async::<i32>();
        drop(rx);
        assert_eq!(tx.sink().send(1).await.unwrap_err().into_inner(), 1);
        let err = stream::iter([4, 5])
            .map(Ok)
            .forward(tx.sink())
            .await
            .unwrap_err();
        assert_eq!(err.into_inner(), 4);
    });
}

// ----- close

#[test]
fn closing_an_owning_sink_drops_its_sender() {
    futures::executor::block_on(async {
        let (tx, rx) = mpmc::bounded_async::<i32>(4);
        let mut sink = tx.into_sink();
        sink.send(1).await.unwrap();
        sink.feed(2).await.unwrap();
        assert_eq!(rx.sender_count(), 1);
        sink.close().await.unwrap();
        assert_eq!(rx.sender_count(), 0);
        assert_eq!(rx.recv().await, Ok(1));
        assert_eq!(rx.recv().await, Ok(2));
        assert!(rx.recv().await.is_err());
        // After close, sends give their item back.
        assert_eq!(sink.send(3).await.unwrap_err().into_inner(), 3);

        let (tx, rx) = spmc::bounded_async::<i32>(4);
        let mut sink = tx.into_sink();
        sink.send(1).await.unwrap();
        sink.close().await.unwrap();
        assert_eq!(rx.stream().collect::<Vec<_>>().await, [1]);
    });
}

#[test]
fn closing_an_owning_sink_that_holds_room_gives_it_back() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    let other = tx.clone();
    let mut sink = tx.into_sink();
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    assert!(other.try_send(1).unwrap_err().is_full());
    assert_eq!(ready(poll_close(&mut sink, &noop())), Ok(()));
    assert_eq!(other.sender_count(), 1);
    other.try_send(1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
}

#[test]
fn closing_a_borrowing_sink_leaves_its_sender_usable() {
    futures::executor::block_on(async {
        let (tx, rx) = mpmc::bounded_async::<i32>(1);
        let mut sink = tx.sink();
        assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
        sink.close().await.unwrap();
        // The held slot was released; the sender still counts and sends.
        assert_eq!(tx.sender_count(), 1);
        tx.try_send(1).unwrap();
        assert_eq!(rx.recv().await, Ok(1));
        // The closed borrowing sink works again.
        sink.send(2).await.unwrap();
        drop(sink);
        assert_eq!(rx.recv().await, Ok(2));

        let (mut tx, rx) = spmc::unbounded_async::<i32>();
        tx.sink().close().await.unwrap();
        tx.send(3).await.unwrap();
        drop(tx);
        assert_eq!(rx.stream().collect::<Vec<_>>().await, [3]);
    });
}

// ----- unbounded and rendezvous

#[test]
fn unbounded_sinks_are_always_ready_and_hold_nothing() {
    let (tx, rx) = mpmc::unbounded_async::<i32>();
    let mut a = tx.sink();
    let mut b = tx.sink();
    for i in 0..1000 {
        assert_eq!(ready(poll_ready(&mut a, &noop())), Ok(()));
        assert_eq!(ready(poll_ready(&mut b, &noop())), Ok(()));
        start_send(&mut a, i).unwrap();
        assert_eq!(ready(poll_flush(&mut a, &noop())), Ok(()));
    }
    drop((a, b));
    assert_eq!(rx.len(), 1000);
    assert!(!rx.is_full());
    assert_eq!(drain(&rx), (0..1000).collect::<Vec<_>>());
}

#[test]
fn rendezvous_sink_keeps_one_item_until_a_receiver_takes_it() {
    let (tx, rx) = mpmc::bounded_async::<i32>(0);
    let mut sink = tx.sink();
    let (wakes, w) = counting_waker();
    assert_eq!(ready(poll_ready(&mut sink, &w)), Ok(()));
    start_send(&mut sink, 1).unwrap();
    // No receiver: the item is kept, flush waits.
    assert_pending(poll_flush(&mut sink, &w));
    assert_pending(poll_ready(&mut sink, &w));
    assert_eq!(wakes.count(), 0);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(wakes.count(), 1);
    assert_eq!(ready(poll_flush(&mut sink, &w)), Ok(()));
    assert_eq!(ready(poll_ready(&mut sink, &w)), Ok(()));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn rendezvous_sink_send_completes_when_a_thread_takes_the_value() {
    watchdog(30, || {
        let (mut tx, rx) = spmc::bounded_async::<u32>(0);
        let reader = thread::spawn(move || rx.into_sync().into_iter().take(50).collect::<Vec<_>>());
        futures::executor::block_on(async {
            let mut sink = tx.sink();
            for i in 0..50 {
                sink.send(i).await.unwrap();
            }
        });
        assert_eq!(join_within(reader, 20), (0..50).collect::<Vec<_>>());
        assert!(tx.is_disconnected());
    });
}

#[test]
fn rendezvous_sink_flush_returns_the_kept_item_on_disconnection() {
    let (tx, rx) = mpmc::bounded_async::<String>(0);
    let mut sink = tx.sink();
    assert!(ready(poll_ready(&mut sink, &noop())).is_ok());
    start_send(&mut sink, "kept".to_string()).unwrap();
    let (wakes, w) = counting_waker();
    assert!(poll_flush(&mut sink, &w).is_pending());
    drop(rx);
    assert_eq!(wakes.count(), 1);
    let err = ready(poll_flush(&mut sink, &w)).unwrap_err();
    assert_eq!(err.into_inner(), "kept");
    // Nothing is kept any more.
    assert!(ready(poll_flush(&mut sink, &w)).is_ok());
    assert!(ready(poll_close(&mut sink, &w)).is_ok());
}

#[test]
fn dropping_a_rendezvous_sink_drops_its_untaken_item() {
    let log = DropLog::new(2);
    let (tx, rx) = mpmc::bounded_async::<Tracked>(0);
    // Kept but never polled.
    let mut sink = tx.sink();
    assert!(ready(poll_ready(&mut sink, &noop())).is_ok());
    assert!(start_send(&mut sink, log.item(0)).is_ok());
    drop(sink);
    assert_eq!(log.dropped(0), 1);
    // Kept and waiting where receivers take it.
    let mut sink = tx.sink();
    assert!(ready(poll_ready(&mut sink, &noop())).is_ok());
    assert!(start_send(&mut sink, log.item(1)).is_ok());
    assert!(poll_flush(&mut sink, &noop()).is_pending());
    drop(sink);
    assert_eq!(log.dropped(1), 1);
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
}

#[test]
fn start_send_without_poll_ready_while_an_item_is_kept_panics() {
    let (tx, _rx) = mpmc::bounded_async::<i32>(0);
    let mut sink = tx.sink();
    start_send(&mut sink, 1).unwrap();
    let msg = expect_panic(|| start_send(&mut sink, 2));
    assert!(msg.contains("poll_ready"), "{msg}");
}

// ----- a held slot taken back after a panicking waker

#[test]
fn a_held_slot_taken_back_after_a_panicking_waker_never_overfills() {
    let (tx, rx) = mpmc::bounded_async::<i32>(2);
    let tx2 = tx.clone();
    let mut sink = tx.sink();
    // The sink holds one slot; the other is filled.
    assert_eq!(ready(poll_ready(&mut sink, &noop())), Ok(()));
    tx2.try_send(10).unwrap();
    // A sender waits with a waker that panics.
    let (_, bad) = fn_waker(|| panic!("waker panics"));
    let mut fut = pin!(tx2.send(20));
    assert_pending(poll_with(fut.as_mut(), &bad));
    // The receive grants the freed slot to that sender, whose wake-up
    // panics: the value goes back, and one grant is taken back.
    expect_panic(|| rx.try_recv());
    assert_eq!(rx.len(), 1);
    // The sink's start_send finds no room: it keeps its item.
    start_send(&mut sink, 1).unwrap();
    assert_eq!(rx.len(), 1);
    assert_eq!(ready(poll_with(fut.as_mut(), &noop())), Ok(()));
    assert_eq!(rx.len(), 2);
    let (wakes, w) = counting_waker();
    assert_pending(poll_flush(&mut sink, &w));
    assert_eq!(rx.try_recv(), Ok(10));
    assert_eq!(wakes.count(), 1);
    assert_eq!(ready(poll_flush(&mut sink, &w)), Ok(()));
    assert_eq!(rx.len(), 2);
    assert_eq!(drain(&rx), [20, 1]);
}

#[test]
fn a_waiting_sink_whose_grant_was_taken_back_waits_again() {
    let (tx, rx) = mpmc::bounded_async::<i32>(1);
    tx.try_send(0).unwrap();
    let mut sink = tx.sink();
    let (_, bad) = fn_waker(|| panic!("waker panics"));
    assert_pending(poll_ready(&mut sink, &bad));
    // The grant's wake-up panics: the value goes back, the grant is void.
    expect_panic(|| rx.try_recv());
    assert_eq!(rx.len(), 1);
    let (wakes, w) = counting_waker();
    assert_pending(poll_ready(&mut sink, &w));
    assert!(tx.try_send(9).unwrap_err().is_full());
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(wakes.count(), 1);
    assert_eq!(ready(poll_ready(&mut sink, &w)), Ok(()));
    start_send(&mut sink, 1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
}

// ----- capacity under concurrency

#[test]
#[cfg_attr(miri, ignore)] // thousands of values across spinning threads
fn capacity_is_never_exceeded_with_sinks_and_threads() {
    const CAP: usize = 3;
    const PER: u64 = 2000;
    const SINKS: u64 = 3;
    watchdog(120, || {
        let (tx, rx) = mpmc::bounded_async::<u64>(CAP);
        let rx = rx.into_sync();
        let over = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicUsize::new(0));
        let monitor = {
            let rx = rx.clone();
            let (over, done, max) = (over.clone(), done.clone(), max.clone());
            thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let n = rx.len();
                    max.fetch_max(n, Ordering::SeqCst);
                    if n > CAP {
                        over.store(true, Ordering::SeqCst);
                    }
                    thread::yield_now();
                }
            })
        };
        let receivers: Vec<_> = (0..2)
            .map(|_| {
                let rx = rx.clone();
                let over = over.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    while let Ok(v) = rx.recv() {
                        if rx.len() > CAP {
                            over.store(true, Ordering::SeqCst);
                        }
                        got.push(v);
                    }
                    got
                })
            })
            .collect();
        drop(rx);
        let rt = runtime();
        rt.block_on(async {
            let tasks: Vec<_> = (0..SINKS)
                .map(|s| {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let values = stream::iter(s * PER..(s + 1) * PER).map(Ok);
                        if s % 2 == 0 {
                            values.forward(tx.into_sink()).await.unwrap();
                        } else {
                            let mut sink = tx.sink();
                            let mut values = pin!(values);
                            while let Some(Ok(v)) = values.next().await {
                                sink.send(v).await.unwrap();
                            }
                        }
                    })
                })
                .collect();
            // A blocking sender competes for the same room.
            let blocking = {
                let tx = tx.clone().into_sync();
                thread::spawn(move || {
                    for v in SINKS * PER..(SINKS + 1) * PER {
                        tx.send(v).unwrap();
                    }
                })
            };
            for t in tasks {
                t.await.unwrap();
            }
            blocking.join().unwrap();
        });
        drop(tx);
        let per: Vec<Vec<u64>> = receivers.into_iter().map(|r| join_within(r, 60)).collect();
        done.store(true, Ordering::SeqCst);
        monitor.join().unwrap();
        assert!(!over.load(Ordering::SeqCst), "len() exceeded the capacity");
        assert!(max.load(Ordering::SeqCst) <= CAP);
        check_delivered_once((SINKS + 1) * PER, &per);
    });
}

#[test]
fn ready_sinks_and_queued_values_together_never_exceed_the_capacity() {
    let (tx, rx) = mpmc::bounded_async::<i32>(2);
    let mut a = tx.sink();
    let mut b = tx.sink();
    let mut c = tx.sink();
    assert_eq!(ready(poll_ready(&mut a, &noop())), Ok(()));
    assert_eq!(ready(poll_ready(&mut b, &noop())), Ok(()));
    // Both slots are held: a third sink and a try_send must wait.
    assert_pending(poll_ready(&mut c, &noop()));
    assert!(matches!(tx.try_send(0), Err(TrySendError::Full(0))));
    start_send(&mut a, 1).unwrap();
    start_send(&mut b, 2).unwrap();
    assert_eq!(rx.len(), 2);
    assert_pending(poll_ready(&mut c, &noop()));
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(ready(poll_ready(&mut c, &noop())), Ok(()));
    start_send(&mut c, 3).unwrap();
    assert_eq!(drain(&rx), [2, 3]);
}

// ----- auto traits and Debug

#[test]
fn sinks_are_send_unpin_and_debug_without_t_debug() {
    fn send_unpin<X: Send + Unpin>(_: &X) {}
    let (tx, _rx) = mpmc::bounded_async::<NotDebug>(1);
    let mut s = tx.sink();
    send_unpin(&s);
    let idle = format!("{s:?}");
    assert!(idle.contains("SendSink"), "{idle}");
    assert!(idle.contains("holds_room: false"), "{idle}");
    assert!(ready(poll_ready(&mut s, &noop())).is_ok());
    let held = format!("{s:?}");
    assert!(held.contains("holds_room: true"), "{held}");
    drop(s);
    let owned: SendSink<'static, NotDebug> = tx.into_sink();
    send_unpin(&owned);
    assert!(format!("{owned:?}").contains("owns_sender: true"));
    let (mut stx, _srx) = spmc::unbounded_async::<NotDebug>();
    send_unpin(&stx.sink());
}
