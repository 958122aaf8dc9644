//! Workload runners: one timed sample of "P producers move M values to C consumers that drain
//! until disconnection", on threads, on an async executor, or from producer threads to tasks.
//!
//! Channel and runtime construction stay outside the timed region. Consumer and producer threads
//! are spawned before the clock starts and released together through a [`Gate`]; the timed region
//! starts when the first of them is released and covers the sends, the receives, the
//! disconnection and joining every consumer. Async tasks are
//! spawned inside the timed region (a spawn costs about a microsecond, against milliseconds per
//! sample). Every sample checks the total count and checksum.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::peers::{AsyncPeer, FeedPeer, MixedPeer, Queue, SyncPeer};

/// Count and wrapping sum of the values one consumer received.
pub type Tally = (usize, usize);

/// Producer `i` of `p` sends `i, i + p, i + 2p, ...` below `m`, so all of them together send
/// `0..m` exactly once.
fn values(i: usize, p: usize, m: usize) -> impl Iterator<Item = usize> {
    (i..m).step_by(p)
}

/// Asserts that the consumers together received `0..m` exactly once (count and checksum).
pub fn check(tallies: impl IntoIterator<Item = Tally>, m: usize) {
    let (n, s) = tallies
        .into_iter()
        .fold((0usize, 0usize), |(n, s), (a, b)| {
            (n + a, s.wrapping_add(b))
        });
    assert_eq!(n, m, "count");
    assert_eq!(s, m.wrapping_mul(m.wrapping_sub(1)) / 2, "checksum");
}

/// Releases a sample's threads together and keeps the earliest time one of them was released:
/// the sample's start. Taking the clock in the (idle) main thread after the barrier started it
/// late whenever the workers, released first, kept both cores of a 2-core machine busy: samples
/// of 100,000 values then read as a few microseconds. Every thread's channel work follows its
/// own reading here, so the earliest reading is never after the first operation.
pub struct Gate {
    barrier: Barrier,
    base: Instant,
    first: AtomicU64,
}

impl Gate {
    /// A gate for `n` threads (the main thread included, if it waits too).
    pub fn new(n: usize) -> Arc<Gate> {
        Arc::new(Gate {
            barrier: Barrier::new(n),
            base: Instant::now(),
            first: AtomicU64::new(u64::MAX),
        })
    }

    /// Waits until all `n` threads are here, then notes when this one went on.
    pub fn wait(&self) {
        self.barrier.wait();
        let t = self.base.elapsed().as_nanos() as u64;
        self.first.fetch_min(t, Ordering::Relaxed);
    }

    /// The time since the first thread went on. Call it once every thread has waited (after
    /// joining them).
    pub fn elapsed(&self) -> Duration {
        let first = self.base + Duration::from_nanos(self.first.load(Ordering::Relaxed));
        first.elapsed()
    }
}

/// Consumer threads that wait at `gate`, then receive with `recv` until it reports the
/// channel disconnected and drained, each tallying what it got.
fn consumer_threads<R: Send + 'static>(
    rxs: Vec<R>,
    gate: &Arc<Gate>,
    recv: fn(&mut R) -> Option<usize>,
) -> Vec<JoinHandle<Tally>> {
    rxs.into_iter()
        .map(|mut rx| {
            let gate = Arc::clone(gate);
            thread::spawn(move || {
                gate.wait();
                let (mut n, mut s) = (0usize, 0usize);
                while let Some(v) = recv(&mut rx) {
                    n += 1;
                    s = s.wrapping_add(v);
                }
                (n, s)
            })
        })
        .collect()
}

/// Each consumer thread's tally.
fn join_consumers(consumers: Vec<JoinHandle<Tally>>) -> Vec<Tally> {
    consumers
        .into_iter()
        .map(|h| h.join().expect("consumer panicked"))
        .collect()
}

