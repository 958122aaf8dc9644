//! amphi against crossbeam-channel, flume, kanal, async-channel and tokio's mpsc.
//!
//! See BENCHMARKS.md (method, commands, results) and BENCHMARKS-METHOD in the issue tracker.
//!
//! Benchmark ids are `<family>/<where>/<queue>/<counts>/<peer>`, for example
//! `spmc/threads/bounded64/8c/kanal` or `mpmc/tokio-4w/unbounded/4p4c/amphi`, so a criterion
//! filter (a regex) selects a subset:
//!
//! ```text
//! cargo bench -p amphi-benches --bench channels -- 'spmc/threads/bounded64/'
//! cargo bench -p amphi-benches --bench channels -- '^prim/'
//! cargo bench -p amphi-benches --bench channels -- '(spmc|mpmc)/tokio-4w/.*/(1c|8c|4p4c)/'
//! ```
//!
//! Environment overrides (defaults in brackets): `AMPHI_BENCH_SAMPLES` [10],
//! `AMPHI_BENCH_WARMUP_MS` [200], `AMPHI_BENCH_MEASURE_MS` [1000], `AMPHI_BENCH_M_THREADS`
//! [100000], `AMPHI_BENCH_M_ASYNC` [16384].

mod common;

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode};

use common::peers::{
    AmphiMpmc, AmphiSpmc, AsyncChannel, AsyncPeer, Crossbeam, FeedPeer, Flume, Kanal, MixedPeer,
    Queue, SyncPeer, Tokio, QUEUES,
};
use common::run::{
    async_once, check, env_num, feed_once, mixed_once, round_trip_once, threads_once,
    tokio_workers, Exec, Gate, Tally, Task,
};

/// Suite settings, from the environment.
#[derive(Clone, Copy)]
struct Cfg {
    samples: usize,
    warm_up: Duration,
    measure: Duration,
    m_threads: usize,
    m_async: usize,
}

impl Cfg {
    fn from_env() -> Cfg {
        Cfg {
            samples: env_num("AMPHI_BENCH_SAMPLES", 10).max(10) as usize,
            warm_up: Duration::from_millis(env_num("AMPHI_BENCH_WARMUP_MS", 200).max(1)),
            measure: Duration::from_millis(env_num("AMPHI_BENCH_MEASURE_MS", 1000).max(1)),
            m_threads: env_num("AMPHI_BENCH_M_THREADS", 100_000).max(1) as usize,
            m_async: env_num("AMPHI_BENCH_M_ASYNC", 16_384).max(1) as usize,
        }
    }

    /// A group for multi-millisecond samples: flat sampling, so a sample is a few iterations.
    fn group<'a>(&self, c: &'a mut Criterion, name: String) -> BenchmarkGroup<'a, WallTime> {
        let mut g = c.benchmark_group(name);
        g.sample_size(self.samples)
            .warm_up_time(self.warm_up)
            .measurement_time(self.measure)
            .sampling_mode(SamplingMode::Flat);
        g
    }

    /// A group for nanosecond operations timed by criterion per iteration.
    fn fast_group<'a>(&self, c: &'a mut Criterion, name: String) -> BenchmarkGroup<'a, WallTime> {
        let mut g = c.benchmark_group(name);
        g.sample_size(self.samples.max(20))
            .warm_up_time(self.warm_up)
            .measurement_time(self.measure);
        g
    }
}

// -------------------------------------------------------------------------------------------
// Competing-consumers grid

/// The "where" axis.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    Threads,
    TokioCt,
    Tokio4w,
    Smol4t,
    SyncTokio4w,
    Tokio4wThreads,
}

const WHERES: [Where; 6] = [
    Where::Threads,
    Where::TokioCt,
    Where::Tokio4w,
    Where::Smol4t,
    Where::SyncTokio4w,
    Where::Tokio4wThreads,
];

impl Where {
    fn name(self) -> &'static str {
        match self {
            Where::Threads => "threads",
            Where::TokioCt => "tokio-ct",
            Where::Tokio4w => "tokio-4w",
            Where::Smol4t => "smol-4t",
            Where::SyncTokio4w => "sync-tokio-4w",
            Where::Tokio4wThreads => "tokio-4w-threads",
        }
    }

    fn exec(self) -> Exec {
        match self {
            Where::TokioCt => Exec::tokio_current_thread(),
            Where::Tokio4w => Exec::tokio_workers(4),
            Where::Smol4t => Exec::smol(4),
            Where::Threads | Where::SyncTokio4w | Where::Tokio4wThreads => {
                unreachable!("not an executor row")
            }
        }
    }
}

