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

use crate::handle::WeakSendHandle;

impl<T> Sender<T> {
    pub(crate) fn chan(&self) -> &crate::core::Chan<T> {
        &self.h
    }

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

impl<T> Sender<T> {
    /// A [`WeakSender`] of this channel: it can make new senders while at
    /// least one sender lives, but does not itself keep the channel
    /// connected, and is not counted by [`sender_count`](Self::sender_count).
    ///
    /// ```
    /// let (tx, rx) = amphi::mpmc::unbounded::<i32>();
    /// let weak = tx.downgrade();
    /// assert_eq!(tx.sender_count(), 1);
    /// weak.upgrade().unwrap().send(1).unwrap();
    /// drop(tx);
    /// assert!(weak.upgrade().is_none());
    /// assert_eq!(rx.recv(), Ok(1));
    /// assert!(rx.recv().is_err()); // disconnected although `weak` lives
    /// ```
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            h: self.h.downgrade(),
        }
    }
}

impl<T> AsyncSender<T> {
    /// A [`WeakSender`] of this channel, as [`Sender::downgrade`]. Its
    /// [`upgrade`](WeakSender::upgrade) gives a blocking [`Sender`]; convert
    /// with [`into_async`](Sender::into_async).
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (tx, rx) = amphi::mpmc::unbounded_async::<i32>();
    /// let weak = tx.downgrade();
    /// let tx2 = weak.upgrade().unwrap().into_async();
    /// tx2.send(1).await.unwrap();
    /// drop((tx, tx2));
    /// assert!(weak.upgrade().is_none());
    /// assert_eq!(rx.recv().await, Ok(1));
    /// # });
    /// ```
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            h: self.h.downgrade(),
        }
    }
}

/// A sender that does not count: it keeps no channel connected, and makes a
/// [`Sender`] with [`upgrade`](Self::upgrade) only while some sender still
/// lives. From [`Sender::downgrade`] or [`AsyncSender::downgrade`].
///
/// Once the last sender (blocking or async) is gone, receivers see the
/// disconnection as usual, and `upgrade` returns `None` from then on, for
/// ever. While senders live but every receiver is gone, `upgrade` still
/// succeeds and sends fail as on any sender.
///
/// Useful for a handle that must be able to send without keeping its
/// consumers alive, such as a registry of producers or a back-reference from
/// a task to its own input queue.
///
/// ```
/// use std::thread;
///
/// let (tx, rx) = amphi::mpmc::bounded::<u32>(8);
/// let weak = tx.downgrade();
/// let worker = thread::spawn(move || rx.iter().sum::<u32>());
/// tx.send(1).unwrap();
/// if let Some(tx2) = weak.upgrade() {
///     tx2.send(2).unwrap();
/// }
/// drop(tx); // the upgraded sender is gone too: the worker stops
/// assert_eq!(worker.join().unwrap(), 3);
/// assert!(weak.upgrade().is_none());
/// ```
pub struct WeakSender<T> {
    h: WeakSendHandle<T>,
}

impl<T> WeakSender<T> {
    /// A new sender of this channel, or `None` once every sender is gone
    /// (and then for ever: a disconnected channel never reconnects).
    ///
    /// ```
    /// let (tx, _rx) = amphi::mpmc::bounded::<i32>(1);
    /// let weak = tx.downgrade();
    /// let tx2 = weak.upgrade().unwrap();
    /// assert_eq!(tx.sender_count(), 2);
    /// drop((tx, tx2));
    /// assert!(weak.upgrade().is_none());
    /// ```
    pub fn upgrade(&self) -> Option<Sender<T>> {
        self.h.upgrade().map(|h| Sender {
            h: h.into_blocking(),
        })
    }

    /// True if both weak senders belong to the same channel.
    ///
    /// ```
    /// let (tx, _rx) = amphi::mpmc::bounded::<i32>(1);
    /// let (other, _other_rx) = amphi::mpmc::bounded::<i32>(1);
    /// let weak = tx.downgrade();
    /// assert!(weak.same_channel(&weak.clone()));
    /// assert!(weak.same_channel(&tx.clone().into_async().downgrade()));
    /// assert!(!weak.same_channel(&other.downgrade()));
    /// ```
    pub fn same_channel(&self, other: &Self) -> bool {
        self.h.same_channel(&other.h)
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> Self {
        WeakSender { h: self.h.clone() }
    }
}

impl<T> fmt::Debug for WeakSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakSender")
            .field("capacity", &self.h.chan().capacity())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::core::End;

    /// The core counts blocking sender handles (the hint for receivers
    /// that spin): every way a `Sender` is made, converted or dropped.
    #[test]
    fn blocking_senders_are_counted() {
        let (tx, _rx) = bounded::<u8>(1);
        let weak = tx.downgrade();
        let count = || weak.h.chan().blocking_handles(End::Send);
        assert_eq!(count(), 1);
        let tx2 = tx.clone();
        assert_eq!(count(), 2);
        let atx = tx2.into_async();
        assert_eq!(count(), 1);
        let atx2 = atx.clone();
        assert_eq!(count(), 1);
        let tx3 = weak.upgrade().expect("senders are alive");
        assert_eq!(count(), 2);
        let sink = atx2.into_sink();
        assert_eq!(count(), 2);
        let tx4: Sender<u8> = atx.into();
        assert_eq!(count(), 3);
        drop((tx, tx3, sink));
        assert_eq!(count(), 1);
        let atx3: AsyncSender<u8> = tx4.into();
        assert_eq!(count(), 0);
        let tx5 = atx3.into_sync();
        assert_eq!(count(), 1);
        drop(tx5);
        assert_eq!(count(), 0);
        let (atx, _arx) = unbounded_async::<u8>();
        let weak = atx.downgrade();
        assert_eq!(weak.h.chan().blocking_handles(End::Send), 0);
        let tx = atx.into_sync();
        assert_eq!(weak.h.chan().blocking_handles(End::Send), 1);
        drop(tx);
        assert_eq!(weak.h.chan().blocking_handles(End::Send), 0);
    }

    /// The same for blocking receiver handles (the hint for async senders
    /// that spin).
    #[test]
    fn blocking_receivers_are_counted() {
        let (tx, rx) = bounded::<u8>(1);
        let count = || tx.h.blocking_handles(End::Recv);
        assert_eq!(count(), 1);
        let rx2 = rx.clone();
        assert_eq!(count(), 2);
        let arx = rx2.into_async();
        assert_eq!(count(), 1);
        let arx2 = rx.to_async();
        assert_eq!(count(), 1);
        let rx3 = arx2.to_sync();
        assert_eq!(count(), 2);
        let arx3 = arx.clone();
        assert_eq!(count(), 2);
        let rx4: Receiver<u8> = arx.into();
        assert_eq!(count(), 3);
        let arx4: AsyncReceiver<u8> = rx4.into();
        assert_eq!(count(), 2);
        drop((rx, arx2, arx3, arx4));
        assert_eq!(count(), 1);
        let iter = rx3.into_iter();
        assert_eq!(count(), 1);
        drop(iter);
        assert_eq!(count(), 0);
        let (atx, arx) = bounded_async::<u8>(1);
        assert_eq!(atx.h.blocking_handles(End::Recv), 0);
        let rx = arx.into_sync();
        assert_eq!(atx.h.blocking_handles(End::Recv), 1);
        drop(rx);
        assert_eq!(atx.h.blocking_handles(End::Recv), 0);
    }
}
