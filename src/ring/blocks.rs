//! An unbounded channel's data path: a list of blocks of slots, in the shape
//! of crossbeam's `list` flavor. Producers claim positions on `tail` and
//! append a block when one fills; consumers claim positions on `head`. The
//! consumer that takes a block's last slot retires the block once `head` has
//! left it; a producer that needs a new block reuses a retired one whose
//! slots are all read, and frees the other read ones. In one use of a block,
//! each slot is written once and read once: its state goes `0`, `WRITE`,
//! `READ`, each step a plain store by the one thread whose turn it is.
//!
//! Nobody waits for a slow reader: a block with a slot still being read
//! stays retired until a later look finds it read. So a pop costs a claim on
//! `head` and two plain atomic accesses to its slot, as in the bounded ring,
//! and a block is allocated only when the retired ones are all in use (a
//! producer running ahead of its consumers).
//!
//! A position's index within its lap of [`LAP`] picks its slot
//! ([`slot_index`]: consecutive positions lie on different cache lines, so
//! that a consumer right behind the producer reads and marks a line the
//! producer is no longer writing); index
//! [`BLOCK_CAP`] is no slot but marks "the next block is being linked":
//! whoever moved `tail` (or `head`) there moves it on once the next block is
//! in place, and others wait meanwhile. The flags of the parent module live
//! in the low bits of both words, so moving on is a `fetch_add`, never a
//! store that could lose a flag set meanwhile under the core lock.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr;

use super::{Padded, Pop, FLAG_BITS, HAS_NEXT, POS_MASK, RETURNED, SLOW, TX_GONE};
use crate::sync::{self, AtomicPtr, AtomicUsize, Ordering, UnsafeCell};

/// Positions per block, one of them the "next block" mark. Small under loom,
/// so that the models cross blocks. 64 rather than crossbeam's 32: a producer
/// running ahead of its consumers allocates a block per `BLOCK_CAP` values,
/// and with a word-sized value a block is 1 KiB, a size the allocator serves
/// from its bins (measured: BENCHMARKS.md, History).
#[cfg(not(loom))]
const LAP: usize = 64;
#[cfg(loom)]
const LAP: usize = 4;
const _: () = assert!(LAP.is_power_of_two() && LAP >= 4);
/// Slots per block.
const BLOCK_CAP: usize = LAP - 1;

/// The slot of a position's index within its block: the index's bits
/// rotated left by two, so that consecutive positions lie four slots apart
/// and a slot's neighbours belong to positions `LAP / 4` apart. With a
/// word-sized value a slot takes 16 bytes and starts on a 16-byte boundary
/// (the allocator's alignment), so a cache line holds four whole slots and
/// the next `LAP / 4 - 1` positions lie on as many other lines. With the
/// slots in position order, a consumer chasing the producer reads and marks
/// `READ` on the line the producer writes next, and the line moves between
/// their cores for every value (measured: BENCHMARKS.md, History). A rotation permutes `0..LAP` and fixes `LAP - 1`, so every
/// index below [`BLOCK_CAP`] maps to a slot below it.
#[inline(always)]
fn slot_index(offset: usize) -> usize {
    const BITS: u32 = LAP.trailing_zeros();
    ((offset << 2) | (offset >> (BITS - 2))) & (LAP - 1)
}

/// One position, in a `head` or `tail` word.
const ONE: usize = 1 << FLAG_BITS;

/// A slot's state: the value is written.
const WRITE: usize = 1;
/// The value is read out: its reader is done with the block.
const READ: usize = 2;

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    state: AtomicUsize,
}

impl<T> Slot<T> {
    /// Waits for a producer that has claimed this slot to write it (it holds
    /// no lock, so this is its next few instructions).
    #[inline(always)]
    fn wait_write(&self) {
        // Almost always written already: the check in line, the wait not.
        if self.state.load(Ordering::Acquire) & WRITE == 0 {
            self.wait_write_slow();
        }
    }

