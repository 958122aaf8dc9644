//! One adapter per channel crate, so every workload is written once and run against each peer.
//!
//! Three views of a channel are used by the workloads:
//!
//! * [`SyncPeer`]: blocking sender, blocking receivers (OS threads),
//! * [`AsyncPeer`]: async sender, async receivers (tasks),
//! * [`MixedPeer`]: blocking sender (a thread), async receivers (tasks).
//!
//! `make` returns `None` when the peer cannot express the requested row (for example
//! async-channel has no rendezvous channel, tokio's mpsc has a single receiver, and amphi's spmc
//! has a single producer); the row is then skipped for that peer.
//!
//! The small `async move { .. }` wrappers cost the same for every peer.

// The impls spell out `impl Future + Send` like the traits, so a peer whose future is not `Send`
// fails here rather than at a distant spawn.
#![allow(clippy::manual_async_fn)]

use std::future::Future;

/// The queue axis of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// `bounded(n)`; `n == 0` is a rendezvous channel.
    Bounded(usize),
    /// `unbounded()`.
    Unbounded,
}

impl Queue {
    /// The name used in benchmark ids: `bounded64`, `bounded1`, `bounded0`, `unbounded`.
    pub fn name(self) -> String {
        match self {
            Queue::Bounded(n) => format!("bounded{n}"),
            Queue::Unbounded => "unbounded".to_string(),
        }
    }
}

/// The four queues of the grid, in report order.
pub const QUEUES: [Queue; 4] = [
    Queue::Bounded(64),
    Queue::Bounded(1),
    Queue::Bounded(0),
    Queue::Unbounded,
];

/// Producer handles and consumer handles of one channel, or `None` if unsupported.
pub type Chans<Tx, Rx> = Option<(Vec<Tx>, Vec<Rx>)>;

/// Blocking on both sides.
pub trait SyncPeer: 'static {
    const NAME: &'static str;
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn make(q: Queue, producers: usize, consumers: usize) -> Chans<Self::Tx, Self::Rx>;
    /// `false` when every receiver is gone.
    fn send(tx: &mut Self::Tx, v: usize) -> bool;
    /// `None` when disconnected and drained.
    fn recv(rx: &mut Self::Rx) -> Option<usize>;
}

/// Async on both sides.
pub trait AsyncPeer: 'static {
    const NAME: &'static str;
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn make(q: Queue, producers: usize, consumers: usize) -> Chans<Self::Tx, Self::Rx>;
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_;
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_;
}

/// Blocking sender, async receivers.
pub trait MixedPeer: 'static {
    const NAME: &'static str;
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn make(q: Queue, producers: usize, consumers: usize) -> Chans<Self::Tx, Self::Rx>;
    fn send(tx: &mut Self::Tx, v: usize) -> bool;
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_;
}

/// Async senders, blocking receivers (producer tasks feeding worker threads).
pub trait FeedPeer: 'static {
    const NAME: &'static str;
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn make(q: Queue, producers: usize, consumers: usize) -> Chans<Self::Tx, Self::Rx>;
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_;
    fn recv(rx: &mut Self::Rx) -> Option<usize>;
}

/// `n` handles: `n - 1` clones plus the original.
pub fn fan<T: Clone>(x: T, n: usize) -> Vec<T> {
    assert!(n >= 1);
    let mut v = Vec::with_capacity(n);
    for _ in 1..n {
        v.push(x.clone());
    }
    v.push(x);
    v
}

// ---------------------------------------------------------------------------------------------
// amphi

/// `amphi::spmc`: exactly one producer.
pub struct AmphiSpmc;
/// `amphi::mpmc`.
pub struct AmphiMpmc;

