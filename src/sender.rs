//! The producer side of a flavor, written once: `spmc` and `mpmc` each expand
//! `flavor!` with their own sending receiver (`&mut self` or `&self`); the
//! core does the work.

/// Defines a flavor's constructors, `Sender` and `AsyncSender`.
///
/// `$m` is the module name (for doc examples), `$flavor` the core's flavor,
/// `$($mut)?` the `mut` of `&mut self` (spmc) or nothing (mpmc), and `$tx` the
/// binding doc examples use for a sender.
macro_rules! flavor {
    ($m:literal, $flavor:expr, ($($mut:tt)?), $tx:literal) => {
        use std::collections::VecDeque;
        use std::fmt;
        use std::time::{Duration, Instant};

        use crate::handle::{pair, SendHandle};

        pub use crate::error::{
            RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
        };
        pub use crate::future::{RecvFuture, RecvStream, SendBatchFuture, SendFuture};
        pub use crate::receiver::{AsyncReceiver, IntoIter, Iter, Receiver, TryIter};
        pub use crate::sink::SendSink;

        /// A channel that holds at most `cap` values, with blocking handles.
        /// `bounded(0)` is a rendezvous channel: a send completes only when a
        /// receiver takes the value.
        ///
        /// Memory: up to a capacity of 1,024, each value's slot (the value
        /// and a word) has a 64-byte cache line of its own, so that the
        /// producer and the consumers do not pass lines between their cores
        /// for every value (64 KiB at capacity 1,024 for values of up to 48
        /// bytes); larger capacities pack the slots densely.
        ///
        /// # Panics
        ///
        /// If storage for `cap` values cannot be allocated (it is allocated
        /// up front).
        ///
        /// ```
        #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded(2);")]
        /// tx.send(1).unwrap();
        /// tx.send(2).unwrap();
        /// assert!(tx.try_send(3).unwrap_err().is_full());
        /// assert_eq!(rx.recv(), Ok(1));
        /// ```
        pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
            let (tx, rx) = pair(Some(cap), $flavor);
            (Sender { h: tx.into_blocking() }, Receiver::new(rx))
        }

        /// A channel without a capacity limit, with blocking handles: `send`
        /// never waits.
        ///
        /// ```
        #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::unbounded();")]
        /// for i in 0..1000 {
        ///     tx.send(i).unwrap();
        /// }
        /// assert_eq!(rx.len(), 1000);
        /// ```
        pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
            let (tx, rx) = pair(None, $flavor);
            (Sender { h: tx.into_blocking() }, Receiver::new(rx))
        }

        /// Like [`bounded`], with async handles.
        ///
        /// # Panics
        ///
        /// If storage for `cap` values cannot be allocated.
        ///
        /// ```
        /// # futures::executor::block_on(async {
        #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded_async(1);")]
        /// tx.send(1).await.unwrap();
        /// assert_eq!(rx.recv().await, Ok(1));
        /// # });
        /// ```
        pub fn bounded_async<T>(cap: usize) -> (AsyncSender<T>, AsyncReceiver<T>) {
            let (tx, rx) = pair(Some(cap), $flavor);
            (AsyncSender { h: tx }, AsyncReceiver::new(rx))
        }

        /// Like [`unbounded`], with async handles.
        ///
        /// ```
        /// # futures::executor::block_on(async {
        #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::unbounded_async();")]
        /// tx.send(1).await.unwrap();
        /// assert_eq!(rx.recv().await, Ok(1));
        /// # });
        /// ```
        pub fn unbounded_async<T>() -> (AsyncSender<T>, AsyncReceiver<T>) {
            let (tx, rx) = pair(None, $flavor);
            (AsyncSender { h: tx }, AsyncReceiver::new(rx))
        }

        /// The sending side of a channel, for threads: `send` blocks while
        /// the channel is full.
        ///
        /// Do not call the blocking methods from inside an async task: they
        /// block the executor's thread. Use [`into_async`](Sender::into_async)
        /// there.
        pub struct Sender<T> {
            h: SendHandle<T>,
        }

        /// The sending side of a channel, for async tasks on any executor.
        pub struct AsyncSender<T> {
            h: SendHandle<T>,
        }

        impl<T> Sender<T> {
            /// Sends a value, waiting while the channel is full (on
            /// `bounded(0)`: until a receiver takes it). Fails only when every
            /// receiver is gone, giving the value back.
            ///
            /// ```
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded(1);")]
            /// tx.send(1).unwrap();
            /// drop(rx);
            /// assert_eq!(tx.send(2).unwrap_err().into_inner(), 2);
            /// ```
            pub fn send(&$($mut)? self, value: T) -> Result<(), SendError<T>> {
                self.h.send(value, None).map_err(|e| SendError(e.into_inner()))
            }

            /// Sends a value if there is room now (on `bounded(0)`: if a
            /// receiver is waiting).
            ///
            /// ```
            #[doc = concat!("let (", $tx, ", _rx) = amphi::", $m, "::bounded(1);")]
            /// assert!(tx.try_send(1).is_ok());
            /// assert!(tx.try_send(2).unwrap_err().is_full());
            /// ```
            pub fn try_send(&$($mut)? self, value: T) -> Result<(), TrySendError<T>> {
                self.h.try_send(value)
            }

            /// Sends a value, waiting at most `timeout` for room. A free slot
            /// wins over an expired timeout; `Duration::MAX` waits for ever.
            ///
            /// ```
            /// use std::time::Duration;
            #[doc = concat!("let (", $tx, ", _rx) = amphi::", $m, "::bounded(1);")]
            /// tx.send(1).unwrap();
            /// let err = tx.send_timeout(2, Duration::from_millis(5)).unwrap_err();
            /// assert!(err.is_timeout());
            /// ```
            pub fn send_timeout(&$($mut)? self, value: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
                self.h.send(value, Instant::now().checked_add(timeout))
            }

            /// Sends a value, waiting until `deadline` for room.
            ///
            /// ```
            /// use std::time::Instant;
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded(1);")]
            /// assert!(tx.send_deadline(1, Instant::now()).is_ok());
            /// # drop(rx);
            /// ```
            pub fn send_deadline(&$($mut)? self, value: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
                self.h.send(value, Some(deadline))
            }

            /// Sends every value in order, waiting while the channel is
            /// full: values go straight into the channel's lock-free queue
            /// while it takes them (on an unbounded channel a run of
            /// positions with one atomic claim), and the rest (a receiver
            /// waits, or the channel is full) under one lock acquisition per
            /// run that fits. If every receiver is gone, the error holds the
            /// values not sent.
            ///
            /// ```
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded(16);")]
            /// tx.send_batch(0..10).unwrap();
            /// assert_eq!(rx.len(), 10);
            /// drop(rx);
            /// assert_eq!(tx.send_batch([7, 8]).unwrap_err().into_inner(), [7, 8]);
            /// ```
            pub fn send_batch<I: IntoIterator<Item = T>>(&$($mut)? self, values: I) -> Result<(), SendError<Vec<T>>> {
                let mut values: VecDeque<T> = values.into_iter().collect();
                self.h
                    .send_batch(&mut values)
                    .map_err(|()| SendError(values.into_iter().collect()))
            }

            /// Converts into an async sender of the same channel, for free.
            ///
            /// ```
            #[doc = concat!("let (tx, rx) = amphi::", $m, "::bounded(1);")]
            /// let mut tx = tx.into_async();
            /// futures::executor::block_on(tx.send(1)).unwrap();
            /// assert_eq!(rx.recv(), Ok(1));
            /// ```
            pub fn into_async(self) -> AsyncSender<T> {
                AsyncSender { h: self.h.into_nonblocking() }
            }
        }

        impl<T> AsyncSender<T> {
            /// Sends a value, waiting while the channel is full (on
            /// `bounded(0)`: until a receiver has taken it). Fails only when
            /// every receiver is gone, giving the value back.
            ///
            /// While a blocking [`Receiver`] of the channel is alive (a
            /// consumer on a thread of its own), a send that finds no room
            /// (on `bounded(0)`, no waiting receiver) first spins for about a
            /// microsecond for that thread before it registers its waker.
            /// Channels whose receivers are all async never spin.
            ///
            /// # Cancel safety
            ///
            /// Dropping the pending future drops its value without enqueueing
            /// it and leaves the channel's capacity exactly as it was. (On
            /// `bounded(0)`, a value a receiver already took stays sent.)
            ///
            /// ```
            /// # futures::executor::block_on(async {
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded_async(1);")]
            /// tx.send(1).await.unwrap();
            /// assert_eq!(rx.recv().await, Ok(1));
            /// # });
            /// ```
            pub fn send(&$($mut)? self, value: T) -> SendFuture<'_, T> {
                SendFuture::new(&self.h, value)
            }

            /// Sends a value if there is room now.
            ///
            /// ```
            #[doc = concat!("let (", $tx, ", _rx) = amphi::", $m, "::bounded_async(1);")]
            /// assert!(tx.try_send(1).is_ok());
            /// assert!(tx.try_send(2).unwrap_err().is_full());
            /// ```
            pub fn try_send(&$($mut)? self, value: T) -> Result<(), TrySendError<T>> {
                self.h.try_send(value)
            }

            /// Sends every value in order, waiting while the channel is
            /// full: values go straight into the channel's lock-free queue
            /// while it takes them (on an unbounded channel a run of
            /// positions with one atomic claim), and the rest (a receiver
            /// waits, or the channel is full) under one lock acquisition per
            /// run that fits. If every receiver is gone, the error holds the
            /// values not sent.
            ///
            /// # Cancel safety
            ///
            /// Values already sent stay sent; dropping the future drops the
            /// rest without enqueueing them.
            ///
            /// ```
            /// # futures::executor::block_on(async {
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::unbounded_async();")]
            /// tx.send_batch(0..3).await.unwrap();
            /// assert_eq!(rx.len(), 3);
            /// # });
            /// ```
            pub fn send_batch<I: IntoIterator<Item = T>>(&$($mut)? self, values: I) -> SendBatchFuture<'_, T> {
                SendBatchFuture::new(&self.h, values.into_iter().collect())
            }

            /// A [`Sink`](futures_sink::Sink) that sends through this sender
            /// and leaves it usable when dropped or closed. See [`SendSink`]
            /// for the exact semantics: `poll_ready` waits for room and holds
            /// it for the next `start_send`, which enqueues at once; on
            /// `bounded(0)` the sink keeps one item until a receiver takes
            /// it, so flush before dropping it there.
            ///
            /// ```
            /// use futures::{stream, SinkExt, StreamExt};
            /// # futures::executor::block_on(async {
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded_async(8);")]
            /// let mut sink = tx.sink();
            /// sink.send(0).await.unwrap();
            /// stream::iter(1..5).map(Ok).forward(&mut sink).await.unwrap();
            /// drop(sink);
            /// tx.send(5).await.unwrap(); // the sender is still usable
            /// drop(tx);
            /// assert_eq!(rx.stream().collect::<Vec<_>>().await, [0, 1, 2, 3, 4, 5]);
            /// # });
            /// ```
            ///
            /// Once every receiver is gone, `poll_ready` is ready and the
            /// `start_send` that follows fails, giving its item back:
            ///
            /// ```
            /// use futures::SinkExt;
            /// # futures::executor::block_on(async {
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded_async(1);")]
            /// drop(rx);
            /// assert_eq!(tx.sink().send(7).await.unwrap_err().into_inner(), 7);
            /// # });
            /// ```
            ///
            /// # Cancel safety
            ///
            /// Dropping the sink (or a pending `SinkExt` future on it) never
            /// enqueues an item the sink did not accept, and gives back the
            /// room a ready sink holds: it passes to the next waiting sender
            /// or is free for `try_send`. A sink waiting for room leaves the
            /// list of waiting senders.
            ///
            /// ```
            /// use std::pin::Pin;
            /// use std::task::Context;
            /// use futures::{task::noop_waker_ref, Sink};
            #[doc = concat!("let (", $tx, ", rx) = amphi::", $m, "::bounded_async::<i32>(1);")]
            /// let mut cx = Context::from_waker(noop_waker_ref());
            /// let mut sink = tx.sink();
            /// // Ready: the channel's only slot is held for this sink.
            /// assert!(Pin::new(&mut sink).poll_ready(&mut cx).is_ready());
            /// assert!(rx.is_full());
            /// drop(sink); // gives the slot back, enqueues nothing
            /// assert!(!rx.is_full());
            /// assert!(tx.try_send(1).is_ok());
            /// ```
            pub fn sink(&$($mut)? self) -> SendSink<'_, T> {
                SendSink::borrowed(&self.h)
            }

            /// A [`Sink`](futures_sink::Sink) that owns this sender:
            /// `poll_close` (`SinkExt::close`) drops the sender, so receivers
            /// see the disconnection once every sender is gone and they have
            /// drained the queue. Otherwise as [`sink`](Self::sink), whose
            /// cancel-safety rules apply.
            ///
            /// ```
            /// use futures::{SinkExt, StreamExt};
            /// # futures::executor::block_on(async {
            #[doc = concat!("let (tx, rx) = amphi::", $m, "::bounded_async(4);")]
            /// let producer = async move {
            ///     let mut sink = tx.into_sink();
            ///     for i in 0..10 {
            ///         sink.send(i).await.unwrap();
            ///     }
            ///     sink.close().await.unwrap(); // the sender is gone
            /// };
            /// let consumer = rx.stream().collect::<Vec<_>>();
            /// let ((), got) = futures::join!(producer, consumer);
            /// assert_eq!(got, (0..10).collect::<Vec<_>>());
            /// # });
            /// ```
            pub fn into_sink(self) -> SendSink<'static, T> {
                SendSink::owned(self.h)
            }

            /// Converts into a blocking sender of the same channel, for free.
            ///
            /// ```
            #[doc = concat!("let (tx, rx) = amphi::", $m, "::bounded_async(1);")]
            /// let mut tx = tx.into_sync();
            /// tx.send(1).unwrap();
            /// assert_eq!(rx.try_recv(), Ok(1));
            /// ```
            pub fn into_sync(self) -> Sender<T> {
                Sender { h: self.h.into_blocking() }
            }
        }

        sender_queries!(Sender, $m, "bounded");
        sender_queries!(AsyncSender, $m, "bounded_async");

        impl<T> From<Sender<T>> for AsyncSender<T> {
            fn from(tx: Sender<T>) -> Self {
                tx.into_async()
            }
        }

        impl<T> From<AsyncSender<T>> for Sender<T> {
            fn from(tx: AsyncSender<T>) -> Self {
                tx.into_sync()
            }
        }
    };
}

