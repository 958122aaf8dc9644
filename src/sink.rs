//! [`SendSink`]: an async sender as a `futures_sink::Sink`.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_sink::Sink;

use crate::core::{Chan, SendWait};
use crate::error::{SendError, TrySendError};
use crate::handle::SendHandle;

/// An async sender as a [`Sink`], from `sink()` (borrows
/// the sender) or `into_sink()` (owns it) on [`spmc::AsyncSender`] and
/// [`mpmc::AsyncSender`]. Use it with `futures::SinkExt` (`send`, `feed`,
/// `send_all`) or as the target of `futures::StreamExt::forward`.
///
/// # Semantics
///
/// - `poll_ready` waits for room and, once it is ready, *holds* that room
///   for the next `start_send`: no other sender (thread or task) can take
///   it. Readying twice holds one slot. The sink waits for room in the
///   channel's FIFO list of senders like any other sender.
/// - `start_send` enqueues at once, into the held room (straight to the
///   oldest waiting receiver, else into the queue); `poll_flush` is ready at
///   once. So the sink itself buffers nothing.
/// - `poll_close` gives back held room. A sink from `into_sink` also drops
///   its sender there (receivers see the disconnection once every sender is
///   gone and the queue is drained); a sink from `sink()` leaves its sender
///   usable, and can itself be used again.
/// - **Disconnection.** Once every receiver is gone, `poll_ready` returns
///   `Ready(Ok(()))` and the following `start_send` returns
///   `Err(SendError(item))` with the item. The error type carries the value
///   (as every send error of this crate does), and `poll_ready` has no value
///   to put in it, so the error is reported by the `start_send` that has
///   one: `forward` and `SinkExt::send` then return the item in the error,
///   nothing is lost. After `poll_close` of an owning sink, `start_send`
///   fails the same way.
/// - **Unbounded channels** always have room: `poll_ready` is ready at once
///   and holds nothing.
/// - **`bounded(0)`** (rendezvous) has no room to hold. There the sink
///   buffers one item, as many `Sink`s do: `poll_ready` is ready once the
///   previous item has been taken; `start_send` hands the item to a waiting
///   receiver thread if there is one, else keeps it where receivers take it
///   from; `poll_flush` (and `poll_ready`, `poll_close`) is ready only once a
///   receiver has taken it, or returns it in `Err(SendError(item))` if every
///   receiver is gone. Flush (`SinkExt::send` and `forward` do) before
///   dropping the sink: an item not yet taken is dropped with it.
/// - After a waker panicked inside the channel, a held slot may have been
///   taken back to keep a value that would otherwise be lost: then
///   `start_send` keeps its item as on `bounded(0)`, and `poll_flush` sends
///   it as soon as there is room.
///
/// # Cancel safety
///
/// Dropping the sink (or a `SinkExt` future on it) never enqueues an item
/// the sink did not accept, and gives held room back: it passes to the next
/// waiting sender, so capacity is never lost. A sink that was waiting for
/// room leaves the list of waiting senders.
///
/// # Panics
///
/// `start_send` panics if called while an item it kept (`bounded(0)`, see
/// above) has not been flushed, that is, without a `poll_ready` that
/// returned `Ready(Ok(()))` since.
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// # futures::executor::block_on(async {
/// let (tx, rx) = amphi::mpmc::bounded_async(4);
/// let consumer = async {
///     let (out, _rx) = amphi::mpmc::unbounded_async::<i32>();
///     let mut sink = out.sink();
///     // Take values from `rx` and send each one through the sink.
///     rx.stream().map(Ok).forward(&mut sink).await.unwrap();
///     out.len()
/// };
/// let producer = async move {
///     let mut sink = tx.into_sink();
///     for i in 0..10 {
///         sink.send(i).await.unwrap();
///     }
///     sink.close().await.unwrap(); // drops the sender: the stream ends
/// };
/// let (n, ()) = futures::join!(consumer, producer);
/// assert_eq!(n, 10);
/// # });
/// ```
///
/// [`spmc::AsyncSender`]: crate::spmc::AsyncSender
/// [`mpmc::AsyncSender`]: crate::mpmc::AsyncSender
#[must_use = "sinks do nothing unless used"]
pub struct SendSink<'a, T> {
    tx: Source<'a, T>,
    /// The waiter node, boxed once per sink (on the first wait for room or
    /// first kept item) and reused, so that the sink stays `Unpin`.
    wait: Option<Pin<Box<SendWait<T>>>>,
    state: State,
}

enum Source<'a, T> {
    Borrowed(&'a SendHandle<T>),
    Owned(SendHandle<T>),
    /// An owning sink after `poll_close`: its sender is gone.
    Closed,
}

/// What the sink's wait is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Nothing held, nothing kept.
    Idle,
    /// Waiting for room (the node is, or was, among the waiting senders).
    Reserving,
    /// Room is held (a grant counted in the core).
    Holding,
    /// An accepted item is kept in the wait, not yet taken (`bounded(0)`,
    /// or a held slot that was taken back).
    Sending,
}

impl<'a, T> SendSink<'a, T> {
    pub(crate) fn borrowed(tx: &'a SendHandle<T>) -> Self {
        SendSink {
            tx: Source::Borrowed(tx),
            wait: None,
            state: State::Idle,
        }
    }

    pub(crate) fn owned(tx: SendHandle<T>) -> Self {
        SendSink {
            tx: Source::Owned(tx),
            wait: None,
            state: State::Idle,
        }
    }
}

