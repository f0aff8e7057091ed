//! `IndexedHeap`: a d-ary min-heap whose entries know their position, so removing or
//! re-keying any entry is O(log n). No locks, no clock, no threads.
//!
//! # Design
//! The heap proper is one array of nodes. Each node holds the entry inline (for the
//! executor: the deadline and a thin pointer to the task, 16 bytes, `pool/entry.rs`), so a
//! sift compares deadlines without following a pointer; only a tie between equal deadlines
//! reads the tasks' sequence numbers. Who remembers where each entry is, a *keeper* (`K`),
//! is a parameter, because the crate has two kinds of entries:
//!
//! - [`SlotTable`], for entries that cannot hold their own position (the public queues'
//!   values): a slab of `(gen, pos)` pairs beside the nodes, and a tag in each node naming
//!   its slot. A [`Handle`] is `(slot, gen)`; a sift step rewrites `pos` of the nodes it
//!   moves. The generation makes handles safe forever: a slot's `gen` is odd while it is
//!   occupied and is incremented on every insert and removal, so a handle to an entry that
//!   left the heap never matches again, even after its slot is reused (no ABA). A slot
//!   whose generation would wrap is retired instead of reused.
//! - [`InEntry`], for entries that hold their own position ([`Indexed`]): Java's
//!   `DelayedWorkQueue` stores each task's heap index in the task (`setIndex`). No table
//!   and no tag, so 16 fewer bytes per entry; a sift step stores into the moved entry's
//!   task instead of into the table. The executor's tasks use it (`docs/BENCHMARKS.md`
//!   has both keepers measured).
//!
//! The arity `D` is a const parameter so `benches/heap.rs` can compare binary and 4-ary
//! heaps; the default is the one the bench found faster (see `docs/BENCHMARKS.md`). A 4-ary
//! heap does half the levels of a binary one, and its four children of a node share a
//! cache line or two, which is what matters once the heap outgrows the cache.
//!
//! # Invariants
//! - H1 (index): for every position `i < len`, the keeper says `i` for the entry at `i`:
//!   with [`SlotTable`], `slots[nodes[i].tag].pos == i` and that slot's `gen` is odd; with
//!   [`InEntry`], the entry was last told `Some(i)`. An entry that left was told `None`.
//! - H2 (order): no node is strictly `before` its parent, except a detached last node
//!   (a push or re-key whose comparison panicked) until its owner takes it
//!   (`take_detached`). A comparison that panics in a sift never breaks it: the sift is
//!   undone.
//!
//! (The slot table's free list and generations, H3 and H4, are `keeper.rs`'s.)
//!
//! `check_invariants` (slab) and `check_indexed` (intrusive) assert H1–H3; the tests call
//! them after every mutation.
//!
//! # Limits
//! A heap holds at most [`MAX_LEN`] entries, 2^31 - 2, so that every position fits in 31
//! bits with a value to spare: the executor's tasks keep theirs in a 32-bit
//! `queue::Position`, beside lane tickets and "nowhere". A push past it panics with
//! "capacity overflow", as `Vec`'s does; for the executor's nodes that is tens of
//! gigabytes. The slab keeper's slot numbers are `u32`s below `NIL`, which is more.

use std::fmt;

mod keeper;

use keeper::MIN_SHRINK;
#[cfg(all(test, not(loom)))]
use keeper::NIL;
pub(crate) use keeper::{Handle, InEntry, Indexed, Keeper, SlotTable};

/// Order of heap entries: `a.before(b)` means `a` must come out first.
///
/// It must be a strict weak order; the crate's entries break ties with a sequence number,
/// so no two live entries are ever equivalent.
pub(crate) trait Ordered {
    fn before(&self, other: &Self) -> bool;

    /// `before` runs the user's code and may panic (a `PriorityBlockingQueue`'s `Ord`):
    /// a sift then keeps its trail and is undone when a comparison panics ([`Settle`]), a
    /// removal keeps the removed node until the heap is whole again ([`Leaving`]), and a
    /// push or a re-key whose node finds no place leaves it detached for its owner
    /// ([`IndexedHeap::take_detached`]). The crate's own orders (deadlines) never panic
    /// and skip all of it.
    const MAY_PANIC: bool = false;
}

