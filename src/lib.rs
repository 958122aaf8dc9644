//! Channels in which OS threads and async tasks share one queue.
//!
//! amphi's channels have one core: a mutex that guards the queue and one FIFO
//! list of waiters, each a parked thread or a task's waker. A blocking
//! [`recv`](spmc::Receiver::recv) and a pending `recv().await` wait in the
//! same list, so worker threads and tasks on any executor (tokio, smol, ...)
//! can compete for the values of one channel, and a blocking producer can feed
//! async consumers (or the other way round).
//!
//! - [`spmc`]: one producer (`send(&mut self)`, not `Clone`), any number of
//!   cloneable receivers; each value goes to exactly one receiver.
//! - [`mpmc`]: the same with cloneable senders.
//!
//! Each flavor has `bounded(cap)` (storage allocated up front, capacity
//! exact; `bounded(0)` is a rendezvous channel), `unbounded()`, and async
//! variants `bounded_async` / `unbounded_async`. Sync and async handles
//! convert into each other for free (`into_async`, `into_sync`).
//!
//! A [`Selector`] waits on several channels at once from a thread; async
//! receive and send futures work in `tokio::select!` and `futures::select!`
//! (they are cancel safe); an async sender is a `futures::Sink` through
//! [`SendSink`] (`sink()` / `into_sink()`).
//!
//! ```
//! use std::thread;
//!
//! let (mut tx, rx) = amphi::spmc::bounded(8);
//!
//! // A worker thread and an async task compete for the same values.
//! let worker = {
//!     let rx = rx.clone();
//!     thread::spawn(move || rx.iter().count())
//! };
//! let task = {
//!     let rx = rx.to_async();
//!     thread::spawn(move || {
//!         futures::executor::block_on(async {
//!             let mut n = 0;
//!             while rx.recv().await.is_ok() {
//!                 n += 1;
//!             }
//!             n
//!         })
//!     })
//! };
//! drop(rx);
//! for i in 0..100 {
//!     tx.send(i).unwrap();
//! }
//! drop(tx);
//! assert_eq!(worker.join().unwrap() + task.join().unwrap(), 100);
//! ```
//!
//! # Guarantees
//!
//! - A value is delivered to exactly one receiver, in the queue's FIFO order;
//!   a value sent while receivers wait goes straight to the oldest of them,
//!   whatever its kind.
//! - Receive futures are cancel safe: dropping one never loses a value.
//!   Dropping a pending send future drops its value without enqueueing it and
//!   leaves the capacity as it was.
//! - Wakers are woken, and values and wakers dropped, only after the lock is
//!   released.
//! - Receivers drain every buffered value after the senders are gone, then
//!   report disconnection. When the last receiver goes, buffered values are
//!   dropped at once and every send fails, returning its value.
//!
//! # Blocking calls inside async code
//!
//! The blocking methods (`send`, `recv`, `recv_timeout`, ...) park the calling
//! thread. Called from inside an async task they block the executor's worker
//! thread, and on a single-threaded executor they can deadlock. Use the async
//! handles there (convert with `into_async` / `to_async`).

#![deny(missing_docs)]
#![warn(missing_debug_implementations, rust_2018_idioms)]

#[macro_use]
mod sender;

mod core;
mod error;
mod future;
mod handle;
mod receiver;
mod ring;
mod select;
mod sink;
mod sync;
mod unwind;
mod waiter;

pub mod mpmc;
pub mod spmc;

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use error::{
    RecvError, RecvTimeoutError, SelectTimeoutError, SendError, SendTimeoutError, TryRecvError,
    TrySendError,
};
pub use future::{RecvFuture, RecvStream, SendBatchFuture, SendFuture};
pub use receiver::{AsyncReceiver, IntoIter, Iter, Receiver, TryIter};
/// Unbounded blocks alive on this thread (loom models only).
#[cfg(loom)]
#[doc(hidden)]
pub use ring::live_blocks as __loom_live_blocks;
pub use select::Selector;
pub use sink::SendSink;
