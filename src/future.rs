//! Futures and streams of the async handles.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::future::FusedFuture;
use futures_core::stream::{FusedStream, Stream};

use crate::core::{Chan, RecvWait, SendWait};
use crate::error::{RecvError, SendError, TryRecvError};
use crate::receiver::AsyncReceiver;

/// The future of [`AsyncReceiver::recv`]: resolves to the next value, or to
/// [`RecvError`] once the channel is empty and every sender is gone.
///
/// While it waits, its waiter node lives inside the future, so it is
/// `!Unpin`: `.await` it, or pin it first (`std::pin::pin!`, `Box::pin`) to
/// poll it by hand or to use it in `futures::select!`.
///
/// ```
/// # futures::executor::block_on(async {
/// let (mut tx, rx) = amphi::spmc::bounded_async(1);
/// let mut fut = std::pin::pin!(rx.recv());
/// tx.send(1).await.unwrap();
/// assert_eq!(fut.as_mut().await, Ok(1));
/// # });
/// ```
///
/// # Cancel safety
///
/// Dropping it never loses a value. On a bounded channel of capacity 2 or
/// more a waiting task is woken rather than handed a value (the value stays
/// in the channel until a receiver takes it), so a dropped future holds
/// nothing, and a wake-up it received but did not use passes to the next
/// waiting receiver (thread or task); so it is on `bounded(0)`, where the
/// woken task takes a waiting sender's value itself. On unbounded and
/// `bounded(1)` channels (and bounded channels too large for a ring) the
/// value is handed to the waiting task (on a bounded channel it keeps its
/// slot until taken); if the future is dropped before it takes it, that
/// value goes to the next waiting receiver or back to the front of the
/// queue, ahead of every other value. So it can be
/// a branch of `tokio::select!` or `futures::select!`: if another branch
/// wins, nothing is lost. It is a [`FusedFuture`], as `futures::select!`
/// requires (pin it first):
///
/// ```
/// use futures::{future::FutureExt, pin_mut, select};
/// # futures::executor::block_on(async {
/// let (mut jobs_tx, jobs) = amphi::spmc::bounded_async::<u32>(4);
/// let (mut stop_tx, stop) = amphi::spmc::bounded_async::<()>(1);
/// stop_tx.send(()).await.unwrap();
/// let stopped = {
///     let job = jobs.recv();
///     let halt = stop.recv();
///     pin_mut!(job, halt);
///     select! {
///         _ = job => false,
///         _ = halt => true,
///     }
///     // Both futures are dropped here. A pinned future that lost stays
///     // registered (and may be woken) until it is dropped.
/// };
/// assert!(stopped);
/// // The losing receive was dropped: a job sent now is still there.
/// jobs_tx.send(7).await.unwrap();
/// assert_eq!(jobs.recv().await, Ok(7));
/// # });
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    chan: &'a Chan<T>,
    wait: RecvWait<T>,
    done: bool,
}

impl<'a, T> RecvFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>) -> Self {
        RecvFuture {
            chan,
            wait: RecvWait::new(),
            done: false,
        }
    }

    fn project(self: Pin<&mut Self>) -> (&'a Chan<T>, Pin<&mut RecvWait<T>>, &mut bool) {
        // SAFETY: `wait` is structurally pinned (never moved out, dropped in
        // place); `chan` and `done` are plain fields.
        unsafe {
            let this = self.get_unchecked_mut();
            (
                this.chan,
                Pin::new_unchecked(&mut this.wait),
                &mut this.done,
            )
        }
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    // Inlined into the caller's poll, with `poll_recv`: see there.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (chan, wait, done) = self.project();
        assert!(!*done, "RecvFuture polled after completion");
        let r = chan.poll_recv(wait, cx.waker());
        if r.is_ready() {
            *done = true;
        }
        r
    }
}

impl<T> FusedFuture for RecvFuture<'_, T> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropped in place: `wait` is not moved (pinned drop).
        let wait = unsafe { Pin::new_unchecked(&mut self.wait) };
        self.chan.cancel_recv(wait);
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture")
            .field("waiting", &self.wait.is_registered())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// A stream of the values of an [`AsyncReceiver`], from
/// [`AsyncReceiver::stream`] or [`AsyncReceiver::into_stream`]. It ends after
/// the last value once every sender is gone.
///
/// # Cancel safety
///
/// Dropping the stream while a `next()` is pending is like dropping a
/// [`RecvFuture`]: nothing is lost.
pub struct RecvStream<'a, T> {
    rx: StreamSource<'a, T>,
    /// The waiter node, boxed once per stream (on its first wait) and reused
    /// for every later wait, so that the stream stays `Unpin`.
    wait: Option<Pin<Box<RecvWait<T>>>>,
    done: bool,
}

enum StreamSource<'a, T> {
    Borrowed(&'a AsyncReceiver<T>),
    Owned(AsyncReceiver<T>),
}

impl<'a, T> RecvStream<'a, T> {
    pub(crate) fn borrowed(rx: &'a AsyncReceiver<T>) -> Self {
        RecvStream {
            rx: StreamSource::Borrowed(rx),
            wait: None,
            done: false,
        }
    }

    pub(crate) fn owned(rx: AsyncReceiver<T>) -> Self {
        RecvStream {
            rx: StreamSource::Owned(rx),
            wait: None,
            done: false,
        }
    }

    fn chan(&self) -> &Chan<T> {
        match &self.rx {
            StreamSource::Borrowed(rx) => rx.chan(),
            StreamSource::Owned(rx) => rx.chan(),
        }
    }
}

