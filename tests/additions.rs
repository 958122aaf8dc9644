//! API.md's second-round additions that are not about waiting: weak senders
//! (mpmc) and `same_channel` on every sender and receiver.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

use std::thread;
use std::time::Duration;

use amphi::{mpmc, spmc, AsyncReceiver, Receiver};

// ------------------------------------------------------------ weak senders

#[test]
fn weak_upgrades_while_a_sender_lives_and_is_not_counted() {
    let (tx, rx) = mpmc::bounded::<i32>(4);
    let weak = tx.downgrade();
    assert_eq!(tx.sender_count(), 1);
    let weak2 = weak.clone();
    assert_eq!(rx.sender_count(), 1);

    let up = weak2.upgrade().expect("a sender lives");
    assert_eq!(tx.sender_count(), 2);
    up.send(1).unwrap();
    tx.send(2).unwrap();
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx.recv(), Ok(2));

    // The upgraded sender alone keeps the channel connected.
    drop(tx);
    assert_eq!(rx.sender_count(), 1);
    assert!(!rx.is_disconnected());
    let up2 = weak.upgrade().expect("the upgraded sender lives");
    up2.send(3).unwrap();
    drop((up, up2));
    assert_eq!(rx.recv(), Ok(3));
    assert!(rx.recv().is_err());
}

#[test]
fn weak_never_upgrades_after_the_last_sender_is_gone() {
    let (tx, rx) = mpmc::unbounded::<i32>();
    let atx = tx.clone().into_async();
    let weak = atx.downgrade();
    let weak2 = weak.clone();
    drop(tx);
    assert!(weak.upgrade().is_some(), "the async sender still lives");
    drop(atx);
    assert!(weak.upgrade().is_none());
    assert!(weak2.upgrade().is_none());
    // Still none later, and the failed upgrades did not count as senders.
    assert!(weak.clone().upgrade().is_none());
    assert_eq!(rx.sender_count(), 0);
    assert!(rx.is_disconnected());
}

#[test]
fn weak_does_not_keep_receivers_from_seeing_disconnection() {
    // A blocked thread and a pending task are both released when the last
    // strong sender goes, although weak senders live on.
    let (tx, rx) = mpmc::bounded::<i32>(1);
    let weak = tx.downgrade();
    let thread_rx = rx.clone();
    let blocked = thread::spawn(move || thread_rx.recv());
    let task_rx: AsyncReceiver<i32> = rx.to_async();
    let task = thread::spawn(move || futures::executor::block_on(task_rx.recv()));
    thread::sleep(Duration::from_millis(20));
    drop(tx);
    assert!(blocked.join().unwrap().is_err());
    assert!(task.join().unwrap().is_err());
    assert!(rx.recv_timeout(Duration::from_secs(5)).is_err());
    assert!(rx.is_disconnected());
    assert!(weak.upgrade().is_none());
}

#[test]
fn weak_drains_buffered_values_before_disconnecting() {
    let (tx, rx) = mpmc::bounded::<i32>(4);
    let weak = tx.downgrade();
    tx.send_batch([1, 2]).unwrap();
    drop(tx);
    assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    drop(weak);
}

#[test]
fn weak_upgrades_after_receivers_are_gone_and_sends_then_fail() {
    let (tx, rx) = mpmc::bounded::<i32>(1);
    let weak = tx.downgrade();
    drop(rx);
    let up = weak
        .upgrade()
        .expect("senders live, receivers do not matter");
    assert!(up.is_disconnected());
    assert_eq!(up.send(7).unwrap_err().into_inner(), 7);
    assert!(up.try_send(8).unwrap_err().is_disconnected());
    assert_eq!(tx.sender_count(), 2);
}

#[test]
fn upgrades_race_with_the_last_drop() {
    // Each round races an upgrading thread against the drop of the last
    // sender: either the upgrade wins (and then its sender works and keeps
    // the channel connected until dropped) or it loses for good.
    for _ in 0..if cfg!(miri) { 5 } else { 200 } {
        let (tx, rx) = mpmc::unbounded::<u32>();
        let weak = tx.downgrade();
        let upgrader = thread::spawn(move || match weak.upgrade() {
            Some(tx) => {
                tx.send(1).unwrap();
                assert!(weak.upgrade().is_some());
                true
            }
            None => {
                assert!(weak.upgrade().is_none());
                false
            }
        });
        drop(tx);
        let upgraded = upgrader.join().unwrap();
        assert_eq!(rx.iter().count(), usize::from(upgraded));
        assert!(rx.is_disconnected());
    }
}

#[test]
fn weak_sender_is_clone_debug_send_sync() {
    fn clone_debug_send_sync<X: Clone + std::fmt::Debug + Send + Sync>() {}
    clone_debug_send_sync::<mpmc::WeakSender<i32>>();
    clone_debug_send_sync::<mpmc::WeakSender<std::cell::Cell<i32>>>();

    let (tx, _rx) = mpmc::bounded::<i32>(3);
    let text = format!("{:?}", tx.downgrade());
    assert!(text.starts_with("WeakSender"), "{text}");
    assert!(text.contains("capacity: Some(3)"), "{text}");
}

// ------------------------------------------------------------ same_channel

#[test]
fn same_channel_on_spmc_handles() {
    let (tx, rx) = spmc::bounded::<i32>(1);
    let (tx_b, rx_b) = spmc::bounded::<i32>(1);
    assert!(tx.same_channel(&tx));
    assert!(!tx.same_channel(&tx_b));
    let atx = tx.into_async();
    let atx_b = tx_b.into_async();
    assert!(atx.same_channel(&atx));
    assert!(!atx.same_channel(&atx_b));
    let tx = atx.into_sync();
    let tx_b = spmc::Sender::from(atx_b);
    assert!(!tx.same_channel(&tx_b));

    let rx2 = rx.clone();
    let arx: AsyncReceiver<i32> = rx.to_async();
    assert!(rx.same_channel(&rx2));
    assert!(rx.same_channel(&arx.to_sync()));
    assert!(arx.same_channel(&rx2.clone().into_async()));
    assert!(!rx.same_channel(&rx_b));
    assert!(!arx.same_channel(&rx_b.to_async()));
}

#[test]
fn same_channel_on_mpmc_handles() {
    let (tx, rx) = mpmc::unbounded::<i32>();
    let (tx_b, rx_b) = mpmc::unbounded::<i32>();
    let atx = tx.clone().into_async();
    assert!(tx.same_channel(&tx.clone()));
    assert!(tx.same_channel(&atx.clone().into_sync()));
    assert!(atx.same_channel(&mpmc::AsyncSender::from(tx.clone())));
    assert!(!tx.same_channel(&tx_b));
    assert!(!atx.same_channel(&tx_b.clone().into_async()));

    let weak = tx.downgrade();
    assert!(weak.same_channel(&atx.downgrade()));
    assert!(!weak.same_channel(&tx_b.downgrade()));
    assert!(weak.upgrade().unwrap().same_channel(&tx));

    let srx: Receiver<i32> = rx.clone();
    assert!(srx.same_channel(&rx));
    assert!(rx.to_async().same_channel(&rx.clone().into_async()));
    assert!(!rx.same_channel(&rx_b));
}
