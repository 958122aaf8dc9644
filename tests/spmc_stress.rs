//! `amphi::spmc` under load: one producer, competing consumers on threads,
//! on tokio, on smol, and threads and tasks mixed on one queue. Every case
//! checks exactly-once delivery (count, checksum, bitmap) and that each
//! consumer sees strictly increasing values.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]
// Real threads and runtimes under load: too slow for Miri (and smol needs
// timerfd, which Miri does not support).
#![cfg(not(miri))]

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use amphi::spmc::{self, AsyncReceiver, AsyncSender, Receiver, Sender};
use common::*;

/// Values per 1-producer / 8-consumer case.
const N: u64 = 200_000;
/// Values per mixed-executor case.
const M: u64 = 50_000;
/// A hang fails the test after this long.
const LIMIT: u64 = 120;

fn sync_chan(cap: Option<usize>) -> (Sender<u64>, Receiver<u64>) {
    match cap {
        Some(c) => spmc::bounded(c),
        None => spmc::unbounded(),
    }
}

fn async_chan(cap: Option<usize>) -> (AsyncSender<u64>, AsyncReceiver<u64>) {
    match cap {
        Some(c) => spmc::bounded_async(c),
        None => spmc::unbounded_async(),
    }
}

fn tokio_rt(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .unwrap()
}

/// A blocking consumer loop.
fn drain_sync(rx: Receiver<u64>) -> Vec<u64> {
    rx.iter().collect()
}

/// An async consumer loop.
async fn drain_async(rx: AsyncReceiver<u64>) -> Vec<u64> {
    let mut v = Vec::new();
    while let Ok(x) = rx.recv().await {
        v.push(x);
    }
    v
}

/// Sends `0..n` in order: at `i`, a batch of `batch(i)` values through
/// `send_batch` (cut at `n`), or a single `send` where that is 0 or 1.
fn send_in_batches(tx: &mut Sender<u64>, n: u64, batch: impl Fn(u64) -> u64) {
    let mut i = 0;
    while i < n {
        let end = (i + batch(i)).min(n);
        if end > i + 1 {
            tx.send_batch(i..end).unwrap();
            i = end;
        } else {
            tx.send(i).unwrap();
            i += 1;
        }
    }
}

// ----- 1 producer, 8 consumer threads

fn threads_1p8c(cap: Option<usize>) {
    watchdog(LIMIT, move || {
        let (mut tx, rx) = sync_chan(cap);
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let rx = rx.clone();
                thread::spawn(move || drain_sync(rx))
            })
            .collect();
        drop(rx);
        for i in 0..N {
            tx.send(i).unwrap();
        }
        drop(tx);
        let per: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        check_exactly_once(N, &per);
    });
}

/// Batches on both sides: the producer's `send_batch` of uneven sizes
/// (on unbounded channels, runs of positions claimed at once) and single
/// sends, four consumers with `recv_many` (a batch under one lock
/// acquisition) and four with `recv`.
fn threads_batches_1p8c(cap: Option<usize>) {
    watchdog(LIMIT, move || {
        let (mut tx, rx) = sync_chan(cap);
        let hs: Vec<_> = (0..8)
            .map(|k| {
                let rx = rx.clone();
                thread::spawn(move || {
                    if k % 2 == 1 {
                        return drain_sync(rx);
                    }
                    let (mut got, mut buf) = (Vec::new(), Vec::new());
                    while rx.recv_many(&mut buf, 1 + k * 10) > 0 {
                        got.append(&mut buf);
                    }
                    got
                })
            })
            .collect();
        drop(rx);
        send_in_batches(&mut tx, N, |i| i % 97);
        drop(tx);
        let per: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        check_exactly_once(N, &per);
    });
}

#[test]
fn threads_batches_1p8c_bounded() {
    for cap in [1, 5, 64] {
        threads_batches_1p8c(Some(cap));
    }
}

#[test]
fn threads_batches_1p8c_unbounded() {
    threads_batches_1p8c(None);
}

#[test]
fn threads_1p8c_bounded_0() {
    threads_1p8c(Some(0));
}

#[test]
fn threads_1p8c_bounded_1() {
    threads_1p8c(Some(1));
}

#[test]
fn threads_1p8c_bounded_64() {
    threads_1p8c(Some(64));
}

#[test]
fn threads_1p8c_unbounded() {
    threads_1p8c(None);
}

