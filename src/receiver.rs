//! The receiving handles, shared by [`spmc`](crate::spmc) and
//! [`mpmc`](crate::mpmc): blocking [`Receiver`] and async [`AsyncReceiver`],
//! two views of the same core.

use std::fmt;
use std::time::{Duration, Instant};

use crate::core::Chan;
use crate::error::{RecvError, RecvTimeoutError, TryRecvError};
use crate::future::{RecvFuture, RecvStream};
use crate::handle::RecvHandle;

/// The receiving side of a channel, for threads: blocking calls park the
/// thread until a value arrives.
///
/// Receivers are `Clone`; each value goes to exactly one of them (competing
/// consumers), in the queue's FIFO order. The channel disconnects for senders
/// only when the last receiver (blocking or async) is dropped.
///
/// Do not call the blocking methods from inside an async task: they block the
/// executor's thread. Use [`to_async`](Receiver::to_async) there.
///
/// ```
/// use std::thread;
///
/// let (mut tx, rx) = amphi::spmc::bounded(4);
/// let workers: Vec<_> = (0..2)
///     .map(|_| {
///         let rx = rx.clone();
///         thread::spawn(move || rx.iter().sum::<u64>())
///     })
///     .collect();
/// drop(rx);
/// for i in 1..=100 {
///     tx.send(i).unwrap();
/// }
/// drop(tx);
/// let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
/// assert_eq!(total, 5050);
/// ```
pub struct Receiver<T> {
    h: RecvHandle<T>,
}

/// The receiving side of a channel, for async tasks on any executor.
///
/// Async and blocking receivers of one channel wait in the same FIFO list and
/// compete for the same values.
///
/// ```
/// # futures::executor::block_on(async {
/// let (mut tx, rx) = amphi::spmc::unbounded_async();
/// tx.send(1).await.unwrap();
/// assert_eq!(rx.recv().await, Ok(1));
/// # });
/// ```
pub struct AsyncReceiver<T> {
    h: RecvHandle<T>,
}

impl<T> Receiver<T> {
    pub(crate) fn new(h: RecvHandle<T>) -> Self {
        Receiver {
            h: h.into_blocking(),
        }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.h
    }

    /// Waits for a value; fails only when the channel is empty and every
    /// sender is gone.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded(1);
    /// std::thread::spawn(move || tx.send(5).unwrap());
    /// assert_eq!(rx.recv(), Ok(5));
    /// assert!(rx.recv().is_err());
    /// ```
    pub fn recv(&self) -> Result<T, RecvError> {
        self.h.recv(None).map_err(|_| RecvError)
    }

    /// Takes a value if one is ready (or, on `bounded(0)`, if a sender is
    /// waiting).
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded(1);
    /// assert!(rx.try_recv().unwrap_err().is_empty());
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.h.try_recv()
    }

    /// Waits at most `timeout` for a value. A value that is available wins
    /// over an expired timeout; `Duration::MAX` waits for ever.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (_tx, rx) = amphi::spmc::bounded::<i32>(1);
    /// assert!(rx.recv_timeout(Duration::from_millis(5)).unwrap_err().is_timeout());
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.h.recv(Instant::now().checked_add(timeout))
    }

    /// Waits until `deadline` for a value.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (mut tx, rx) = amphi::spmc::bounded(1);
    /// tx.send(3).unwrap();
    /// assert_eq!(rx.recv_deadline(Instant::now() - Duration::from_secs(1)), Ok(3));
    /// ```
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.h.recv(Some(deadline))
    }

    /// Waits for at least one value, then appends it and whatever else is
    /// ready, up to `limit` values in all, to `buf` in the order received.
    /// Returns how many were appended; 0 means the channel is disconnected
    /// and drained (or `limit` is 0). Other receivers may take values in
    /// between (each value still goes to exactly one receiver).
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::unbounded();
    /// tx.send_batch(0..10).unwrap();
    /// let mut buf = Vec::new();
    /// assert_eq!(rx.recv_many(&mut buf, 4), 4);
    /// assert_eq!(buf, [0, 1, 2, 3]);
    /// ```
    pub fn recv_many(&self, buf: &mut Vec<T>, limit: usize) -> usize {
        match self.h.recv_many_ready(buf, limit) {
            Some(n) => n,
            None => self.h.recv_many_rest(self.recv(), buf, limit),
        }
    }

    /// Appends up to `limit` ready values to `buf` without waiting. Returns
    /// how many.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded(8);
    /// tx.send_batch([1, 2, 3]).unwrap();
    /// let mut buf = Vec::new();
    /// assert_eq!(rx.try_recv_many(&mut buf, 10), 3);
    /// assert_eq!(rx.try_recv_many(&mut buf, 10), 0);
    /// ```
    pub fn try_recv_many(&self, buf: &mut Vec<T>, limit: usize) -> usize {
        self.h.try_recv_many(buf, limit)
    }

    /// A blocking iterator over received values; it ends when the channel is
    /// disconnected and drained.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::unbounded();
    /// tx.send_batch([1, 2]).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the values ready now.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::unbounded();
    /// tx.send_batch([1, 2]).unwrap();
    /// assert_eq!(rx.try_iter().count(), 2);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    /// Converts into an async receiver of the same channel, for free.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded(1);
    /// let rx = rx.into_async();
    /// tx.send(2).unwrap();
    /// assert_eq!(futures::executor::block_on(rx.recv()), Ok(2));
    /// ```
    pub fn into_async(self) -> AsyncReceiver<T> {
        AsyncReceiver {
            h: self.h.into_nonblocking(),
        }
    }

    /// An async receiver of the same channel (a new receiver, like a clone).
    ///
    /// ```
    /// let (_tx, rx) = amphi::spmc::bounded::<i32>(1);
    /// let arx = rx.to_async();
    /// assert_eq!(rx.receiver_count(), 2);
    /// # drop(arx);
    /// ```
    pub fn to_async(&self) -> AsyncReceiver<T> {
        AsyncReceiver {
            h: self.h.clone().into_nonblocking(),
        }
    }
}

