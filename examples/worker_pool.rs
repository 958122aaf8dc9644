//! A mixed worker pool on one spmc queue.
//!
//! A plain thread produces jobs (chunks of generated data to hash) into one
//! bounded `amphi::spmc` channel. Four worker threads (blocking `recv`) and
//! four tokio tasks (`recv().await`) compete for the jobs on the same queue.
//! Results go back over an `amphi::mpmc` channel; the main thread checks that
//! every job was done exactly once, with the right hash, and prints per-worker
//! counts, throughput, and how the jobs split between threads and tasks.
//!
//! Run: `cargo run --release --example worker_pool`

use std::thread;
use std::time::Instant;

const JOBS: u64 = 20_000;
const CHUNK: usize = 4096;
const THREADS: usize = 4;
const TASKS: usize = 4;

/// One unit of work: a seed from which the chunk of data is generated.
struct Job {
    id: u64,
    seed: u64,
}

/// What a worker reports back.
struct Done {
    id: u64,
    hash: u64,
    worker: usize,
}

/// Generates the job's chunk and hashes it (FNV-1a over the bytes).
fn work(job: &Job) -> u64 {
    let mut x = job.seed | 1;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..CHUNK / 8 {
        // xorshift64: the "data"
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for b in x.to_le_bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

fn main() {
    let (mut jobs_tx, jobs_rx) = amphi::spmc::bounded::<Job>(256);
    let (done_tx, done_rx) = amphi::mpmc::unbounded::<Done>();
    let start = Instant::now();

    // Worker threads: blocking receivers.
    let mut threads = Vec::new();
    for worker in 0..THREADS {
        let rx = jobs_rx.clone();
        let done = done_tx.clone();
        threads.push(thread::spawn(move || {
            for job in rx.iter() {
                let hash = work(&job);
                done.send(Done {
                    id: job.id,
                    hash,
                    worker,
                })
                .unwrap();
            }
        }));
    }

    // Tokio tasks: async receivers of the same queue.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("tokio runtime");
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let rx = jobs_rx.to_async();
        let done = done_tx.clone().into_async();
        let worker = THREADS + t;
        tasks.push(rt.spawn(async move {
            while let Ok(job) = rx.recv().await {
                let hash = work(&job);
                done.send(Done {
                    id: job.id,
                    hash,
                    worker,
                })
                .await
                .unwrap();
                // Let other tasks on this worker thread run between jobs.
                tokio::task::yield_now().await;
            }
        }));
    }
    drop(jobs_rx);
    drop(done_tx);

    // The producer: a plain thread, feeding threads and tasks alike.
    let producer = thread::spawn(move || {
        for id in 0..JOBS {
            let seed = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            jobs_tx.send(Job { id, seed }).expect("workers alive");
        }
        // Dropping the sender lets the workers drain and stop.
    });

    let mut seen = vec![false; JOBS as usize];
    let mut per_worker = [0u64; THREADS + TASKS];
    for done in done_rx.iter() {
        assert!(!seen[done.id as usize], "job {} done twice", done.id);
        seen[done.id as usize] = true;
        let seed = done.id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        assert_eq!(
            done.hash,
            work(&Job { id: done.id, seed }),
            "job {} hashed wrong",
            done.id
        );
        per_worker[done.worker] += 1;
    }
    let elapsed = start.elapsed();
    producer.join().unwrap();
    threads.into_iter().for_each(|t| t.join().unwrap());
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });

    let missing = seen.iter().filter(|s| !**s).count();
    assert_eq!(missing, 0, "{missing} jobs were never done");
    for (w, n) in per_worker.iter().enumerate() {
        let kind = if w < THREADS { "thread" } else { "task  " };
        println!("worker {w} ({kind}): {n:>6} jobs");
    }
    let mib = (JOBS as f64 * CHUNK as f64) / (1024.0 * 1024.0);
    println!(
        "{JOBS} jobs ({mib:.0} MiB hashed) in {:.2?}: {:.0} jobs/s, {:.0} MiB/s",
        elapsed,
        JOBS as f64 / elapsed.as_secs_f64(),
        mib / elapsed.as_secs_f64()
    );
    let by_threads: u64 = per_worker[..THREADS].iter().sum();
    let by_tasks: u64 = per_worker[THREADS..].iter().sum();
    println!(
        "{THREADS} worker threads (blocking recv) and {TASKS} tokio tasks (recv().await) \
         shared one amphi::spmc queue, fed by one producer thread:"
    );
    println!(
        "threads took {by_threads} jobs, tasks took {by_tasks}; \
         every job done exactly once, hashes verified"
    );
}