// ----- 1 producer task, 8 consumer tasks on tokio (4 workers)

fn tokio_1p8c(cap: Option<usize>) {
    watchdog(LIMIT, move || {
        let rt = tokio_rt(4);
        rt.block_on(async {
            let (mut tx, rx) = async_chan(cap);
            let hs: Vec<_> = (0..8)
                .map(|_| tokio::spawn(drain_async(rx.clone())))
                .collect();
            drop(rx);
            let producer = tokio::spawn(async move {
                for i in 0..N {
                    tx.send(i).await.unwrap();
                }
            });
            producer.await.unwrap();
            let mut per = Vec::new();
            for h in hs {
                per.push(h.await.unwrap());
            }
            check_exactly_once(N, &per);
        });
    });
}

#[test]
fn tokio_1p8c_bounded_0() {
    tokio_1p8c(Some(0));
}

#[test]
fn tokio_1p8c_bounded_1() {
    tokio_1p8c(Some(1));
}

#[test]
fn tokio_1p8c_bounded_64() {
    tokio_1p8c(Some(64));
}

#[test]
fn tokio_1p8c_unbounded() {
    tokio_1p8c(None);
}

// ----- threads and tasks competing on one queue

#[test]
fn threads_and_tokio_tasks_compete_on_one_queue() {
    for cap in [Some(0), Some(1), Some(16), None] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(2);
            let (mut tx, rx) = sync_chan(cap);
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let rx = rx.clone();
                    thread::spawn(move || drain_sync(rx))
                })
                .collect();
            let tasks: Vec<_> = (0..2)
                .map(|_| rt.spawn(drain_async(rx.to_async())))
                .collect();
            drop(rx);
            for i in 0..M {
                tx.send(i).unwrap();
            }
            drop(tx);
            let mut per: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            for t in tasks {
                per.push(rt.block_on(t).unwrap());
            }
            check_exactly_once(M, &per);
        });
    }
}

#[test]
fn async_producer_feeds_threads_and_tasks() {
    for cap in [Some(0), Some(4), None] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(2);
            let (mut tx, rx) = async_chan(cap);
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let rx = rx.to_sync();
                    thread::spawn(move || drain_sync(rx))
                })
                .collect();
            let tasks: Vec<_> = (0..2).map(|_| rt.spawn(drain_async(rx.clone()))).collect();
            drop(rx);
            rt.block_on(async move {
                // Single sends and batches mixed.
                let mut i = 0;
                while i < M {
                    if i % 3 == 0 {
                        let end = (i + 17).min(M);
                        tx.send_batch(i..end).await.unwrap();
                        i = end;
                    } else {
                        tx.send(i).await.unwrap();
                        i += 1;
                    }
                }
            });
            let mut per: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            for t in tasks {
                per.push(rt.block_on(t).unwrap());
            }
            check_exactly_once(M, &per);
        });
    }
}

/// An async producer feeding blocking worker threads only: with blocking
/// receivers alive, a send that finds no room first spins for a consumer's
/// freed slot (or, on `bounded(0)`, a waiting thread) before it waits.
#[test]
fn async_producer_feeds_worker_threads() {
    for cap in [Some(0), Some(1), Some(64), None] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(2);
            let (mut tx, rx) = async_chan(cap);
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let rx = rx.to_sync();
                    thread::spawn(move || drain_sync(rx))
                })
                .collect();
            drop(rx);
            rt.block_on(async move {
                for i in 0..M {
                    tx.send(i).await.unwrap();
                }
            });
            let per: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            check_exactly_once(M, &per);
        });
    }
}

#[test]
fn sync_producer_feeds_tokio_tasks() {
    for cap in [Some(0), Some(1), Some(64), None] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(4);
            let (mut tx, rx) = sync_chan(cap);
            let arx = rx.into_async();
            let tasks: Vec<_> = (0..6).map(|_| rt.spawn(drain_async(arx.clone()))).collect();
            drop(arx);
            for i in 0..M {
                tx.send(i).unwrap();
            }
            drop(tx);
            let per: Vec<_> = tasks.into_iter().map(|t| rt.block_on(t).unwrap()).collect();
            check_exactly_once(M, &per);
        });
    }
}

