//! The data path outside the core lock: an array of slots for bounded
//! channels ([`array`](mod@array)), linked blocks of slots for unbounded ones
//! ([`blocks`]). "The ring" in the core means either.
//!
//! Values move through the ring without the lock; the core (`core.rs`)
//! keeps the waiter lists and every notification decision, and takes the
//! ring's slow paths under its lock. Both shapes are crossbeam's (`array`
//! and `list`), with positions in a `head` and a `tail` word:
//!
//! - **The producer** claims the position at `tail` with one
//!   compare-and-swap, which for spmc no other thread contends outside the
//!   core lock (mpmc producers compete on it), and marks the slot ready.
//! - **Consumers** compete on `head` with a compare-and-swap, then read the
//!   value (and, in the array, stamp the slot free for the next lap).
//!
//! Each side's flags live in the word the *other* side read-modify-writes,
//! so that checking them costs the fast path no extra atomic:
//!
//! - [`SLOW`] on `tail`: the producer must take the core lock (a receiver
//!   waits, every receiver is gone, or some of the capacity is outside the
//!   ring: returned values, values held by tasks, grants to one of several
//!   producers; spmc's one producer uses its own grant through the lock
//!   anyway). A receiver sets it
//!   with `fetch_or` under the lock before it decides to wait; the producer's
//!   claim is a compare-and-swap on the same word, so either the claim comes
//!   first and the receiver sees the claimed position, or the claim fails
//!   and the producer goes to the lock, where it hands the value to the
//!   oldest waiter. Values therefore enter the ring without the lock only
//!   while nobody is registered, and FIFO order holds across threads and
//!   tasks. Only the producer's locked path clears it.
//! - Reserved slots on `tail` (array, mpmc only): room the core has granted
//!   to waiting async senders. The producers' fast path leaves that much room
//!   free, so a grant need not keep them on the locked path until it is
//!   used. The core reserves only while the producers are kept off the fast
//!   path (`SLOW`) and it counts the room, and releases with `SLOW` set, so
//!   that the slot is used by whoever the lock decides.
//! - [`RETURNED`] on `head`: the core holds returned values (older than
//!   anything in the ring); consumers go to the lock, which serves those
//!   first.
//! - [`SEND_WAITING`] on `head` (array only): the producer waits for room.
//!   The consumer whose claim clears it frees its slot and then serves the
//!   producer under the lock. The producer sets it with `fetch_or` and checks
//!   the room with the `head` it gets back, so a freed slot is never missed.
//! - [`TX_GONE`] on `head`: the producer is gone. It is set after the last
//!   publish, so a consumer that sees it and then nothing to take knows the
//!   channel is drained.
//!
//! The core sets and clears flags only under its lock, with read-modify-
//! writes, and a ring never overwrites `head` or `tail` with a plain store
//! outside the lock, so no flag is lost.

mod array;
mod blocks;

#[cfg(loom)]
pub use blocks::live_blocks;

use std::collections::VecDeque;

use self::array::Array;
use self::blocks::Blocks;
use crate::sync::{AtomicUsize, Ordering};

/// The low bits of `head` and `tail` are flags; the position is above them.
const FLAG_BITS: u32 = 4;
const FLAGS: usize = (1 << FLAG_BITS) - 1;
/// Positions wrap at this mask (stamps hold positions, not words).
const POS_MASK: usize = usize::MAX >> FLAG_BITS;

/// On `tail`: the producer must take the core lock.
pub(crate) const SLOW: usize = 1;
/// On `tail`, in [`Array`] only, for mpmc: slots granted to waiting async
/// senders, counted in bits 1-3 (so up to seven). Producers on the fast path leave
/// that much room free, so the lock need not keep them off the ring while a
/// grant is outstanding.
const RESERVED_ONE: usize = 2;
const RESERVED: usize = 7 * RESERVED_ONE;
/// On `head`: the core holds returned values, to be taken first.
pub(crate) const RETURNED: usize = 1;
/// On `head`: the producer waits for room.
pub(crate) const SEND_WAITING: usize = 2;
/// On `head`: the producer is gone.
pub(crate) const TX_GONE: usize = 4;
/// On `head`, in [`Blocks`] only: the block at `head` is not the last one,
/// so a consumer need not read `tail` to know a value is there.
const HAS_NEXT: usize = 8;

