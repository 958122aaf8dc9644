//! The lock-free data path of spmc channels (`src/ring.rs`): slots reused
//! over many laps, an unbounded channel's linked blocks (63 slots each),
//! values returned ahead of the ring, and the flags that send the fast paths to the
//! lock. Single-threaded and deterministic; the races are in `tests/loom.rs`
//! and the stress tests.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use amphi::{spmc, TryRecvError};

fn poll<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(futures::task::noop_waker_ref()))
}

/// `bounded(c)` for `Some(c)`, `unbounded()` for `None`.
fn chan<T>(cap: Option<usize>) -> (spmc::Sender<T>, spmc::Receiver<T>) {
    match cap {
        Some(c) => spmc::bounded(c),
        None => spmc::unbounded(),
    }
}

/// Drains `buf`, checking that it holds `*next`, `*next + 1`, ... in
/// order, and moves `*next` past them.
fn take_in_order(buf: &mut Vec<u64>, next: &mut u64, what: &str) {
    for v in buf.drain(..) {
        assert_eq!(v, *next, "{what}");
        *next += 1;
    }
}

/// Bounded rings of several sizes, filled and drained in uneven steps for
/// many laps: every value comes out once, in order, and `len`/`is_full`
/// follow.
#[test]
fn slots_are_reused_over_many_laps_in_order() {
    for cap in [1, 2, 3, 7, 64] {
        let (mut tx, rx) = spmc::bounded::<u64>(cap);
        let (mut next_in, mut next_out) = (0u64, 0u64);
        let laps = if cfg!(miri) { 5 } else { 200 };
        for step in 0..laps * cap {
            let burst = 1 + step % cap;
            for _ in 0..burst {
                match tx.try_send(next_in) {
                    Ok(()) => next_in += 1,
                    Err(e) => {
                        assert!(e.is_full());
                        assert_eq!(rx.len(), cap);
                        assert!(rx.is_full());
                        break;
                    }
                }
            }
            assert_eq!(rx.len() as u64, next_in - next_out);
            for _ in 0..(1 + step % 3) {
                match rx.try_recv() {
                    Ok(v) => {
                        assert_eq!(v, next_out, "cap {cap}");
                        next_out += 1;
                    }
                    Err(e) => {
                        assert_eq!(e, TryRecvError::Empty);
                        assert_eq!(next_in, next_out);
                    }
                }
            }
        }
        while let Ok(v) = rx.try_recv() {
            assert_eq!(v, next_out);
            next_out += 1;
        }
        assert_eq!(next_in, next_out);
        assert!(rx.is_empty());
    }
}

