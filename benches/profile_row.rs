//! Runs one row of the `channels` grid for one peer, outside criterion, so a profiler
//! (`valgrind --tool=callgrind`, `perf record`) sees the workload and little else.
//!
//! ```text
//! cargo build --release -p amphi-benches --bin profile_row
//! valgrind --tool=callgrind target/release/profile_row tokio-ct bounded64 8 kanal 5
//! ```
//!
//! Arguments: `WHERE QUEUE CONSUMERS PEER [RUNS]` (`CONSUMERS`: a count for one producer, or
//! `4p4c` for the mpmc rows), where `WHERE` is `threads`, `tokio-ct`,
//! `tokio-4w`, `smol-4t`, `sync-tokio-4w` or `tokio-4w-threads`; `QUEUE` is `bounded64`, `bounded1`, `bounded0` or
//! `unbounded`; `PEER` is `amphi`, `amphi-mpmc`, `crossbeam`, `flume`, `kanal`, `async-channel`
//! or `tokio`. `AMPHI_BENCH_M_THREADS` [100000] or `AMPHI_BENCH_M_ASYNC` [16384]
//! values per run; prints each run's time, then (with more than one run) the fastest,
//! the 10th percentile and the median.
//!
//! On the 2-core development VM a single-thread row's time is bimodal (runs settle in a fast
//! or a slow mode for seconds at a time, ~20% apart) and does not follow instruction counts:
//! compare two builds by the minimum and 10th percentile of several hundred runs, in
//! alternating batches (`profile_row ... 400` for each build, twice), not by one median.

#[allow(dead_code)]
mod common;

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::Context;
use std::time::{Duration, Instant};

use common::peers::{
    AmphiMpmc, AmphiSpmc, AsyncChannel, AsyncPeer, Crossbeam, FeedPeer, Flume, Kanal, MixedPeer,
    Queue, SyncPeer, Tokio,
};
use common::run::{
    async_once, env_num, feed_once, mixed_once, round_trip_once, threads_once, tokio_workers, Exec,
};

fn usage() -> ! {
    eprintln!("usage: profile_row WHERE QUEUE CONSUMERS PEER [RUNS]");
    eprintln!("       profile_row cancel-recv|cancel-send PEER [N]");
    eprintln!("       profile_row round-trip-tokio-ct|round-trip-tokio-4w PEER [N]");
    eprintln!("       profile_row burst-sync|burst-async PEER [N]");
    eprintln!("       profile_row ready-sync-bounded64|ready-sync-unbounded PEER [N]");
    std::process::exit(2)
}

/// `n` receive futures, each polled once on an empty channel with a no-op waker, then dropped.
fn cancel_recv<P: AsyncPeer>(n: usize) -> Duration {
    let (txs, mut rxs) = P::make(Queue::Bounded(64), 1, 1).unwrap_or_else(|| usage());
    let rx = &mut rxs[0];
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    let start = Instant::now();
    for _ in 0..n {
        let fut = pin!(P::recv(rx));
        assert!(fut.poll(&mut cx).is_pending(), "the channel is empty");
    }
    let t = start.elapsed();
    drop(txs);
    t
}

/// `n` send futures, each polled once on a full `bounded(1)` with a no-op waker, then dropped.
fn cancel_send<P: AsyncPeer>(n: usize) -> Duration {
    let (mut txs, rxs) = P::make(Queue::Bounded(1), 1, 1).unwrap_or_else(|| usage());
    let tx = &mut txs[0];
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    assert!(
        pin!(P::send(tx, 0)).poll(&mut cx).is_ready(),
        "the channel has room"
    );
    let start = Instant::now();
    for _ in 0..n {
        let fut = pin!(P::send(tx, black_box(1)));
        assert!(fut.poll(&mut cx).is_pending(), "the channel is full");
    }
    let t = start.elapsed();
    drop(rxs);
    t
}

/// `n` ping-pongs between two tasks through two `bounded(1)` channels (the
/// `round-trip-async` row), on tokio's current-thread runtime or 4 workers.
fn round_trip<P: AsyncPeer>(exec: Exec, n: usize) -> Duration {
    round_trip_once::<P>(&exec, n)
}

/// `n` bursts of 64 async sends, then 64 async receives, on one thread
/// through a `bounded(64)` channel: the tokio current-thread `bounded(64)`
/// row's ready paths without the runtime and without the waits.
fn burst<P: AsyncPeer>(n: usize) -> Duration {
    let (mut txs, mut rxs) = P::make(Queue::Bounded(64), 1, 1).unwrap_or_else(|| usage());
    let (tx, rx) = (&mut txs[0], &mut rxs[0]);
    let start = Instant::now();
    let sum = futures::executor::block_on(async {
        let mut sum = 0usize;
        for _ in 0..n {
            for i in 0..64 {
                assert!(P::send(tx, black_box(i)).await);
            }
            for _ in 0..64 {
                sum = sum.wrapping_add(P::recv(rx).await.unwrap());
            }
        }
        sum
    });
    let t = start.elapsed();
    assert_eq!(sum, n * 64 * 63 / 2, "every value once");
    t
}

