//! Who keeps each heap entry's position (`mod.rs`, "Design"): the [`Keeper`] trait and
//! its two kinds, [`SlotTable`] (a slab of `(gen, pos)` slots named by [`Handle`]s, for
//! the public queues' values) and [`InEntry`] (the entry holds its position, for the
//! executor's tasks).
//!
//! # Invariants
//! - H3 (free list, [`SlotTable`]): a slot is on the free list iff its `gen` is even and
//!   it is not retired; occupied slots number exactly `len`.
//! - H4 (no reuse after reset, [`SlotTable`]): every slot created after the slot table was
//!   dropped starts at a generation above any generation issued before (`floor`), so a
//!   handle from before the reset names nothing.

/// Below this many nodes or slots, memory is not given back (the work would not pay).
pub(super) const MIN_SHRINK: usize = 1 << 16;

/// Where the heap keeps each entry's position (module notes): the heap tells its keeper
/// when an entry arrives, moves and leaves.
pub(crate) trait Keeper<E>: Default {
    /// What a node carries beside its entry for the keeper (a slot number, or nothing).
    type Tag: Copy;
    /// A new entry is about to be pushed.
    fn arrive(&mut self) -> Self::Tag;
    /// The entry with `tag` is now at `pos` (H1).
    fn moved(&mut self, tag: Self::Tag, entry: &E, pos: usize);
    /// The entry with `tag` left the heap.
    fn left(&mut self, tag: Self::Tag, entry: &E);
    /// The heap is empty after a removal: a chance to give memory back.
    fn emptied(&mut self);
}

/// An entry that keeps its own heap position (the [`InEntry`] keeper). `set_index` is
/// called only by the heap, which its owner keeps behind one lock.
pub(crate) trait Indexed {
    /// The entry is now at `pos`, or (`None`) no longer in the heap.
    fn set_index(&self, pos: Option<usize>);
}

/// A position in the slab plus the generation of the entry it named. `Copy`, never
/// dangling: a stale handle is simply not found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Handle {
    pub(super) slot: u32,
    pub(super) gen: u32,
}

impl Handle {
    /// A handle that matches nothing (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) const NONE: Handle = Handle {
        slot: u32::MAX,
        gen: u32::MAX,
    };
}

/// End of the free list; also the slot number no entry ever gets.
pub(super) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    /// Odd while occupied (H3).
    pub(super) gen: u32,
    /// Occupied: the node's position (H1). Free: the next free slot, or `NIL`.
    pub(super) pos: u32,
}

/// The slab keeper: positions in a table of `(gen, pos)` slots, named by [`Handle`]s
/// (H1, H3, H4). For entries that cannot hold their own position (the public queues'
/// values, whose keys are handles).
#[derive(Debug)]
pub(crate) struct SlotTable {
    pub(super) slots: Vec<Slot>,
    pub(super) free: u32,
    /// Even; a new slot starts at generation `floor + 1` (H4).
    floor: u32,
    /// The largest generation any slot has reached (H4).
    max_gen: u32,
}

impl SlotTable {
    fn new() -> Self {
        SlotTable {
            slots: Vec::new(),
            free: NIL,
            floor: 0,
            max_gen: 0,
        }
    }

    /// The position of the entry `h` names, if it is in the heap.
    #[inline]
    pub(super) fn position(&self, h: Handle) -> Option<usize> {
        let slot = self.slots.get(h.slot as usize)?;
        (slot.gen == h.gen && slot.gen % 2 == 1).then_some(slot.pos as usize)
    }

    fn free_slot(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        slot.gen += 1; // odd -> even: free (H3)
        self.max_gen = self.max_gen.max(slot.gen);
        if slot.gen >= u32::MAX - 1 {
            // Retired: reusing it would let its generation wrap and match an old handle.
            return;
        }
        slot.pos = self.free;
        self.free = s;
    }
}

impl Default for SlotTable {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Keeper<E> for SlotTable {
    type Tag = u32;

    fn arrive(&mut self) -> u32 {
        if self.free != NIL {
            let s = self.free;
            let slot = &mut self.slots[s as usize];
            self.free = slot.pos;
            slot.gen += 1; // even -> odd: occupied (H3)
            return s;
        }
        let s = u32::try_from(self.slots.len())
            .ok()
            .filter(|&s| s != NIL)
            .expect("IndexedHeap's slot table ran out of slot numbers");
        let gen = self.floor + 1; // H4: above every generation issued before
        self.max_gen = self.max_gen.max(gen);
        self.slots.push(Slot { gen, pos: 0 });
        s
    }

    #[inline]
    fn moved(&mut self, slot: u32, _: &E, pos: usize) {
        self.slots[slot as usize].pos = pos as u32;
    }

    #[inline]
    fn left(&mut self, slot: u32, _: &E) {
        self.free_slot(slot);
    }

    /// Once the heap is empty the slot table is dropped whole, new slots starting above
    /// every generation issued so far (H4), so no old handle can match one of them.
    fn emptied(&mut self) {
        if self.slots.len() >= MIN_SHRINK && self.max_gen < u32::MAX - 4 {
            self.floor = self.max_gen + self.max_gen % 2; // even, >= every generation seen
            self.slots = Vec::new();
            self.free = NIL;
        }
    }
}

/// The intrusive keeper: every entry holds its own position ([`Indexed`]), as Java's
/// `ScheduledFutureTask.heapIndex` does. No table and no per-node tag.
#[derive(Debug, Default)]
pub(crate) struct InEntry;

impl<E: Indexed> Keeper<E> for InEntry {
    type Tag = ();

    #[inline]
    fn arrive(&mut self) {}

    #[inline]
    fn moved(&mut self, (): (), entry: &E, pos: usize) {
        entry.set_index(Some(pos));
    }

    #[inline]
    fn left(&mut self, (): (), entry: &E) {
        entry.set_index(None);
    }

    #[inline]
    fn emptied(&mut self) {}
}