macro_rules! amphi_peer {
    ($peer:ident, $module:ident, $one_producer:tt) => {
        impl SyncPeer for $peer {
            const NAME: &'static str = "amphi";
            type Tx = amphi::$module::Sender<usize>;
            type Rx = amphi::$module::Receiver<usize>;
            fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
                let (tx, rx) = match q {
                    Queue::Bounded(n) => amphi::$module::bounded(n),
                    Queue::Unbounded => amphi::$module::unbounded(),
                };
                Some((amphi_fan_tx!($one_producer, tx, p), fan(rx, c)))
            }
            fn send(tx: &mut Self::Tx, v: usize) -> bool {
                tx.send(v).is_ok()
            }
            fn recv(rx: &mut Self::Rx) -> Option<usize> {
                rx.recv().ok()
            }
        }

        impl AsyncPeer for $peer {
            const NAME: &'static str = "amphi";
            type Tx = amphi::$module::AsyncSender<usize>;
            type Rx = amphi::$module::AsyncReceiver<usize>;
            fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
                let (tx, rx) = match q {
                    Queue::Bounded(n) => amphi::$module::bounded_async(n),
                    Queue::Unbounded => amphi::$module::unbounded_async(),
                };
                Some((amphi_fan_tx!($one_producer, tx, p), fan(rx, c)))
            }
            fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
                async move { tx.send(v).await.is_ok() }
            }
            fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
                async move { rx.recv().await.ok() }
            }
        }

        impl MixedPeer for $peer {
            const NAME: &'static str = "amphi";
            type Tx = amphi::$module::Sender<usize>;
            type Rx = amphi::$module::AsyncReceiver<usize>;
            fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
                let (txs, rxs) = <Self as SyncPeer>::make(q, p, c)?;
                Some((txs, rxs.into_iter().map(|rx| rx.into_async()).collect()))
            }
            fn send(tx: &mut Self::Tx, v: usize) -> bool {
                tx.send(v).is_ok()
            }
            fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
                async move { rx.recv().await.ok() }
            }
        }

        impl FeedPeer for $peer {
            const NAME: &'static str = "amphi";
            type Tx = amphi::$module::AsyncSender<usize>;
            type Rx = amphi::$module::Receiver<usize>;
            fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
                let (txs, rxs) = <Self as SyncPeer>::make(q, p, c)?;
                Some((txs.into_iter().map(|tx| tx.into_async()).collect(), rxs))
            }
            fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
                <Self as AsyncPeer>::send(tx, v)
            }
            fn recv(rx: &mut Self::Rx) -> Option<usize> {
                <Self as SyncPeer>::recv(rx)
            }
        }
    };
}

macro_rules! amphi_fan_tx {
    (true, $tx:expr, $p:expr) => {{
        if $p != 1 {
            return None;
        }
        vec![$tx]
    }};
    (false, $tx:expr, $p:expr) => {
        fan($tx, $p)
    };
}

amphi_peer!(AmphiSpmc, spmc, true);
amphi_peer!(AmphiMpmc, mpmc, false);

// ---------------------------------------------------------------------------------------------
// crossbeam-channel (threads only)

pub struct Crossbeam;

impl SyncPeer for Crossbeam {
    const NAME: &'static str = "crossbeam";
    type Tx = crossbeam_channel::Sender<usize>;
    type Rx = crossbeam_channel::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        let (tx, rx) = match q {
            Queue::Bounded(n) => crossbeam_channel::bounded(n),
            Queue::Unbounded => crossbeam_channel::unbounded(),
        };
        Some((fan(tx, p), fan(rx, c)))
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        rx.recv().ok()
    }
}

// ---------------------------------------------------------------------------------------------
// flume

pub struct Flume;

fn flume_make(q: Queue, p: usize, c: usize) -> Chans<flume::Sender<usize>, flume::Receiver<usize>> {
    let (tx, rx) = match q {
        Queue::Bounded(n) => flume::bounded(n),
        Queue::Unbounded => flume::unbounded(),
    };
    Some((fan(tx, p), fan(rx, c)))
}

impl SyncPeer for Flume {
    const NAME: &'static str = "flume";
    type Tx = flume::Sender<usize>;
    type Rx = flume::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        flume_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        rx.recv().ok()
    }
}