/// The state queries, identical on every sender.
macro_rules! sender_queries {
    ($ty:ident, $m:literal, $ctor:literal) => {
        impl<T> $ty<T> {
            /// How many values are buffered.
            ///
            /// ```
            #[doc = concat!("let (mut tx, _rx) = amphi::", $m, "::", $ctor, "(4);")]
            /// tx.try_send(1).unwrap();
            /// assert_eq!(tx.len(), 1);
            /// ```
            pub fn len(&self) -> usize {
                self.h.len()
            }

            /// True if no value is buffered.
            ///
            /// ```
            #[doc = concat!("let (tx, _rx) = amphi::", $m, "::", $ctor, "::<i32>(4);")]
            /// assert!(tx.is_empty());
            /// ```
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// True if a `try_send` would find no room now (always true for
            /// `bounded(0)`, never for unbounded channels).
            ///
            /// ```
            #[doc = concat!("let (mut tx, _rx) = amphi::", $m, "::", $ctor, "(1);")]
            /// tx.try_send(1).unwrap();
            /// assert!(tx.is_full());
            /// ```
            pub fn is_full(&self) -> bool {
                self.h.is_full()
            }

            /// The capacity; `None` for an unbounded channel.
            ///
            /// ```
            #[doc = concat!("let (tx, _rx) = amphi::", $m, "::", $ctor, "::<i32>(3);")]
            /// assert_eq!(tx.capacity(), Some(3));
            /// ```
            pub fn capacity(&self) -> Option<usize> {
                self.h.capacity()
            }

            /// How many receivers (blocking and async) the channel has.
            ///
            /// ```
            #[doc = concat!("let (tx, rx) = amphi::", $m, "::", $ctor, "::<i32>(1);")]
            /// let _rx2 = rx.clone();
            /// assert_eq!(tx.receiver_count(), 2);
            /// ```
            pub fn receiver_count(&self) -> usize {
                self.h.receiver_count()
            }

            /// True if every receiver is gone: sends fail from now on.
            ///
            /// ```
            #[doc = concat!("let (tx, rx) = amphi::", $m, "::", $ctor, "::<i32>(1);")]
            /// drop(rx);
            /// assert!(tx.is_disconnected());
            /// ```
            pub fn is_disconnected(&self) -> bool {
                self.h.receiver_count() == 0
            }

            /// True if both senders belong to the same channel.
            ///
            /// ```
            #[doc = concat!("let (tx, _rx) = amphi::", $m, "::", $ctor, "::<i32>(1);")]
            #[doc = concat!("let (other, _other_rx) = amphi::", $m, "::", $ctor, "::<i32>(1);")]
            /// assert!(tx.same_channel(&tx));
            /// assert!(!tx.same_channel(&other));
            /// ```
            pub fn same_channel(&self, other: &Self) -> bool {
                self.h.same_channel(&other.h)
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