/// The same bursts with blocking handles (never blocking: there is room).
fn burst_sync<P: SyncPeer>(n: usize) -> Duration {
    let (mut txs, mut rxs) = P::make(Queue::Bounded(64), 1, 1).unwrap_or_else(|| usage());
    let (tx, rx) = (&mut txs[0], &mut rxs[0]);
    let start = Instant::now();
    let mut sum = 0usize;
    for _ in 0..n {
        for i in 0..64 {
            assert!(P::send(tx, black_box(i)));
        }
        for _ in 0..64 {
            sum = sum.wrapping_add(P::recv(rx).unwrap());
        }
    }
    let t = start.elapsed();
    assert_eq!(sum, n * 64 * 63 / 2, "every value once");
    t
}

/// The primitives' `ready-send-recv` cycle: `n` sends, each followed by a receive, on one thread.
fn ready_sync<P: SyncPeer>(q: Queue, n: usize) -> Duration {
    let (mut txs, mut rxs) = P::make(q, 1, 1).unwrap_or_else(|| usage());
    let (tx, rx) = (&mut txs[0], &mut rxs[0]);
    let start = Instant::now();
    let mut sum = 0usize;
    for i in 0..n {
        assert!(P::send(tx, black_box(i)));
        sum = sum.wrapping_add(P::recv(rx).unwrap());
    }
    let t = start.elapsed();
    assert_eq!(sum, n * n.saturating_sub(1) / 2, "every value once");
    t
}

/// A synchronous cycle by name.
fn sync_cycle<P: SyncPeer>(kind: &str, n: usize) -> Option<Duration> {
    match kind {
        "burst-sync" => Some(burst_sync::<P>(n)),
        "ready-sync-bounded64" => Some(ready_sync::<P>(Queue::Bounded(64), n)),
        "ready-sync-unbounded" => Some(ready_sync::<P>(Queue::Unbounded, n)),
        _ => None,
    }
}

/// The cycles (not grid rows) that need an async peer.
fn async_cycle<P: AsyncPeer>(kind: &str, n: usize) -> Duration {
    match kind {
        "cancel-recv" => cancel_recv::<P>(n),
        "cancel-send" => cancel_send::<P>(n),
        "burst-async" => burst::<P>(n),
        "round-trip-tokio-ct" => round_trip::<P>(Exec::tokio_current_thread(), n),
        "round-trip-tokio-4w" => round_trip::<P>(Exec::tokio_workers(4), n),
        _ => usage(),
    }
}

/// `profile_row KIND PEER [N]` for a cycle: `cancel-recv`, `cancel-send`, `round-trip-tokio-ct`,
/// `round-trip-tokio-4w`, `burst-sync` or `burst-async`.
fn run_cycle(args: &[String]) {
    let name = args.get(1).unwrap_or_else(|| usage());
    let n = args
        .get(2)
        .map_or(100_000, |s| s.parse().unwrap_or_else(|_| usage()));
    let kind = args[0].as_str();
    let t = (peer(name).cycle)(kind, n);
    println!("{kind}/{name}: {n} in {t:?}");
}

fn queue(s: &str) -> Queue {
    match s {
        "unbounded" => Queue::Unbounded,
        _ => match s.strip_prefix("bounded").and_then(|n| n.parse().ok()) {
            Some(n) => Queue::Bounded(n),
            None => usage(),
        },
    }
}

/// What `profile_row` can run for the peer `P`: one run of a grid row (the peer must speak every
/// view the row needs), and `n` times one of the cycles named by `kind` (`burst-sync` and
/// `ready-sync-*` for blocking peers, the others for async ones).
trait Row {
    fn once(place: &str, q: Queue, p: usize, c: usize) -> Duration;
    fn cycle(kind: &str, n: usize) -> Duration;
}

fn run_threads<P: SyncPeer>(q: Queue, p: usize, c: usize) -> Duration {
    threads_once::<P>(q, p, c, env_num("AMPHI_BENCH_M_THREADS", 100_000) as usize)
}

