//! Counted references to the core: each sender or receiver handle owns one,
//! and converting between the blocking and async views moves it (the counts
//! do not change).

use std::ops::Deref;

use crate::core::Chan;
use crate::sync::Arc;

/// A receiver's share of the channel.
pub(crate) struct RecvHandle<T>(pub(crate) Arc<Chan<T>>);

/// A sender's share of the channel.
pub(crate) struct SendHandle<T>(pub(crate) Arc<Chan<T>>);

impl<T> Deref for RecvHandle<T> {
    type Target = Chan<T>;
    fn deref(&self) -> &Chan<T> {
        &self.0
    }
}

impl<T> Deref for SendHandle<T> {
    type Target = Chan<T>;
    fn deref(&self) -> &Chan<T> {
        &self.0
    }
}

impl<T> Clone for RecvHandle<T> {
    fn clone(&self) -> Self {
        self.0.add_receiver();
        RecvHandle(self.0.clone())
    }
}

impl<T> SendHandle<T> {
    /// Another sender (mpmc only: spmc never clones its producer).
    pub(crate) fn another(&self) -> Self {
        self.0.add_sender();
        SendHandle(self.0.clone())
    }
}

impl<T> Drop for RecvHandle<T> {
    fn drop(&mut self) {
        self.0.drop_receiver();
    }
}

impl<T> Drop for SendHandle<T> {
    fn drop(&mut self) {
        self.0.drop_sender();
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
        WeakSendHandle(self.0.clone())
    }
}

/// A weak sender's reference to the channel: it keeps the core allocated but
/// is not counted in `senders`, so it does not keep the channel connected.
pub(crate) struct WeakSendHandle<T>(Arc<Chan<T>>);

impl<T> WeakSendHandle<T> {
    /// A sender again, unless every sender is gone: once the count has
    /// reached zero the channel is disconnected for good.
    pub(crate) fn upgrade(&self) -> Option<SendHandle<T>> {
        self.0.try_add_sender().then(|| SendHandle(self.0.clone()))
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

/// A new channel's two shares.
pub(crate) fn pair<T>(
    cap: Option<usize>,
    flavor: crate::core::Flavor,
) -> (SendHandle<T>, RecvHandle<T>) {
    let chan = Arc::new(Chan::new(cap, flavor));
    (SendHandle(chan.clone()), RecvHandle(chan))
}