impl<T> AsyncReceiver<T> {
    pub(crate) fn new(h: RecvHandle<T>) -> Self {
        AsyncReceiver { h }
    }

    /// Waits for a value; fails only when the channel is empty and every
    /// sender is gone.
    ///
    /// While a blocking sender of the channel is alive ([`spmc`'s
    /// `Sender`](crate::spmc::Sender) or [`mpmc`'s](crate::mpmc::Sender): a
    /// producer on a thread of its own), a poll that finds nothing
    /// to take first spins for about a microsecond for that thread's next
    /// value before it registers its waker: a sync producer feeding tasks
    /// then rarely has to wake a parked executor thread per value. Channels
    /// whose senders are all async never spin.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future never loses a value, and a wake-up it
    /// received but did not use passes to another waiting receiver.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (mut tx, rx) = amphi::spmc::bounded_async(1);
    /// tx.send("hi").await.unwrap();
    /// assert_eq!(rx.recv().await, Ok("hi"));
    /// # });
    /// ```
    pub fn recv(&self) -> RecvFuture<'_, T> {
        RecvFuture::new(&self.h)
    }

    /// Takes a value if one is ready.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded_async(1);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.h.try_recv()
    }

    /// Waits for at least one value, then appends up to `limit` values to
    /// `buf`. Returns how many; 0 means disconnected and drained (or `limit`
    /// is 0).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: values are appended only when the future completes.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// let (mut tx, rx) = amphi::spmc::unbounded_async();
    /// tx.send_batch(0..5).await.unwrap();
    /// let mut buf = Vec::new();
    /// assert_eq!(rx.recv_many(&mut buf, 8).await, 5);
    /// # });
    /// ```
    pub async fn recv_many(&self, buf: &mut Vec<T>, limit: usize) -> usize {
        match self.h.recv_many_ready(buf, limit) {
            Some(n) => n,
            None => self.h.recv_many_rest(self.recv().await, buf, limit),
        }
    }

    /// Appends up to `limit` ready values to `buf` without waiting.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::unbounded_async();
    /// tx.try_send(1).unwrap();
    /// let mut buf = Vec::new();
    /// assert_eq!(rx.try_recv_many(&mut buf, 4), 1);
    /// ```
    pub fn try_recv_many(&self, buf: &mut Vec<T>, limit: usize) -> usize {
        self.h.try_recv_many(buf, limit)
    }

    /// A [`Stream`](futures_core::Stream) of values borrowing this receiver.
    ///
    /// ```
    /// use futures::StreamExt;
    /// # futures::executor::block_on(async {
    /// let (mut tx, rx) = amphi::spmc::unbounded_async();
    /// tx.send_batch([1, 2, 3]).await.unwrap();
    /// drop(tx);
    /// assert_eq!(rx.stream().collect::<Vec<_>>().await, [1, 2, 3]);
    /// # });
    /// ```
    pub fn stream(&self) -> RecvStream<'_, T> {
        RecvStream::borrowed(self)
    }

    /// A [`Stream`](futures_core::Stream) of values that owns this receiver.
    ///
    /// ```
    /// use futures::StreamExt;
    /// # futures::executor::block_on(async {
    /// let (mut tx, rx) = amphi::spmc::unbounded_async();
    /// tx.send(1).await.unwrap();
    /// drop(tx);
    /// let mut s = rx.into_stream();
    /// assert_eq!(s.next().await, Some(1));
    /// assert_eq!(s.next().await, None);
    /// # });
    /// ```
    pub fn into_stream(self) -> RecvStream<'static, T> {
        RecvStream::owned(self)
    }

    /// Converts into a blocking receiver of the same channel, for free.
    ///
    /// ```
    /// let (mut tx, rx) = amphi::spmc::bounded_async(1);
    /// tx.try_send(1).unwrap();
    /// assert_eq!(rx.into_sync().recv(), Ok(1));
    /// ```
    pub fn into_sync(self) -> Receiver<T> {
        Receiver {
            h: self.h.into_blocking(),
        }
    }

    /// A blocking receiver of the same channel (a new receiver, like a clone).
    ///
    /// ```
    /// let (_tx, rx) = amphi::spmc::bounded_async::<i32>(1);
    /// let srx = rx.to_sync();
    /// assert_eq!(srx.receiver_count(), 2);
    /// ```
    pub fn to_sync(&self) -> Receiver<T> {
        Receiver {
            h: self.h.clone().into_blocking(),
        }
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.h
    }
}