/// One row `family/where/queue/counts`, one benchmark per peer.
struct Row<'g, 'c> {
    g: &'g mut BenchmarkGroup<'c, WallTime>,
    q: Queue,
    p: usize,
    c: usize,
    m: usize,
}

impl Row<'_, '_> {
    fn threads<C: SyncPeer>(&mut self) {
        let (q, p, c, m) = (self.q, self.p, self.c, self.m);
        if C::make(q, p, c).is_none() {
            return;
        }
        self.g.bench_function(C::NAME, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| threads_once::<C>(q, p, c, m)).sum())
        });
    }

    fn tasks<C: AsyncPeer>(&mut self, w: Where) {
        let (q, p, c, m) = (self.q, self.p, self.c, self.m);
        if C::make(q, p, c).is_none() {
            return;
        }
        self.g.bench_function(C::NAME, |b| {
            let exec = w.exec();
            b.iter_custom(|iters| (0..iters).map(|_| async_once::<C>(&exec, q, p, c, m)).sum())
        });
    }

    fn mixed<C: MixedPeer>(&mut self) {
        let (q, p, c, m) = (self.q, self.p, self.c, self.m);
        if C::make(q, p, c).is_none() {
            return;
        }
        self.g.bench_function(C::NAME, |b| {
            let rt = tokio_workers(4);
            b.iter_custom(|iters| (0..iters).map(|_| mixed_once::<C>(&rt, q, p, c, m)).sum())
        });
    }

    fn feed<C: FeedPeer>(&mut self) {
        let (q, p, c, m) = (self.q, self.p, self.c, self.m);
        if C::make(q, p, c).is_none() {
            return;
        }
        self.g.bench_function(C::NAME, |b| {
            let rt = tokio_workers(4);
            b.iter_custom(|iters| (0..iters).map(|_| feed_once::<C>(&rt, q, p, c, m)).sum())
        });
    }

    /// Every peer of this row; `A` is amphi's flavour (spmc or mpmc).
    fn all<A: SyncPeer + AsyncPeer + MixedPeer + FeedPeer>(&mut self, w: Where) {
        match w {
            Where::Threads => {
                self.threads::<A>();
                self.threads::<Crossbeam>();
                self.threads::<Flume>();
                self.threads::<Kanal>();
                self.threads::<AsyncChannel>();
            }
            Where::SyncTokio4w => {
                self.mixed::<A>();
                self.mixed::<Flume>();
                self.mixed::<Kanal>();
                self.mixed::<AsyncChannel>();
                self.mixed::<Tokio>();
            }
            Where::Tokio4wThreads => {
                self.feed::<A>();
                self.feed::<Flume>();
                self.feed::<Kanal>();
                self.feed::<AsyncChannel>();
                self.feed::<Tokio>();
            }
            _ => {
                self.tasks::<A>(w);
                self.tasks::<Flume>(w);
                self.tasks::<Kanal>(w);
                self.tasks::<AsyncChannel>(w);
                self.tasks::<Tokio>(w);
            }
        }
    }
}

fn grid(c: &mut Criterion, cfg: &Cfg) {
    for w in WHERES {
        let m = if w == Where::Threads {
            cfg.m_threads
        } else {
            cfg.m_async
        };
        for q in QUEUES {
            for n in [1, 2, 4, 8] {
                let mut g = cfg.group(c, format!("spmc/{}/{}/{n}c", w.name(), q.name()));
                Row {
                    g: &mut g,
                    q,
                    p: 1,
                    c: n,
                    m,
                }
                .all::<AmphiSpmc>(w);
                g.finish();
            }
        }
    }
    for w in WHERES {
        let m = if w == Where::Threads {
            cfg.m_threads
        } else {
            cfg.m_async
        };
        for q in QUEUES {
            let mut g = cfg.group(c, format!("mpmc/{}/{}/4p4c", w.name(), q.name()));
            Row {
                g: &mut g,
                q,
                p: 4,
                c: 4,
                m,
            }
            .all::<AmphiMpmc>(w);
            g.finish();
        }
    }
}

// -------------------------------------------------------------------------------------------
// Primitive cycles

const READY_OPS: usize = 1_000_000;
const ROUND_TRIPS: usize = 20_000;