#[derive(Debug)]
struct Node<E, T> {
    entry: E,
    tag: T,
}

/// The binary-vs-4-ary choice, measured in `benches/heap.rs`.
pub(crate) const DEFAULT_ARITY: usize = 4;

/// The most entries a heap holds (module notes, "Limits"): every position is below
/// `MAX_LEN`, so below 2^31 - 2.
pub(crate) const MAX_LEN: usize = (1 << 31) - 2;

/// A push past [`MAX_LEN`].
#[cold]
#[inline(never)]
fn capacity_overflow() -> ! {
    panic!("capacity overflow: an IndexedHeap holds at most {MAX_LEN} entries")
}

/// Where a sift's moving node has been: the position it left at each swap, one per
/// level at most (a heap of [`MAX_LEN`] nodes is under 32 levels deep even when binary).
trait Trail {
    fn left(&mut self, pos: usize);
}

/// The crate's own orders never panic: no trail.
impl Trail for () {
    #[inline]
    fn left(&mut self, _: usize) {}
}

/// The trail of a sift whose comparisons may panic, to undo it by.
struct Path {
    left: [u32; 32],
    len: usize,
}

impl Trail for Path {
    #[inline]
    fn left(&mut self, pos: usize) {
        self.left[self.len] = pos as u32;
        self.len += 1;
    }
}

/// A sift whose comparisons may panic (`Ordered::MAY_PANIC`: a `PriorityBlockingQueue`'s
/// `Ord`): if one does, its swaps are undone in reverse, so the heap is as it was before
/// the sift (H2 where it held then); either way the moving node is recorded where it
/// stands at the end (H1: every node a swap moved was recorded at it).
struct Settle<'a, E, const D: usize, K: Keeper<E>> {
    heap: &'a mut IndexedHeap<E, D, K>,
    pos: usize,
    path: Path,
    done: bool,
}

impl<E, const D: usize, K: Keeper<E>> Drop for Settle<'_, E, D, K> {
    #[inline]
    fn drop(&mut self) {
        if !self.done {
            while self.path.len > 0 {
                self.path.len -= 1;
                let back = self.path.left[self.path.len] as usize;
                self.heap.nodes.swap(self.pos, back);
                let node = &self.heap.nodes[self.pos]; // the node that had moved for it
                self.heap.keeper.moved(node.tag, &node.entry, self.pos);
                self.pos = back;
            }
        }
        let node = &self.heap.nodes[self.pos];
        self.heap.keeper.moved(node.tag, &node.entry, self.pos);
    }
}

/// A node being taken out of the heap ([`IndexedHeap::detach`]): the last node fills its
/// place at `pos` and is sifted there. If a comparison panics meanwhile, the sift is
/// undone ([`Settle`]) and this puts the node back at `pos` and the filler back at the
/// end: the heap is exactly as it was, in order, and every key still reaches its node.
struct Leaving<'a, E, const D: usize, K: Keeper<E>> {
    heap: &'a mut IndexedHeap<E, D, K>,
    node: Option<Node<E, K::Tag>>,
    pos: usize,
}

impl<E, const D: usize, K: Keeper<E>> Drop for Leaving<'_, E, D, K> {
    #[inline]
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            let filler = std::mem::replace(&mut self.heap.nodes[self.pos], node);
            let end = self.heap.nodes.len();
            self.heap.keeper.moved(filler.tag, &filler.entry, end);
            self.heap.nodes.push(filler);
            let node = &self.heap.nodes[self.pos];
            self.heap.keeper.moved(node.tag, &node.entry, self.pos);
        }
    }
}

/// A d-ary min-heap with positions kept by `K` (see the module notes).
pub(crate) struct IndexedHeap<E, const D: usize = DEFAULT_ARITY, K: Keeper<E> = SlotTable> {
    nodes: Vec<Node<E, K::Tag>>,
    keeper: K,
    /// The last node is out of order: a push or a re-key whose comparison panicked
    /// (`Ordered::MAY_PANIC`) left it there, unplaced, for its owner to take
    /// ([`take_detached`](Self::take_detached)).
    detached: bool,
}