/// The largest capacity an array serves (positions need room for laps).
pub(crate) const MAX_CAP: usize = POS_MASK >> 16;

/// Keeps a value on a cache line (pair) of its own.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// What a consumer's attempt found.
pub(crate) enum Pop<T> {
    /// A value, and whether the producer waits for the room it left (the
    /// caller then serves it under the lock).
    Value(T, bool),
    /// Nothing now; `true` if the producer is gone (then nothing will come).
    Empty(bool),
    /// Returned values come first: take the lock.
    Slow,
    /// Only from [`Ring::pop_once`]: its one attempt lost a claim or found
    /// a slot in passing; [`Ring::pop`] (out of line) decides.
    Again,
}

/// A producer's fast path, [`Ring::try_push`] or [`Ring::try_push_shared`]
/// (chosen by [`Ring::pusher`]).
pub(crate) type Push<T> = fn(&Ring<T>, T) -> Result<(), T>;

/// A channel's data path outside the lock.
pub(crate) enum Ring<T> {
    /// Bounded: exactly `cap` preallocated slots.
    Array(Array<T>),
    /// Unbounded: blocks of slots, appended by producers, retired by
    /// consumers, reused by producers once read out.
    Blocks(Blocks<T>),
}

impl<T> Ring<T> {
    /// `shared`: producers compete (mpmc).
    ///
    /// # Panics
    ///
    /// If the slots cannot be allocated.
    pub(crate) fn bounded(cap: usize, shared: bool) -> Self {
        Ring::Array(Array::new(cap, shared))
    }

    pub(crate) fn unbounded() -> Self {
        Ring::Blocks(Blocks::new())
    }

    /// The fast path for one producer ([`try_push`](Self::try_push)) or
    /// for producers that compete ([`try_push_shared`](Self::try_push_shared)).
    pub(crate) fn pusher(shared: bool) -> Push<T> {
        if shared {
            Self::try_push_shared
        } else {
            Self::try_push
        }
    }

    /// Sends without the lock for the one producer of an spmc channel:
    /// `Err` (value back) if [`SLOW`] is set or there is no room.
    #[inline]
    pub(crate) fn try_push(&self, value: T) -> Result<(), T> {
        match self {
            Ring::Array(a) => a.try_push(value),
            Ring::Blocks(b) => b.push(value, false),
        }
    }

    /// Sends without the lock where producers compete (mpmc): `Err` (value
    /// back) if [`SLOW`] is set or there is no room.
    #[inline]
    pub(crate) fn try_push_shared(&self, value: T) -> Result<(), T> {
        match self {
            Ring::Array(a) => a.try_push_shared(value),
            Ring::Blocks(b) => b.push(value, false),
        }
    }

    /// Sends under the core lock, on the producer's behalf, when the core's
    /// accounting says there is room. With several producers, [`SLOW`] is
    /// set first (`Chan::exclude_senders`), so that none of them claims a
    /// position meanwhile. Out of line, without a frame on the array's
    /// path (its rare wait is out of line too): the core's callers are
    /// large and would otherwise save registers for it.
    #[inline(never)]
    pub(crate) fn push_locked(&self, value: T) {
        match self {
            Ring::Array(a) => a.push_locked(value),
            Ring::Blocks(b) => Self::push_blocks_locked(b, value),
        }
    }

    /// [`push_locked`](Self::push_locked) on an unbounded ring: its own
    /// frame, so that the array's path needs none.
    #[inline(never)]
    fn push_blocks_locked(b: &Blocks<T>, value: T) {
        if b.push(value, true).is_err() {
            unreachable!("a locked push ignores SLOW and never runs out of room");
        }
    }