fn noop_cx() -> Context<'static> {
    Context::from_waker(futures::task::noop_waker_ref())
}

/// Ready send + receive on one thread, `READY_OPS` pairs per iteration.
fn ready_sync<C: SyncPeer>(g: &mut BenchmarkGroup<WallTime>, q: Queue) {
    if C::make(q, 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut txs, mut rxs) = C::make(q, 1, 1).unwrap();
                let (tx, rx) = (&mut txs[0], &mut rxs[0]);
                let mut sum = 0usize;
                let start = Instant::now();
                for i in 0..READY_OPS {
                    assert!(C::send(tx, i));
                    sum = sum.wrapping_add(C::recv(rx).unwrap());
                }
                total += start.elapsed();
                check([(READY_OPS, sum)], READY_OPS);
            }
            total
        })
    });
}

/// The same with async handles, `.await`ed on one thread (never pending).
fn ready_async<C: AsyncPeer>(g: &mut BenchmarkGroup<WallTime>, q: Queue) {
    if C::make(q, 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut txs, mut rxs) = C::make(q, 1, 1).unwrap();
                let (tx, rx) = (&mut txs[0], &mut rxs[0]);
                let start = Instant::now();
                let sum = futures::executor::block_on(async {
                    let mut sum = 0usize;
                    for i in 0..READY_OPS {
                        assert!(C::send(tx, i).await);
                        sum = sum.wrapping_add(C::recv(rx).await.unwrap());
                    }
                    sum
                });
                total += start.elapsed();
                check([(READY_OPS, sum)], READY_OPS);
            }
            total
        })
    });
}

/// `ROUND_TRIPS` ping-pongs between two threads through two capacity-1 channels: every wait is
/// a receiver waiting on an empty channel.
fn round_trip<C: SyncPeer>(g: &mut BenchmarkGroup<WallTime>) {
    let q = Queue::Bounded(1);
    if C::make(q, 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut ping_tx, mut ping_rx) = C::make(q, 1, 1).unwrap();
                let (mut pong_tx, mut pong_rx) = C::make(q, 1, 1).unwrap();
                let (mut a_tx, mut b_rx) = (ping_tx.pop().unwrap(), ping_rx.pop().unwrap());
                let (mut b_tx, mut a_rx) = (pong_tx.pop().unwrap(), pong_rx.pop().unwrap());
                let barrier = Arc::new(Barrier::new(2));
                let b2 = Arc::clone(&barrier);
                let echo = thread::spawn(move || {
                    b2.wait();
                    while let Some(v) = C::recv(&mut b_rx) {
                        if !C::send(&mut b_tx, v) {
                            break;
                        }
                    }
                });
                barrier.wait();
                let start = Instant::now();
                let mut sum = 0usize;
                for i in 0..ROUND_TRIPS {
                    assert!(C::send(&mut a_tx, i));
                    sum = sum.wrapping_add(C::recv(&mut a_rx).unwrap());
                }
                total += start.elapsed();
                drop(a_tx);
                echo.join().unwrap();
                check([(ROUND_TRIPS, sum)], ROUND_TRIPS);
            }
            total
        })
    });
}

/// `ROUND_TRIPS` cycles between two threads through two *full* capacity-1 channels: each side
/// sends into a full channel (and waits there) before it takes a value from the other one, so
/// every wait is a sender waiting for room, woken by a receive.
fn wake_blocked_sender<C: SyncPeer>(g: &mut BenchmarkGroup<WallTime>) {
    let q = Queue::Bounded(1);
    if C::make(q, 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (mut c1_tx, mut c1_rx) = C::make(q, 1, 1).unwrap();
                let (mut c2_tx, mut c2_rx) = C::make(q, 1, 1).unwrap();
                let (mut a_tx, mut b_rx) = (c1_tx.pop().unwrap(), c1_rx.pop().unwrap());
                let (mut b_tx, mut a_rx) = (c2_tx.pop().unwrap(), c2_rx.pop().unwrap());
                assert!(C::send(&mut a_tx, 0));
                assert!(C::send(&mut b_tx, 0));
                let barrier = Arc::new(Barrier::new(2));
                let b2 = Arc::clone(&barrier);
                let other = thread::spawn(move || {
                    b2.wait();
                    while let Some(v) = C::recv(&mut b_rx) {
                        if !C::send(&mut b_tx, v) {
                            break;
                        }
                    }
                });
                barrier.wait();
                let start = Instant::now();
                let mut sum = 0usize;
                for i in 1..=ROUND_TRIPS {
                    assert!(C::send(&mut a_tx, i));
                    sum = sum.wrapping_add(C::recv(&mut a_rx).unwrap());
                }
                total += start.elapsed();
                drop(a_tx);
                drop(a_rx);
                other.join().unwrap();
                // A received c2's pre-filled 0, then B's echo of c1's pre-filled 0, then its
                // own 1, 2, ..., ROUND_TRIPS - 2 back.
                assert_eq!(sum, (ROUND_TRIPS - 2) * (ROUND_TRIPS - 1) / 2, "checksum");
            }
            total
        })
    });
}

