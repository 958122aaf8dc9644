//! Soak: 10,000,000 values from one producer (a thread, or on `bounded(1)` a
//! task, whose sends wait on nearly every value) to eight consumers
//! competing on one channel, four blocking threads and four tasks on a tokio
//! multi-thread runtime; each value must arrive exactly once (a bitmap marks
//! each one; a bit set twice is a duplicate, a bit never set a loss), and
//! each consumer must see its values in increasing order (FIFO).
//!
//! Ignored by default (release mode, tens of seconds):
//!
//! ```text
//! cargo test --release --test soak -- --ignored --nocapture
//! AMPHI_SOAK_VALUES=100000 cargo test --release --test soak -- --ignored   # shorter
//! ```
//!
//! Each run has a watchdog: a stuck channel fails the test instead of
//! hanging it (`AMPHI_SOAK_TIMEOUT_S`, default 600).
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use amphi::spmc;

fn values() -> u64 {
    std::env::var("AMPHI_SOAK_VALUES")
        .ok()
        .and_then(|s| s.replace('_', "").parse().ok())
        .unwrap_or(10_000_000)
}

fn timeout() -> Duration {
    Duration::from_secs(
        std::env::var("AMPHI_SOAK_TIMEOUT_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(600),
    )
}

/// One bit per value.
struct Bitmap(Vec<AtomicU64>);

impl Bitmap {
    fn new(n: u64) -> Self {
        Bitmap((0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    /// Marks `v`; panics if it was already marked (a duplicate).
    fn mark(&self, v: u64) {
        let bit = 1u64 << (v % 64);
        let old = self.0[(v / 64) as usize].fetch_or(bit, Ordering::Relaxed);
        assert!(old & bit == 0, "value {v} delivered twice");
    }

    fn missing(&self, n: u64) -> Vec<u64> {
        (0..n)
            .filter(|&v| self.0[(v / 64) as usize].load(Ordering::Relaxed) & (1 << (v % 64)) == 0)
            .take(10)
            .collect()
    }
}

/// What one consumer saw.
struct Seen {
    count: u64,
    last: Option<u64>,
}

impl Seen {
    fn new() -> Self {
        Seen {
            count: 0,
            last: None,
        }
    }

    fn take(&mut self, v: u64, map: &Bitmap) {
        if let Some(last) = self.last {
            assert!(v > last, "consumer saw {v} after {last}: FIFO broken");
        }
        self.last = Some(v);
        self.count += 1;
        map.mark(v);
    }
}

/// Where the producer runs.
#[derive(Clone, Copy, Debug)]
enum Producer {
    /// A blocking `send` on the test's thread.
    Thread,
    /// `send().await` in a task on the consumers' runtime.
    Task,
}

fn soak(cap: Option<usize>, producer: Producer) {
    let n = values();
    let (mut tx, rx) = match cap {
        Some(c) => spmc::bounded::<u64>(c),
        None => spmc::unbounded(),
    };
    let map = Arc::new(Bitmap::new(n));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let start = Instant::now();

    // Four blocking threads: two with recv(), two with recv_many().
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let rx = rx.clone();
            let map = map.clone();
            thread::spawn(move || {
                let mut seen = Seen::new();
                if i % 2 == 0 {
                    while let Ok(v) = rx.recv() {
                        seen.take(v, &map);
                    }
                } else {
                    let mut buf = Vec::with_capacity(16);
                    while rx.recv_many(&mut buf, 16) > 0 {
                        for v in buf.drain(..) {
                            seen.take(v, &map);
                        }
                    }
                }
                seen.count
            })
        })
        .collect();
    // Four tasks: two with recv().await, two with recv_many().await.
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let rx = rx.to_async();
            let map = map.clone();
            rt.spawn(async move {
                let mut seen = Seen::new();
                if i % 2 == 0 {
                    while let Ok(v) = rx.recv().await {
                        seen.take(v, &map);
                    }
                } else {
                    let mut buf = Vec::with_capacity(16);
                    while rx.recv_many(&mut buf, 16).await > 0 {
                        for v in buf.drain(..) {
                            seen.take(v, &map);
                        }
                    }
                }
                seen.count
            })
        })
        .collect();
    drop(rx);

    match producer {
        Producer::Thread => {
            for v in 0..n {
                tx.send(v).unwrap();
            }
            drop(tx);
        }
        Producer::Task => {
            let mut tx = tx.into_async();
            rt.block_on(rt.spawn(async move {
                for v in 0..n {
                    tx.send(v).await.unwrap();
                }
            }))
            .unwrap();
        }
    }

    let by_threads: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let by_tasks: u64 = rt.block_on(async {
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap();
        }
        sum
    });
    let elapsed = start.elapsed();
    println!(
        "soak {cap:?}, producer {producer:?}: {n} values in {elapsed:.2?} ({:.1} M/s); threads got {by_threads}, tasks got {by_tasks}",
        n as f64 / elapsed.as_secs_f64() / 1e6
    );
    assert_eq!(by_threads + by_tasks, n, "values lost or duplicated");
    let missing = map.missing(n);
    assert!(missing.is_empty(), "values never delivered: {missing:?}");
    if n >= 1_000_000 {
        // Both kinds of consumer took part.
        assert!(by_threads > 0 && by_tasks > 0);
    }
}

/// Runs `f` on its own thread and fails if it does not finish in time.
fn with_watchdog(name: &'static str, f: fn()) {
    let (done_tx, done_rx) = mpsc::channel();
    let h = thread::spawn(move || {
        f();
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(timeout()) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The body panicked: report its panic.
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: stuck (watchdog)"),
    }
}

#[test]
#[ignore = "soak: run with `cargo test --release --test soak -- --ignored`"]
fn soak_bounded_64_threads_and_tokio_tasks() {
    with_watchdog("bounded(64)", || soak(Some(64), Producer::Thread));
}

#[test]
#[ignore = "soak: run with `cargo test --release --test soak -- --ignored`"]
fn soak_unbounded_threads_and_tokio_tasks() {
    with_watchdog("unbounded", || soak(None, Producer::Thread));
}

/// `bounded(1)` with an async producer: its sends wait on nearly every value,
/// so every value passes through the held count, the "a sender waits" bit
/// and a grant (the paths of `src/core.rs`'s hand-off to tasks).
#[test]
#[ignore = "soak: run with `cargo test --release --test soak -- --ignored`"]
fn soak_bounded_1_async_producer_threads_and_tokio_tasks() {
    with_watchdog("bounded(1), async producer", || {
        soak(Some(1), Producer::Task)
    });
}
