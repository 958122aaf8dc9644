//! Many producers, competing consumers.
//!
//! Like [`spmc`](crate::spmc), on the same core, with cloneable senders that
//! send through `&self`. Waiting senders are served in arrival order, and the
//! channel disconnects for receivers only when the last sender (blocking or
//! async, clones included) is gone.
//!
//! ```
//! use std::thread;
//!
//! let (tx, rx) = amphi::mpmc::bounded(16);
//! let producers: Vec<_> = (0..4)
//!     .map(|p| {
//!         let tx = tx.clone();
//!         thread::spawn(move || (0..100).for_each(|i| tx.send(p * 100 + i).unwrap()))
//!     })
//!     .collect();
//! drop(tx);
//! let consumer = thread::spawn(move || rx.iter().count());
//! producers.into_iter().for_each(|p| p.join().unwrap());
//! assert_eq!(consumer.join().unwrap(), 400);
//! ```

flavor!("mpmc", crate::core::Flavor::Mpmc, (), "tx");

impl<T> Sender<T> {
    /// How many senders (blocking and async) the channel has.
    ///
    /// ```
    /// let (tx, _rx) = amphi::mpmc::bounded::<i32>(1);
    /// let tx2 = tx.clone();
    /// assert_eq!(tx2.sender_count(), 2);
    /// ```
    pub fn sender_count(&self) -> usize {
        self.h.sender_count()
    }
}

impl<T> AsyncSender<T> {
    /// How many senders (blocking and async) the channel has.
    ///
    /// ```
    /// let (tx, _rx) = amphi::mpmc::bounded_async::<i32>(1);
    /// let _tx2 = tx.clone();
    /// assert_eq!(tx.sender_count(), 2);
    /// ```
    pub fn sender_count(&self) -> usize {
        self.h.sender_count()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            h: self.h.another(),
        }
    }
}

impl<T> Clone for AsyncSender<T> {
    fn clone(&self) -> Self {
        AsyncSender {
            h: self.h.another(),
        }
    }
}