fn run_async<P: AsyncPeer>(place: &str, q: Queue, p: usize, c: usize) -> Duration {
    let m = env_num("AMPHI_BENCH_M_ASYNC", 16_384) as usize;
    let exec = match place {
        "tokio-ct" => Exec::tokio_current_thread(),
        "tokio-4w" => Exec::tokio_workers(4),
        "smol-4t" => Exec::smol(4),
        _ => usage(),
    };
    async_once::<P>(&exec, q, p, c, m)
}

fn run_mixed<P: MixedPeer>(q: Queue, p: usize, c: usize) -> Duration {
    let rt = tokio_workers(4);
    mixed_once::<P>(
        &rt,
        q,
        p,
        c,
        env_num("AMPHI_BENCH_M_ASYNC", 16_384) as usize,
    )
}

fn run_feed<P: FeedPeer>(q: Queue, p: usize, c: usize) -> Duration {
    let rt = tokio_workers(4);
    feed_once::<P>(
        &rt,
        q,
        p,
        c,
        env_num("AMPHI_BENCH_M_ASYNC", 16_384) as usize,
    )
}

macro_rules! full_row {
    ($($peer:ty),*) => {$(
        impl Row for $peer {
            fn once(place: &str, q: Queue, p: usize, c: usize) -> Duration {
                match place {
                    "threads" => run_threads::<$peer>(q, p, c),
                    "sync-tokio-4w" => run_mixed::<$peer>(q, p, c),
                    "tokio-4w-threads" => run_feed::<$peer>(q, p, c),
                    _ => run_async::<$peer>(place, q, p, c),
                }
            }

            fn cycle(kind: &str, n: usize) -> Duration {
                sync_cycle::<$peer>(kind, n).unwrap_or_else(|| async_cycle::<$peer>(kind, n))
            }
        }
    )*};
}
full_row!(AmphiSpmc, AmphiMpmc, Flume, Kanal, AsyncChannel);

impl Row for Crossbeam {
    fn once(place: &str, q: Queue, p: usize, c: usize) -> Duration {
        match place {
            "threads" => run_threads::<Crossbeam>(q, p, c),
            _ => usage(),
        }
    }

    fn cycle(kind: &str, n: usize) -> Duration {
        sync_cycle::<Crossbeam>(kind, n).unwrap_or_else(|| usage())
    }
}

impl Row for Tokio {
    fn once(place: &str, q: Queue, p: usize, c: usize) -> Duration {
        match place {
            "threads" => usage(),
            "sync-tokio-4w" => run_mixed::<Tokio>(q, p, c),
            "tokio-4w-threads" => run_feed::<Tokio>(q, p, c),
            _ => run_async::<Tokio>(place, q, p, c),
        }
    }

    fn cycle(kind: &str, n: usize) -> Duration {
        async_cycle::<Tokio>(kind, n)
    }
}

/// A peer's runs, by the name the command line gives it.
struct Peer {
    once: fn(&str, Queue, usize, usize) -> Duration,
    cycle: fn(&str, usize) -> Duration,
}

fn peer(name: &str) -> Peer {
    fn of<P: Row>() -> Peer {
        Peer {
            once: P::once,
            cycle: P::cycle,
        }
    }
    match name {
        "amphi" => of::<AmphiSpmc>(),
        "amphi-mpmc" => of::<AmphiMpmc>(),
        "crossbeam" => of::<Crossbeam>(),
        "flume" => of::<Flume>(),
        "kanal" => of::<Kanal>(),
        "async-channel" => of::<AsyncChannel>(),
        "tokio" => of::<Tokio>(),
        _ => usage(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| {
        a.starts_with("cancel-")
            || a.starts_with("round-trip-")
            || a.starts_with("burst-")
            || a.starts_with("ready-sync-")
    }) {
        return run_cycle(&args);
    }
    if args.len() < 4 {
        usage();
    }
    let (place, q) = (args[0].as_str(), queue(&args[1]));
    // `8` (one producer, 8 consumers) or `4p4c`.
    let counts = |s: &str| s.parse().unwrap_or_else(|_| usage());
    let (p, c): (usize, usize) = match args[2].strip_suffix('c').and_then(|s| s.split_once('p')) {
        Some((p, c)) => (counts(p), counts(c)),
        None => (1, counts(&args[2])),
    };
    let runs: usize = args
        .get(4)
        .map_or(1, |s| s.parse().unwrap_or_else(|_| usage()));
    let once = peer(&args[3]).once;
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = once(place, q, p, c);
            println!("{place}/{}/{}/{}: {t:?}", args[1], args[2], args[3]);
            t
        })
        .collect();
    if runs > 1 {
        times.sort();
        println!(
            "{runs} runs: min {:?}, p10 {:?}, median {:?}",
            times[0],
            times[runs / 10],
            times[runs / 2]
        );
    }
}