impl<E: Ordered, const D: usize, K: Keeper<E>> IndexedHeap<E, D, K> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        const { assert!(D >= 2, "a heap needs at least two children per node") };
        let mut nodes = Vec::new();
        // A hint: a capacity the allocator refuses is simply not reserved.
        if nodes.try_reserve_exact(n).is_err() {
            nodes = Vec::new();
        }
        IndexedHeap {
            nodes,
            keeper: K::default(),
            detached: false,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The first entry, if any.
    #[inline]
    pub(crate) fn peek(&self) -> Option<&E> {
        self.nodes.first().map(|n| &n.entry)
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &E> {
        self.nodes.iter().map(|n| &n.entry)
    }

    /// The entry at `pos`, if there is one.
    #[inline]
    pub(crate) fn get_at(&self, pos: usize) -> Option<&E> {
        self.nodes.get(pos).map(|n| &n.entry)
    }

    /// The least `key` among the entries that are not `due`, `Some(None)` if every entry
    /// is, or `None` if finding it would visit more than `budget` due entries. `due` must
    /// hold for everything before a due entry (a deadline at or before now): then the due
    /// entries are a subtree at the root (H2), and every other entry is, or descends from,
    /// the root or a child of a due one, whose key is no greater than its descendants'. So
    /// the walk visits the k due entries and their children: O(k · D). `key` is the
    /// caller's, never the user's order (`Ordered::before` is not called).
    pub(crate) fn first_not<T: Ord>(
        &self,
        due: impl Fn(&E) -> bool,
        key: impl Fn(&E) -> T,
        budget: usize,
    ) -> Option<Option<T>> {
        // The usual case, a root not due: no walk and no allocation.
        match self.peek() {
            None => return Some(None),
            Some(root) if !due(root) => return Some(Some(key(root))),
            Some(_) => {}
        }
        let mut first: Option<T> = None;
        let mut visited = 0;
        let mut stack = vec![0];
        while let Some(pos) = stack.pop() {
            let Some(node) = self.nodes.get(pos) else {
                continue;
            };
            if !due(&node.entry) {
                let k = key(&node.entry);
                first = Some(match first {
                    Some(f) if f <= k => f,
                    _ => k,
                });
                continue;
            }
            visited += 1;
            if visited > budget {
                return None;
            }
            let children = pos * D + 1;
            stack.extend(children..children + D);
        }
        Some(first)
    }

    /// Inserts `entry`; returns the position it settled at. O(log n).
    ///
    /// # Panics
    /// If the heap holds [`MAX_LEN`] entries already.
    #[inline]
    fn insert(&mut self, entry: E) -> usize {
        if self.nodes.len() >= MAX_LEN {
            capacity_overflow();
        }
        let tag = self.keeper.arrive();
        let pos = self.nodes.len();
        self.nodes.push(Node { entry, tag });
        self.place(pos)
    }

    /// Sifts up the node just put at the end, `pos`; one whose comparison panics stays
    /// there, detached (`take_detached`), the rest of the heap in order.
    #[inline]
    fn place(&mut self, pos: usize) -> usize {
        self.detached = E::MAY_PANIC;
        let at = self.sift_up(pos);
        self.detached = false;
        at
    }

    /// Takes out the node a panicking comparison left detached at the end (a push or a
    /// re-key of an element whose `Ord` panicked: it has no place the heap can find),
    /// so that the heap is in order again (H2); `None` if there is none. Its owner drops
    /// it with no lock held.
    pub(crate) fn take_detached(&mut self) -> Option<E> {
        if !std::mem::take(&mut self.detached) {
            return None;
        }
        let node = self.nodes.pop()?;
        self.keeper.left(node.tag, &node.entry);
        self.give_back();
        Some(node.entry)
    }

    /// Removes and returns the first entry. O(log n).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<E> {
        if self.nodes.is_empty() {
            None
        } else {
            Some(self.remove_at(0))
        }
    }

    /// Changes the key of the entry at `pos` with `f`, then restores H2; returns the
    /// entry's new position. O(log n).
    ///
    /// # Panics
    /// If `pos` is out of bounds.
    pub(crate) fn update_at(&mut self, pos: usize, f: impl FnOnce(&mut E)) -> usize {
        if E::MAY_PANIC {
            // Taken out, re-keyed and put back at the end, so that a panic (in a
            // comparison, or in `f`) leaves every other node in order: the node is then
            // back where it was with its old key, or detached at the end.
            let node = self.detach(pos);
            let end = self.nodes.len();
            self.nodes.push(node);
            self.set_pos(end);
            self.detached = true;
            f(&mut self.nodes[end].entry);
            return self.place(end);
        }
        f(&mut self.nodes[pos].entry);
        self.restore(pos)
    }

    /// Removes every entry for which `remove` returns `true`; returns them. O(n).
    pub(crate) fn extract_if(&mut self, mut remove: impl FnMut(&E) -> bool) -> Vec<E> {
        let mut out = Vec::new();
        let mut kept = Vec::with_capacity(self.nodes.len());
        for node in std::mem::take(&mut self.nodes) {
            if remove(&node.entry) {
                self.keeper.left(node.tag, &node.entry);
                out.push(node.entry);
            } else {
                kept.push(node);
            }
        }
        self.nodes = kept;
        self.heapify();
        self.give_back();
        out
    }

    /// Removes everything; entries come back in no particular order.
    pub(crate) fn clear(&mut self) -> Vec<E> {
        let nodes = std::mem::take(&mut self.nodes);
        let mut out = Vec::with_capacity(nodes.len());
        for node in nodes {
            self.keeper.left(node.tag, &node.entry);
            out.push(node.entry);
        }
        self.give_back();
        out
    }

    /// Removes the node at `pos`: the last node fills the hole and is sifted into place.
    ///
    /// # Panics
    /// If `pos` is out of bounds.
    pub(crate) fn remove_at(&mut self, pos: usize) -> E {
        let node = self.detach(pos);
        self.keeper.left(node.tag, &node.entry);
        self.give_back();
        node.entry
    }

    /// Takes the node at `pos` out: the last node fills the hole and is sifted into
    /// place. The keeper is not told the node left (its caller does, or puts it back).
    /// With an order that may panic, a panic leaves the heap as it was ([`Leaving`]).
    fn detach(&mut self, pos: usize) -> Node<E, K::Tag> {
        let node = self.nodes.swap_remove(pos);
        if pos == self.nodes.len() {
            return node;
        }
        if !E::MAY_PANIC {
            self.restore(pos);
            return node;
        }
        // H1 for the last node, now in the hole, before any comparison (which may panic,
        // in `restore`'s first look, before a sift records it).
        self.set_pos(pos);
        let mut leaving = Leaving {
            heap: self,
            node: Some(node),
            pos,
        };
        leaving.heap.restore(pos);
        leaving.node.take().expect("taken once")
    }

    /// Returns memory after mass removal: the node array halves when a quarter full
    /// (amortised O(1)), and the keeper may drop its table once the heap is empty.
    fn give_back(&mut self) {
        let cap = self.nodes.capacity();
        if cap >= MIN_SHRINK && self.nodes.len() < cap / 4 {
            self.nodes.shrink_to(cap / 2);
        }
        if self.nodes.is_empty() {
            self.keeper.emptied();
        }
    }

    /// Restores H2 around `pos`, whose key may have moved either way; returns where the
    /// node settled.
    fn restore(&mut self, pos: usize) -> usize {
        if pos > 0 && self.less(pos, (pos - 1) / D) {
            self.sift_up(pos)
        } else {
            self.sift_down(pos)
        }
    }

    #[inline]
    fn less(&self, a: usize, b: usize) -> bool {
        self.nodes[a].entry.before(&self.nodes[b].entry)
    }

    #[inline]
    fn set_pos(&mut self, pos: usize) {
        let node = &self.nodes[pos];
        self.keeper.moved(node.tag, &node.entry, pos);
    }

    /// Moves the node at `pos` up while it is before its parent (Java: `siftUp`); returns
    /// where it settled.
    #[inline]
    fn sift_up(&mut self, pos: usize) -> usize {
        self.settle(pos, true)
    }

    /// Moves the node at `pos` down while a child is before it (Java: `siftDown`); returns
    /// where it settled.
    #[inline]
    fn sift_down(&mut self, pos: usize) -> usize {
        self.settle(pos, false)
    }

    /// Runs a sift from `pos` (`up`: `sift_up`'s steps, else `sift_down`'s) and records
    /// where the moving node settles (H1). With an order that may panic
    /// ([`Ordered::MAY_PANIC`]), a [`Settle`] guard keeps the sift's trail and undoes it if
    /// a comparison unwinds; the crate's own orders skip the guard and the trail.
    #[inline]
    fn settle(&mut self, pos: usize, up: bool) -> usize {
        if E::MAY_PANIC {
            let mut moving = Settle {
                heap: self,
                pos,
                path: Path {
                    left: [0; 32],
                    len: 0,
                },
                done: false,
            };
            if up {
                moving.heap.sift_up_steps(&mut moving.pos, &mut moving.path);
            } else {
                moving
                    .heap
                    .sift_down_steps(&mut moving.pos, &mut moving.path);
            }
            moving.done = true;
            return moving.pos; // the guard records it
        }
        let mut at = pos;
        if up {
            self.sift_up_steps(&mut at, &mut ());
        } else {
            self.sift_down_steps(&mut at, &mut ());
        }
        self.set_pos(at);
        at
    }

    /// `sift_up`'s swaps; `pos` follows the moving node.
    #[inline]
    fn sift_up_steps<T: Trail>(&mut self, pos: &mut usize, trail: &mut T) {
        while *pos > 0 {
            let parent = (*pos - 1) / D;
            if !self.less(*pos, parent) {
                break;
            }
            self.nodes.swap(*pos, parent);
            self.set_pos(*pos); // H1 for the parent that moved down
            trail.left(*pos);
            *pos = parent;
        }
    }

    /// `sift_down`'s swaps; `pos` follows the moving node.
    #[inline]
    fn sift_down_steps<T: Trail>(&mut self, pos: &mut usize, trail: &mut T) {
        let len = self.nodes.len();
        loop {
            let first = *pos * D + 1;
            if first >= len {
                break;
            }
            let mut min = first;
            for child in first + 1..(first + D).min(len) {
                if self.less(child, min) {
                    min = child;
                }
            }
            if !self.less(min, *pos) {
                break;
            }
            self.nodes.swap(*pos, min);
            self.set_pos(*pos); // H1 for the child that moved up
            trail.left(*pos);
            *pos = min;
        }
    }

    /// Rebuilds H2 and H1 from scratch. O(n).
    fn heapify(&mut self) {
        for pos in 0..self.nodes.len() {
            self.set_pos(pos);
        }
        if self.nodes.len() > 1 {
            for pos in (0..=(self.nodes.len() - 2) / D).rev() {
                self.sift_down(pos);
            }
        }
    }

    /// Asserts H2 (tests call it after every mutation; the keepers add H1 and H3).
    #[cfg(all(test, not(loom)))]
    fn check_order(&self) {
        for pos in 1..self.nodes.len() {
            assert!(
                !self.less(pos, (pos - 1) / D),
                "H2 broken at position {pos}"
            );
        }
    }
}

