//! Futures and streams of the async handles.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::stream::{FusedStream, Stream};

use crate::core::{Chan, RecvWait, SendWait};
use crate::error::{RecvError, SendError};
use crate::receiver::AsyncReceiver;

/// The future of [`AsyncReceiver::recv`]: resolves to the next value, or to
/// [`RecvError`] once the channel is empty and every sender is gone.
///
/// # Cancel safety
///
/// Dropping it never loses a value: a value already handed to it goes to the
/// next waiting receiver (thread or task) or back to the front of the queue,
/// and a wake-up it received but did not use passes on with it.
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    chan: &'a Chan<T>,
    wait: RecvWait<T>,
}

impl<'a, T> RecvFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>) -> Self {
        RecvFuture {
            chan,
            wait: Chan::new_recv_wait(),
        }
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.chan
            .poll_recv(&mut this.wait, cx.waker())
            .map(|r| r.map_err(|_| RecvError))
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        self.chan.cancel_recv(&mut self.wait);
    }
}

impl<T> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture").finish_non_exhaustive()
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
    wait: RecvWait<T>,
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
            wait: Chan::new_recv_wait(),
            done: false,
        }
    }

    pub(crate) fn owned(rx: AsyncReceiver<T>) -> Self {
        RecvStream {
            rx: StreamSource::Owned(rx),
            wait: Chan::new_recv_wait(),
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
        let chan = match &this.rx {
            StreamSource::Borrowed(rx) => rx.chan(),
            StreamSource::Owned(rx) => rx.chan(),
        };
        match chan.poll_recv(&mut this.wait, cx.waker()) {
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
        let mut wait = std::mem::replace(&mut self.wait, Chan::new_recv_wait());
        self.chan().cancel_recv(&mut wait);
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
/// # Cancel safety
///
/// Dropping a pending `SendFuture` drops its value without enqueueing it and
/// leaves the channel's capacity exactly as it was: a free slot that had been
/// granted to it passes to the next waiting sender. On a rendezvous channel
/// the value waits where receivers can take it; dropping the future after a
/// receiver took the value (before it was polled again) leaves that value
/// sent.
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T> {
    chan: &'a Chan<T>,
    wait: SendWait<T>,
}

impl<'a, T> SendFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, value: T) -> Self {
        SendFuture {
            chan,
            wait: Chan::new_send_wait(value),
        }
    }
}

// The value is never pinned: it is only moved in and out by value.
impl<T> Unpin for SendFuture<'_, T> {}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.chan.poll_send(&mut this.wait, cx).map_err(SendError)
    }
}

impl<T> Drop for SendFuture<'_, T> {
    fn drop(&mut self) {
        self.chan.cancel_send(&mut self.wait);
    }
}

impl<T> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture").finish_non_exhaustive()
    }
}

/// The future of an async sender's `send_batch`: sends every value in order,
/// as many per lock acquisition as fit, and resolves once all are in the
/// channel, or to [`SendError`] with the values not sent if every receiver is
/// gone.
///
/// # Cancel safety
///
/// Values already sent stay sent; dropping the future drops the rest without
/// enqueueing them, and leaves capacity as it was (like [`SendFuture`]).
#[must_use = "futures do nothing unless polled"]
pub struct SendBatchFuture<'a, T> {
    chan: &'a Chan<T>,
    values: VecDeque<T>,
    wait: Option<SendWait<T>>,
}

impl<'a, T> SendBatchFuture<'a, T> {
    pub(crate) fn new(chan: &'a Chan<T>, values: VecDeque<T>) -> Self {
        SendBatchFuture {
            chan,
            values,
            wait: None,
        }
    }
}

impl<T> Unpin for SendBatchFuture<'_, T> {}

impl<T> Future for SendBatchFuture<'_, T> {
    type Output = Result<(), SendError<Vec<T>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            if let Some(wait) = &mut this.wait {
                match this.chan.poll_send(wait, cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(())) => this.wait = None,
                    Poll::Ready(Err(v)) => {
                        this.wait = None;
                        this.values.push_front(v);
                        return Poll::Ready(Err(SendError(this.values.drain(..).collect())));
                    }
                }
            }
            match this.chan.try_send_batch(&mut this.values) {
                Ok(None) => return Poll::Ready(Ok(())),
                Ok(Some(v)) => this.wait = Some(Chan::new_send_wait(v)),
                Err(()) => return Poll::Ready(Err(SendError(this.values.drain(..).collect()))),
            }
        }
    }
}

impl<T> Drop for SendBatchFuture<'_, T> {
    fn drop(&mut self) {
        if let Some(wait) = &mut self.wait {
            self.chan.cancel_send(wait);
        }
    }
}

impl<T> fmt::Debug for SendBatchFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendBatchFuture")
            .field("remaining", &self.values.len())
            .finish_non_exhaustive()
    }
}