/// `ROUND_TRIPS` ping-pongs between two tasks on tokio with 4 workers.
fn round_trip_async<C: AsyncPeer>(g: &mut BenchmarkGroup<WallTime>) {
    if C::make(Queue::Bounded(1), 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        let exec = Exec::tokio_workers(4);
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| round_trip_once::<C>(&exec, ROUND_TRIPS))
                .sum()
        })
    });
}

/// Poll a send future once on a full channel with a noop waker, then drop it.
fn cancel_send<C: AsyncPeer>(g: &mut BenchmarkGroup<WallTime>) {
    let q = Queue::Bounded(1);
    if C::make(q, 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        let (mut txs, rxs) = C::make(q, 1, 1).unwrap();
        let tx = &mut txs[0];
        assert!(futures::executor::block_on(C::send(tx, 0)));
        let mut cx = noop_cx();
        b.iter(|| {
            let fut = pin!(C::send(tx, black_box(1)));
            assert!(fut.poll(&mut cx).is_pending());
        });
        // The cancelled sends left the channel as it was: exactly the one value.
        let mut rx = rxs.into_iter().next().unwrap();
        drop(txs);
        let mut left = 0;
        futures::executor::block_on(async {
            while C::recv(&mut rx).await.is_some() {
                left += 1;
            }
        });
        assert_eq!(left, 1);
    });
}

/// Poll a receive future once on an empty channel with a noop waker, then drop it.
fn cancel_recv<C: AsyncPeer>(g: &mut BenchmarkGroup<WallTime>) {
    let q = Queue::Bounded(64);
    if C::make(q, 1, 1).is_none() {
        return;
    }
    g.bench_function(C::NAME, |b| {
        let (txs, mut rxs) = C::make(q, 1, 1).unwrap();
        let rx = &mut rxs[0];
        let mut cx = noop_cx();
        b.iter(|| {
            let fut = pin!(C::recv(rx));
            assert!(matches!(fut.poll(&mut cx), Poll::Pending));
        });
        drop(txs);
    });
}

fn primitives(c: &mut Criterion, cfg: &Cfg) {
    for q in [Queue::Bounded(64), Queue::Unbounded] {
        let mut g = cfg.group(c, format!("prim/ready-send-recv/{}", q.name()));
        ready_sync::<AmphiSpmc>(&mut g, q);
        ready_sync::<Crossbeam>(&mut g, q);
        ready_sync::<Flume>(&mut g, q);
        ready_sync::<Kanal>(&mut g, q);
        ready_sync::<AsyncChannel>(&mut g, q);
        ready_sync::<Tokio>(&mut g, q);
        g.finish();

        let mut g = cfg.group(c, format!("prim/ready-send-recv-async/{}", q.name()));
        ready_async::<AmphiSpmc>(&mut g, q);
        ready_async::<Flume>(&mut g, q);
        ready_async::<Kanal>(&mut g, q);
        ready_async::<AsyncChannel>(&mut g, q);
        ready_async::<Tokio>(&mut g, q);
        g.finish();
    }

    let mut g = cfg.group(c, "prim/round-trip/bounded1".to_string());
    round_trip::<AmphiSpmc>(&mut g);
    round_trip::<Crossbeam>(&mut g);
    round_trip::<Flume>(&mut g);
    round_trip::<Kanal>(&mut g);
    round_trip::<AsyncChannel>(&mut g);
    round_trip::<Tokio>(&mut g);
    g.finish();

    let mut g = cfg.group(c, "prim/round-trip-async-tokio-4w/bounded1".to_string());
    round_trip_async::<AmphiSpmc>(&mut g);
    round_trip_async::<Flume>(&mut g);
    round_trip_async::<Kanal>(&mut g);
    round_trip_async::<AsyncChannel>(&mut g);
    round_trip_async::<Tokio>(&mut g);
    g.finish();

    let mut g = cfg.group(c, "prim/wake-blocked-sender/bounded1".to_string());
    wake_blocked_sender::<AmphiSpmc>(&mut g);
    wake_blocked_sender::<Crossbeam>(&mut g);
    wake_blocked_sender::<Flume>(&mut g);
    wake_blocked_sender::<Kanal>(&mut g);
    wake_blocked_sender::<AsyncChannel>(&mut g);
    wake_blocked_sender::<Tokio>(&mut g);
    g.finish();

    let mut g = cfg.fast_group(c, "prim/cancel-async-send/bounded1".to_string());
    cancel_send::<AmphiSpmc>(&mut g);
    cancel_send::<Flume>(&mut g);
    cancel_send::<Kanal>(&mut g);
    cancel_send::<AsyncChannel>(&mut g);
    cancel_send::<Tokio>(&mut g);
    g.finish();

    let mut g = cfg.fast_group(c, "prim/cancel-async-recv/empty".to_string());
    cancel_recv::<AmphiSpmc>(&mut g);
    cancel_recv::<Flume>(&mut g);
    cancel_recv::<Kanal>(&mut g);
    cancel_recv::<AsyncChannel>(&mut g);
    cancel_recv::<Tokio>(&mut g);
    g.finish();
}

