//! A bounded channel's data path: an array of slots with per-slot stamps,
//! in the shape of crossbeam's `array` flavor (positions as lap + index).
//! The protocol it shares with the unbounded data path (flags, the lock's
//! part) is in the parent module.

use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::{self, NonNull};

use super::{
    Padded, Pop, FLAGS, FLAG_BITS, MAX_CAP, POS_MASK, RESERVED, RESERVED_ONE, RETURNED,
    SEND_WAITING, SLOW, TX_GONE,
};
use crate::sync::{self, AtomicUsize, Ordering, UnsafeCell};

struct Slot<T> {
    /// `p`: free for the value of position `p`; `p + 1`: holds it.
    stamp: AtomicUsize,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// A slot smaller than a cache line, on a line of its own.
#[repr(C, align(64))]
struct Lined<T>(Slot<T>);

/// Up to this capacity each slot smaller than a cache line has a line of
/// its own ([`Lined`]): at most 64 KiB of slots. Where slots share lines, a
/// consumer reading and stamping a slot and the producer writing the next
/// one pass the line between their cores for every value while they chase
/// each other. Measured on the 2-core development VM (BENCHMARKS.md,
/// History), `profile_row` medians, 16-byte slots sharing lines against a
/// line each: tokio with 4 workers, `bounded(64)`, 4 consumers 1.2-1.6 ->
/// 0.5-0.8 ms; threads, 1 consumer 5.1-5.8 -> 2.0-3.4 ms. Larger arrays stay
/// dense, as crossbeam's are.
const LINED_MAX: usize = 1024;

/// The slots' allocation: `cap` slots `stride` bytes apart from `base`, a
/// boxed slice of [`Lined`] slots if `lined`, of [`Slot`]s otherwise. Its
/// own `Drop` frees it, so that it is freed also when dropping a value
/// left in it panics.
struct Slots<T> {
    base: NonNull<u8>,
    stride: usize,
    lined: bool,
    cap: usize,
    _slots: PhantomData<Slot<T>>,
}

impl<T> Slots<T> {
    /// # Panics
    ///
    /// If the slots cannot be allocated.
    fn new(cap: usize) -> Self {
        // Only a slot smaller than a line: `Lined` rounds a larger one up to
        // whole lines (an 80-byte slot to 128 bytes) for little gain.
        let lined = cap <= LINED_MAX && size_of::<Slot<T>>() < align_of::<Lined<T>>();
        let (base, stride) = if lined {
            (Self::alloc(cap, Lined::<T>), size_of::<Lined<T>>())
        } else {
            (Self::alloc(cap, |slot: Slot<T>| slot), size_of::<Slot<T>>())
        };
        Slots {
            base,
            stride,
            lined,
            cap,
            _slots: PhantomData,
        }
    }

