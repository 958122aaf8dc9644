//! An unbounded channel's data path: a list of blocks of slots, in the shape
//! of crossbeam's `list` flavor. Producers claim positions on `tail` and
//! append a block when one fills; consumers claim positions on `head` and
//! free a block once every slot in it has been read. Each slot is written
//! once and read once, so a slot's state only grows (`WRITE`, then `READ`).
//!
//! A position's index within its lap of [`LAP`] is its slot; index
//! [`BLOCK_CAP`] is no slot but marks "the next block is being linked":
//! whoever moved `tail` (or `head`) there moves it on once the next block is
//! in place, and others wait meanwhile. The flags of the parent module live
//! in the low bits of both words, so moving on is a `fetch_add`, never a
//! store that could lose a flag set meanwhile under the core lock.

use std::mem::MaybeUninit;
use std::ptr;

use super::{Padded, Pop, FLAG_BITS, HAS_NEXT, POS_MASK, RETURNED, SLOW, TX_GONE};
use crate::sync::{self, AtomicPtr, AtomicUsize, Ordering, UnsafeCell};

/// Positions per block, one of them the "next block" mark. Small under loom,
/// so that the models cross blocks.
#[cfg(not(loom))]
const LAP: usize = 32;
#[cfg(loom)]
const LAP: usize = 4;
/// Slots per block.
const BLOCK_CAP: usize = LAP - 1;

/// One position, in a `head` or `tail` word.
const ONE: usize = 1 << FLAG_BITS;

/// A slot's state: the value is written.
const WRITE: usize = 1;
/// The value is read out.
const READ: usize = 2;
/// The block is being freed: the reader of this slot finishes the job.
const DESTROY: usize = 4;

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    state: AtomicUsize,
}