    #[inline(never)]
    fn wait_write_slow(&self) {
        let mut step = 0;
        while self.state.load(Ordering::Acquire) & WRITE == 0 {
            sync::snooze(&mut step);
        }
    }
}

#[cfg(loom)]
std::thread_local! {
    /// Blocks allocated and not yet freed, on this OS thread (a loom model's
    /// threads all run on the test's one OS thread).
    static LIVE_BLOCKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Unbounded blocks allocated and not freed on this OS thread, for the loom
/// models to check that every block is freed once (under `cfg(loom)` only).
#[cfg(loom)]
pub fn live_blocks() -> usize {
    LIVE_BLOCKS.with(std::cell::Cell::get)
}

/// Slots first. Not aligned to a cache line: [`slot_index`] spreads
/// consecutive positions over distinct lines at the allocator's own
/// alignment, and a line-aligned layout sends every allocation through the
/// allocator's slower aligned path (measured: BENCHMARKS.md, History).
#[repr(C)]
struct Block<T> {
    slots: [Slot<T>; BLOCK_CAP],
    next: AtomicPtr<Block<T>>,
    /// The next block on the retired stack.
    retired_next: AtomicPtr<Block<T>>,
}

impl<T> Block<T> {
    /// The slot of the position whose index within the block is `offset`
    /// (through [`slot_index`], the one place that maps the two).
    ///
    /// # Safety
    ///
    /// `offset < BLOCK_CAP` (the index [`BLOCK_CAP`] is the "next block"
    /// mark, no slot).
    #[inline(always)]
    unsafe fn slot(&self, offset: usize) -> &Slot<T> {
        debug_assert!(offset < BLOCK_CAP);
        // SAFETY: `slot_index` maps every index below `BLOCK_CAP` to a slot
        // below it (the caller's contract gives the index).
        unsafe { self.slots.get_unchecked(slot_index(offset)) }
    }

    /// A block with every slot empty, on the heap.
    #[cfg(not(loom))]
    fn alloc() -> *mut Block<T> {
        let layout = std::alloc::Layout::new::<Block<T>>();
        // SAFETY: the layout is not zero-sized (it holds atomics), and zero
        // bytes are a valid block: null links, states 0, values uninit.
        let block = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Block<T>>();
        if block.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        block
    }

    #[cfg(loom)]
    fn alloc() -> *mut Block<T> {
        LIVE_BLOCKS.with(|n| n.set(n.get() + 1));
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            retired_next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                state: AtomicUsize::new(0),
            }),
        }))
    }

    /// # Safety
    ///
    /// `block` came from [`alloc`](Self::alloc) and nobody uses it any more;
    /// its values are read out or dropped.
    unsafe fn free(block: *mut Block<T>) {
        #[cfg(loom)]
        {
            // SAFETY: as below: the block is alive and ours.
            unsafe { Block::touch(block) };
            LIVE_BLOCKS.with(|n| n.set(n.get() - 1));
        }
        // SAFETY: allocated as a `Block<T>` by the global allocator (a `Box`
        // under loom), and ours alone (the caller's contract).
        drop(unsafe { Box::from_raw(block) });
    }

    /// Under loom, a mutable access to every slot's cell: a free or reuse
    /// that does not happen after each reader's last access then fails the
    /// model as a data race (loom has no other way to see a use after free).
    ///
    /// # Safety
    ///
    /// `block` is alive.
    #[cfg(loom)]
    unsafe fn touch(block: *mut Block<T>) {
        // SAFETY: alive (the caller's contract).
        for slot in unsafe { &(*block).slots } {
            slot.value.with_mut(|_| ());
        }
    }

    /// Waits for the producer that claimed the last slot to link the next
    /// block (it holds no lock, so this is short).
    fn wait_next(&self) -> *mut Block<T> {
        let mut step = 0;
        loop {
            let next = self.next.load(Ordering::Acquire);
            if !next.is_null() {
                return next;
            }
            sync::snooze(&mut step);
        }
    }

    /// Whether every slot's reader is done with the block.
    ///
    /// # Safety
    ///
    /// `block` is alive and retired: every slot was claimed by a consumer.
    unsafe fn is_read(block: *mut Block<T>) -> bool {
        // SAFETY: alive (the caller's contract).
        let slots = unsafe { &(*block).slots };
        // Acquire: a reader's last access to the block happens before its
        // `READ`, so it happens before whatever the caller does next.
        slots
            .iter()
            .all(|slot| slot.state.load(Ordering::Acquire) == READ)
    }
}