impl AsyncPeer for Flume {
    const NAME: &'static str = "flume";
    type Tx = flume::Sender<usize>;
    type Rx = flume::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        flume_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        async move { tx.send_async(v).await.is_ok() }
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        async move { rx.recv_async().await.ok() }
    }
}

impl FeedPeer for Flume {
    const NAME: &'static str = "flume";
    type Tx = flume::Sender<usize>;
    type Rx = flume::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        flume_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        <Self as AsyncPeer>::send(tx, v)
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        <Self as SyncPeer>::recv(rx)
    }
}

impl MixedPeer for Flume {
    const NAME: &'static str = "flume";
    type Tx = flume::Sender<usize>;
    type Rx = flume::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        flume_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        async move { rx.recv_async().await.ok() }
    }
}

// ---------------------------------------------------------------------------------------------
// kanal (supports bounded(0) in both sync and async forms)

pub struct Kanal;

fn kanal_make(q: Queue, p: usize, c: usize) -> Chans<kanal::Sender<usize>, kanal::Receiver<usize>> {
    let (tx, rx) = match q {
        Queue::Bounded(n) => kanal::bounded(n),
        Queue::Unbounded => kanal::unbounded(),
    };
    Some((fan(tx, p), fan(rx, c)))
}

impl SyncPeer for Kanal {
    const NAME: &'static str = "kanal";
    type Tx = kanal::Sender<usize>;
    type Rx = kanal::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        kanal_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        rx.recv().ok()
    }
}

impl AsyncPeer for Kanal {
    const NAME: &'static str = "kanal";
    type Tx = kanal::AsyncSender<usize>;
    type Rx = kanal::AsyncReceiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        let (tx, rx) = match q {
            Queue::Bounded(n) => kanal::bounded_async(n),
            Queue::Unbounded => kanal::unbounded_async(),
        };
        Some((fan(tx, p), fan(rx, c)))
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        async move { tx.send(v).await.is_ok() }
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        async move { rx.recv().await.ok() }
    }
}

impl FeedPeer for Kanal {
    const NAME: &'static str = "kanal";
    type Tx = kanal::AsyncSender<usize>;
    type Rx = kanal::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        let (txs, rxs) = kanal_make(q, p, c)?;
        Some((txs.into_iter().map(|tx| tx.to_async()).collect(), rxs))
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        <Self as AsyncPeer>::send(tx, v)
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        <Self as SyncPeer>::recv(rx)
    }
}

impl MixedPeer for Kanal {
    const NAME: &'static str = "kanal";
    type Tx = kanal::Sender<usize>;
    type Rx = kanal::AsyncReceiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        let (txs, rxs) = kanal_make(q, p, c)?;
        Some((txs, rxs.into_iter().map(|rx| rx.to_async()).collect()))
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        async move { rx.recv().await.ok() }
    }
}

// ---------------------------------------------------------------------------------------------
// async-channel (no rendezvous channel; blocking methods for the thread rows)

pub struct AsyncChannel;

fn async_channel_make(
    q: Queue,
    p: usize,
    c: usize,
) -> Chans<async_channel::Sender<usize>, async_channel::Receiver<usize>> {
    let (tx, rx) = match q {
        Queue::Bounded(0) => return None,
        Queue::Bounded(n) => async_channel::bounded(n),
        Queue::Unbounded => async_channel::unbounded(),
    };
    Some((fan(tx, p), fan(rx, c)))
}

impl SyncPeer for AsyncChannel {
    const NAME: &'static str = "async-channel";
    type Tx = async_channel::Sender<usize>;
    type Rx = async_channel::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        async_channel_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send_blocking(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        rx.recv_blocking().ok()
    }
}

impl AsyncPeer for AsyncChannel {
    const NAME: &'static str = "async-channel";
    type Tx = async_channel::Sender<usize>;
    type Rx = async_channel::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        async_channel_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        async move { tx.send(v).await.is_ok() }
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        async move { rx.recv().await.ok() }
    }
}