impl<T> Slot<T> {
    /// Waits for a producer that has claimed this slot to write it (it holds
    /// no lock, so this is its next few instructions).
    fn wait_write(&self) {
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

struct Block<T> {
    next: AtomicPtr<Block<T>>,
    slots: [Slot<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    /// A block with every slot empty, on the heap.
    #[cfg(not(loom))]
    fn alloc() -> *mut Block<T> {
        let layout = std::alloc::Layout::new::<Block<T>>();
        // SAFETY: the layout is not zero-sized (it holds atomics), and zero
        // bytes are a valid block: a null `next`, states 0, values uninit.
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
        // Under loom, a mutable access to every slot's cell makes the model
        // fail unless each reader's access happens before the free (a free
        // that does not wait for a slow reader is a use after free that loom
        // would not see otherwise), and the count catches a block nobody
        // frees.
        #[cfg(loom)]
        {
            // SAFETY: as below: the block is alive and ours.
            for slot in unsafe { &(*block).slots } {
                slot.value.with_mut(|_| ());
            }
            LIVE_BLOCKS.with(|n| n.set(n.get() - 1));
        }
        // SAFETY: allocated as a `Block<T>` by the global allocator (a `Box`
        // under loom), and ours alone (the caller's contract).
        drop(unsafe { Box::from_raw(block) });
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

    /// Frees the block once the slots from `start` on are read, or hands the
    /// job to the reader of the first slot still being read.
    ///
    /// # Safety
    ///
    /// Every slot of `block` has been claimed by a consumer, and the slots
    /// before `start` are read out; no position on `head` or `tail` leads
    /// into `block` any more.
    unsafe fn destroy(block: *mut Block<T>, start: usize) {
        // The last slot's reader starts at 0 and never marks its own slot:
        // it is done with it.
        for i in start..BLOCK_CAP - 1 {
            // SAFETY: the block is alive until this loop decides otherwise:
            // a reader that has not set `READ` keeps it so.
            let slot = unsafe { (*block).slots.get_unchecked(i) };
            if slot.state.load(Ordering::Acquire) & READ == 0
                && slot.state.fetch_or(DESTROY, Ordering::AcqRel) & READ == 0
            {
                // Still being read: its reader sees `DESTROY` and goes on.
                return;
            }
        }
        // SAFETY: every slot is read out, and nothing leads here (the
        // caller's contract).
        unsafe { Block::free(block) };
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
        }
    }

    /// Sends: claims the position at `tail` and writes its slot. `Err`
    /// (value back) if [`SLOW`] is set, unless `locked` (the core lock is
    /// held on the producer's behalf, with `SLOW` set: no other producer
    /// claims meanwhile).
    #[inline]
    pub(super) fn push(&self, value: T, locked: bool) -> Result<(), T> {
        let mut word = self.tail.0.index.load(Ordering::Acquire);
        let mut block = self.tail.0.block.load(Ordering::Acquire);
        // Allocated before a claim of a block's last slot, so that the
        // block after it is linked at once; freed if a retry leaves it unused.
        let mut next_block: *mut Block<T> = ptr::null_mut();
        let mut step = 0;
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
                next_block = Block::alloc();
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
                        // SAFETY: a block is freed only after its last slot
                        // is read, and that slot is this claim's, unwritten.
                        unsafe { (*block).next.store(next_block, Ordering::Release) };
                        next_block = ptr::null_mut();
                    }
                    // SAFETY: as above, the block lives until this slot is
                    // read; the claim makes this producer its only writer,
                    // and no consumer reads it before `WRITE`.
                    unsafe {
                        let slot = (*block).slots.get_unchecked(offset);
                        slot.value.with_mut(|c| (*c).write(value));
                        slot.state.fetch_or(WRITE, Ordering::Release);
                    }
                    break Ok(());
                }
                Err(now) => {
                    word = now;
                    block = self.tail.0.block.load(Ordering::Acquire);
                    sync::spin_loop();
                }
            }
        };
        if !next_block.is_null() {
            // SAFETY: allocated above and never published.
            unsafe { Block::free(next_block) };
        }
        sent
    }

    /// Takes the value at `head`. A position the producer has claimed is
    /// taken and its write waited for; with `settle`, returned values are
    /// left to the caller (see `Ring::pop`).
    #[inline]
    pub(super) fn pop(&self, settle: bool) -> Pop<T> {
        let mut word = self.head.0.index.load(Ordering::Acquire);
        let mut block = self.head.0.block.load(Ordering::Acquire);
        let mut step = 0;
        loop {
            if word & RETURNED != 0 && !settle {
                return Pop::Slow;
            }
            let pos = word >> FLAG_BITS;
            let offset = pos % LAP;
            if offset == BLOCK_CAP {
                // Another consumer is moving `head` to the next block.
                sync::snooze(&mut step);
                word = self.head.0.index.load(Ordering::Acquire);
                block = self.head.0.block.load(Ordering::Acquire);
                continue;
            }
            let mut new = word.wrapping_add(ONE);
            if word & HAS_NEXT == 0 {
                // `word` was read before `tail`: with `TX_GONE` in it, every
                // claim is visible, so an empty answer means drained.
                let tail = self.tail.0.index.load(Ordering::Acquire) >> FLAG_BITS;
                if pos == tail {
                    return Pop::Empty(word & TX_GONE != 0);
                }
                if pos / LAP != tail / LAP {
                    // The producers are past this block: no need to read
                    // `tail` again until `head` leaves it.
                    new |= HAS_NEXT;
                }
            }
            match self.head.0.index.compare_exchange_weak(
                word,
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // SAFETY: `block` is `word`'s block (loaded after it;
                    // had `head` left it since, the claim would have
                    // failed), and it lives until the claimed slot is read.
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
                        let slot = (*block).slots.get_unchecked(offset);
                        slot.wait_write();
                        let value = slot.value.with_mut(|c| (*c).assume_init_read());
                        if offset + 1 == BLOCK_CAP {
                            // Every slot is claimed and `head` has left.
                            Block::destroy(block, 0);
                        } else if slot.state.fetch_or(READ, Ordering::AcqRel) & DESTROY != 0 {
                            // The block's last reader left the rest to us.
                            Block::destroy(block, offset + 1);
                        }
                        return Pop::Value(value, false);
                    }
                }
                Err(now) => {
                    word = now;
                    block = self.head.0.block.load(Ordering::Acquire);
                    sync::spin_loop();
                }
            }
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
        // are linked from `head`'s block on.
        unsafe {
            while pos != tail {
                let offset = pos % LAP;
                if offset == BLOCK_CAP {
                    let next = (*block).next.load(Ordering::Relaxed);
                    Block::free(block);
                    block = next;
                } else {
                    let slot = (*block).slots.get_unchecked(offset);
                    slot.value.with_mut(|c| (*c).assume_init_drop());
                }
                pos = (pos + 1) & POS_MASK;
            }
            Block::free(block);
        }
    }
}