impl<T> Stream for RecvStream<'_, T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.wait.is_none() {
            // A value that is ready needs no node.
            match this.chan().try_recv() {
                Ok(v) => return Poll::Ready(Some(v)),
                Err(TryRecvError::Disconnected) => {
                    this.done = true;
                    return Poll::Ready(None);
                }
                Err(TryRecvError::Empty) => this.wait = Some(Box::pin(RecvWait::new())),
            }
        }
        let chan = match &this.rx {
            StreamSource::Borrowed(rx) => rx.chan(),
            StreamSource::Owned(rx) => rx.chan(),
        };
        let wait = this.wait.as_mut().expect("allocated above").as_mut();
        match chan.poll_recv(wait, cx.waker()) {
            Poll::Ready(Ok(v)) => Poll::Ready(Some(v)),
            Poll::Ready(Err(_)) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> FusedStream for RecvStream<'_, T> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

impl<T> Drop for RecvStream<'_, T> {
    fn drop(&mut self) {
        if let Some(mut wait) = self.wait.take() {
            self.chan().cancel_recv(wait.as_mut());
        }
    }
}

impl<T> fmt::Debug for RecvStream<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// The future of an async sender's `send`: resolves once the value is in the
/// channel (for `bounded(0)`: once a receiver has taken it), or to
/// [`SendError`] with the value if every receiver is gone.
///
/// While it waits, its waiter node lives inside the future, so it is
/// `!Unpin`: `.await` it, or pin it first (`std::pin::pin!`, `Box::pin`) to
/// poll it by hand or to use it in `futures::select!`.
///
/// # Cancel safety
///
/// Dropping a pending `SendFuture` drops its value without enqueueing it and
/// leaves the channel's capacity exactly as it was: a free slot that had been
/// granted to it passes to the next waiting sender. On a rendezvous channel
/// the value waits where receivers can take it; dropping the future after a
/// receiver took the value (before it was polled again) leaves that value
/// sent. So a send can be a branch of `tokio::select!`: if another branch
/// wins, the value is dropped, never half-sent.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use std::time::Duration;
/// let (mut tx, rx) = amphi::spmc::bounded_async(1);
/// tx.send(1).await.unwrap();
/// tokio::select! {
///     r = tx.send(2) => r.unwrap(),
///     _ = tokio::time::sleep(Duration::from_millis(10)) => {} // full: gives up
/// }
/// assert_eq!(rx.len(), 1); // 2 was not enqueued
/// # });
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T> {
    chan: &'a Chan<T>,
    /// Done once it holds no value and is not registered (`is_idle`): a
    /// `Ready` send has given its value away (or back, in the error).
    wait: SendWait<T>,
}

impl<'a, T> SendFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, value: T) -> Self {
        SendFuture {
            chan,
            wait: SendWait::new(Some(value)),
        }
    }
}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `wait` is structurally pinned (never moved out, dropped in
        // place); `chan` is a plain field.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let wait = unsafe { Pin::new_unchecked(&mut this.wait) };
        // A poll after completion finds no value, not registered, and
        // panics on the slow path ("SendFuture polled after completion").
        this.chan.poll_send(wait, cx).map_err(SendError)
    }
}

impl<T> FusedFuture for SendFuture<'_, T> {
    fn is_terminated(&self) -> bool {
        self.wait.is_idle()
    }
}

impl<T> Drop for SendFuture<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: dropped in place: `wait` is not moved (pinned drop).
        let wait = unsafe { Pin::new_unchecked(&mut self.wait) };
        self.chan.cancel_send(wait);
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture")
            .field("done", &self.wait.is_idle())
            .finish_non_exhaustive()
    }
}

/// The future of an async sender's `send_batch`: sends every value in order
/// (lock-free while the channel's queue takes them, else as many per lock
/// acquisition as fit), and resolves once all are in the channel, or to
/// [`SendError`] with the values not sent if every receiver is gone. Like
/// [`SendFuture`] it is `!Unpin`.
///
/// # Cancel safety
///
/// Values already sent stay sent; dropping the future drops the rest without
/// enqueueing them, and leaves capacity as it was (like [`SendFuture`]).
#[must_use = "futures do nothing unless polled"]
pub struct SendBatchFuture<'a, T> {
    chan: &'a Chan<T>,
    values: VecDeque<T>,
    wait: SendWait<T>,
}

impl<'a, T> SendBatchFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, values: VecDeque<T>) -> Self {
        SendBatchFuture {
            chan,
            values,
            wait: SendWait::new(None),
        }
    }
}

impl<T> Future for SendBatchFuture<'_, T> {
    type Output = Result<(), SendError<Vec<T>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `wait` is structurally pinned (never moved out, dropped in
        // place); the other fields are plain.
        let this = unsafe { self.get_unchecked_mut() };
        loop {
            if !this.wait.is_idle() {
                // SAFETY: as above.
                let wait = unsafe { Pin::new_unchecked(&mut this.wait) };
                match this.chan.poll_send(wait, cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(())) => {}
                    Poll::Ready(Err(v)) => {
                        this.values.push_front(v);
                        return Poll::Ready(Err(SendError(this.values.drain(..).collect())));
                    }
                }
            }
            match this.chan.try_send_batch(&mut this.values) {
                Ok(None) => return Poll::Ready(Ok(())),
                // SAFETY: as above.
                Ok(Some(v)) => unsafe { Pin::new_unchecked(&mut this.wait) }.set_value(v),
                Err(()) => return Poll::Ready(Err(SendError(this.values.drain(..).collect()))),
            }
        }
    }
}

impl<T> Drop for SendBatchFuture<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropped in place: `wait` is not moved (pinned drop).
        let wait = unsafe { Pin::new_unchecked(&mut self.wait) };
        self.chan.cancel_send(wait);
    }
}

impl<T> fmt::Debug for SendBatchFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendBatchFuture")
            .field("remaining", &self.values.len())
            .finish_non_exhaustive()
    }
}