// -------------------------------------------------------------------------------------------
// Batch rows: amphi's batch calls against amphi's own plain send/recv

const BATCH: usize = 64;

/// Consumer threads for the batch rows: each waits at `gate`, then takes values with `recv_many`
/// (limit `BATCH`) or with `recv` until the channel is disconnected and drained.
fn batch_consumers(
    rx: amphi::Receiver<usize>,
    c: usize,
    gate: &Arc<Gate>,
    recv_many: bool,
) -> Vec<thread::JoinHandle<Tally>> {
    common::peers::fan(rx, c)
        .into_iter()
        .map(|rx| {
            let gate = Arc::clone(gate);
            thread::spawn(move || {
                gate.wait();
                let (mut n, mut s) = (0usize, 0usize);
                if recv_many {
                    let mut buf = Vec::with_capacity(BATCH);
                    while rx.recv_many(&mut buf, BATCH) > 0 {
                        n += buf.len();
                        s = buf.drain(..).fold(s, usize::wrapping_add);
                    }
                } else {
                    while let Ok(v) = rx.recv() {
                        n += 1;
                        s = s.wrapping_add(v);
                    }
                }
                (n, s)
            })
        })
        .collect()
}

/// `send_batch` in chunks of `BATCH` and/or `recv_many` with limit `BATCH`, on threads.
fn batch_threads_once(q: Queue, c: usize, m: usize, send_batch: bool, recv_many: bool) -> Duration {
    let (mut tx, rx) = match q {
        Queue::Bounded(n) => amphi::spmc::bounded(n),
        Queue::Unbounded => amphi::spmc::unbounded(),
    };
    let gate = Gate::new(c + 2);
    let consumers = batch_consumers(rx, c, &gate, recv_many);
    let g2 = Arc::clone(&gate);
    let producer = thread::spawn(move || {
        g2.wait();
        if send_batch {
            for lo in (0..m).step_by(BATCH) {
                assert!(tx.send_batch(lo..(lo + BATCH).min(m)).is_ok());
            }
        } else {
            for v in 0..m {
                assert!(tx.send(v).is_ok());
            }
        }
    });
    gate.wait();
    producer.join().unwrap();
    let tallies: Vec<Tally> = consumers.into_iter().map(|h| h.join().unwrap()).collect();
    let elapsed = gate.elapsed();
    check(tallies, m);
    elapsed
}