impl FeedPeer for AsyncChannel {
    const NAME: &'static str = "async-channel";
    type Tx = async_channel::Sender<usize>;
    type Rx = async_channel::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        async_channel_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        <Self as AsyncPeer>::send(tx, v)
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        <Self as SyncPeer>::recv(rx)
    }
}

impl MixedPeer for AsyncChannel {
    const NAME: &'static str = "async-channel";
    type Tx = async_channel::Sender<usize>;
    type Rx = async_channel::Receiver<usize>;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        async_channel_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        tx.send_blocking(v).is_ok()
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        async move { rx.recv().await.ok() }
    }
}

// ---------------------------------------------------------------------------------------------
// tokio::sync::mpsc: one consumer only, no rendezvous channel

pub struct Tokio;

pub enum TokioTx {
    Bounded(tokio::sync::mpsc::Sender<usize>),
    Unbounded(tokio::sync::mpsc::UnboundedSender<usize>),
}

pub enum TokioRx {
    Bounded(tokio::sync::mpsc::Receiver<usize>),
    Unbounded(tokio::sync::mpsc::UnboundedReceiver<usize>),
}

fn tokio_make(q: Queue, p: usize, c: usize) -> Chans<TokioTx, TokioRx> {
    if c != 1 {
        return None;
    }
    match q {
        Queue::Bounded(0) => None,
        Queue::Bounded(n) => {
            let (tx, rx) = tokio::sync::mpsc::channel(n);
            Some((
                fan(tx, p).into_iter().map(TokioTx::Bounded).collect(),
                vec![TokioRx::Bounded(rx)],
            ))
        }
        Queue::Unbounded => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            Some((
                fan(tx, p).into_iter().map(TokioTx::Unbounded).collect(),
                vec![TokioRx::Unbounded(rx)],
            ))
        }
    }
}

async fn tokio_recv(rx: &mut TokioRx) -> Option<usize> {
    match rx {
        TokioRx::Bounded(rx) => rx.recv().await,
        TokioRx::Unbounded(rx) => rx.recv().await,
    }
}

/// Blocking use (`blocking_send` / `blocking_recv`), for the single-thread primitives only.
impl SyncPeer for Tokio {
    const NAME: &'static str = "tokio";
    type Tx = TokioTx;
    type Rx = TokioRx;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        tokio_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        match tx {
            TokioTx::Bounded(tx) => tx.blocking_send(v).is_ok(),
            TokioTx::Unbounded(tx) => tx.send(v).is_ok(),
        }
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        match rx {
            TokioRx::Bounded(rx) => rx.blocking_recv(),
            TokioRx::Unbounded(rx) => rx.blocking_recv(),
        }
    }
}

impl AsyncPeer for Tokio {
    const NAME: &'static str = "tokio";
    type Tx = TokioTx;
    type Rx = TokioRx;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        tokio_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        async move {
            match tx {
                TokioTx::Bounded(tx) => tx.send(v).await.is_ok(),
                TokioTx::Unbounded(tx) => tx.send(v).is_ok(),
            }
        }
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        tokio_recv(rx)
    }
}

impl MixedPeer for Tokio {
    const NAME: &'static str = "tokio";
    type Tx = TokioTx;
    type Rx = TokioRx;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        tokio_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> bool {
        <Self as SyncPeer>::send(tx, v)
    }
    fn recv(rx: &mut Self::Rx) -> impl Future<Output = Option<usize>> + Send + '_ {
        tokio_recv(rx)
    }
}

impl FeedPeer for Tokio {
    const NAME: &'static str = "tokio";
    type Tx = TokioTx;
    type Rx = TokioRx;
    fn make(q: Queue, p: usize, c: usize) -> Chans<Self::Tx, Self::Rx> {
        tokio_make(q, p, c)
    }
    fn send(tx: &mut Self::Tx, v: usize) -> impl Future<Output = bool> + Send + '_ {
        <Self as AsyncPeer>::send(tx, v)
    }
    fn recv(rx: &mut Self::Rx) -> Option<usize> {
        <Self as SyncPeer>::recv(rx)
    }
}
