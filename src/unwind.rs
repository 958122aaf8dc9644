//! Unwind safety of every public handle, iterator, future, stream and sink.
//!
//! The handles share the core through `Arc<Chan<T>>` (or borrow it), and the
//! core holds a mutex and raw pointers to waiter nodes, so the compiler cannot see for itself that
//! they are `UnwindSafe` / `RefUnwindSafe`. They are, for any `T`, as in
//! crossbeam-channel (and std's mpsc, flume, async-channel):
//!
//! - every change to the core's state is made under its lock, in short
//!   critical sections that run no user code: wake-ups, and drops of values
//!   and wakers, are deferred until the lock is released (`waiter::Deferred`),
//!   so a panic in a waker or in a payload's `Drop` finds the state whole;
//! - the lock (`sync::RawLock` under `lock_api`'s guard) does not poison: a
//!   panic, wherever it happens, leaves no lock held and no channel unusable
//!   (a receive whose deferred wake-up panics even puts the value it took
//!   back at the front);
//! - no handle lends out a `&T` or `&mut T` into the channel: a value is
//!   moved in by a send and moved out by a receive, so a `T` that a panic
//!   left half-updated can only be one the panicking code itself still owns.
//!
//! So catching a panic never lets anyone observe a broken channel invariant,
//! which is what `UnwindSafe` asks. There is no poisoning to opt out of.
//!
//! Types added later (selectors) belong here too.

use std::panic::{RefUnwindSafe, UnwindSafe};

/// Declares `UnwindSafe` and `RefUnwindSafe` for each listed type, for any
/// `T` (and any lifetime).
macro_rules! unwind_safe {
    ($($ty:ty),* $(,)?) => {
        $(
            impl<T> UnwindSafe for $ty {}
            impl<T> RefUnwindSafe for $ty {}
        )*
    };
}

unwind_safe!(
    crate::spmc::Sender<T>,
    crate::spmc::AsyncSender<T>,
    crate::mpmc::Sender<T>,
    crate::mpmc::AsyncSender<T>,
    crate::mpmc::WeakSender<T>,
    crate::Receiver<T>,
    crate::AsyncReceiver<T>,
    crate::Iter<'_, T>,
    crate::TryIter<'_, T>,
    crate::IntoIter<T>,
    crate::RecvFuture<'_, T>,
    crate::SendFuture<'_, T>,
    crate::SendBatchFuture<'_, T>,
    crate::RecvStream<'_, T>,
    crate::SendSink<'_, T>,
);