    /// Allocates `cap` slots of type `S` (a [`Slot`], or one [`Lined`]),
    /// each free for its index's first position.
    fn alloc<S>(cap: usize, wrap: impl Fn(Slot<T>) -> S) -> NonNull<u8> {
        let mut slots = Vec::new();
        if slots.try_reserve_exact(cap).is_err() {
            panic!("amphi: cannot allocate a bounded channel of capacity {cap}");
        }
        slots.extend((0..cap).map(|i| {
            wrap(Slot {
                stamp: AtomicUsize::new(i),
                value: UnsafeCell::new(MaybeUninit::uninit()),
            })
        }));
        NonNull::from(Box::leak(slots.into_boxed_slice())).cast()
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        // SAFETY: `base` is the boxed slice `alloc` leaked, of `cap`
        // elements of the type `lined` says, and nothing refers to it any
        // more (its owner, the `Array`, is being dropped).
        unsafe {
            if self.lined {
                let slots =
                    ptr::slice_from_raw_parts_mut(self.base.cast::<Lined<T>>().as_ptr(), self.cap);
                drop(Box::from_raw(slots));
            } else {
                let slots =
                    ptr::slice_from_raw_parts_mut(self.base.cast::<Slot<T>>().as_ptr(), self.cap);
                drop(Box::from_raw(slots));
            }
        }
    }
}

pub(crate) struct Array<T> {
    head: Padded<Head>,
    tail: Padded<Tail>,
    slots: Slots<T>,
    cap: usize,
    /// A power of two above `cap`: positions are `lap * one_lap + index`.
    one_lap: usize,
    /// `one_lap - 1`: a position's index.
    mask: usize,
    /// `cap - 1`: the last index of a lap.
    last: usize,
    /// How many slots ahead of its claim a consumer prefetches:
    /// [`PREFETCH_AHEAD`] where one producer fills the ring and the lap is
    /// long enough, else 0 (none).
    prefetch: usize,
}

/// `head`, and beside it on its line what the last consumer saw of the
/// slot after the one it took.
struct Head {
    word: AtomicUsize,
    /// The `head` word a consumer's claim left, if that consumer then saw
    /// the next slot hold its value (its stamp, read with Acquire), stored
    /// with Release; else [`NO_WORD`]. The next pop claims from this word
    /// alone: a claim that succeeds found `head` at that position, whose
    /// slot still holds its value (a value stays until claimed, and a claim
    /// moves `head` past its position for good: positions carry their
    /// lap), and this word's Acquire load orders the value's write before
    /// the read. A claim that fails (another consumer came first, or a flag
    /// changed) returns `head` as it is, and the pop goes on from there as
    /// it did before.
    ///
    /// Why: a claim is a compare-and-swap, a locked instruction, and the
    /// loads it needs (`head`, then the stamp at an address computed from
    /// it) cannot start before the previous locked instruction has
    /// finished, so on one thread two dependent loads sat between every two
    /// of them; this word is one load, most often still in the store buffer
    /// (BENCHMARKS.md, "Where amphi trails", seventh session). See [`Ahead`]
    /// for the producer's side.
    ready: AtomicUsize,
}

/// A pop that found no word to claim from looks ahead at one position in
/// this many (a power of two).
const LOOK_EVERY: usize = 4;

/// How many positions after its claim a consumer of a one-producer ring
/// asks the CPU to fetch the slot of ([`Array::prefetch`]).
///
/// Each pop's claim is a locked instruction, which waits for the loads
/// before it; where the producer runs on another core, the slot a pop reads
/// is a line that core wrote last, so each pop waited a line transfer
/// (73-96 ns one way on the 2-core VM) for its own slot or for the look at
/// the next one (`look_ahead`). A prefetch is no load: the line comes while
/// the next pops run. On the 2-core VM, `bounded(64)`, against no prefetch
/// (`profile_row`, first quartiles, alternated in one run): threads 1c-8c
/// 4.9-5.1 -> 2.8-3.5 ms, a sync producer into tokio 1c/8c 871/826 ->
/// 658/613 us, an async producer into threads 4c 810 -> 470, tokio
/// current-thread level; tokio 4 workers and smol with 2-8 consumers 1.5-1.9x
/// faster in most runs, but 10-30% slower in one (the VM's speed modes:
/// BENCHMARKS.md, History). 4 measured a little slower on threads; 6 and 8
/// slower than 5 (a line asked for before the producer wrote it goes back
/// to the producer's core). Not where producers compete: there it made
/// tokio 4 workers and smol 4P/4C 1.3-1.8x slower.
const PREFETCH_AHEAD: usize = 5;

/// Never a `head` word of an array: `HAS_NEXT` (bit 3) is an unbounded
/// ring's flag.
const NO_WORD: usize = usize::MAX;

/// `tail`, and beside it on its line the one spmc producer's view of it.
struct Tail {
    word: AtomicUsize,
    /// Read and written only by [`Array::try_push`] and
    /// [`Array::try_push_looking`], whose one caller is the spmc producer
    /// (`&mut` handles, never cloned, moved between threads only with
    /// `Send`): no one else touches it, so it needs no synchronisation of
    /// its own. Unused where producers compete (`try_push_shared`).
    ahead: UnsafeCell<Ahead>,
    /// Where producers compete (mpmc; unused by spmc): a position up to
    /// which (not included) slots were seen free, for claims without a
    /// stamp load ([`Array::try_push_shared`]). Stored with Release by a
    /// producer after its claim at `p` moved `tail` to `p + 1` and it saw
    /// the slots from `p + 1` to here (at most [`SHARED_AHEAD_MAX`], within `p`'s
    /// lap) free for their positions (Acquire loads of their stamps). A
    /// claim at `q` with `q < limit` that succeeds may use `q`'s slot:
    /// loaded with Acquire before it, this word orders that producer's
    /// claim before this one, so `tail` (which only moves forward) went
    /// from `p + 1` to `q`, `q` lies in the range seen free, and nothing
    /// filled its slot since (only a claim past `q` does). 0 at first:
    /// below every claim's range check.
    limit: AtomicUsize,
}

/// How many slots ahead a producer's look counts at most ([`Ahead`]): one
/// look per this many pushes, however large the ring. Where consumers run
/// on other cores, each stamp the look reads is a line fetched back from a
/// consumer's core, and a long look is most of a push's time: on the 2-core
/// VM, `bounded(64)`, 32 against 64 made threads 1c-8c 5-11% faster and
/// smol 4c/8c 7-18%, tokio current-thread level, 64-value bursts on one
/// thread 1-2.5% slower (a second look per burst); 16 and 8 measured about
/// as 32 on threads, a little slower on one thread (BENCHMARKS.md, History).
const AHEAD_MAX: usize = 32;

/// How many slots ahead a look counts at most where producers compete
/// (`Tail::limit`). Fewer than one producer's [`AHEAD_MAX`]: on the 2-core
/// VM, with 4 producers on tokio's 4 workers, smol's 4 threads and threads
/// (`bounded(64)`, 4 consumers), 64 made the median run 10-25% slower than
/// no look at all (while the producers' claims run in parallel, a look
/// reads the stamps' lines back from the consumers' cores), and 8 or 16
/// made it 10-20% faster (BENCHMARKS.md, History).
const SHARED_AHEAD_MAX: usize = 16;

/// What the spmc producer knows of the ring from its last lock-free push.
///
/// Each push claims its slot with a compare-and-swap on `tail`, a locked
/// instruction; the loads it needs first (`tail`, then the slot's stamp at
/// an address computed from it) cannot start before the previous locked
/// instruction has finished, so on one thread they put two dependent loads
/// between every two of them. This record lets the next push skip both:
/// `tail` is where this producer left it unless a flag went up or a value
/// was pushed under the lock meanwhile, and a slot seen free for its
/// position stays free until it is filled, which only a push past the
/// position the compare-and-swap checks can do (BENCHMARKS.md, "Where
/// amphi trails", seventh session).
#[derive(Clone, Copy)]
struct Ahead {
    /// The `tail` word the producer's last push left: its position, no flag.
    word: usize,
    /// How many slots from that position on the producer saw free for
    /// their positions (after its last look at the stamps).
    free: usize,
}

impl Ahead {
    /// No slot known free: the next push looks (its `word` is not read).
    const NONE: Ahead = Ahead { word: 0, free: 0 };
}

// SAFETY: values move between threads through the slots (hence `T: Send`);
// each slot is accessed by one thread at a time, as its stamp says.
unsafe impl<T: Send> Send for Array<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Array<T> {}

impl<T> Array<T> {
    /// `shared`: producers compete (mpmc), so consumers do not prefetch.
    ///
    /// # Panics
    ///
    /// If the slots cannot be allocated.
    pub(super) fn new(cap: usize, shared: bool) -> Self {
        debug_assert!(cap > 0 && cap <= MAX_CAP);
        Array {
            head: Padded(Head {
                word: AtomicUsize::new(0),
                // No head word: the first pop looks.
                ready: AtomicUsize::new(NO_WORD),
            }),
            tail: Padded(Tail {
                word: AtomicUsize::new(0),
                ahead: UnsafeCell::new(Ahead::NONE),
                limit: AtomicUsize::new(0),
            }),
            slots: Slots::new(cap),
            cap,
            one_lap: (cap + 1).next_power_of_two(),
            mask: (cap + 1).next_power_of_two() - 1,
            last: cap - 1,
            // In a short lap the slot ahead is one just read or about to
            // be written.
            prefetch: if !shared && cap > 2 * PREFETCH_AHEAD {
                PREFETCH_AHEAD
            } else {
                0
            },
        }
    }