#[test]
fn sync_producer_feeds_smol_tasks() {
    for (cap, workers) in [(Some(0), 2), (Some(1), 3), (Some(64), 4), (None, 3)] {
        watchdog(LIMIT, move || {
            // smol's executor (`smol::Executor` re-exports
            // `async_executor::Executor`), driven by futures-lite's `block_on`
            // (smol's is async-io's, which adds an I/O reactor nothing here uses).
            let ex = Arc::new(async_executor::Executor::new());
            let (stop_tx, stop_rx) = futures::channel::oneshot::channel::<()>();
            let stop_rx = futures::FutureExt::shared(stop_rx);
            let pool: Vec<_> = (0..workers)
                .map(|_| {
                    let ex = ex.clone();
                    let stop = stop_rx.clone();
                    thread::spawn(move || futures_lite::future::block_on(ex.run(stop)))
                })
                .collect();
            let (mut tx, rx) = sync_chan(cap);
            let tasks: Vec<_> = (0..6)
                .map(|_| ex.spawn(drain_async(rx.to_async())))
                .collect();
            drop(rx);
            send_in_batches(&mut tx, M, |i| if i % 5 == 0 { 9 } else { 1 });
            drop(tx);
            let per: Vec<_> = tasks
                .into_iter()
                .map(futures_lite::future::block_on)
                .collect();
            drop(stop_tx);
            for t in pool {
                let _ = t.join().unwrap();
            }
            check_exactly_once(M, &per);
        });
    }
}

// ----- cancellation under load

/// A task that races every receive against a timer.
async fn drain_with_cancels(rx: AsyncReceiver<u64>) -> Vec<u64> {
    let mut v = Vec::new();
    loop {
        tokio::select! {
            r = rx.recv() => match r {
                Ok(x) => v.push(x),
                Err(_) => break,
            },
            _ = tokio::time::sleep(Duration::from_micros(20)) => {}
        }
    }
    v
}

/// Consumers that keep abandoning their `recv` futures (a timeout races
/// every receive) still get every value exactly once.
///
/// Per-consumer order is not checked here: a value handed to a task whose
/// future is then dropped goes back to the front of the queue, after other
/// consumers may already have taken later values.
#[test]
fn cancelled_receives_under_load_lose_nothing() {
    for cap in [Some(0), Some(1), Some(8), None] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(2);
            let (mut tx, rx) = sync_chan(cap);
            let tasks: Vec<_> = (0..4)
                .map(|_| rt.spawn(drain_with_cancels(rx.to_async())))
                .collect();
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let rx = rx.clone();
                    thread::spawn(move || {
                        let mut v = Vec::new();
                        loop {
                            match rx.recv_timeout(Duration::from_micros(50)) {
                                Ok(x) => v.push(x),
                                Err(e) if e.is_timeout() => {}
                                Err(_) => break,
                            }
                        }
                        v
                    })
                })
                .collect();
            drop(rx);
            const K: u64 = 20_000;
            for i in 0..K {
                tx.send(i).unwrap();
            }
            drop(tx);
            let mut per: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            for t in tasks {
                per.push(rt.block_on(t).unwrap());
            }
            check_delivered_once(K, &per);
        });
    }
}

/// Blocking receivers whose timeouts keep expiring just as values arrive:
/// a value handed to a receiver that is timing out is never lost.
#[test]
fn racing_recv_timeouts_lose_nothing() {
    for cap in [Some(0), Some(1), None] {
        watchdog(LIMIT, move || {
            let (mut tx, rx) = sync_chan(cap);
            let threads: Vec<_> = (0..4u64)
                .map(|k| {
                    let rx = rx.clone();
                    thread::spawn(move || {
                        let mut v = Vec::new();
                        let mut t = k;
                        loop {
                            t = (t + 1) % 7;
                            match rx.recv_timeout(Duration::from_micros(t * 3)) {
                                Ok(x) => v.push(x),
                                Err(e) if e.is_timeout() => {}
                                Err(_) => break,
                            }
                        }
                        v
                    })
                })
                .collect();
            drop(rx);
            const K: u64 = 40_000;
            for i in 0..K {
                tx.send(i).unwrap();
                if i % 64 == 0 {
                    thread::yield_now();
                }
            }
            drop(tx);
            let per: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            check_exactly_once(K, &per);
        });
    }
}