/// One timed sample on OS threads.
pub fn threads_once<C: SyncPeer>(q: Queue, p: usize, c: usize, m: usize) -> Duration {
    let (txs, rxs) = C::make(q, p, c).expect("unsupported row");
    let gate = Gate::new(p + c + 1);
    let consumers = consumer_threads(rxs, &gate, C::recv);
    let producers: Vec<JoinHandle<()>> = txs
        .into_iter()
        .enumerate()
        .map(|(i, mut tx)| {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                gate.wait();
                for v in values(i, p, m) {
                    assert!(C::send(&mut tx, v), "receivers gone");
                }
            })
        })
        .collect();
    gate.wait();
    for h in producers {
        h.join().expect("producer panicked");
    }
    let tallies = join_consumers(consumers);
    let elapsed = gate.elapsed();
    check(tallies, m);
    elapsed
}

/// A boxed task; producers return `(0, 0)`.
pub type Task = Pin<Box<dyn Future<Output = Tally> + Send + 'static>>;

/// An executor that runs a set of tasks to completion and returns their outputs.
pub enum Exec {
    Tokio(tokio::runtime::Runtime),
    Smol(SmolPool),
}

impl Exec {
    pub fn tokio_current_thread() -> Exec {
        Exec::Tokio(
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("tokio runtime"),
        )
    }

    pub fn tokio_workers(n: usize) -> Exec {
        Exec::Tokio(tokio_workers(n))
    }

    pub fn smol(n: usize) -> Exec {
        Exec::Smol(SmolPool::new(n))
    }

    /// Spawns every task (in order) and waits for all of them.
    pub fn run(&self, tasks: Vec<Task>) -> Vec<Tally> {
        match self {
            Exec::Tokio(rt) => rt.block_on(async {
                let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
                let mut out = Vec::with_capacity(handles.len());
                for h in handles {
                    out.push(h.await.expect("task panicked"));
                }
                out
            }),
            Exec::Smol(pool) => {
                let handles: Vec<_> = tasks.into_iter().map(|t| pool.ex.spawn(t)).collect();
                smol::future::block_on(async {
                    let mut out = Vec::with_capacity(handles.len());
                    for h in handles {
                        out.push(h.await);
                    }
                    out
                })
            }
        }
    }
}

/// A multi-thread tokio runtime with `n` workers.
pub fn tokio_workers(n: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(n)
        .build()
        .expect("tokio runtime")
}