    #[inline]
    fn slot(&self, pos: usize) -> &Slot<T> {
        let index = pos & self.mask;
        debug_assert!(index < self.cap);
        let slots = &self.slots;
        // SAFETY: the index part of a position is below `cap`; the slots are
        // `cap` elements `stride` bytes apart from `base`, each a `Lined`
        // (`repr(C)`: its `Slot` at offset 0) or a `Slot`, alive until the
        // array is dropped. (A runtime stride costs no more instructions than
        // a constant one: callgrind, BENCHMARKS.md History.)
        unsafe {
            &*slots
                .base
                .as_ptr()
                .add(index * slots.stride)
                .cast::<Slot<T>>()
        }
    }

    /// The producer's record ([`Ahead`]).
    #[inline(always)]
    fn ahead(&self) -> Ahead {
        // SAFETY: only the one spmc producer reads or writes `ahead` (see
        // `Tail`), and this is it.
        self.tail.0.ahead.with(|a| unsafe { *a })
    }

    /// Replaces the producer's record ([`Ahead`]).
    #[inline(always)]
    fn set_ahead(&self, ahead: Ahead) {
        // SAFETY: as in `ahead`.
        self.tail.0.ahead.with_mut(|a| unsafe { *a = ahead });
    }

    /// The slot `n` slots after `slot` in the same lap, slots being
    /// `stride` bytes apart (the caller checks that its index stays at or
    /// below `last`): one addition, where [`slot`](Self::slot) masks and
    /// multiplies.
    #[inline(always)]
    fn slot_after(slot: &Slot<T>, stride: usize, n: usize) -> &Slot<T> {
        // SAFETY: `slot` is one of the array's slots, `stride` the slots'
        // (`Slots::stride`), and the caller keeps the result's index below
        // `cap`: inside the slots' allocation, as in `slot`.
        unsafe {
            &*(slot as *const Slot<T>)
                .cast::<u8>()
                .add(n * stride)
                .cast::<Slot<T>>()
        }
    }

    /// How many slots after `slot` (the one at `pos`, just claimed) in its
    /// lap their readers of the last lap are done with (Acquire: each
    /// reader's read of its value happens before whatever the caller then
    /// writes there), up to `max`. The loads do not depend on one
    /// another, so they overlap. Readers finish out of order, so the count
    /// stops at the first slot still in use. (Within the lap, a slot's
    /// position is `pos` plus its distance from `pos`'s slot.)
    #[inline(always)]
    fn free_after(&self, pos: usize, slot: &Slot<T>, max: usize) -> usize {
        let ahead = (self.last - (pos & self.mask)).min(max);
        // Read once: the loads below would make the compiler read it again
        // at every step.
        let stride = self.slots.stride;
        let mut free = 0;
        while free < ahead
            && Self::slot_after(slot, stride, free + 1)
                .stamp
                .load(Ordering::Acquire)
                == pos + free + 1
        {
            free += 1;
        }
        free
    }

    /// The position after `pos`.
    #[inline]
    fn next(&self, pos: usize) -> usize {
        if pos & self.mask != self.last {
            pos + 1
        } else {
            (pos & !self.mask).wrapping_add(self.one_lap) & POS_MASK
        }
    }

    /// Whether the ring has room for the value at `pos` and for `reserved`
    /// more after it: the slot `reserved` positions on is free for its
    /// position (its reader of the last lap is done, so every position up
    /// to it was claimed by a reader then). A slow reader of a nearer slot
    /// only makes the answer `false` for now.
    #[inline]
    fn room_beyond(&self, pos: usize, reserved: usize) -> bool {
        if reserved >= self.cap {
            return false;
        }
        let index = (pos & self.mask) + reserved;
        let far = if index < self.cap {
            pos + reserved
        } else {
            ((pos & !self.mask).wrapping_add(self.one_lap) & POS_MASK) + (index - self.cap)
        };
        self.slot(far).stamp.load(Ordering::Acquire) == far
    }

    // ----- the producer

    /// Sends without the lock: `Err` (value back) if [`SLOW`] is set or the
    /// slot at `tail` is not free yet. Only the one producer calls it (no
    /// slot is reserved on spmc channels: their one producer is the one a
    /// grant goes to).
    ///
    /// While its last push saw slots free ahead ([`Ahead`]), the claim is
    /// made from that record alone, without a load before it; a claim that
    /// fails (a flag is up, or `tail` moved under the lock) and a record
    /// with no free slot left go to [`try_push_looking`](Self::try_push_looking).
    #[inline]
    pub(super) fn try_push(&self, value: T) -> Result<(), T> {
        let Ahead { word, free } = self.ahead();
        if free != 0 {
            let pos = word >> FLAG_BITS;
            let next = self.next(pos) << FLAG_BITS;
            // Succeeds only if `tail` is still `word`: no flag up (`word`
            // has none) and no value pushed since this producer's last
            // push, so the slot at `pos` is still the free one it saw.
            if self
                .tail
                .0
                .word
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // SAFETY: the slot was seen free for `pos` (Acquire: its
                // reader of the last lap was done) and nothing filled it
                // since (the claim found `tail` at `pos`); the claim makes
                // this producer its only writer, as in `try_push_looking`.
                let slot = self.slot(pos);
                slot.value.with_mut(|c| unsafe { (*c).write(value) });
                slot.stamp.store(pos + 1, Ordering::Release);
                self.set_ahead(Ahead {
                    word: next,
                    free: free - 1,
                });
                return Ok(());
            }
            // Until a push succeeds, the next one looks too (this one
            // failed on a flag or a push under the lock, which the next
            // would most likely find as well: it reads them rather than
            // trying a claim).
            self.set_ahead(Ahead::NONE);
        }
        self.try_push_looking(value)
    }