/// A position word and the block it is in.
struct End<T> {
    index: AtomicUsize,
    block: AtomicPtr<Block<T>>,
}

pub(crate) struct Blocks<T> {
    head: Padded<End<T>>,
    tail: Padded<End<T>>,
    /// Blocks that `head` has left, linked through `retired_next`: pushed by
    /// the consumer that read a block's last slot, taken all at once by a
    /// producer that needs a block (so a block is never popped alone, and
    /// the stack has no ABA problem).
    retired: AtomicPtr<Block<T>>,
}

// SAFETY: values move between threads through the slots (hence `T: Send`);
// each slot is written by the one producer that claimed its position and
// read by the one consumer that claimed it, as its state says.
unsafe impl<T: Send> Send for Blocks<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Blocks<T> {}

/// A position's lap-normalised form: the "next block" mark counts as the
/// first position of the next block (no slot lies between them).
#[inline]
fn settled(pos: usize) -> usize {
    if pos % LAP == BLOCK_CAP {
        (pos + 1) & POS_MASK
    } else {
        pos
    }
}

impl<T> Blocks<T> {
    /// One empty block, so that neither side ever finds none.
    pub(super) fn new() -> Self {
        let first = Block::alloc();
        Blocks {
            head: Padded(End {
                index: AtomicUsize::new(0),
                block: AtomicPtr::new(first),
            }),
            tail: Padded(End {
                index: AtomicUsize::new(0),
                block: AtomicPtr::new(first),
            }),
            retired: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// A block for a producer about to claim a block's last slot: a retired
    /// one whose slots are all read, reset, or a new one. The other read
    /// blocks are freed; those with a reader still at work go back on the
    /// stack for a later look.
    fn fresh_block(&self) -> *mut Block<T> {
        let mut list = self.retired.swap(ptr::null_mut(), Ordering::Acquire);
        let mut found: *mut Block<T> = ptr::null_mut();
        let (mut busy_top, mut busy_bottom): (*mut Block<T>, *mut Block<T>) =
            (ptr::null_mut(), ptr::null_mut());
        while !list.is_null() {
            let block = list;
            // SAFETY: a retired block is alive until a producer that took it
            // off the stack frees it, and this one took the whole stack.
            unsafe {
                list = (*block).retired_next.load(Ordering::Relaxed);
                if !Block::is_read(block) {
                    (*block).retired_next.store(busy_top, Ordering::Relaxed);
                    if busy_top.is_null() {
                        busy_bottom = block;
                    }
                    busy_top = block;
                } else if found.is_null() {
                    found = block;
                } else {
                    // Read out, and no position leads into it any more.
                    Block::free(block);
                }
            }
        }
        if !busy_top.is_null() {
            // SAFETY: these blocks are ours until they are back on the stack.
            unsafe { self.retire_chain(busy_top, busy_bottom) };
        }
        if found.is_null() {
            return Block::alloc();
        }
        // SAFETY: read out (`is_read`), and nothing leads into it: `head` and
        // `tail` left it before it was retired, so this producer alone has it.
        unsafe {
            #[cfg(loom)]
            Block::touch(found);
            (*found).next.store(ptr::null_mut(), Ordering::Relaxed);
            for slot in &(*found).slots {
                slot.state.store(0, Ordering::Relaxed);
            }
        }
        // Published to consumers by the Release stores that link it.
        found
    }

    /// Pushes the chain `top`..=`bottom` (linked through `retired_next`)
    /// onto the retired stack.
    ///
    /// # Safety
    ///
    /// The chain's blocks are alive, retired and owned by the caller.
    unsafe fn retire_chain(&self, top: *mut Block<T>, bottom: *mut Block<T>) {
        let mut old = self.retired.load(Ordering::Relaxed);
        loop {
            // SAFETY: the caller owns `bottom` until the exchange succeeds.
            unsafe { (*bottom).retired_next.store(old, Ordering::Relaxed) };
            match self
                .retired
                .compare_exchange_weak(old, top, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    /// Sends: claims the position at `tail` and writes its slot. `Err`
    /// (value back) if [`SLOW`] is set, unless `locked` (the core lock is
    /// held on the producer's behalf, with `SLOW` set: no other producer
    /// claims meanwhile).
    #[inline(always)]
    pub(super) fn push(&self, value: T, locked: bool) -> Result<(), T> {
        let word = self.tail.0.index.load(Ordering::Acquire);
        if word & SLOW != 0 && !locked {
            return Err(value);
        }
        // Inline only a claim inside a block that no other producer beats:
        // the block's end, a lost claim and the loop are out of line, so
        // that this path needs no registers saved.
        let offset = (word >> FLAG_BITS) % LAP;
        if offset + 1 < BLOCK_CAP {
            let block = self.tail.0.block.load(Ordering::Acquire);
            if self
                .tail
                .0
                .index
                .compare_exchange_weak(
                    word,
                    word.wrapping_add(ONE),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                // SAFETY: as in `push_from` (a slot inside the block: no
                // block to link).
                unsafe { Self::write_claimed(block, offset, value) };
                return Ok(());
            }
        }
        self.push_from(value, locked)
    }

    /// Sends from the front of `values` with one claim for the positions
    /// left in the current block before its last slot (whose claim links
    /// the next block, left to [`push`](Self::push)); returns how many went
    /// in, 0 if [`SLOW`] is set, the block's last slot is next, or another
    /// producer's claim came first.
    pub(super) fn push_many(&self, values: &mut VecDeque<T>) -> usize {
        let word = self.tail.0.index.load(Ordering::Acquire);
        if word & SLOW != 0 {
            return 0;
        }
        let offset = (word >> FLAG_BITS) % LAP;
        let count = values.len().min((BLOCK_CAP - 1).saturating_sub(offset));
        if count == 0 {
            return 0;
        }
        let block = self.tail.0.block.load(Ordering::Acquire);
        if self
            .tail
            .0
            .index
            .compare_exchange(
                word,
                word.wrapping_add(count * ONE),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            return 0;
        }
        for (i, value) in values.drain(..count).enumerate() {
            // SAFETY: as in `push`, for each position of the run: `block`
            // is the block of `word`'s position (loaded after it; had a
            // newer block been linked since, the claim would have failed),
            // every claimed offset lies below `BLOCK_CAP - 1`, so no block
            // is to be linked, and the block is not reused or freed until
            // the slot is read.
            unsafe { Self::write_claimed(block, offset + i, value) };
        }
        count
    }

    /// [`push`](Self::push)'s loop: claims at the end of a block (linking
    /// the next one) and after lost claims.
    #[cold]
    #[inline(never)]
    fn push_from(&self, value: T, locked: bool) -> Result<(), T> {
        let mut word = self.tail.0.index.load(Ordering::Acquire);
        let mut block = self.tail.0.block.load(Ordering::Acquire);
        // Allocated before a claim of a block's last slot, so that the
        // block after it is linked at once; freed if a retry leaves it unused.
        let mut next_block: *mut Block<T> = ptr::null_mut();
        let mut step = 0;
        let mut lost = 0;
        let sent = loop {
            if word & SLOW != 0 && !locked {
                break Err(value);
            }
            let offset = (word >> FLAG_BITS) % LAP;
            if offset == BLOCK_CAP {
                // Another producer is linking the next block.
                sync::snooze(&mut step);
                word = self.tail.0.index.load(Ordering::Acquire);
                block = self.tail.0.block.load(Ordering::Acquire);
                continue;
            }
            if offset + 1 == BLOCK_CAP && next_block.is_null() {
                next_block = self.fresh_block();
            }
            match self.tail.0.index.compare_exchange_weak(
                word,
                word.wrapping_add(ONE),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // `block` is the block of `word`'s position: it was
                    // loaded after `word`, and had a newer block been linked
                    // since, `tail` would have moved and the claim failed.
                    if offset + 1 == BLOCK_CAP {
                        self.tail.0.block.store(next_block, Ordering::Release);
                        self.tail.0.index.fetch_add(ONE, Ordering::Release);
                        // SAFETY: a block is retired only after its last
                        // slot is read, and that slot is this claim's,
                        // unwritten.
                        unsafe { (*block).next.store(next_block, Ordering::Release) };
                        next_block = ptr::null_mut();
                    }
                    // SAFETY: as above, the block is not reused or freed
                    // until this slot is read; `offset` is a slot's (the
                    // mark was turned away above).
                    unsafe { Self::write_claimed(block, offset, value) };
                    break Ok(());
                }
                Err(now) => {
                    lost = sync::lost_claim(word, now, lost);
                    word = now;
                    block = self.tail.0.block.load(Ordering::Acquire);
                }
            }
        };
        if !next_block.is_null() {
            // SAFETY: ours (new, or reset and off the stack), never
            // published, values uninit.
            unsafe { Block::free(next_block) };
        }
        sent
    }

    /// One attempt to take the value at `head` (`Ring::pop_once`); the
    /// block's end, a lost claim and the loop are left to
    /// [`pop_from`](Self::pop_from) ([`Pop::Again`]).
    #[inline(always)]
    pub(super) fn pop_once(&self) -> Pop<T> {
        let word = self.head.0.index.load(Ordering::Acquire);
        if word & RETURNED != 0 {
            return Pop::Slow;
        }
        // Inline only a claim inside a block that no other consumer beats:
        // the block's end, a lost claim and the loop are out of line, so
        // that this path needs no registers saved.
        let offset = (word >> FLAG_BITS) % LAP;
        if offset + 1 < BLOCK_CAP {
            let block = self.head.0.block.load(Ordering::Acquire);
            let new = match self.next_head(word) {
                Some(new) => new,
                None => return Pop::Empty(word & TX_GONE != 0),
            };
            if self
                .head
                .0
                .index
                .compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // SAFETY: as in `pop_from` (a slot inside the block: no
                // block change to make).
                return Pop::Value(unsafe { Self::read_claimed(block, offset) }, false);
            }
        }
        Pop::Again
    }

    /// Takes the value at `head`, looping: claims at the end of a block
    /// (moving `head` to the next one) and after lost claims. A position
    /// the producer has claimed is taken and its write waited for; with
    /// `settle`, returned values are left to the caller (see `Ring::pop`).
    #[cold]
    #[inline(never)]
    pub(super) fn pop_from(&self, settle: bool) -> Pop<T> {
        let mut word = self.head.0.index.load(Ordering::Acquire);
        let mut block = self.head.0.block.load(Ordering::Acquire);
        let mut step = 0;
        let mut lost = 0;
        loop {
            if word & RETURNED != 0 && !settle {
                return Pop::Slow;
            }
            let offset = (word >> FLAG_BITS) % LAP;
            if offset == BLOCK_CAP {
                // Another consumer is moving `head` to the next block.
                sync::snooze(&mut step);
                word = self.head.0.index.load(Ordering::Acquire);
                block = self.head.0.block.load(Ordering::Acquire);
                continue;
            }
            let Some(new) = self.next_head(word) else {
                return Pop::Empty(word & TX_GONE != 0);
            };
            match self.head.0.index.compare_exchange_weak(
                word,
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // SAFETY: `block` is `word`'s block (loaded after it;
                    // had `head` left it since, the claim would have
                    // failed), and it is neither reused nor freed until the
                    // claimed slot is `READ`; `offset` is a slot's (the mark
                    // was turned away above).
                    unsafe {
                        if offset + 1 == BLOCK_CAP {
                            let next = (*block).wait_next();
                            let has_next = if (*next).next.load(Ordering::Acquire).is_null() {
                                0
                            } else {
                                HAS_NEXT
                            };
                            self.head.0.block.store(next, Ordering::Release);
                            // On to the next block's first position, with
                            // `HAS_NEXT` for it, keeping the core's flags.
                            self.head.0.index.fetch_add(
                                ONE.wrapping_add(has_next).wrapping_sub(new & HAS_NEXT),
                                Ordering::Release,
                            );
                        }
                        let value = Self::read_claimed(block, offset);
                        if offset + 1 == BLOCK_CAP {
                            // Every slot is claimed and `head` has left.
                            self.retire_chain(block, block);
                        }
                        return Pop::Value(value, false);
                    }
                }
                Err(now) => {
                    lost = sync::lost_claim(word, now, lost);
                    word = now;
                    block = self.head.0.block.load(Ordering::Acquire);
                }
            }
        }
    }

    /// The `head` word that claims the position of `word`, or `None` if
    /// no value is there. `word` was read before `tail`: with `TX_GONE` in
    /// it, every claim is visible, so `None` then means drained.
    #[inline(always)]
    fn next_head(&self, word: usize) -> Option<usize> {
        let pos = word >> FLAG_BITS;
        let mut new = word.wrapping_add(ONE);
        if word & HAS_NEXT == 0 {
            let tail = self.tail.0.index.load(Ordering::Acquire) >> FLAG_BITS;
            if pos == tail {
                return None;
            }
            if pos / LAP != tail / LAP {
                // The producers are past this block: no need to read
                // `tail` again until `head` leaves it.
                new |= HAS_NEXT;
            }
        }
        Some(new)
    }

    /// Writes the value of a slot this producer has claimed.
    ///
    /// # Safety
    ///
    /// `block` holds the claimed position, at `offset`, and is neither
    /// reused nor freed until that slot is read.
    #[inline(always)]
    unsafe fn write_claimed(block: *mut Block<T>, offset: usize, value: T) {
        // SAFETY: the caller's contract; the claim makes this producer the
        // slot's only writer, and no consumer reads it before `WRITE`, nor
        // touches its state before.
        unsafe {
            let slot = (*block).slot(offset);
            slot.value.with_mut(|c| (*c).write(value));
            slot.state.store(WRITE, Ordering::Release);
        }
    }

    /// Reads the value of a slot this consumer has claimed.
    ///
    /// # Safety
    ///
    /// `block` holds the claimed position, at `offset`, and is neither
    /// reused nor freed until that slot is `READ` (which this stores).
    #[inline(always)]
    unsafe fn read_claimed(block: *mut Block<T>, offset: usize) -> T {
        // SAFETY: the caller's contract; the claim makes this consumer the
        // slot's only reader, and `wait_write` waits for the producer's.
        unsafe {
            let slot = (*block).slot(offset);
            slot.wait_write();
            let value = slot.value.with_mut(|c| (*c).assume_init_read());
            // The last access to the block but a retirement.
            slot.state.store(READ, Ordering::Release);
            value
        }
    }

    /// Whether a consumer would find something now (a hint for spinning).
    #[inline]
    pub(super) fn looks_nonempty(&self) -> bool {
        let head = self.head.0.index.load(Ordering::Relaxed);
        let tail = self.tail.0.index.load(Ordering::Relaxed);
        head & RETURNED != 0 || settled(head >> FLAG_BITS) != settled(tail >> FLAG_BITS)
    }

    /// Values claimed by producers and not yet by consumers.
    pub(super) fn len(&self) -> usize {
        loop {
            let tail = self.tail.0.index.load(Ordering::Acquire) >> FLAG_BITS;
            let head = self.head.0.index.load(Ordering::Acquire) >> FLAG_BITS;
            if self.tail.0.index.load(Ordering::Acquire) >> FLAG_BITS == tail {
                let head = settled(head);
                let base = head - head % LAP;
                let (head, tail) = (head - base, settled(tail).wrapping_sub(base) & POS_MASK);
                // Each lap has one position that is no slot.
                return (tail - tail / LAP) - head;
            }
        }
    }

    /// Under the lock with [`SLOW`] set: whether no position is claimed
    /// and unread. Only the lock holder moves `tail` then, and `head` never
    /// passes it (the "next block" mark counts as the next block's first
    /// position on either side).
    #[inline]
    pub(super) fn is_empty_locked(&self) -> bool {
        let tail = self.tail.0.index.load(Ordering::Acquire) >> FLAG_BITS;
        settled(self.head.0.index.load(Ordering::Acquire) >> FLAG_BITS) == settled(tail)
    }

    /// The `head` and `tail` words, for their flags.
    pub(super) fn words(&self) -> (&AtomicUsize, &AtomicUsize) {
        (&self.head.0.index, &self.tail.0.index)
    }
}

impl<T> Drop for Blocks<T> {
    fn drop(&mut self) {
        let tail = self.tail.0.index.load(Ordering::Relaxed) >> FLAG_BITS;
        let mut pos = self.head.0.index.load(Ordering::Relaxed) >> FLAG_BITS;
        let mut block = self.head.0.block.load(Ordering::Relaxed);
        // SAFETY: nobody else is left; every position from `head` to `tail`
        // was claimed and written by a producer (a send completes before its
        // sender can be dropped) and never read, and the blocks they lie in
        // are linked from `head`'s block on; the mark's index is no slot
        // and is skipped below.
        unsafe {
            while pos != tail {
                let offset = pos % LAP;
                if offset == BLOCK_CAP {
                    let next = (*block).next.load(Ordering::Relaxed);
                    Block::free(block);
                    block = next;
                } else {
                    let slot = (*block).slot(offset);
                    slot.value.with_mut(|c| (*c).assume_init_drop());
                }
                pos = (pos + 1) & POS_MASK;
            }
            Block::free(block);
            // Retired blocks hold no values: each slot was read by the
            // consumer that claimed it.
            let mut retired = self.retired.load(Ordering::Relaxed);
            while !retired.is_null() {
                let next = (*retired).retired_next.load(Ordering::Relaxed);
                Block::free(retired);
                retired = next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{slot_index, BLOCK_CAP, LAP};

    #[test]
    fn slot_index_permutes_the_slots_and_spreads_neighbours() {
        let mut seen = [false; BLOCK_CAP];
        for offset in 0..BLOCK_CAP {
            let slot = slot_index(offset);
            assert!(slot < BLOCK_CAP, "offset {offset} maps past the slots");
            assert!(!seen[slot], "two offsets share slot {slot}");
            seen[slot] = true;
        }
        if LAP >= 16 {
            // Four 16-byte slots to a line: the next `LAP / 4 - 1` positions
            // lie on as many other lines.
            for offset in 0..BLOCK_CAP {
                for later in offset + 1..(offset + LAP / 4).min(BLOCK_CAP) {
                    assert_ne!(slot_index(offset) / 4, slot_index(later) / 4);
                }
            }
        }
    }
}