    /// Takes the value at `head`. With `settle` (under the lock, after
    /// [`SLOW`] is set) returned values are ignored (the caller takes them
    /// first) and a value the producer has claimed but not yet marked ready
    /// is waited for instead of reported missing. Without, one attempt in
    /// line ([`pop_once`](Self::pop_once)) and the loop out of line.
    #[inline(always)]
    pub(crate) fn pop(&self, settle: bool) -> Pop<T> {
        if !settle {
            match self.pop_once() {
                Pop::Again => {}
                found => return found,
            }
        }
        match self {
            Ring::Array(a) => a.pop_from(settle, 0),
            Ring::Blocks(b) => b.pop_from(settle),
        }
    }

    /// Whether [`push_many`](Self::push_many) can take a run (unbounded
    /// rings only), so that a batch send into an array, where it never
    /// does, does not call it for every value.
    #[inline]
    pub(crate) fn claims_runs(&self) -> bool {
        matches!(self, Ring::Blocks(_))
    }

    /// Whether a batch receive (`try_recv_many`) takes values through
    /// [`pop_once`](Self::pop_once), one claim each, rather than all under
    /// the lock: on arrays, where that measured 1.3-2x faster than the
    /// locked pops (which neither prefetch nor keep `Head::ready`); not on
    /// blocks, where four consumers each draining under the lock measured
    /// faster than their claims competing (BENCHMARKS.md, History).
    #[inline]
    pub(crate) fn pops_batches_unlocked(&self) -> bool {
        matches!(self, Ring::Array(_))
    }

    /// A producer sends from the front of `values` without the lock, with
    /// one claim for the rest of the current block (unbounded; competing
    /// producers' claims arbitrate as for single sends); returns how many
    /// went in, 0 where its single send would go to the lock or another
    /// producer's claim came first, and always for an array (runs claimed
    /// at once there made threads' rows slower on the 2-core VM:
    /// BENCHMARKS.md, History).
    pub(crate) fn push_many(&self, values: &mut VecDeque<T>) -> usize {
        match self {
            Ring::Array(_) => 0,
            Ring::Blocks(b) => b.push_many(values),
        }
    }

    /// Under the lock, after [`SLOW`] is set: [`pop`](Self::pop) with
    /// `settle`, for a caller that puts a value back in the slot it frees
    /// before it unlocks. The claim leaves [`SEND_WAITING`] set, so that a
    /// consumer's claim meanwhile still finds it and serves the producer
    /// with the room that claim frees (cleared here, that room would reach
    /// nobody).
    pub(crate) fn pop_refilled(&self) -> Pop<T> {
        match self {
            Ring::Array(a) => a.pop_from(true, SEND_WAITING),
            Ring::Blocks(b) => b.pop_from(true),
        }
    }

    /// One attempt of [`pop`](Self::pop) (`settle` false), without its
    /// loop: [`Pop::Again`] where `pop` would go on out of line. For a
    /// caller whose fast path should not merge with that out-of-line call's
    /// result.
    #[inline(always)]
    pub(crate) fn pop_once(&self) -> Pop<T> {
        match self {
            Ring::Array(a) => a.pop_once(),
            Ring::Blocks(b) => b.pop_once(),
        }
    }

    /// Under the lock with [`SLOW`] set: whether a value is there to take,
    /// waiting for a claimed value to be marked ready if a take would (so
    /// that a "ready" answer is not followed by an empty take, which would
    /// send a selecting thread round its loop).
    pub(crate) fn settled_nonempty(&self) -> bool {
        match self {
            Ring::Array(a) => a.settled_nonempty(),
            Ring::Blocks(b) => b.len() != 0,
        }
    }

    /// Under the lock with [`SLOW`] set: whether the ring holds no value,
    /// claimed or ready. Then only a locked send adds one, so the answer
    /// holds while the lock is held. `false` may still mean a take finds
    /// nothing (another consumer's claim in between).
    #[inline(always)]
    pub(crate) fn is_empty_locked(&self) -> bool {
        match self {
            Ring::Array(a) => a.is_empty_locked(),
            Ring::Blocks(b) => b.is_empty_locked(),
        }
    }

