//! Every public handle, iterator, future, stream and sink is `UnwindSafe` and
//! `RefUnwindSafe` whatever its payload, and a panic never leaves a channel
//! unusable.
// The loom models (`tests/loom.rs`) run under `--cfg loom`; these tests do not.
#![cfg(not(loom))]

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe, RefUnwindSafe, UnwindSafe};

use amphi::{mpmc, spmc};

/// A payload that is neither `UnwindSafe` nor `RefUnwindSafe` (a `&mut`
/// and a `Cell` each rule them out): the handles must not inherit that.
#[allow(dead_code)]
struct Fragile(PhantomData<&'static mut Cell<i32>>);

fn unwind_safe<X: UnwindSafe + RefUnwindSafe>() {}

#[test]
fn every_public_type_is_unwind_safe_for_any_payload() {
    type T = Fragile;
    unwind_safe::<spmc::Sender<T>>();
    unwind_safe::<spmc::AsyncSender<T>>();
    unwind_safe::<mpmc::Sender<T>>();
    unwind_safe::<mpmc::AsyncSender<T>>();
    unwind_safe::<mpmc::WeakSender<T>>();
    unwind_safe::<amphi::Receiver<T>>();
    unwind_safe::<amphi::AsyncReceiver<T>>();
    unwind_safe::<amphi::Iter<'static, T>>();
    unwind_safe::<amphi::TryIter<'static, T>>();
    unwind_safe::<amphi::IntoIter<T>>();
    unwind_safe::<amphi::RecvFuture<'static, T>>();
    unwind_safe::<amphi::SendFuture<'static, T>>();
    unwind_safe::<amphi::SendBatchFuture<'static, T>>();
    unwind_safe::<amphi::RecvStream<'static, T>>();
    unwind_safe::<amphi::SendSink<'static, T>>();
    // The same types through the other module's re-exports.
    unwind_safe::<spmc::Receiver<T>>();
    unwind_safe::<mpmc::AsyncReceiver<T>>();
    unwind_safe::<mpmc::RecvStream<'static, T>>();
    unwind_safe::<spmc::SendSink<'static, T>>();
}

#[test]
fn catch_unwind_takes_handles_by_move_and_by_reference() {
    let (tx, rx) = mpmc::bounded::<Cell<i32>>(4);
    tx.send(Cell::new(1)).unwrap();
    let rx2 = rx.clone();
    // By reference: needs `RefUnwindSafe`.
    let got = catch_unwind(|| rx2.recv().unwrap().get()).unwrap();
    assert_eq!(got, 1);
    // By move: needs `UnwindSafe`.
    catch_unwind(move || drop(rx)).unwrap();
    assert_eq!(tx.receiver_count(), 1);
    let arx = rx2.into_async();
    catch_unwind(move || drop(arx)).unwrap();
    assert!(tx.is_disconnected());
}

#[test]
fn a_panic_while_holding_a_sender_leaves_the_channel_working() {
    let (tx, rx) = mpmc::bounded::<i32>(2);
    let tx2 = tx.clone();
    let r = catch_unwind(move || {
        tx2.send(1).unwrap();
        panic!("the producer fails mid-way");
    });
    assert!(r.is_err());
    // The panicking closure's sender was dropped while unwinding.
    assert_eq!(tx.sender_count(), 1);
    tx.send(2).unwrap();
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx.recv(), Ok(2));
    drop(tx);
    assert!(rx.recv().is_err());

    // spmc: the only producer panics away; receivers drain and disconnect.
    let (mut tx, rx) = spmc::bounded::<String>(1);
    let r = catch_unwind(AssertUnwindSafe(|| {
        tx.send("sent".to_string()).unwrap();
        panic!("and then");
    }));
    assert!(r.is_err());
    assert!(tx.try_send("full".to_string()).unwrap_err().is_full());
    let r = catch_unwind(move || {
        let _owned = tx;
        panic!("with the producer");
    });
    assert!(r.is_err());
    assert_eq!(rx.recv().as_deref(), Ok("sent"));
    assert!(rx.recv().is_err());
}

#[test]
fn a_panic_inside_a_receiving_iterator_leaves_the_rest_for_others() {
    let (tx, rx) = mpmc::unbounded::<u32>();
    tx.send_batch(0..10).unwrap();
    let worker = rx.clone();
    let r = catch_unwind(move || {
        for v in worker.iter() {
            if v == 3 {
                panic!("job 3 fails");
            }
        }
    });
    assert!(r.is_err());
    assert_eq!(rx.receiver_count(), 1);
    assert_eq!(
        rx.try_iter().collect::<Vec<_>>(),
        (4..10).collect::<Vec<_>>()
    );
}