    /// [`try_push`](Self::try_push) from what the ring says now: `tail`,
    /// then the slot's stamp, then the claim; a push that succeeds then
    /// counts the free slots after its own for the next ones ([`Ahead`]).
    /// In line (in `Ring::try_push`, which a send reaches through a
    /// function pointer): on `bounded(1)` every push comes here, and a call
    /// per push made the threads `bounded(1)` rows 5-10% slower.
    #[inline]
    fn try_push_looking(&self, value: T) -> Result<(), T> {
        // The record says no slot is free (`free` is 0): a push that fails
        // here leaves it so, and the next one looks too.
        let word = self.tail.0.word.load(Ordering::Relaxed);
        debug_assert!(word & RESERVED == 0, "spmc reserves no slot");
        if word & SLOW != 0 {
            return Err(value);
        }
        let pos = word >> FLAG_BITS;
        let slot = self.slot(pos);
        // Before the Acquire load, after which the shape would be read
        // again.
        let next = self.next(pos) << FLAG_BITS;
        // Acquire: the consumer of the last lap has read its value out.
        if slot.stamp.load(Ordering::Acquire) != pos {
            return Err(value);
        }
        // The claim first, the value after it: the compare-and-swap then
        // has one store fewer to wait for, and a failed one leaves the slot
        // untouched.
        if self
            .tail
            .0
            .word
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            // A receiver set `SLOW` under the lock: it may be about to wait,
            // so the value must go through the lock.
            return Err(value);
        }
        // SAFETY: the stamp says the slot is free for `pos` (its reader of
        // the last lap is done) and the claim makes this producer its only
        // writer; a consumer that finds `head` short of the new `tail` reads
        // nothing before the stamp below says the slot is ready.
        slot.value.with_mut(|c| unsafe { (*c).write(value) });
        slot.stamp.store(pos + 1, Ordering::Release);
        let free = self.free_after(pos, slot, AHEAD_MAX);
        // Written only if it says something: with no slot free ahead (and
        // always on `bounded(1)`) the record stays at "none", and the line
        // `tail` is on sees no store but the claim's.
        if free != 0 {
            self.set_ahead(Ahead { word: next, free });
        }
        Ok(())
    }

    /// Sends without the lock where producers compete (mpmc): claims the
    /// slot at `tail` with a compare-and-swap (which fails if another
    /// producer claimed it first, or the core changed the flags), then
    /// writes and stamps it. `Err` (value back) if `SLOW` is set or the ring
    /// has no room beyond the slots reserved for grants. Out of line, its
    /// retry loop further out ([`push_shared_from`](Self::push_shared_from)),
    /// so that the callers' fast paths save no registers for it (in line in
    /// `Ring::try_push_shared` it measured no faster: BENCHMARKS.md, History).
    ///
    /// Where the shared record says the slot and the reserved room beyond
    /// it were seen free (`Tail::limit`), the claim follows the load of
    /// `tail` with no stamp load in between (the record's load does not
    /// depend on `tail`'s, so the two overlap); otherwise
    /// [`try_push_shared_looking`](Self::try_push_shared_looking) reads the
    /// stamps, as spmc's producer does after its own record ([`Ahead`]).
    #[inline(never)]
    pub(super) fn try_push_shared(&self, value: T) -> Result<(), T> {
        let word = self.tail.0.word.load(Ordering::Relaxed);
        // Acquire: see `Tail::limit`.
        let limit = self.tail.0.limit.load(Ordering::Acquire);
        if word & SLOW != 0 {
            return Err(value);
        }
        let pos = word >> FLAG_BITS;
        let reserved = (word & RESERVED) / RESERVED_ONE;
        // Slots `pos` to `pos + reserved` lie below `limit` (in `pos`'s
        // lap: a limit from an earlier lap, behind `pos`, wraps to a
        // distance above `cap`).
        let seen = limit.wrapping_sub(pos);
        if seen > reserved && seen <= self.cap {
            let next = (self.next(pos) << FLAG_BITS) | (word & RESERVED);
            return match self.tail.0.word.compare_exchange_weak(
                word,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    // SAFETY: the claim succeeded at `pos` below `limit`, so
                    // the slot was seen free for `pos` and is still (see
                    // `Tail::limit`); the claim makes this producer its only
                    // writer, and nobody reads it before the stamp below.
                    let slot = self.slot(pos);
                    slot.value.with_mut(|c| unsafe { (*c).write(value) });
                    slot.stamp.store(pos + 1, Ordering::Release);
                    Ok(())
                }
                Err(now) => self.push_shared_from(value, sync::lost_claim(word, now, 0)),
            };
        }
        self.try_push_shared_looking(value, word)
    }

    /// [`try_push_shared`](Self::try_push_shared) from the stamps: the
    /// slot's at `tail` (read as `word`, no `SLOW`) and, with slots
    /// reserved, the last reserved one's; a push that succeeds then counts
    /// the free slots after its own for the pushes after it
    /// (`Tail::limit`). One attempt, without a loop (so with few registers
    /// to save); a lost claim and another producer's move retry in
    /// [`push_shared_from`](Self::push_shared_from).
    #[inline(always)]
    fn try_push_shared_looking(&self, value: T, word: usize) -> Result<(), T> {
        let pos = word >> FLAG_BITS;
        let slot = self.slot(pos);
        // Acquire: the consumer of the last lap has read its value out.
        let stamp = slot.stamp.load(Ordering::Acquire);
        if stamp != pos {
            if stamp == (pos.wrapping_sub(self.one_lap) + 1) & POS_MASK {
                // Still holds (or is giving up) the last lap's value: full.
                return Err(value);
            }
            return self.push_shared_from(value, 0);
        }
        let reserved = (word & RESERVED) / RESERVED_ONE;
        if reserved != 0 && !self.room_beyond(pos, reserved) {
            // The room left is granted to waiting senders.
            return Err(value);
        }
        let next = (self.next(pos) << FLAG_BITS) | (word & RESERVED);
        // Strong: a spurious failure (under Miri, say) would skip the count
        // below, and the pushes after this one would look again.
        match self
            .tail
            .0
            .word
            .compare_exchange(word, next, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => {
                // SAFETY: as in `push_shared_from`.
                slot.value.with_mut(|c| unsafe { (*c).write(value) });
                slot.stamp.store(pos + 1, Ordering::Release);
                let free = self.free_after(pos, slot, SHARED_AHEAD_MAX);
                // Only if it says something (never on `bounded(1)`): the
                // line `tail` is on then sees no other store.
                if free != 0 {
                    // Release: see `Tail::limit`.
                    self.tail.0.limit.store(pos + 1 + free, Ordering::Release);
                }
                Ok(())
            }
            Err(now) => self.push_shared_from(value, sync::lost_claim(word, now, 0)),
        }
    }

    /// [`try_push_shared`](Self::try_push_shared)'s loop, after a lost
    /// claim (`lost` is the backoff step) or another producer's move.
    #[cold]
    #[inline(never)]
    fn push_shared_from(&self, value: T, mut lost: u32) -> Result<(), T> {
        let mut word = self.tail.0.word.load(Ordering::Relaxed);
        loop {
            if word & SLOW != 0 {
                return Err(value);
            }
            let pos = word >> FLAG_BITS;
            let slot = self.slot(pos);
            // Acquire: the consumer of the last lap has read its value out.
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == pos {
                let reserved = (word & RESERVED) / RESERVED_ONE;
                if reserved != 0 && !self.room_beyond(pos, reserved) {
                    // The room left is granted to waiting senders.
                    return Err(value);
                }
                // The reservations stay; the claim fails if the core
                // changed them since `word` was read.
                let next = (self.next(pos) << FLAG_BITS) | (word & RESERVED);
                match self.tail.0.word.compare_exchange_weak(
                    word,
                    next,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: the claim makes this producer the only
                        // writer of the slot, free for `pos` (the stamp);
                        // nobody reads it before the stamp below.
                        slot.value.with_mut(|c| unsafe { (*c).write(value) });
                        slot.stamp.store(pos + 1, Ordering::Release);
                        return Ok(());
                    }
                    Err(now) => {
                        lost = sync::lost_claim(word, now, lost);
                        word = now;
                        continue;
                    }
                }
            }
            if stamp == (pos.wrapping_sub(self.one_lap) + 1) & POS_MASK {
                // Still holds (or is giving up) the last lap's value: full.
                return Err(value);
            }
            // Another producer moved `tail` on.
            lost = sync::contend(lost);
            word = self.tail.0.word.load(Ordering::Relaxed);
        }
    }

    /// Sends under the core lock, on the producer's behalf (its own locked
    /// path, or a consumer serving a blocked producer), when the core's
    /// accounting says there is room. Waits for a consumer still reading the
    /// slot's last lap (it holds no lock, so this is short). With several
    /// producers, [`SLOW`] is set first (`Chan::exclude_senders`), so that
    /// none of them writes `tail` meanwhile.
    #[inline(always)]
    pub(super) fn push_locked(&self, value: T) {
        // Under the lock nobody else writes `tail`: receivers set flags only
        // under the lock, and the producer is here or blocked (spmc), or
        // every other producer's claim fails on `SLOW` (mpmc).
        let word = self.tail.0.word.load(Ordering::Relaxed);
        let pos = word >> FLAG_BITS;
        let slot = self.slot(pos);
        if slot.stamp.load(Ordering::Acquire) != pos {
            // In tail position: this path, which seldom waits, then keeps
            // no registers for the loop.
            return self.push_locked_waiting(value);
        }
        self.publish_locked(word, pos, slot, value);
    }

    /// [`push_locked`](Self::push_locked) once a consumer still reading the
    /// slot's last lap has finished with it.
    #[cold]
    #[inline(never)]
    fn push_locked_waiting(&self, value: T) {
        let word = self.tail.0.word.load(Ordering::Relaxed);
        let pos = word >> FLAG_BITS;
        let slot = self.slot(pos);
        let mut step = 0;
        while slot.stamp.load(Ordering::Acquire) != pos {
            sync::snooze(&mut step);
        }
        self.publish_locked(word, pos, slot, value);
    }

    /// Writes `value` to the slot at `pos` (free for it), then moves `tail`
    /// (`word`, read under the lock) on and stamps the slot.
    #[inline(always)]
    fn publish_locked(&self, word: usize, pos: usize, slot: &Slot<T>, value: T) {
        // SAFETY: as in `try_push`: free for `pos`, and only the producer's
        // side writes it.
        slot.value.with_mut(|c| unsafe { (*c).write(value) });
        // `tail` first, then the stamp, as in `try_push`: `head` never
        // passes `tail`.
        self.tail.0.word.store(
            (self.next(pos) << FLAG_BITS) | (word & FLAGS),
            Ordering::Release,
        );
        slot.stamp.store(pos + 1, Ordering::Release);
    }

    // ----- consumers

    /// One attempt to take the value at `head` (`Ring::pop_once`): a lost
    /// claim, a slot still being written and the loop are left to
    /// [`pop_from`](Self::pop_from) ([`Pop::Again`]), so that this path,
    /// in line, needs few registers.
    #[inline(always)]
    pub(super) fn pop_once(&self) -> Pop<T> {
        // Acquire: the value of the slot the consumer that stored this word
        // saw ready (see `Head::ready`).
        let ready = self.head.0.ready.load(Ordering::Acquire);
        let word = if ready != NO_WORD {
            // Claimed from that word alone, with no load before the claim
            // but this one; a claim that fails returns `head` as it is, as
            // a load would (another consumer came first, or a flag went up:
            // `ready` holds none but `TX_GONE`), and the pop goes on.
            let pos = ready >> FLAG_BITS;
            let slot = self.slot(pos);
            let after = self.after(pos, slot);
            match self.claim(ready, pos, slot, 0) {
                Ok(value) => {
                    self.prefetch(pos, slot);
                    self.look_ahead(ready, after, ready);
                    return Pop::Value(value, false);
                }
                Err(word) => word,
            }
        } else {
            self.head.0.word.load(Ordering::Acquire)
        };
        if word & RETURNED != 0 {
            return Pop::Slow;
        }
        let pos = word >> FLAG_BITS;
        let slot = self.slot(pos);
        let stamp = slot.stamp.load(Ordering::Acquire);
        if stamp == pos + 1 {
            // A consumer that keeps up with the producer finds the next slot
            // empty every time: from here (no word to claim from) it looks
            // at one position in `LOOK_EVERY`, enough to start claiming
            // from words within a few values of a run. A stale word is
            // replaced at once.
            // (`bounded(1)`'s next slot is the one just claimed: no look.)
            let look = self.last != 0 && (ready != NO_WORD || pos % LOOK_EVERY == 0);
            let after = look.then(|| self.after(pos, slot));
            if let Ok(value) = self.claim(word, pos, slot, 0) {
                self.prefetch(pos, slot);
                if let Some(after) = after {
                    self.look_ahead(word, after, ready);
                }
                return Pop::Value(value, word & SEND_WAITING != 0);
            }
        } else if self.unwritten(pos, stamp) {
            // As in `pop_from`.
            return Pop::Empty(word & TX_GONE != 0);
        }
        Pop::Again
    }

    /// Takes the value at `head`, looping: after [`pop_once`](Self::pop_once)
    /// lost a claim or saw another consumer's move, and under the lock
    /// (`settle`, after [`SLOW`] is set), where a value the producer has
    /// claimed but not yet stamped is waited for instead of reported missing.
    /// `keep` holds flags the claim leaves set ([`SEND_WAITING`] for a
    /// caller that fills the slot it frees again before it unlocks).
    #[inline(never)]
    pub(super) fn pop_from(&self, settle: bool, keep: usize) -> Pop<T> {
        let mut word = self.head.0.word.load(Ordering::Acquire);
        let mut step = 0;
        let mut lost = 0;
        loop {
            if word & RETURNED != 0 && !settle {
                return Pop::Slow;
            }
            let pos = word >> FLAG_BITS;
            let slot = self.slot(pos);
            let stamp = slot.stamp.load(Ordering::Acquire);
            if stamp == pos + 1 {
                match self.claim(word, pos, slot, keep) {
                    Ok(value) => return Pop::Value(value, word & SEND_WAITING != 0),
                    Err(now) => {
                        lost = sync::lost_claim(word, now, lost);
                        word = now;
                        continue;
                    }
                }
            }
            if self.unwritten(pos, stamp) {
                // `word` was read before the stamp, so with `TX_GONE` in it
                // every value is visible: drained.
                if settle && self.tail.0.word.load(Ordering::Acquire) >> FLAG_BITS != pos {
                    // Claimed by the producer, not stamped yet.
                    sync::snooze(&mut step);
                    word = self.head.0.word.load(Ordering::Acquire);
                    continue;
                }
                return Pop::Empty(word & TX_GONE != 0);
            }
            // Another consumer moved `head` on.
            lost = sync::contend(lost);
            word = self.head.0.word.load(Ordering::Acquire);
        }
    }

    /// Claims `pos` (`head` read as `word`, or taken from `Head::ready`; its
    /// slot stamped ready) and
    /// reads its value; `Err` with the word found if another consumer's
    /// claim, or a flag the core changed, came first. The claim clears
    /// `SEND_WAITING` unless `keep` has it: the caller then serves the
    /// waiting producer.
    #[inline(always)]
    fn claim(&self, word: usize, pos: usize, slot: &Slot<T>, keep: usize) -> Result<T, usize> {
        let next = (self.next(pos) << FLAG_BITS) | (word & (RETURNED | TX_GONE | keep));
        self.head
            .0
            .word
            .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)?;
        // SAFETY: the stamp said ready, read with Acquire by this consumer
        // or by the one whose `Head::ready` word it claimed from (Release,
        // then Acquire here): the write is visible. The claim makes this
        // consumer the only reader; the producer waits for the stamp below.
        let value = slot.value.with_mut(|c| unsafe { (*c).assume_init_read() });
        slot.stamp
            .store(pos.wrapping_add(self.one_lap) & POS_MASK, Ordering::Release);
        Ok(value)
    }

    /// The position after `pos` and its slot, `slot` being `pos`'s:
    /// computed before a claim, whose locked instruction makes the compiler
    /// read the ring's shape again after it.
    #[inline(always)]
    fn after<'a>(&'a self, pos: usize, slot: &'a Slot<T>) -> (usize, &'a Slot<T>) {
        if pos & self.mask != self.last {
            (pos + 1, Self::slot_after(slot, self.slots.stride, 1))
        } else {
            let at = self.next(pos);
            (at, self.slot(at))
        }
    }

    /// After a claim from `word` by [`pop_once`](Self::pop_once), with the
    /// next position and its slot (`after`):
    /// `Head::ready` says whether the next slot already holds its value, for
    /// the next pop. One load of a line the next pop reads anyway; nothing
    /// here waits for it but the store.
    #[inline(always)]
    fn look_ahead(&self, word: usize, (at, slot): (usize, &Slot<T>), ready: usize) {
        // The word `head` has after this claim, as `claim` leaves it
        // (`word` had no `RETURNED`: `pop_once` returned before claiming),
        // without `SEND_WAITING`: that flag, raised meanwhile, makes `head`
        // differ, so the next pop's claim fails, and it looks and serves.
        let next = if slot.stamp.load(Ordering::Acquire) == at + 1 {
            (at << FLAG_BITS) | (word & TX_GONE)
        } else {
            NO_WORD
        };
        // Written only on a change (`ready` as this pop read it): a
        // consumer that keeps up with the producer finds nothing ahead
        // every time.
        if next != ready {
            self.head.0.ready.store(next, Ordering::Release);
        }
    }

    /// The slot [`prefetch`](Self::prefetch) asks for after a claim at
    /// `pos` (whose slot is `slot`): the one `self.prefetch` indexes on in
    /// the same lap, one addition away ([`slot_after`](Self::slot_after));
    /// `None` past the lap's last index and where consumers do not
    /// prefetch.
    /// (Going on into the next lap's first slots measured slower on the
    /// 2-core VM: tokio 4 workers `bounded(64)` 4c 520 -> 671 us, smol 742
    /// -> 997, first quartiles, alternated in one run; there the producer
    /// has just looked again, at the lap's end, and is less far ahead.)
    #[inline(always)]
    fn slot_to_prefetch<'a>(&'a self, pos: usize, slot: &'a Slot<T>) -> Option<&'a Slot<T>> {
        if self.prefetch == 0 || (pos & self.mask) + self.prefetch > self.last {
            return None;
        }
        Some(Self::slot_after(slot, self.slots.stride, self.prefetch))
    }

    /// After a claim at `pos` (its slot `slot`) by
    /// [`pop_once`](Self::pop_once): asks the CPU to fetch the line of a
    /// slot a few pops ahead ([`PREFETCH_AHEAD`]), so that the pop that
    /// reads it finds it in cache. A hint only: no
    /// load, nothing waits for it, and the stamp is read as before. x86-64
    /// only (the prefetch intrinsic is unstable elsewhere); not under loom
    /// or Miri, which model memory accesses, not caches.
    #[inline(always)]
    fn prefetch(&self, pos: usize, slot: &Slot<T>) {
        if let Some(slot) = self.slot_to_prefetch(pos, slot) {
            #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
            // SAFETY: SSE, which the intrinsic needs, is part of every
            // x86-64 CPU; a prefetch reads and writes nothing (an address
            // it cannot fetch is dropped, never a fault), and this one is
            // a slot of the array anyway.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>((slot as *const Slot<T>).cast());
            }
            #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
            let _ = slot;
        }
    }

    /// Whether the slot at `pos`, stamped `stamp`, holds no value for it
    /// yet (it may still be being read from its last lap).
    #[inline(always)]
    fn unwritten(&self, pos: usize, stamp: usize) -> bool {
        stamp == pos || stamp == (pos.wrapping_sub(self.one_lap) + 1) & POS_MASK
    }

    /// Under the lock with [`SLOW`] set: whether the value at `head` is
    /// there to take, waiting for a slot the producer has claimed but not
    /// yet stamped (so that a "ready" answer is not followed by an empty
    /// take, which would send a selecting thread round its loop).
    pub(super) fn settled_nonempty(&self) -> bool {
        let mut step = 0;
        loop {
            let pos = self.head.0.word.load(Ordering::Acquire) >> FLAG_BITS;
            if self.slot(pos).stamp.load(Ordering::Acquire) == pos + 1 {
                return true;
            }
            if self.tail.0.word.load(Ordering::Acquire) >> FLAG_BITS == pos {
                return false;
            }
            // Claimed by a producer and not stamped yet, or just taken by a
            // consumer (then `head` has moved: look again).
            sync::snooze(&mut step);
        }
    }

    /// Under the lock with [`SLOW`] set: whether no position is claimed
    /// and unread. Only the lock holder moves `tail` then, and `head` never
    /// passes it.
    #[inline]
    pub(super) fn is_empty_locked(&self) -> bool {
        let tail = self.tail.0.word.load(Ordering::Acquire) >> FLAG_BITS;
        self.head.0.word.load(Ordering::Acquire) >> FLAG_BITS == tail
    }

    /// Whether a consumer would find something now (a hint for spinning).
    #[inline]
    pub(super) fn looks_nonempty(&self) -> bool {
        let word = self.head.0.word.load(Ordering::Relaxed);
        let pos = word >> FLAG_BITS;
        word & RETURNED != 0 || self.slot(pos).stamp.load(Ordering::Relaxed) == pos + 1
    }

    /// Whether the producer would find the slot at `tail` free now (a hint
    /// for spinning).
    #[inline]
    pub(super) fn looks_free(&self) -> bool {
        let word = self.tail.0.word.load(Ordering::Relaxed);
        let pos = word >> FLAG_BITS;
        word & SLOW != 0 || self.slot(pos).stamp.load(Ordering::Relaxed) == pos
    }

    /// The `head` and `tail` words, for their flags.
    pub(super) fn words(&self) -> (&AtomicUsize, &AtomicUsize) {
        (&self.head.0.word, &self.tail.0.word)
    }

    /// Values in the ring (claimed by the producer, not yet by a consumer).
    #[inline]
    pub(super) fn len(&self) -> usize {
        loop {
            let tail = self.tail.0.word.load(Ordering::Acquire) >> FLAG_BITS;
            let head = self.head.0.word.load(Ordering::Acquire) >> FLAG_BITS;
            if self.tail.0.word.load(Ordering::Acquire) >> FLAG_BITS == tail {
                return self.count(head, tail);
            }
        }
    }

    /// [`len`](Self::len) while `tail` cannot move (the core lock held with
    /// [`SLOW`] set, or on the one producer's side): `head` read after
    /// `tail` then never passes it, so one read of each is a consistent
    /// pair.
    #[inline]
    pub(super) fn len_stable(&self) -> usize {
        let tail = self.tail.0.word.load(Ordering::Acquire) >> FLAG_BITS;
        let head = self.head.0.word.load(Ordering::Acquire) >> FLAG_BITS;
        self.count(head, tail)
    }

    /// Values between positions `head` and `tail` (`head` not past `tail`).
    #[inline(always)]
    fn count(&self, head: usize, tail: usize) -> usize {
        let mask = self.one_lap - 1;
        let (hix, tix) = (head & mask, tail & mask);
        if hix < tix {
            tix - hix
        } else if hix > tix {
            self.cap - hix + tix
        } else if tail == head {
            0
        } else {
            self.cap
        }
    }
}