/// The slab keeper's operations: entries named by [`Handle`]s.
impl<E: Ordered, const D: usize> IndexedHeap<E, D, SlotTable> {
    #[cfg(all(test, not(loom)))]
    pub(crate) fn new() -> Self {
        Self::with_capacity(0)
    }

    /// Inserts `entry` and returns its handle. O(log n).
    ///
    /// # Panics
    /// If the heap holds [`MAX_LEN`] entries already ("capacity overflow"), or its slot
    /// table has run out of slot numbers (`u32::MAX - 1` slots, retired ones included).
    pub(crate) fn push(&mut self, entry: E) -> Handle {
        let pos = self.insert(entry);
        let slot = self.nodes[pos].tag;
        Handle {
            slot,
            gen: self.keeper.slots[slot as usize].gen,
        }
    }

    /// Removes and returns the first entry with the handle it had. O(log n).
    pub(crate) fn pop_keyed(&mut self) -> Option<(E, Handle)> {
        let slot = self.nodes.first()?.tag;
        let gen = self.keeper.slots[slot as usize].gen;
        Some((self.remove_at(0), Handle { slot, gen }))
    }

    /// The current position of the entry `h` names, or `None` if it left the heap. The
    /// node there is checked to be `h`'s, so that even a broken H1 never lets a key reach
    /// another entry.
    #[inline]
    pub(crate) fn position(&self, h: Handle) -> Option<usize> {
        let pos = self.keeper.position(h)?;
        (self.nodes.get(pos)?.tag == h.slot).then_some(pos)
    }