/// `smol::Executor` driven by `n` threads, each in `block_on(ex.run(shutdown))`.
pub struct SmolPool {
    ex: Arc<smol::Executor<'static>>,
    stop: Option<smol::channel::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl SmolPool {
    pub fn new(n: usize) -> SmolPool {
        let ex = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let threads = (0..n)
            .map(|_| {
                let ex = Arc::clone(&ex);
                let stopped = stopped.clone();
                thread::spawn(move || {
                    let _ = smol::future::block_on(ex.run(stopped.recv()));
                })
            })
            .collect();
        SmolPool {
            ex,
            stop: Some(stop),
            threads,
        }
    }
}

impl Drop for SmolPool {
    fn drop(&mut self) {
        drop(self.stop.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

async fn consume<C: AsyncPeer>(mut rx: C::Rx) -> Tally {
    let (mut n, mut s) = (0usize, 0usize);
    while let Some(v) = C::recv(&mut rx).await {
        n += 1;
        s = s.wrapping_add(v);
    }
    (n, s)
}

async fn produce<C: AsyncPeer>(mut tx: C::Tx, i: usize, p: usize, m: usize) -> Tally {
    for v in values(i, p, m) {
        assert!(C::send(&mut tx, v).await, "receivers gone");
    }
    (0, 0)
}

/// One timed sample with async producers and consumers on `exec`.
pub fn async_once<C: AsyncPeer>(exec: &Exec, q: Queue, p: usize, c: usize, m: usize) -> Duration {
    let (txs, rxs) = C::make(q, p, c).expect("unsupported row");
    let mut tasks: Vec<Task> = Vec::with_capacity(p + c);
    for rx in rxs {
        tasks.push(Box::pin(consume::<C>(rx)));
    }
    for (i, tx) in txs.into_iter().enumerate() {
        tasks.push(Box::pin(produce::<C>(tx, i, p, m)));
    }
    let start = Instant::now();
    let tallies = exec.run(tasks);
    let elapsed = start.elapsed();
    check(tallies, m);
    elapsed
}

/// One timed sample of `n` async round trips on `exec`: a ping task sends `0..n`, one at a
/// time, through a `bounded(1)` channel to an echo task, which sends each value back through a
/// second `bounded(1)` channel before the next goes out.
pub fn round_trip_once<C: AsyncPeer>(exec: &Exec, n: usize) -> Duration {
    let q = Queue::Bounded(1);
    let (mut ping_tx, mut ping_rx) = C::make(q, 1, 1).expect("unsupported row");
    let (mut pong_tx, mut pong_rx) = C::make(q, 1, 1).expect("unsupported row");
    let (mut a_tx, mut b_rx) = (ping_tx.pop().unwrap(), ping_rx.pop().unwrap());
    let (mut b_tx, mut a_rx) = (pong_tx.pop().unwrap(), pong_rx.pop().unwrap());
    let echo: Task = Box::pin(async move {
        while let Some(v) = C::recv(&mut b_rx).await {
            if !C::send(&mut b_tx, v).await {
                break;
            }
        }
        (0, 0)
    });
    let ping: Task = Box::pin(async move {
        let mut sum = 0usize;
        for i in 0..n {
            assert!(C::send(&mut a_tx, i).await, "echo gone");
            sum = sum.wrapping_add(C::recv(&mut a_rx).await.expect("echo gone"));
        }
        (n, sum)
    });
    let start = Instant::now();
    let tallies = exec.run(vec![echo, ping]);
    let elapsed = start.elapsed();
    check(tallies, n);
    elapsed
}

/// One timed sample: producer threads (blocking sends) feeding async consumers on `rt`.
pub fn mixed_once<C: MixedPeer>(
    rt: &tokio::runtime::Runtime,
    q: Queue,
    p: usize,
    c: usize,
    m: usize,
) -> Duration {
    let (txs, rxs) = C::make(q, p, c).expect("unsupported row");
    let gate = Gate::new(p + 1);
    let consumers: Vec<tokio::task::JoinHandle<Tally>> = rxs
        .into_iter()
        .map(|mut rx| {
            rt.spawn(async move {
                let (mut n, mut s) = (0usize, 0usize);
                while let Some(v) = C::recv(&mut rx).await {
                    n += 1;
                    s = s.wrapping_add(v);
                }
                (n, s)
            })
        })
        .collect();
    let producers: Vec<JoinHandle<()>> = txs
        .into_iter()
        .enumerate()
        .map(|(i, mut tx)| {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                gate.wait();
                for v in values(i, p, m) {
                    assert!(C::send(&mut tx, v), "receivers gone");
                }
            })
        })
        .collect();
    gate.wait();
    for h in producers {
        h.join().expect("producer panicked");
    }
    let tallies = rt.block_on(async {
        let mut out = Vec::with_capacity(consumers.len());
        for h in consumers {
            out.push(h.await.expect("consumer panicked"));
        }
        out
    });
    let elapsed = gate.elapsed();
    check(tallies, m);
    elapsed
}

/// One timed sample: producer tasks (async sends) on `rt` feeding blocking consumer threads.
pub fn feed_once<C: FeedPeer>(
    rt: &tokio::runtime::Runtime,
    q: Queue,
    p: usize,
    c: usize,
    m: usize,
) -> Duration {
    let (txs, rxs) = C::make(q, p, c).expect("unsupported row");
    let gate = Gate::new(c + 1);
    let consumers = consumer_threads(rxs, &gate, C::recv);
    gate.wait();
    let producers: Vec<tokio::task::JoinHandle<()>> = txs
        .into_iter()
        .enumerate()
        .map(|(i, mut tx)| {
            rt.spawn(async move {
                for v in values(i, p, m) {
                    assert!(C::send(&mut tx, v).await, "receivers gone");
                }
            })
        })
        .collect();
    rt.block_on(async {
        for h in producers {
            h.await.expect("producer panicked");
        }
    });
    let tallies = join_consumers(consumers);
    let elapsed = gate.elapsed();
    check(tallies, m);
    elapsed
}

/// A setting from the environment (`AMPHI_BENCH_*`), or `default` if unset.
///
/// # Panics
///
/// If it is set to something that is not a number.
pub fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={s:?} is not a number")),
        Err(_) => default,
    }
}