impl<T> Drop for Array<T> {
    fn drop(&mut self) {
        let tail = self.tail.0.word.load(Ordering::Relaxed) >> FLAG_BITS;
        let mut pos = self.head.0.word.load(Ordering::Relaxed) >> FLAG_BITS;
        while pos != tail {
            let slot = self.slot(pos);
            if slot.stamp.load(Ordering::Relaxed) == pos + 1 {
                // SAFETY: stamped ready and never claimed; nobody else is
                // left to read it.
                slot.value.with_mut(|c| unsafe { (*c).assume_init_drop() });
            }
            pos = self.next(pos);
        }
        // The slots are freed by their own `Drop`, after this.
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Array, Lined, Slot, LINED_MAX, PREFETCH_AHEAD};
    use crate::ring::{Pop, SLOW};
    use std::mem::{align_of, size_of};
    use std::sync::atomic::Ordering;

    /// Takes the value at `head`, which must be there.
    fn pop(a: &Array<u32>) -> u32 {
        match a.pop_from(false, 0) {
            Pop::Value(v, _) => v,
            _ => panic!("a value was due"),
        }
    }

    /// The producer's record ([`super::Ahead`]) follows its pushes: a push
    /// that looked counts the free slots after its own, each push from the
    /// record uses one, and a full ring or a slot whose reader is not done
    /// sends the next push to look again.
    #[test]
    fn the_producers_record_counts_free_slots_ahead() {
        let a = Array::<u32>::new(4, false);
        assert!(a.try_push(1).is_ok());
        assert_eq!(a.ahead().free, 3, "the three slots after the first");
        assert!(a.try_push(2).is_ok() && a.try_push(3).is_ok() && a.try_push(4).is_ok());
        assert_eq!(a.ahead().free, 0);
        assert_eq!(a.try_push(5), Err(5), "full");
        assert_eq!((pop(&a), pop(&a)), (1, 2));
        // The next push looks and finds the two slots read out, the second
        // past it on the next lap.
        assert!(a.try_push(5).is_ok());
        assert_eq!(a.ahead().free, 1);
        assert_eq!(a.ahead().word, a.tail.0.word.load(Ordering::Relaxed));
        assert!(a.try_push(6).is_ok());
        assert_eq!(a.try_push(7), Err(7), "full again");
        assert_eq!((pop(&a), pop(&a), pop(&a), pop(&a)), (3, 4, 5, 6));
    }