impl<T> SendSink<'_, T> {
    /// The sink's channel, or `None` once an owning sink is closed.
    fn chan(&self) -> Option<&Chan<T>> {
        match &self.tx {
            Source::Borrowed(tx) => Some(tx),
            Source::Owned(tx) => Some(tx),
            Source::Closed => None,
        }
    }

    /// Splits the sink into its channel and its (boxed on first use) wait.
    fn parts(&mut self) -> (Option<&Chan<T>>, Pin<&mut SendWait<T>>) {
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(SendWait::new(None)))
            .as_mut();
        let chan: Option<&Chan<T>> = match &self.tx {
            Source::Borrowed(tx) => Some(tx),
            Source::Owned(tx) => Some(tx),
            Source::Closed => None,
        };
        (chan, wait)
    }

    /// Drives a kept item until a receiver has it: `Ready(Ok)` once it is
    /// sent (or if nothing is kept), `Ready(Err)` with it if every receiver
    /// is gone.
    fn poll_kept(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        if self.state != State::Sending {
            return Poll::Ready(Ok(()));
        }
        let (chan, wait) = self.parts();
        let chan = chan.expect("an item is kept only while the sender lives");
        let r = chan.poll_send(wait, cx);
        if r.is_ready() {
            self.state = State::Idle;
        }
        r.map_err(SendError)
    }

    /// Gives back held room and leaves the list of waiting senders.
    fn release(&mut self) {
        match self.state {
            State::Holding => {
                self.state = State::Idle;
                if let Some(chan) = self.chan() {
                    chan.release_reserved();
                }
            }
            State::Reserving => {
                self.state = State::Idle;
                let (chan, wait) = self.parts();
                if let Some(chan) = chan {
                    // A slot granted meanwhile passes to the next sender.
                    chan.cancel_send(wait);
                }
            }
            State::Idle | State::Sending => {}
        }
    }

    /// `poll_ready`: see the type's docs.
    fn ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        match self.poll_kept(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) => {}
        }
        if self.state == State::Holding {
            return Poll::Ready(Ok(()));
        }
        let Some(cap) = self.chan().map(Chan::capacity) else {
            // Closed: the next `start_send` gives its item back.
            return Poll::Ready(Ok(()));
        };
        if !matches!(cap, Some(c) if c > 0) {
            // Unbounded: always room. Rendezvous: no room to hold; the item
            // is kept by `start_send` instead.
            return Poll::Ready(Ok(()));
        }
        let (chan, wait) = self.parts();
        let chan = chan.expect("the sender lives (checked above)");
        match chan.poll_reserve(wait, cx) {
            Poll::Pending => {
                self.state = State::Reserving;
                Poll::Pending
            }
            Poll::Ready(Ok(())) => {
                self.state = State::Holding;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(())) => {
                // Every receiver is gone: `start_send` reports it, with the
                // item.
                self.state = State::Idle;
                Poll::Ready(Ok(()))
            }
        }
    }

    /// `start_send`: see the type's docs.
    fn start(&mut self, item: T) -> Result<(), SendError<T>> {
        assert!(
            self.state != State::Sending,
            "SendSink::start_send called before poll_ready returned Ready(Ok(()))"
        );
        if self.state == State::Reserving {
            // Not ready yet (a misuse of the `Sink` contract): stop waiting
            // for room and send as a plain async send would.
            self.release();
        }
        let holding = self.state == State::Holding;
        self.state = State::Idle;
        let Some(chan) = self.chan() else {
            return Err(SendError(item));
        };
        let r = if holding {
            chan.send_reserved(item)
        } else {
            chan.try_send(item)
        };
        match r {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(v)) => Err(SendError(v)),
            Err(TrySendError::Full(v)) => {
                // `bounded(0)` without a waiting receiver thread, or held
                // room taken back: keep the item until a receiver takes it.
                let (_, wait) = self.parts();
                wait.set_value(v);
                self.state = State::Sending;
                Ok(())
            }
        }
    }

    /// `poll_close`: see the type's docs.
    fn close(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError<T>>> {
        let kept = match self.poll_kept(cx) {
            Poll::Pending => return Poll::Pending,
            // Sent, or given back in the error: nothing is kept any more.
            Poll::Ready(r) => r,
        };
        self.release();
        if let Source::Owned(_) = self.tx {
            // Drops the sender (after the wait is cleared above).
            self.tx = Source::Closed;
        }
        Poll::Ready(kept)
    }
}

impl<T> Sink<T> for SendSink<'_, T> {
    type Error = SendError<T>;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.get_mut().ready(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: T) -> Result<(), Self::Error> {
        self.get_mut().start(item)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.get_mut().poll_kept(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.get_mut().close(cx)
    }
}

impl<T> Drop for SendSink<'_, T> {
    fn drop(&mut self) {
        match self.state {
            State::Idle => {}
            State::Holding | State::Reserving => self.release(),
            State::Sending => {
                // An accepted item not yet taken is dropped, after the lock
                // (on `bounded(0)`, one a receiver already took stays sent).
                self.state = State::Idle;
                let (chan, wait) = self.parts();
                if let Some(chan) = chan {
                    chan.cancel_send(wait);
                }
            }
        }
    }
}

impl<T> fmt::Debug for SendSink<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendSink")
            .field("holds_room", &(self.state == State::Holding))
            .field("keeps_item", &(self.state == State::Sending))
            .field("owns_sender", &matches!(self.tx, Source::Owned(_)))
            .field("closed", &matches!(self.tx, Source::Closed))
            .finish_non_exhaustive()
    }
}
