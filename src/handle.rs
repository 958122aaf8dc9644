//! Counted references to the core: each sender or receiver handle owns one,
//! and converting between the blocking and async views moves it (the counts
//! do not change, except the core's counts of blocking senders and
//! receivers, which async receives and sends read to decide whether to spin).

use std::ops::Deref;

use crate::core::{Chan, End};
use crate::sync::Arc;

/// A receiver's share of the channel, and whether it is a blocking
/// receiver's (counted in `Chan::blocking_receivers`).
pub(crate) struct RecvHandle<T> {
    chan: Arc<Chan<T>>,
    blocking: bool,
}

/// A sender's share of the channel, and whether it is a blocking
/// sender's (counted in `Chan::blocking_senders`).
pub(crate) struct SendHandle<T> {
    chan: Arc<Chan<T>>,
    blocking: bool,
}

impl<T> Deref for RecvHandle<T> {
    type Target = Chan<T>;
    fn deref(&self) -> &Chan<T> {
        &self.chan
    }
}

impl<T> Deref for SendHandle<T> {
    type Target = Chan<T>;
    fn deref(&self) -> &Chan<T> {
        &self.chan
    }
}

/// Makes a handle's `blocking` say `to`, keeping the core's count of
/// blocking handles at `end` in step: every change of a handle's kind
/// (made, cloned, converted, dropped) goes through here.
fn set_blocking<T>(chan: &Chan<T>, end: End, blocking: &mut bool, to: bool) {
    if *blocking != to {
        chan.count_blocking(end, to);
        *blocking = to;
    }
}

impl<T> Clone for RecvHandle<T> {
    /// Another receiver of the same kind.
    fn clone(&self) -> Self {
        self.chan.add_receiver();
        let mut h = RecvHandle {
            chan: self.chan.clone(),
            blocking: false,
        };
        set_blocking(&h.chan, End::Recv, &mut h.blocking, self.blocking);
        h
    }
}

impl<T> RecvHandle<T> {
    /// This share as a blocking receiver's.
    pub(crate) fn into_blocking(mut self) -> Self {
        set_blocking(&self.chan, End::Recv, &mut self.blocking, true);
        self
    }

    /// This share as an async receiver's.
    pub(crate) fn into_nonblocking(mut self) -> Self {
        set_blocking(&self.chan, End::Recv, &mut self.blocking, false);
        self
    }
}

impl<T> SendHandle<T> {
    /// Another sender of the same kind (mpmc only: spmc never clones its
    /// producer).
    pub(crate) fn another(&self) -> Self {
        self.chan.add_sender();
        let mut h = SendHandle {
            chan: self.chan.clone(),
            blocking: false,
        };
        set_blocking(&h.chan, End::Send, &mut h.blocking, self.blocking);
        h
    }

    /// This share as a blocking sender's.
    pub(crate) fn into_blocking(mut self) -> Self {
        set_blocking(&self.chan, End::Send, &mut self.blocking, true);
        self
    }

    /// This share as an async sender's.
    pub(crate) fn into_nonblocking(mut self) -> Self {
        set_blocking(&self.chan, End::Send, &mut self.blocking, false);
        self
    }
}

impl<T> Drop for RecvHandle<T> {
    fn drop(&mut self) {
        set_blocking(&self.chan, End::Recv, &mut self.blocking, false);
        self.chan.drop_receiver();
    }
}

impl<T> Drop for SendHandle<T> {
    fn drop(&mut self) {
        set_blocking(&self.chan, End::Send, &mut self.blocking, false);
        self.chan.drop_sender();
    }
}

impl<T> RecvHandle<T> {
    /// Whether both handles share one channel.
    pub(crate) fn same_channel(&self, other: &Self) -> bool {
        std::ptr::eq::<Chan<T>>(&**self, &**other)
    }
}

impl<T> SendHandle<T> {
    /// Whether both handles share one channel.
    pub(crate) fn same_channel(&self, other: &Self) -> bool {
        std::ptr::eq::<Chan<T>>(&**self, &**other)
    }

    /// A reference to the channel that does not count as a sender (mpmc
    /// weak senders).
    pub(crate) fn downgrade(&self) -> WeakSendHandle<T> {
        WeakSendHandle(self.chan.clone())
    }
}

/// A weak sender's reference to the channel: it keeps the core allocated but
/// is not counted in `senders`, so it does not keep the channel connected.
pub(crate) struct WeakSendHandle<T>(Arc<Chan<T>>);

impl<T> WeakSendHandle<T> {
    /// A sender again (an async sender's share), unless every sender is
    /// gone: once the count has reached zero the channel is disconnected for
    /// good.
    pub(crate) fn upgrade(&self) -> Option<SendHandle<T>> {
        self.0.try_add_sender().then(|| SendHandle {
            chan: self.0.clone(),
            blocking: false,
        })
    }

    /// Whether both weak handles refer to one channel.
    pub(crate) fn same_channel(&self, other: &Self) -> bool {
        std::ptr::eq::<Chan<T>>(&*self.0, &*other.0)
    }

    pub(crate) fn chan(&self) -> &Chan<T> {
        &self.0
    }
}

impl<T> Clone for WeakSendHandle<T> {
    fn clone(&self) -> Self {
        WeakSendHandle(self.0.clone())
    }
}

/// A new channel's two shares (both async handles' shares).
pub(crate) fn pair<T>(
    cap: Option<usize>,
    flavor: crate::core::Flavor,
) -> (SendHandle<T>, RecvHandle<T>) {
    let chan = Arc::new(Chan::new(cap, flavor));
    let tx = SendHandle {
        chan: chan.clone(),
        blocking: false,
    };
    let rx = RecvHandle {
        chan,
        blocking: false,
    };
    (tx, rx)
}