    /// A value pushed under the lock moves `tail` past the producer's
    /// record: the next push's claim from the record fails and it looks
    /// instead, so nothing is written over and order holds. A flag up
    /// (`SLOW`) fails the claim the same way.
    #[test]
    fn a_push_from_a_stale_record_looks_again() {
        let a = Array::<u32>::new(4, false);
        assert!(a.try_push(1).is_ok());
        a.push_locked(2);
        assert!(a.try_push(3).is_ok());
        let tail = &a.tail.0.word;
        tail.fetch_or(SLOW, Ordering::AcqRel);
        assert_eq!(a.try_push(4), Err(4), "SLOW: through the lock");
        tail.fetch_and(!SLOW, Ordering::AcqRel);
        assert!(a.try_push(4).is_ok());
        assert_eq!(a.len(), 4);
        assert_eq!((pop(&a), pop(&a), pop(&a), pop(&a)), (1, 2, 3, 4));
    }

    /// Where producers compete, the limit beside `tail` (`Tail::limit`)
    /// follows the pushes that look: the first push counts the slots after
    /// its own, the pushes below the limit claim without a stamp load, and
    /// a limit left from an earlier lap is not used: the slot it covered
    /// there may still hold that lap's value (here the second), which a
    /// claim from it would write over.
    #[test]
    fn the_shared_limit_covers_slots_seen_free_in_this_lap_only() {
        let a = Array::<u32>::new(2, true);
        let limit = |a: &Array<u32>| a.tail.0.limit.load(Ordering::Relaxed);
        assert!(a.try_push_shared(1).is_ok());
        assert_eq!(limit(&a), 2, "the slot after the first, up to position 2");
        assert!(a.try_push_shared(2).is_ok());
        assert_eq!(a.try_push_shared(3), Err(3), "full");
        assert_eq!(pop(&a), 1);
        // Lap 1 (positions 4 and 5): the first slot is free again, the
        // second still holds 2, and the limit is lap 0's.
        assert!(a.try_push_shared(3).is_ok());
        assert_eq!(limit(&a), 2, "nothing seen free after position 4");
        assert_eq!(a.try_push_shared(4), Err(4), "full: 2 is still there");
        assert_eq!(pop(&a), 2);
        assert!(a.try_push_shared(4).is_ok(), "it looks, and finds room");
        assert_eq!((pop(&a), pop(&a)), (3, 4));
        // Lap 2: a push at position 8 sees position 9's slot free.
        assert!(a.try_push_shared(5).is_ok());
        assert_eq!(limit(&a), 10);
        assert!(a.try_push_shared(6).is_ok());
        assert_eq!((pop(&a), pop(&a)), (5, 6));
    }