/// Every slot layout of a bounded ring (`src/ring/array.rs`): small slots
/// one to a cache line up to capacity 1024 and dense past it, slots of a
/// line or more dense at any capacity. Filled to capacity, drained in
/// halves, over several laps: every value comes out once, in order, and
/// `len`/`is_full` follow.
#[test]
fn every_slot_layout_keeps_fifo_order_over_laps() {
    fn run<T: PartialEq + std::fmt::Debug>(cap: usize, make: impl Fn(u64) -> T) {
        let (mut tx, rx) = spmc::bounded::<T>(cap);
        let (mut next_in, mut next_out) = (0u64, 0u64);
        for lap in 0..3 {
            for half in [cap / 2 + 1, cap] {
                while tx.try_send(make(next_in)).is_ok() {
                    next_in += 1;
                }
                assert_eq!(rx.len(), cap, "cap {cap}, lap {lap}");
                assert!(rx.is_full());
                for _ in 0..half {
                    assert_eq!(rx.try_recv().unwrap(), make(next_out), "cap {cap}");
                    next_out += 1;
                }
            }
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(next_in, next_out);
    }
    let caps: &[usize] = if cfg!(miri) {
        &[8, 17, 1025]
    } else {
        &[8, 17, 1000, 1024, 1025, 3000]
    };
    for &cap in caps {
        run(cap, |i| i);
        run(cap, |i| [i; 9]);
    }
}

/// An unbounded channel keeps its values in linked blocks of 63 slots: they
/// come back in order across many block boundaries, with the producer
/// running ahead and the consumer catching up in uneven steps, and `len`
/// is exact at every step (including right before and after a boundary).
#[test]
fn unbounded_blocks_keep_fifo_order_and_len() {
    let n: u64 = if cfg!(miri) { 600 } else { 10_000 };
    let (mut tx, rx) = spmc::unbounded::<u64>();
    for i in 0..n {
        tx.try_send(i).unwrap();
        assert_eq!(rx.len() as u64, i + 1);
    }
    assert!(!rx.is_full());
    // Interleave: take seven, send three; order and `len` hold as head and
    // tail cross block boundaries at different times.
    let mut want = 0;
    let mut sent = n;
    for round in 0..(n / 10) {
        for _ in 0..7 {
            assert_eq!(rx.try_recv(), Ok(want));
            want += 1;
            assert_eq!(rx.len() as u64, sent - want);
        }
        if round % 2 == 0 {
            for _ in 0..3 {
                tx.send(sent).unwrap();
                sent += 1;
            }
        }
    }
    while let Ok(v) = rx.try_recv() {
        assert_eq!(v, want);
        want += 1;
    }
    assert_eq!(want, sent);
    assert!(rx.is_empty());
    drop(tx);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

/// Lock-step around block boundaries: the channel is drained to empty at
/// every position from 0 to 100 (so head meets tail at each slot of several
/// blocks, including the last slot of a block and the first of the next),
/// and an emptied channel is empty, not disconnected, until the sender goes.
#[test]
fn unbounded_empties_at_every_position_across_blocks() {
    let (mut tx, rx) = spmc::unbounded::<u32>();
    for i in 0..100u32 {
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        tx.try_send(i).unwrap();
        assert_eq!(rx.len(), 1);
        assert_eq!(rx.try_recv(), Ok(i));
        assert!(rx.is_empty());
    }
    for burst in [30u32, 31, 32, 62, 63] {
        for i in 0..burst {
            tx.try_send(i).unwrap();
        }
        assert_eq!(rx.len(), burst as usize);
        let got: Vec<u32> = rx.try_iter().collect();
        assert_eq!(got, (0..burst).collect::<Vec<_>>());
    }
    drop(tx);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

/// mpmc unbounded: several senders' values interleaved across block
/// boundaries, each sender's in its own order; values left behind when the
/// last handle goes are dropped once (Miri checks the blocks are freed).
#[test]
fn mpmc_unbounded_interleaves_senders_across_blocks() {
    let (tx, rx) = amphi::mpmc::unbounded::<(u8, String)>();
    let senders = [tx.clone(), tx.clone(), tx];
    let per = if cfg!(miri) { 40 } else { 400 };
    for i in 0..per {
        for (k, s) in senders.iter().enumerate() {
            s.try_send((k as u8, i.to_string())).unwrap();
        }
    }
    let mut next = [0usize; 3];
    for _ in 0..per * 3 / 2 {
        let (k, v) = rx.try_recv().unwrap();
        assert_eq!(v, next[k as usize].to_string());
        next[k as usize] += 1;
    }
    assert_eq!(rx.len(), per * 3 - per * 3 / 2);
    // The rest (in part-filled blocks) go with the channel.
}

/// Values left in an unbounded channel's blocks (several, the first part
/// read) or in a bounded ring when the channel goes away are dropped exactly
/// once (Miri checks for leaks).
#[test]
fn values_left_behind_are_dropped() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct D(Arc<AtomicUsize>);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let (mut tx, rx) = spmc::unbounded::<D>();
        for _ in 0..300 {
            tx.send(D(drops.clone())).unwrap();
        }
        drop(rx.try_recv().unwrap());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 300);
    {
        let (mut tx, rx) = spmc::bounded::<D>(4);
        for _ in 0..4 {
            tx.send(D(drops.clone())).unwrap();
        }
        // Receivers gone first: the values go at once, the send fails.
        drop(rx);
        assert_eq!(drops.load(Ordering::SeqCst), 304);
        assert!(tx.try_send(D(drops.clone())).is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 305);
    }
    {
        // Past 1024 slots the ring's slots share cache lines: the values
        // left behind, across a lap's end, are dropped with it.
        let (mut tx, rx) = spmc::bounded::<D>(1500);
        for _ in 0..1200 {
            tx.send(D(drops.clone())).unwrap();
        }
        for _ in 0..1000 {
            drop(rx.try_recv().unwrap());
        }
        for _ in 0..1000 {
            tx.send(D(drops.clone())).unwrap();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 1305);
        drop((tx, rx));
        assert_eq!(drops.load(Ordering::SeqCst), 2505);
    }
}

/// A woken task whose future is dropped leaves its value in the channel, and
/// a task that registered before a burst spanning many blocks gets the
/// oldest.
#[test]
fn woken_tasks_take_values_from_the_ring_and_blocks() {
    for cap in [Some(2), None] {
        let (mut tx, rx) = match cap {
            Some(c) => spmc::bounded_async::<u32>(c),
            None => spmc::unbounded_async::<u32>(),
        };
        let mut f1 = Box::pin(rx.recv());
        let mut f2 = Box::pin(rx.recv());
        assert!(poll(f1.as_mut()).is_pending());
        assert!(poll(f2.as_mut()).is_pending());
        tx.try_send(1).unwrap();
        // f1 was woken; dropping it passes the wake-up on to f2.
        drop(f1);
        tx.try_send(2).unwrap();
        assert_eq!(poll(f2.as_mut()), Poll::Ready(Ok(1)));
        assert_eq!(rx.try_recv(), Ok(2));
        if cap.is_none() {
            let mut f3 = Box::pin(rx.recv());
            assert!(poll(f3.as_mut()).is_pending());
            for i in 0..1000 {
                tx.try_send(i).unwrap();
            }
            assert_eq!(poll(f3.as_mut()), Poll::Ready(Ok(0)));
            assert_eq!(rx.len(), 999);
            for i in 1..1000 {
                assert_eq!(rx.try_recv(), Ok(i));
            }
        }
        assert!(rx.is_empty());
    }
}

/// A blocked receiver thread is served straight from the sender once
/// nothing older waits in the channel, and from the ring otherwise.
#[test]
#[cfg_attr(miri, ignore)] // real threads and sleeps
fn blocked_threads_get_values_in_order() {
    use std::thread;
    use std::time::Duration;
    for cap in [Some(1), Some(8), None] {
        let (mut tx, rx) = chan::<u32>(cap);
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    while let Ok(v) = rx.recv() {
                        got.push(v);
                    }
                    got
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(20));
        for i in 0..3000 {
            tx.send(i).unwrap();
            if i % 500 == 0 {
                thread::sleep(Duration::from_millis(2));
            }
        }
        drop(tx);
        let mut all = Vec::new();
        for h in hs {
            let got = h.join().unwrap();
            assert!(got.windows(2).all(|w| w[0] < w[1]), "cap {cap:?}");
            all.extend(got);
        }
        all.sort_unstable();
        assert_eq!(all, (0..3000).collect::<Vec<_>>());
    }
}