    /// Whether a consumer would find something now (a hint for spinning).
    #[inline]
    pub(crate) fn looks_nonempty(&self) -> bool {
        match self {
            Ring::Array(a) => a.looks_nonempty(),
            Ring::Blocks(b) => b.looks_nonempty(),
        }
    }

    /// Whether the producer would find room now (a hint for spinning).
    #[inline]
    pub(crate) fn looks_free(&self) -> bool {
        match self {
            Ring::Array(a) => a.looks_free(),
            Ring::Blocks(_) => true,
        }
    }

    /// Values in the ring (claimed by a producer, not yet by a consumer).
    pub(crate) fn len(&self) -> usize {
        match self {
            Ring::Array(a) => a.len(),
            Ring::Blocks(b) => b.len(),
        }
    }

    /// [`len`](Self::len) while `tail` cannot move: under the core lock
    /// with [`SLOW`] set, or on the one spmc producer's side (its own path,
    /// or the lock holder's while it waits).
    #[inline]
    pub(crate) fn len_stable(&self) -> usize {
        match self {
            Ring::Array(a) => a.len_stable(),
            Ring::Blocks(b) => b.len(),
        }
    }

    // ----- reserved room (changed under the core lock)

    /// Reserves one slot for a grant the core has just counted: `false` if
    /// the ring cannot (unbounded, or seven reserved already), and then
    /// [`SLOW`] must keep the producers off the fast path instead.
    ///
    /// The room the core counted must not be taken meanwhile: with several
    /// producers `SLOW` is set while it counts (`Chan::exclude_senders`).
    /// (spmc does not reserve: its one producer is the one granted.)
    pub(crate) fn reserve(&self) -> bool {
        match self {
            Ring::Array(a) => {
                let tail = a.words().1;
                if tail.load(Ordering::Relaxed) & RESERVED == RESERVED {
                    return false;
                }
                tail.fetch_add(RESERVED_ONE, Ordering::AcqRel);
                true
            }
            Ring::Blocks(_) => false,
        }
    }

    /// Slots reserved for grants.
    pub(crate) fn reserved(&self) -> usize {
        match self {
            Ring::Array(a) => (a.words().1.load(Ordering::Relaxed) & RESERVED) / RESERVED_ONE,
            Ring::Blocks(_) => 0,
        }
    }

    /// Gives back one reserved slot (a read-modify-write, so that a
    /// producer's claim in between fails and looks again).
    pub(crate) fn unreserve(&self) {
        debug_assert!(self.reserved() > 0);
        self.words().1.fetch_sub(RESERVED_ONE, Ordering::AcqRel);
    }

    // ----- flags (set and cleared under the core lock)

    #[inline]
    fn words(&self) -> (&AtomicUsize, &AtomicUsize) {
        match self {
            Ring::Array(a) => a.words(),
            Ring::Blocks(b) => b.words(),
        }
    }

    /// Sets `SLOW` on `tail`; afterwards the ring gains no value without the
    /// lock.
    pub(crate) fn set_slow(&self) {
        let tail = self.words().1;
        if tail.load(Ordering::Relaxed) & SLOW == 0 {
            tail.fetch_or(SLOW, Ordering::AcqRel);
        }
    }

    pub(crate) fn is_slow(&self) -> bool {
        self.words().1.load(Ordering::Relaxed) & SLOW != 0
    }

    /// Clears `SLOW`; only the producer's side, under the lock.
    pub(crate) fn clear_slow(&self) {
        self.words().1.fetch_and(!SLOW, Ordering::AcqRel);
    }

    /// Sets or clears a flag on `head`, writing only on a change.
    pub(crate) fn set_head_flag(&self, flag: usize, on: bool) {
        let head = self.words().0;
        let have = head.load(Ordering::Relaxed) & flag != 0;
        if on && !have {
            head.fetch_or(flag, Ordering::AcqRel);
        } else if !on && have {
            head.fetch_and(!flag, Ordering::AcqRel);
        }
    }
}