    /// The layout `bounded`'s docs state: a 64-byte line per small slot up
    /// to capacity 1,024, dense past it, and dense for slots of a line or
    /// more at any capacity.
    #[test]
    fn small_slots_get_a_line_each_up_to_lined_max() {
        assert_eq!(size_of::<Slot<usize>>(), 16);
        assert_eq!(
            (size_of::<Lined<usize>>(), align_of::<Lined<usize>>()),
            (64, 64)
        );
        for cap in [1, 64, LINED_MAX] {
            let a = Array::<usize>::new(cap, false);
            assert!(a.slots.lined, "cap {cap}");
            assert_eq!(a.slots.stride, 64);
            assert_eq!(
                a.slots.base.as_ptr() as usize % 64,
                0,
                "cap {cap}: not line-aligned"
            );
        }
        let dense = Array::<usize>::new(LINED_MAX + 1, false);
        assert!(!dense.slots.lined);
        assert_eq!(dense.slots.stride, 16);
        let large = Array::<[u64; 9]>::new(8, false);
        assert!(!large.slots.lined);
        assert_eq!(large.slots.stride, size_of::<Slot<[u64; 9]>>());
    }

    /// A consumer of a one-producer ring prefetches the slot
    /// `PREFETCH_AHEAD` indexes after its claim's, within the lap; where
    /// producers compete, or in a lap too short for it, it prefetches
    /// nothing.
    #[test]
    fn consumers_prefetch_a_few_slots_ahead_on_one_producer_rings_only() {
        let cap = 3 * PREFETCH_AHEAD;
        let a = Array::<u32>::new(cap, false);
        let mut pos = 0;
        for n in 0..2 * cap {
            let index = n % cap;
            match a.slot_to_prefetch(pos, a.slot(pos)) {
                Some(ahead) => {
                    assert!(index + PREFETCH_AHEAD < cap, "claim {n}: past the lap");
                    assert!(
                        std::ptr::eq(ahead, a.slot(index + PREFETCH_AHEAD)),
                        "claim {n}"
                    );
                }
                None => assert!(index + PREFETCH_AHEAD >= cap, "claim {n}: none"),
            }
            pos = a.next(pos);
        }
        let shared = Array::<u32>::new(cap, true);
        assert!(shared.slot_to_prefetch(0, shared.slot(0)).is_none());
        let short = Array::<u32>::new(2 * PREFETCH_AHEAD, false);
        assert!(short.slot_to_prefetch(0, short.slot(0)).is_none());
    }
}