/// The state queries, identical on both receiver views.
macro_rules! receiver_queries {
    ($ty:ident, $ctor:literal) => {
        impl<T> $ty<T> {
            /// How many values are buffered.
            ///
            /// ```
            #[doc = concat!("let (mut tx, rx) = amphi::spmc::", $ctor, "(4);")]
            /// tx.try_send(1).unwrap();
            /// assert_eq!(rx.len(), 1);
            /// ```
            pub fn len(&self) -> usize {
                self.h.len()
            }

            /// True if no value is buffered.
            ///
            /// ```
            #[doc = concat!("let (_tx, rx) = amphi::spmc::", $ctor, "::<i32>(4);")]
            /// assert!(rx.is_empty());
            /// ```
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// True if a `try_send` would find no room now (always true for
            /// `bounded(0)`, never for unbounded channels).
            ///
            /// ```
            #[doc = concat!("let (mut tx, rx) = amphi::spmc::", $ctor, "(1);")]
            /// tx.try_send(1).unwrap();
            /// assert!(rx.is_full());
            /// ```
            pub fn is_full(&self) -> bool {
                self.h.is_full()
            }

            /// The capacity; `None` for an unbounded channel.
            ///
            /// ```
            #[doc = concat!("let (_tx, rx) = amphi::spmc::", $ctor, "::<i32>(3);")]
            /// assert_eq!(rx.capacity(), Some(3));
            /// ```
            pub fn capacity(&self) -> Option<usize> {
                self.h.capacity()
            }

            /// How many receivers (blocking and async) the channel has.
            ///
            /// ```
            #[doc = concat!("let (_tx, rx) = amphi::spmc::", $ctor, "::<i32>(1);")]
            /// let rx2 = rx.clone();
            /// assert_eq!(rx2.receiver_count(), 2);
            /// ```
            pub fn receiver_count(&self) -> usize {
                self.h.receiver_count()
            }

            /// How many senders the channel has (for spmc: 1 until the
            /// producer is dropped, then 0).
            ///
            /// ```
            #[doc = concat!("let (tx, rx) = amphi::spmc::", $ctor, "::<i32>(1);")]
            /// assert_eq!(rx.sender_count(), 1);
            /// drop(tx);
            /// assert_eq!(rx.sender_count(), 0);
            /// ```
            pub fn sender_count(&self) -> usize {
                self.h.sender_count()
            }

            /// True if every sender is gone (values may still be buffered).
            ///
            /// ```
            #[doc = concat!("let (tx, rx) = amphi::spmc::", $ctor, "::<i32>(1);")]
            /// drop(tx);
            /// assert!(rx.is_disconnected());
            /// ```
            pub fn is_disconnected(&self) -> bool {
                self.h.sender_count() == 0
            }

            /// True if both receivers belong to the same channel (clones and
            /// conversions of one receiver do).
            ///
            /// ```
            #[doc = concat!("let (_tx, rx) = amphi::spmc::", $ctor, "::<i32>(1);")]
            #[doc = concat!("let (_other_tx, other) = amphi::spmc::", $ctor, "::<i32>(1);")]
            /// assert!(rx.same_channel(&rx.clone()));
            /// assert!(!rx.same_channel(&other));
            /// ```
            pub fn same_channel(&self, other: &Self) -> bool {
                self.h.same_channel(&other.h)
            }
        }

        impl<T> Clone for $ty<T> {
            fn clone(&self) -> Self {
                $ty { h: self.h.clone() }
            }
        }

        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("len", &self.len())
                    .field("capacity", &self.capacity())
                    .finish_non_exhaustive()
            }
        }
    };
}

receiver_queries!(Receiver, "bounded");
receiver_queries!(AsyncReceiver, "bounded_async");

impl<T> From<Receiver<T>> for AsyncReceiver<T> {
    fn from(rx: Receiver<T>) -> Self {
        rx.into_async()
    }
}

impl<T> From<AsyncReceiver<T>> for Receiver<T> {
    fn from(rx: AsyncReceiver<T>) -> Self {
        rx.into_sync()
    }
}

/// A blocking iterator over a [`Receiver`]'s values, from
/// [`Receiver::iter`].
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

/// A non-blocking iterator over the values ready now, from
/// [`Receiver::try_iter`].
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

/// An owning blocking iterator, from `Receiver`'s `IntoIterator`.
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter").finish_non_exhaustive()
    }
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}
