//! Single producer, competing consumers.
//!
//! One [`Sender`] (or [`AsyncSender`]) feeds any number of cloneable
//! receivers; each value goes to exactly one of them, in FIFO order. The
//! producer is exclusive: it is not `Clone` and every sending method takes
//! `&mut self`, so the core keeps a single waiter slot for it instead of a
//! queue of waiting senders.
//!
//! ```
//! use std::thread;
//!
//! let (mut tx, rx) = amphi::spmc::bounded(64);
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let rx = rx.clone();
//!         thread::spawn(move || rx.iter().count())
//!     })
//!     .collect();
//! drop(rx);
//! for job in 0..1000 {
//!     tx.send(job).unwrap();
//! }
//! drop(tx);
//! let done: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
//! assert_eq!(done, 1000);
//! ```
//!
//! The producer cannot be cloned:
//!
//! ```compile_fail
//! let (tx, _rx) = amphi::spmc::bounded::<i32>(1);
//! let _tx2 = tx.clone();
//! ```
//!
//! and sending needs `&mut`:
//!
//! ```compile_fail
//! let (tx, _rx) = amphi::spmc::bounded::<i32>(1);
//! let tx = &tx;
//! tx.send(1).unwrap();
//! ```
//!
//! ```compile_fail
//! let (tx, _rx) = amphi::spmc::bounded_async::<i32>(1);
//! let tx = &tx;
//! let _ = tx.try_send(1);
//! ```
//!
//! Handles are not `Send` when the payload is not:
//!
//! ```compile_fail
//! fn must_send<X: Send>(_: X) {}
//! let (tx, _rx) = amphi::spmc::bounded::<std::rc::Rc<i32>>(1);
//! must_send(tx);
//! ```
//!
//! ```compile_fail
//! fn must_send<X: Send>(_: X) {}
//! let (_tx, rx) = amphi::spmc::unbounded_async::<std::rc::Rc<i32>>();
//! must_send(rx);
//! ```

flavor!("spmc", crate::core::Flavor::Spmc, (mut), "mut tx");