/// A producer whose `send_timeout`s keep expiring just as receivers free a
/// slot: every value is delivered exactly once (a timed-out value comes back
/// and is retried; a value that was taken is never also returned).
#[test]
fn racing_send_timeouts_deliver_exactly_once() {
    for cap in [Some(0), Some(1), Some(3)] {
        watchdog(LIMIT, move || {
            let (mut tx, rx) = sync_chan(cap);
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let rx = rx.clone();
                    thread::spawn(move || drain_sync(rx))
                })
                .collect();
            drop(rx);
            const K: u64 = 30_000;
            let mut timeouts = 0u64;
            for i in 0..K {
                let mut v = i;
                let mut t = i % 5;
                loop {
                    match tx.send_timeout(v, Duration::from_micros(t)) {
                        Ok(()) => break,
                        Err(e) if e.is_timeout() => {
                            timeouts += 1;
                            t += 1;
                            v = e.into_inner();
                            assert_eq!(v, i);
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
            drop(tx);
            let per: Vec<_> = threads.into_iter().map(|h| h.join().unwrap()).collect();
            check_exactly_once(K, &per);
            let _ = timeouts;
        });
    }
}

/// With a single (cancelling) consumer, a returned value is the next one it
/// gets: its order is strictly FIFO.
#[test]
fn cancelled_receives_single_consumer_keeps_order() {
    for cap in [Some(0), Some(1), Some(8), None] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(2);
            let (mut tx, rx) = sync_chan(cap);
            let task = rt.spawn(drain_with_cancels(rx.into_async()));
            const K: u64 = 10_000;
            for i in 0..K {
                tx.send(i).unwrap();
            }
            drop(tx);
            let v = rt.block_on(task).unwrap();
            check_exactly_once(K, &[v]);
        });
    }
}

/// Async sends that are abandoned while pending never enqueue their value
/// and never let the channel exceed its capacity.
#[test]
fn cancelled_sends_under_load_keep_capacity() {
    for cap in [1usize, 2, 8] {
        watchdog(LIMIT, move || {
            let rt = tokio_rt(2);
            let (mut tx, rx) = spmc::bounded_async::<u64>(cap);
            let probe = rx.clone();
            let consumers: Vec<_> = (0..2)
                .map(|_| {
                    let rx = rx.to_sync();
                    thread::spawn(move || drain_sync(rx))
                })
                .collect();
            drop(rx);
            let sent = rt.block_on(async move {
                let mut sent = Vec::new();
                for i in 0..20_000u64 {
                    assert!(probe.len() <= cap, "over capacity");
                    let r = tokio::time::timeout(Duration::from_micros(10), tx.send(i)).await;
                    if let Ok(r) = r {
                        r.unwrap();
                        sent.push(i);
                    }
                }
                sent
            });
            let per: Vec<_> = consumers.into_iter().map(|h| h.join().unwrap()).collect();
            // Exactly the values whose send completed, each once.
            let mut got: Vec<u64> = per.iter().flatten().copied().collect();
            got.sort_unstable();
            assert_eq!(got, sent);
            for v in &per {
                assert!(v.windows(2).all(|w| w[0] < w[1]));
            }
        });
    }
}

/// Every payload is dropped exactly once while consumers of both kinds come
/// and go and the last receiver drops what is left.
#[test]
fn drops_exactly_once_with_consumers_leaving() {
    watchdog(LIMIT, || {
        const K: usize = 20_000;
        let log = DropLog::new(K);
        let rt = tokio_rt(2);
        let (mut tx, rx) = spmc::bounded(4);
        let threads: Vec<_> = (0..2)
            .map(|k| {
                let rx = rx.clone();
                thread::spawn(move || {
                    for _ in 0..(3_000 + 2_000 * k) {
                        if rx.recv().is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        let tasks: Vec<_> = (0..2)
            .map(|k| {
                let rx = rx.to_async();
                rt.spawn(async move {
                    for _ in 0..(4_000 + 2_000 * k) {
                        if rx.recv().await.is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        drop(rx);
        let mut unsent = None;
        for i in 0..K {
            if let Err(e) = tx.send(log.item(i)) {
                assert_eq!(e.0.id, i);
                unsent = Some(i);
                break;
            }
        }
        for h in threads {
            h.join().unwrap();
        }
        for t in tasks {
            rt.block_on(t).unwrap();
        }
        let first = unsent.expect("consumers left early, so a send fails");
        for i in first + 1..K {
            drop(log.item(i));
        }
        log.assert_all_once();
    });
}