    /// The entry `h` names, if it is still in the heap.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn get(&self, h: Handle) -> Option<&E> {
        self.position(h).map(|pos| &self.nodes[pos].entry)
    }

    /// Removes the entry `h` names. O(log n); `None` for a stale handle.
    pub(crate) fn remove(&mut self, h: Handle) -> Option<E> {
        let pos = self.position(h)?;
        Some(self.remove_at(pos))
    }

    /// Changes the key of the entry `h` names with `f`, then restores H2. O(log n).
    /// Returns `false` (and does not call `f`) for a stale handle. The handle stays valid.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn update(&mut self, h: Handle, f: impl FnOnce(&mut E)) -> bool {
        let Some(pos) = self.position(h) else {
            return false;
        };
        self.update_at(pos, f);
        true
    }

    /// Asserts H1, H2 and H3 (tests call it after every mutation).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_invariants(&self) {
        self.check_order();
        self.check_positions();
    }

    /// Asserts H1 and H3, which hold even after a comparison panicked.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_positions(&self) {
        let t = &self.keeper;
        for (pos, node) in self.nodes.iter().enumerate() {
            let slot = t.slots[node.tag as usize];
            assert_eq!(
                slot.pos as usize, pos,
                "H1: slot {} points elsewhere",
                node.tag
            );
            assert_eq!(
                slot.gen % 2,
                1,
                "H1: slot {} of a live node is free",
                node.tag
            );
        }
        let occupied = t.slots.iter().filter(|s| s.gen % 2 == 1).count();
        assert_eq!(occupied, self.nodes.len(), "H3: occupied slots != len");
        let mut free = 0;
        let mut s = t.free;
        while s != NIL {
            assert_eq!(
                t.slots[s as usize].gen % 2,
                0,
                "H3: occupied slot on free list"
            );
            free += 1;
            s = t.slots[s as usize].pos;
        }
        let retired = t.slots.iter().filter(|s| s.gen >= u32::MAX - 1).count();
        assert_eq!(free + occupied + retired, t.slots.len(), "H3: slot lost");
    }
}

/// The intrusive keeper's operations: entries find themselves by the position they hold.
impl<E: Ordered + Indexed, const D: usize> IndexedHeap<E, D, InEntry> {
    /// Inserts `entry`, which is told its position (H1). O(log n).
    ///
    /// # Panics
    /// If the heap holds [`MAX_LEN`] entries already ("capacity overflow").
    #[inline]
    pub(crate) fn push_indexed(&mut self, entry: E) -> usize {
        self.insert(entry)
    }

    /// Asserts H2 and that each entry's position is where it is (the caller reads it).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn check_indexed(&self, index_of: impl Fn(&E) -> Option<usize>) {
        self.check_order();
        for (pos, node) in self.nodes.iter().enumerate() {
            assert_eq!(
                index_of(&node.entry),
                Some(pos),
                "H1: an entry's own position"
            );
        }
    }
}

impl<E: Ordered, const D: usize, K: Keeper<E>> Default for IndexedHeap<E, D, K> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<E, const D: usize, K: Keeper<E>> fmt::Debug for IndexedHeap<E, D, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexedHeap")
            .field("len", &self.nodes.len())
            .field("arity", &D)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