/// `try_recv_many` across the end of a lap, cut at its limit, all of a
/// full ring at once, and up to an empty slot; every value once, in order,
/// and the slots it frees are reused on the next laps. Unbounded channels
/// across blocks too.
#[test]
fn batch_receive_takes_runs_across_laps_in_order() {
    for cap in [Some(1), Some(2), Some(5), Some(64), None] {
        let (mut tx, rx) = chan::<u64>(cap);
        let room = cap.unwrap_or(150);
        let (mut next_in, mut next_out) = (0u64, 0u64);
        let steps = if cfg!(miri) { 20 } else { 500 };
        let mut buf = Vec::new();
        for step in 0..steps {
            // Fill by an uneven amount (a full ring every few steps), then
            // take with an uneven limit (past what is there, at times).
            let fill = 1 + (step * 7) % room;
            for _ in 0..fill {
                if tx.try_send(next_in).is_err() {
                    break;
                }
                next_in += 1;
            }
            let limit = 1 + (step * 5) % (room + 2);
            let before = rx.len();
            let took = rx.try_recv_many(&mut buf, limit);
            assert_eq!(took, limit.min(before), "cap {cap:?} step {step}");
            assert_eq!(rx.len(), before - took);
            take_in_order(&mut buf, &mut next_out, &format!("cap {cap:?}"));
        }
        assert_eq!(
            rx.try_recv_many(&mut buf, usize::MAX),
            (next_in - next_out) as usize
        );
        take_in_order(&mut buf, &mut next_out, "the rest");
        assert_eq!(next_out, next_in);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv_many(&mut buf, 4), 0);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }
}

