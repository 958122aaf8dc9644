//! The error types of both channel flavors.

use std::error::Error;
use std::fmt;

/// The error of a blocking or async `send`: every receiver is gone.
///
/// The value that could not be sent is given back.
///
/// ```
/// let (mut tx, rx) = amphi::spmc::bounded(1);
/// drop(rx);
/// let err = tx.send(7).unwrap_err();
/// assert_eq!(err.into_inner(), 7);
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

/// The error of `try_send`.
///
/// ```
/// use amphi::TrySendError;
/// let (mut tx, rx) = amphi::spmc::bounded(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
/// drop(rx);
/// assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// The channel is full (for `bounded(0)`: no receiver is waiting).
    Full(T),
    /// Every receiver is gone.
    Disconnected(T),
}

/// The error of `send_timeout` and `send_deadline`.
///
/// ```
/// use std::time::Duration;
/// use amphi::SendTimeoutError;
/// let (mut tx, _rx) = amphi::spmc::bounded(0);
/// let err = tx.send_timeout(5, Duration::from_millis(1)).unwrap_err();
/// assert_eq!(err, SendTimeoutError::Timeout(5));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum SendTimeoutError<T> {
    /// No room appeared before the deadline.
    Timeout(T),
    /// Every receiver is gone.
    Disconnected(T),
}

/// The error of a blocking or async `recv`: the channel is empty and every
/// sender is gone.
///
/// ```
/// let (tx, rx) = amphi::spmc::unbounded::<i32>();
/// drop(tx);
/// assert_eq!(rx.recv(), Err(amphi::RecvError));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub struct RecvError;

/// The error of [`Selector::wait_timeout`](crate::Selector::wait_timeout)
/// and [`Selector::wait_deadline`](crate::Selector::wait_deadline): no arm
/// became ready in time.
///
/// ```
/// use std::time::Duration;
/// let (_tx, rx) = amphi::spmc::bounded::<i32>(1);
/// let r = amphi::Selector::new()
///     .recv(&rx, |r| r.ok())
///     .wait_timeout(Duration::from_millis(5));
/// assert_eq!(r, Err(amphi::SelectTimeoutError));
/// assert_eq!(amphi::SelectTimeoutError.to_string(), "timed out waiting on a select");
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug, Default)]
pub struct SelectTimeoutError;

impl fmt::Display for SelectTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out waiting on a select")
    }
}

impl Error for SelectTimeoutError {}

/// The error of `try_recv`.
///
/// ```
/// use amphi::TryRecvError;
/// let (tx, rx) = amphi::spmc::unbounded::<i32>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum TryRecvError {
    /// No value is available right now.
    Empty,
    /// The channel is empty and every sender is gone.
    Disconnected,
}

/// The error of `recv_timeout` and `recv_deadline`.
///
/// ```
/// use std::time::Duration;
/// use amphi::RecvTimeoutError;
/// let (_tx, rx) = amphi::spmc::unbounded::<i32>();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum RecvTimeoutError {
    /// No value arrived before the deadline.
    Timeout,
    /// The channel is empty and every sender is gone.
    Disconnected,
}

impl<T> SendError<T> {
    /// Returns the value that could not be sent.
    ///
    /// ```
    /// assert_eq!(amphi::SendError(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> TrySendError<T> {
    /// Returns the value that could not be sent.
    ///
    /// ```
    /// assert_eq!(amphi::TrySendError::Full(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => v,
        }
    }

    /// True if the channel was full.
    ///
    /// ```
    /// assert!(amphi::TrySendError::Full(3).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// True if every receiver was gone.
    ///
    /// ```
    /// assert!(amphi::TrySendError::Disconnected(3).is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TrySendError::Disconnected(_))
    }
}

impl<T> SendTimeoutError<T> {
    /// Returns the value that could not be sent.
    ///
    /// ```
    /// assert_eq!(amphi::SendTimeoutError::Timeout(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Disconnected(v) => v,
        }
    }

    /// True if the deadline passed.
    ///
    /// ```
    /// assert!(amphi::SendTimeoutError::Timeout(3).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// True if every receiver was gone.
    ///
    /// ```
    /// assert!(amphi::SendTimeoutError::Disconnected(3).is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, SendTimeoutError::Disconnected(_))
    }
}

impl TryRecvError {
    /// True if the channel was empty but still connected.
    ///
    /// ```
    /// assert!(amphi::TryRecvError::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }

    /// True if the channel was empty and every sender gone.
    ///
    /// ```
    /// assert!(amphi::TryRecvError::Disconnected.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TryRecvError::Disconnected)
    }
}

impl RecvTimeoutError {
    /// True if the deadline passed.
    ///
    /// ```
    /// assert!(amphi::RecvTimeoutError::Timeout.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }

    /// True if the channel was empty and every sender gone.
    ///
    /// ```
    /// assert!(amphi::RecvTimeoutError::Disconnected.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, RecvTimeoutError::Disconnected)
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a disconnected channel")
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Disconnected(_) => f.write_str("sending on a disconnected channel"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out waiting on send operation"),
            SendTimeoutError::Disconnected(_) => f.write_str("sending on a disconnected channel"),
        }
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on an empty and disconnected channel")
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Disconnected => {
                f.write_str("receiving on an empty and disconnected channel")
            }
        }
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on receive operation"),
            RecvTimeoutError::Disconnected => f.write_str("channel is empty and disconnected"),
        }
    }
}

impl<T> Error for SendError<T> {}
impl<T> Error for TrySendError<T> {}
impl<T> Error for SendTimeoutError<T> {}
impl Error for RecvError {}
impl Error for TryRecvError {}
impl Error for RecvTimeoutError {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(err: SendError<T>) -> Self {
        TrySendError::Disconnected(err.0)
    }
}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(err: SendError<T>) -> Self {
        SendTimeoutError::Disconnected(err.0)
    }
}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Disconnected
    }
}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Disconnected
    }
}
