//! mpmc under load: 4 producers and 4 consumers moving 200,000 values over
//! threads, tokio tasks (multi-thread runtime, 4 workers) and a mix of both,
//! for `bounded(1)`, `bounded(64)`, `unbounded()` and `bounded(0)`.
//!
//! Every value encodes its producer and sequence number. Each test checks
//! that every value arrives exactly once (a bitmap filled with `fetch_or`)
//! and that every consumer sees each producer's values in strictly
//! increasing order (FIFO with competing consumers). A watchdog fails a test
//! that hangs.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]
// Real threads and runtimes under load: too slow for Miri (and smol needs
// timerfd, which Miri does not support).
#![cfg(not(miri))]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use amphi::mpmc;

const PRODUCERS: usize = 4;
const CONSUMERS: usize = 4;
const TOTAL: usize = 200_000;
const PER_PRODUCER: usize = TOTAL / PRODUCERS;
const WATCHDOG: Duration = Duration::from_secs(60);

/// Runs `f` on its own thread; fails the test if it does not finish in time
/// (a hang becomes a failure instead of a stuck test run).
fn watchdog<F: FnOnce() + Send + 'static>(f: F) {
    common::watchdog(WATCHDOG.as_secs(), f)
}

#[derive(Clone, Copy, Debug)]
enum Cap {
    Bounded(usize),
    Unbounded,
}

const CAPS: [Cap; 4] = [
    Cap::Bounded(1),
    Cap::Bounded(64),
    Cap::Unbounded,
    Cap::Bounded(0),
];

fn channel(cap: Cap) -> (mpmc::Sender<u64>, mpmc::Receiver<u64>) {
    match cap {
        Cap::Bounded(n) => mpmc::bounded(n),
        Cap::Unbounded => mpmc::unbounded(),
    }
}

fn encode(producer: usize, seq: usize) -> u64 {
    ((producer as u64) << 32) | seq as u64
}

fn decode(v: u64) -> (usize, usize) {
    ((v >> 32) as usize, (v & 0xffff_ffff) as usize)
}

/// What every consumer shares: the bitmap of received values.
struct Bitmap(Vec<AtomicU64>);

impl Bitmap {
    fn new() -> Arc<Self> {
        Arc::new(Bitmap(
            (0..TOTAL.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        ))
    }

    fn set(&self, v: u64) {
        let (p, s) = decode(v);
        assert!(
            p < PRODUCERS && s < PER_PRODUCER,
            "value out of range: {v:#x}"
        );
        let i = p * PER_PRODUCER + s;
        let bit = 1u64 << (i % 64);
        let old = self.0[i / 64].fetch_or(bit, Ordering::Relaxed);
        assert_eq!(old & bit, 0, "value {p}/{s} received twice");
    }

    fn assert_full(&self) {
        for (w, word) in self.0.iter().enumerate() {
            let word = word.load(Ordering::Relaxed);
            let expected = if (w + 1) * 64 <= TOTAL {
                u64::MAX
            } else {
                (1u64 << (TOTAL % 64)) - 1
            };
            if word != expected {
                let missing = (0..64)
                    .map(|b| w * 64 + b)
                    .find(|&i| i < TOTAL && word & (1 << (i % 64)) == 0)
                    .unwrap();
                panic!(
                    "value {}/{} never received",
                    missing / PER_PRODUCER,
                    missing % PER_PRODUCER
                );
            }
        }
    }
}

/// One consumer's view: the last sequence number seen from each producer.
struct Order {
    last: [Option<usize>; PRODUCERS],
    count: usize,
}

impl Order {
    fn new() -> Self {
        Order {
            last: [None; PRODUCERS],
            count: 0,
        }
    }

    fn see(&mut self, v: u64, bitmap: &Bitmap) {
        let (p, s) = decode(v);
        bitmap.set(v);
        if let Some(prev) = self.last[p] {
            assert!(
                s > prev,
                "producer {p}'s values out of order at a consumer: {s} after {prev}"
            );
        }
        self.last[p] = Some(s);
        self.count += 1;
    }
}

fn thread_producer(tx: mpmc::Sender<u64>, p: usize) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        for s in 0..PER_PRODUCER {
            tx.send(encode(p, s)).unwrap();
        }
    })
}

/// A producer thread sending its values in batches of uneven sizes.
fn thread_batch_producer(tx: mpmc::Sender<u64>, p: usize) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut s = 0;
        while s < PER_PRODUCER {
            let end = (s + 1 + (s + p) % 90).min(PER_PRODUCER);
            tx.send_batch((s..end).map(|s| encode(p, s))).unwrap();
            s = end;
        }
    })
}

fn thread_consumer(rx: mpmc::Receiver<u64>, bitmap: Arc<Bitmap>) -> thread::JoinHandle<usize> {
    thread::spawn(move || {
        let mut order = Order::new();
        for v in &rx {
            order.see(v, &bitmap);
        }
        order.count
    })
}