/// A producer thread blocked on a full ring is served by a batch receive
/// that frees the whole ring at once.
#[test]
#[cfg_attr(miri, ignore)] // real threads and sleeps
fn batch_receive_serves_a_blocked_producer() {
    use std::thread;
    use std::time::Duration;
    for cap in [1, 4, 64] {
        let (mut tx, rx) = spmc::bounded::<u32>(cap);
        let n = 20 * cap as u32;
        let p = thread::spawn(move || {
            for i in 0..n {
                tx.send(i).unwrap();
            }
        });
        let mut got = Vec::new();
        while got.len() < n as usize {
            // Let the producer fill the ring and block on the next value.
            thread::sleep(Duration::from_millis(1));
            rx.try_recv_many(&mut got, usize::MAX);
        }
        p.join().unwrap();
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "cap {cap}");
    }
}

/// `send_batch` (which claims runs of positions at once in an unbounded
/// channel: the rest of the block before its last slot): batches of uneven
/// sizes, with single sends and batch or single receives between them,
/// across laps and blocks; every value once, in order, and `len` follows.
#[test]
fn batch_send_claims_runs_across_laps_and_blocks_in_order() {
    for cap in [Some(1), Some(3), Some(64), None] {
        let (mut tx, rx) = chan::<u64>(cap);
        let room = cap.unwrap_or(200);
        let (mut next_in, mut next_out) = (0u64, 0u64);
        let steps = if cfg!(miri) { 20 } else { 400 };
        let mut buf = Vec::new();
        for step in 0..steps {
            // A batch that fits the room left (a blocking send of more would
            // wait: nobody receives meanwhile), or a single send.
            let free = room - rx.len();
            let n = ((step * 11) % (room + 1)).min(free) as u64;
            if step % 3 == 0 && free > 0 {
                tx.try_send(next_in).unwrap();
                next_in += 1;
            } else {
                tx.send_batch(next_in..next_in + n).unwrap();
                next_in += n;
            }
            assert_eq!(
                rx.len() as u64,
                next_in - next_out,
                "cap {cap:?} step {step}"
            );
            let limit = 1 + (step * 13) % (room + 1);
            if step % 2 == 0 {
                rx.try_recv_many(&mut buf, limit);
            } else {
                buf.extend((0..limit).map_while(|_| rx.try_recv().ok()));
            }
            take_in_order(&mut buf, &mut next_out, &format!("cap {cap:?} step {step}"));
        }
        drop(tx);
        rx.try_recv_many(&mut buf, usize::MAX);
        take_in_order(&mut buf, &mut next_out, "the rest");
        assert_eq!(next_out, next_in);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }
}
