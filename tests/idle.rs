//! An idle blocked thread uses no CPU once it has parked: receivers blocked
//! on an empty channel and a sender blocked on a full one spin only briefly,
//! then sleep until notified. Measured from the process's CPU time in
//! `/proc/self/stat` while nothing happens (Linux only). This file holds one
//! test so that nothing else runs in the process while it measures.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]
#![cfg(target_os = "linux")]

use std::thread;
use std::time::Duration;

/// User + system CPU time of this process, in clock ticks.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name (field 2) may contain spaces; count from the ')'.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the whole line (utime, stime) are 11 and 12 here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
#[cfg_attr(miri, ignore)]
fn blocked_threads_use_no_cpu_once_parked() {
    let (mut tx, rx) = amphi::spmc::bounded::<u64>(1);
    let (_idle_tx, idle_rx) = amphi::mpmc::bounded::<u64>(0);
    // Four receivers blocked on an empty channel...
    let receivers: Vec<_> = (0..4)
        .map(|_| {
            let rx = idle_rx.clone();
            thread::spawn(move || rx.recv())
        })
        .collect();
    // ...and a sender blocked on a full one.
    tx.send(0).unwrap();
    let sender = thread::spawn(move || tx.send(1));
    // Let them spin out and park.
    thread::sleep(Duration::from_millis(300));

    let ticks_per_second = 100; // USER_HZ on Linux
    let window = Duration::from_secs(1);
    let before = cpu_ticks();
    thread::sleep(window);
    let used = cpu_ticks() - before;
    // Five busy-waiting threads would burn about 2 CPU seconds (200 ticks)
    // on two cores in one second; parked threads burn none. Allow noise.
    assert!(
        used * 1000 / ticks_per_second <= 50,
        "{used} ticks of CPU time in {window:?} with every channel thread blocked"
    );

    // Still correct after the long sleep.
    assert_eq!(rx.recv(), Ok(0));
    assert_eq!(sender.join().unwrap(), Ok(()));
    assert_eq!(rx.recv(), Ok(1));
    drop(_idle_tx);
    for r in receivers {
        assert!(r.join().unwrap().is_err());
    }
}