async fn task_producer(tx: mpmc::AsyncSender<u64>, p: usize) {
    for s in 0..PER_PRODUCER {
        tx.send(encode(p, s)).await.unwrap();
    }
}

async fn task_consumer(rx: mpmc::AsyncReceiver<u64>, bitmap: Arc<Bitmap>) -> usize {
    let mut order = Order::new();
    while let Ok(v) = rx.recv().await {
        order.see(v, &bitmap);
    }
    order.count
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

/// 4 producer threads, 4 consumer threads.
fn run_threads(cap: Cap) {
    run_threads_with(cap, thread_producer);
}

/// 4 producer threads sending in batches of uneven sizes (`send_batch`:
/// on an unbounded channel runs of positions claimed at once, against the
/// other producers' claims), 4 consumer threads.
fn run_thread_batches(cap: Cap) {
    run_threads_with(cap, thread_batch_producer);
}

/// 4 producer threads started by `producer`, 4 consumer threads.
fn run_threads_with(cap: Cap, producer: fn(mpmc::Sender<u64>, usize) -> thread::JoinHandle<()>) {
    let (tx, rx) = channel(cap);
    let bitmap = Bitmap::new();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| thread_consumer(rx.clone(), bitmap.clone()))
        .collect();
    drop(rx);
    let producers: Vec<_> = (0..PRODUCERS).map(|p| producer(tx.clone(), p)).collect();
    drop(tx);
    producers.into_iter().for_each(|h| h.join().unwrap());
    let n: usize = consumers.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(n, TOTAL, "{cap:?}");
    bitmap.assert_full();
}

/// 4 producer tasks, 4 consumer tasks, on a 4-worker runtime.
fn run_tasks(cap: Cap) {
    let rt = runtime();
    let (tx, rx) = channel(cap);
    let (tx, rx) = (tx.into_async(), rx.into_async());
    let bitmap = Bitmap::new();
    rt.block_on(async move {
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| tokio::spawn(task_consumer(rx.clone(), bitmap.clone())))
            .collect();
        drop(rx);
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| tokio::spawn(task_producer(tx.clone(), p)))
            .collect();
        drop(tx);
        for p in producers {
            p.await.unwrap();
        }
        let mut n = 0;
        for c in consumers {
            n += c.await.unwrap();
        }
        assert_eq!(n, TOTAL, "{cap:?}");
        bitmap.assert_full();
    });
}

/// 2 producer threads + 2 producer tasks, 2 consumer threads + 2 consumer
/// tasks, all on one channel.
fn run_mixed(cap: Cap) {
    let rt = runtime();
    let (tx, rx) = channel(cap);
    let bitmap = Bitmap::new();
    let thread_consumers: Vec<_> = (0..2)
        .map(|_| thread_consumer(rx.clone(), bitmap.clone()))
        .collect();
    let task_consumers: Vec<_> = (0..2)
        .map(|_| rt.spawn(task_consumer(rx.to_async(), bitmap.clone())))
        .collect();
    drop(rx);
    let thread_producers: Vec<_> = (0..2).map(|p| thread_producer(tx.clone(), p)).collect();
    let task_producers: Vec<_> = (2..4)
        .map(|p| rt.spawn(task_producer(tx.clone().into_async(), p)))
        .collect();
    drop(tx);
    thread_producers.into_iter().for_each(|h| h.join().unwrap());
    let mut n: usize = 0;
    rt.block_on(async {
        for p in task_producers {
            p.await.unwrap();
        }
        for c in task_consumers {
            n += c.await.unwrap();
        }
    });
    n += thread_consumers
        .into_iter()
        .map(|h| h.join().unwrap())
        .sum::<usize>();
    assert_eq!(n, TOTAL, "{cap:?}");
    bitmap.assert_full();
}

macro_rules! stress_tests {
    ($($name:ident: $run:ident, $cap:expr;)*) => {
        $(
            #[test]
            fn $name() {
                watchdog(|| $run($cap));
            }
        )*
    };
}

stress_tests! {
    threads_bounded_1: run_threads, CAPS[0];
    threads_bounded_64: run_threads, CAPS[1];
    threads_unbounded: run_threads, CAPS[2];
    threads_rendezvous: run_threads, CAPS[3];
    tasks_bounded_1: run_tasks, CAPS[0];
    tasks_bounded_64: run_tasks, CAPS[1];
    tasks_unbounded: run_tasks, CAPS[2];
    tasks_rendezvous: run_tasks, CAPS[3];
    mixed_bounded_1: run_mixed, CAPS[0];
    mixed_bounded_64: run_mixed, CAPS[1];
    mixed_unbounded: run_mixed, CAPS[2];
    mixed_rendezvous: run_mixed, CAPS[3];
    thread_batches_bounded_64: run_thread_batches, CAPS[1];
    thread_batches_unbounded: run_thread_batches, CAPS[2];
}