/// The mpmc row: `p` producer threads, producer `i` sending the chunks of `BATCH` values that
/// start at `i * BATCH`, `(i + p) * BATCH`, ... (as one `send_batch` each, or value by value),
/// into `c` consumer threads.
fn batch_mpmc_threads_once(
    q: Queue,
    p: usize,
    c: usize,
    m: usize,
    send_batch: bool,
    recv_many: bool,
) -> Duration {
    let (tx, rx) = match q {
        Queue::Bounded(n) => amphi::mpmc::bounded(n),
        Queue::Unbounded => amphi::mpmc::unbounded(),
    };
    let gate = Gate::new(c + p + 1);
    let consumers = batch_consumers(rx, c, &gate, recv_many);
    let producers: Vec<thread::JoinHandle<()>> = common::peers::fan(tx, p)
        .into_iter()
        .enumerate()
        .map(|(i, tx)| {
            let gate = Arc::clone(&gate);
            thread::spawn(move || {
                gate.wait();
                for lo in (i * BATCH..m).step_by(p * BATCH) {
                    let chunk = lo..(lo + BATCH).min(m);
                    if send_batch {
                        assert!(tx.send_batch(chunk).is_ok());
                    } else {
                        for v in chunk {
                            assert!(tx.send(v).is_ok());
                        }
                    }
                }
            })
        })
        .collect();
    gate.wait();
    for h in producers {
        h.join().unwrap();
    }
    let tallies: Vec<Tally> = consumers.into_iter().map(|h| h.join().unwrap()).collect();
    let elapsed = gate.elapsed();
    check(tallies, m);
    elapsed
}

/// The same with async handles on an executor.
fn batch_async_once(
    exec: &Exec,
    q: Queue,
    c: usize,
    m: usize,
    send_batch: bool,
    recv_many: bool,
) -> Duration {
    let (mut tx, rx) = match q {
        Queue::Bounded(n) => amphi::spmc::bounded_async(n),
        Queue::Unbounded => amphi::spmc::unbounded_async(),
    };
    let mut tasks: Vec<Task> = Vec::with_capacity(c + 1);
    for rx in common::peers::fan(rx, c) {
        tasks.push(Box::pin(async move {
            let (mut n, mut s) = (0usize, 0usize);
            if recv_many {
                let mut buf = Vec::with_capacity(BATCH);
                while rx.recv_many(&mut buf, BATCH).await > 0 {
                    n += buf.len();
                    s = buf.drain(..).fold(s, usize::wrapping_add);
                }
            } else {
                while let Ok(v) = rx.recv().await {
                    n += 1;
                    s = s.wrapping_add(v);
                }
            }
            (n, s)
        }));
    }
    tasks.push(Box::pin(async move {
        if send_batch {
            for lo in (0..m).step_by(BATCH) {
                assert!(tx.send_batch(lo..(lo + BATCH).min(m)).await.is_ok());
            }
        } else {
            for v in 0..m {
                assert!(tx.send(v).await.is_ok());
            }
        }
        (0, 0)
    }));
    let start = Instant::now();
    let tallies = exec.run(tasks);
    let elapsed = start.elapsed();
    check(tallies, m);
    elapsed
}

const BATCH_VARIANTS: [(&str, bool, bool); 4] = [
    ("amphi", false, false),
    ("amphi-send_batch", true, false),
    ("amphi-recv_many", false, true),
    ("amphi-both", true, true),
];

fn batch(c: &mut Criterion, cfg: &Cfg) {
    for q in [Queue::Bounded(64), Queue::Unbounded] {
        for n in [1, 4] {
            let m = cfg.m_threads;
            let mut g = cfg.group(c, format!("batch/threads/{}/{n}c", q.name()));
            for (id, sb, rm) in BATCH_VARIANTS {
                g.bench_function(id, |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| batch_threads_once(q, n, m, sb, rm))
                            .sum()
                    })
                });
            }
            g.finish();

            let m = cfg.m_async;
            let mut g = cfg.group(c, format!("batch/tokio-4w/{}/{n}c", q.name()));
            for (id, sb, rm) in BATCH_VARIANTS {
                g.bench_function(id, |b| {
                    let exec = Exec::tokio_workers(4);
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| batch_async_once(&exec, q, n, m, sb, rm))
                            .sum()
                    })
                });
            }
            g.finish();
        }
        let m = cfg.m_threads;
        let mut g = cfg.group(c, format!("batch/threads/{}/4p4c", q.name()));
        for (id, sb, rm) in BATCH_VARIANTS {
            g.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| batch_mpmc_threads_once(q, 4, 4, m, sb, rm))
                        .sum()
                })
            });
        }
        g.finish();
    }
}

fn main() {
    let cfg = Cfg::from_env();
    let mut c = Criterion::default().configure_from_args();
    primitives(&mut c, &cfg);
    grid(&mut c, &cfg);
    batch(&mut c, &cfg);
    c.final_summary();
}
