//! Unit tests of `heap.rs`.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// (key, seq): the same shape as the executor's (deadline, seq).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct E(u64, u64);

impl Ordered for E {
    fn before(&self, other: &Self) -> bool {
        self < other
    }
}

fn heap_of<const D: usize>(keys: &[u64]) -> (IndexedHeap<E, D>, Vec<Handle>) {
    let mut h = IndexedHeap::<E, D>::new();
    let handles = keys
        .iter()
        .enumerate()
        .map(|(seq, &k)| {
            let handle = h.push(E(k, seq as u64));
            h.check_invariants();
            handle
        })
        .collect();
    (h, handles)
}

fn drain<const D: usize>(h: &mut IndexedHeap<E, D>) -> Vec<u64> {
    std::iter::from_fn(|| {
        let e = h.pop();
        h.check_invariants();
        e
    })
    .map(|e| e.0)
    .collect()
}

#[test]
fn push_sifts_up_to_the_root_and_stops_midway() {
    // 50 goes to the root (sift up all the way); 35 stops below it.
    let (mut h, _) = heap_of::<2>(&[10, 20, 30, 40, 50, 60, 5, 35]);
    assert_eq!(h.peek(), Some(&E(5, 6)));
    assert_eq!(drain(&mut h), vec![5, 10, 20, 30, 35, 40, 50, 60]);
}

#[test]
fn pop_sifts_down_to_a_leaf_and_stops_midway() {
    for keys in [&[1, 2, 3, 4, 5, 6, 7, 8, 9][..], &[1, 9, 2, 9, 9, 3, 4]] {
        let (mut h, _) = heap_of::<4>(keys);
        let mut sorted = keys.to_vec();
        sorted.sort();
        assert_eq!(drain(&mut h), sorted);
    }
}

#[test]
fn ties_come_out_in_insertion_order() {
    let (mut h, _) = heap_of::<4>(&[7; 20]);
    let seqs: Vec<u64> = std::iter::from_fn(|| h.pop()).map(|e| e.1).collect();
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());
}

#[test]
fn remove_at_root_middle_and_end() {
    let keys = [10, 20, 30, 40, 50, 60, 70];
    for victim in [0usize, 3, 6] {
        let (mut h, handles) = heap_of::<2>(&keys);
        assert_eq!(
            h.remove(handles[victim]),
            Some(E(keys[victim], victim as u64))
        );
        h.check_invariants();
        let rest: Vec<u64> = keys
            .iter()
            .copied()
            .filter(|&k| k != keys[victim])
            .collect();
        assert_eq!(drain(&mut h), rest);
    }
}

#[test]
fn remove_of_a_middle_node_can_sift_the_filler_up() {
    // Binary heap [1, 50, 2, 60, 70, 3, 4]: removing 60 (a leaf of 50's subtree) moves
    // the last node 4 into 50's subtree, where it must sift up above 50.
    let (mut h, handles) = heap_of::<2>(&[1, 50, 2, 60, 70, 3, 4]);
    h.remove(handles[3]).unwrap();
    h.check_invariants();
    assert_eq!(drain(&mut h), vec![1, 2, 3, 4, 50, 70]);
}

#[test]
fn stale_handles_never_match_even_after_slot_reuse() {
    let (mut h, handles) = heap_of::<4>(&[1, 2, 3]);
    assert!(h.remove(handles[1]).is_some());
    assert_eq!(h.remove(handles[1]), None);
    let reused = h.push(E(9, 9));
    assert_eq!(reused.slot, handles[1].slot, "the freed slot is reused");
    assert_eq!(
        h.remove(handles[1]),
        None,
        "the old handle must not name the new entry"
    );
    assert_eq!(h.get(reused), Some(&E(9, 9)));
    assert_eq!(h.remove(Handle::NONE), None);
    h.check_invariants();
}

#[test]
fn slots_retire_instead_of_wrapping() {
    let mut h = IndexedHeap::<E, 4>::new();
    let first = h.push(E(0, 0));
    h.keeper.slots[0].gen = u32::MAX - 2; // fast-forward: pretend the slot was reused 2^31 times
    let live = Handle {
        slot: 0,
        gen: u32::MAX - 2,
    };
    assert!(h.remove(live).is_some());
    let next = h.push(E(1, 1));
    assert_ne!(next.slot, 0, "slot 0 is retired");
    assert_eq!(h.remove(first), None);
    h.check_invariants();
}

#[test]
fn the_node_array_halves_only_when_less_than_a_quarter_full() {
    // Amortised: no shrinking above a quarter (which would reallocate again and again),
    // and a halving just below it.
    let n = 4 * MIN_SHRINK;
    let mut h = IndexedHeap::<E, 4>::new();
    let mut handles: Vec<Handle> = (0..n as u64).map(|k| h.push(E(k, k))).collect();
    let full = h.nodes.capacity();
    while h.len() > full / 4 {
        h.remove(handles.pop().unwrap()).unwrap();
    }
    assert_eq!(h.nodes.capacity(), full, "a quarter full: not shrunk yet");
    h.remove(handles.pop().unwrap()).unwrap();
    let half = h.nodes.capacity();
    assert!(half < full && half >= full / 2, "halved: {full} -> {half}");
    h.check_invariants();
}

#[test]
fn memory_is_given_back_and_old_handles_stay_stale() {
    let n = 4 * MIN_SHRINK;
    let mut h = IndexedHeap::<E, 4>::new();
    let handles: Vec<Handle> = (0..n as u64).map(|k| h.push(E(k, k))).collect();
    let full = h.nodes.capacity();
    for &handle in handles[..n - 10].iter().rev() {
        h.remove(handle).unwrap(); // from the end: O(1) each
    }
    h.check_invariants();
    assert!(h.nodes.capacity() < full / 2, "the node array shrank");
    for &handle in &handles[n - 10..] {
        h.remove(handle).unwrap();
    }
    assert_eq!(
        h.keeper.slots.capacity(),
        0,
        "the slot table is dropped once empty"
    );
    let fresh: Vec<Handle> = (0..n as u64).map(|k| h.push(E(k, k))).collect();
    h.check_invariants();
    for &old in &handles {
        assert_eq!(h.get(old), None, "H4: an old handle names nothing");
    }
    assert_eq!(h.remove(handles[0]), None);
    assert_eq!(h.len(), n);
    assert!(fresh.iter().all(|&f| h.get(f).is_some()));
}

#[test]
fn update_moves_keys_both_ways() {
    let (mut h, handles) = heap_of::<4>(&[10, 20, 30, 40, 50]);
    assert!(h.update(handles[4], |e| e.0 = 1)); // decrease-key: to the root
    h.check_invariants();
    assert!(h.update(handles[0], |e| e.0 = 99)); // increase-key: to a leaf
    h.check_invariants();
    assert_eq!(drain(&mut h), vec![1, 20, 30, 40, 99]);
    assert!(!h.update(handles[0], |_| unreachable!()));
}

#[test]
fn extract_if_and_clear() {
    let (mut h, handles) = heap_of::<4>(&(0..50).rev().collect::<Vec<_>>());
    let odd = h.extract_if(|e| e.0 % 2 == 1);
    h.check_invariants();
    assert_eq!(odd.len(), 25);
    assert_eq!(h.remove(handles[0]), None, "49 was extracted");
    assert_eq!(
        drain(&mut h),
        (0..50).filter(|k| k % 2 == 0).collect::<Vec<_>>()
    );
    let (mut h, _) = heap_of::<2>(&[3, 1, 2]);
    assert_eq!(h.clear().len(), 3);
    h.check_invariants();
    assert!(h.is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Push(u8),
    Pop,
    Remove(usize),
    Update(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(Op::Push),
        2 => Just(Op::Pop),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, k)| Op::Update(i, k)),
    ]
}

/// Drives the heap and a sorted-Vec model with the same operations; after every step
/// the invariants hold and every handle issued so far agrees with the model.
fn run_model<const D: usize>(ops: Vec<Op>) {
    let mut heap = IndexedHeap::<E, D>::new();
    let mut model: Vec<E> = Vec::new(); // sorted by (key, seq)
    let mut live: HashMap<Handle, E> = HashMap::new();
    let mut issued: Vec<Handle> = Vec::new();
    let mut seq = 0;
    for op in ops {
        match op {
            Op::Push(k) => {
                let e = E(u64::from(k), seq);
                seq += 1;
                let h = heap.push(e);
                model.insert(model.partition_point(|m| m < &e), e);
                live.insert(h, e);
                issued.push(h);
            }
            Op::Pop => {
                let got = heap.pop();
                let want = (!model.is_empty()).then(|| model.remove(0));
                assert_eq!(got, want);
                live.retain(|_, e| Some(*e) != want);
            }
            Op::Remove(i) if !issued.is_empty() => {
                let h = issued[i % issued.len()];
                let got = heap.remove(h);
                assert_eq!(got, live.remove(&h), "remove by (maybe stale) handle");
                if let Some(e) = got {
                    model.retain(|m| *m != e);
                }
            }
            Op::Update(i, k) if !issued.is_empty() => {
                let h = issued[i % issued.len()];
                let new = live.get(&h).map(|e| E(u64::from(k), e.1));
                assert_eq!(heap.update(h, |e| e.0 = u64::from(k)), new.is_some());
                if let Some(new) = new {
                    let old = live.insert(h, new).unwrap();
                    model.retain(|m| *m != old);
                    model.insert(model.partition_point(|m| m < &new), new);
                }
            }
            Op::Remove(_) | Op::Update(..) => {}
        }
        heap.check_invariants();
        assert_eq!(heap.len(), model.len());
        assert_eq!(heap.peek(), model.first());
        for (h, e) in &live {
            assert_eq!(heap.get(*h), Some(e));
        }
    }
}

proptest! {
    #[test]
    fn binary_heap_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        run_model::<2>(ops);
    }

    #[test]
    fn quaternary_heap_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        run_model::<4>(ops);
    }
}

/// An entry that keeps its own position (the intrusive keeper).
#[derive(Debug)]
struct Own {
    key: E,
    at: std::cell::Cell<Option<usize>>,
}

impl Ordered for std::rc::Rc<Own> {
    fn before(&self, other: &Self) -> bool {
        self.key < other.key
    }
}

impl Indexed for std::rc::Rc<Own> {
    fn set_index(&self, pos: Option<usize>) {
        self.at.set(pos);
    }
}

/// The intrusive keeper against the same sorted model: removal and re-keying go by the
/// position each entry holds, and an entry that left holds `None`.
fn run_indexed_model<const D: usize>(ops: Vec<Op>) {
    use std::rc::Rc;
    let mut heap = IndexedHeap::<Rc<Own>, D, InEntry>::with_capacity(0);
    let mut model: Vec<E> = Vec::new();
    let mut issued: Vec<Rc<Own>> = Vec::new();
    let mut seq = 0;
    let check = |heap: &IndexedHeap<Rc<Own>, D, InEntry>, model: &[E], issued: &[Rc<Own>]| {
        heap.check_indexed(|e| e.at.get());
        assert_eq!(heap.len(), model.len());
        assert_eq!(heap.peek().map(|e| e.key), model.first().copied());
        for e in issued {
            let stored = model.contains(&e.key);
            assert_eq!(
                e.at.get().is_some(),
                stored,
                "{e:?}: in the heap iff it holds a position"
            );
        }
    };
    for op in ops {
        match op {
            Op::Push(k) => {
                let e = E(u64::from(k), seq);
                seq += 1;
                let own = Rc::new(Own {
                    key: e,
                    at: std::cell::Cell::new(None),
                });
                let pos = heap.push_indexed(own.clone());
                assert_eq!(own.at.get(), Some(pos));
                model.insert(model.partition_point(|m| m < &e), e);
                issued.push(own);
            }
            Op::Pop => {
                let got = heap.pop().map(|e| e.key);
                let want = (!model.is_empty()).then(|| model.remove(0));
                assert_eq!(got, want);
            }
            Op::Remove(i) if !issued.is_empty() => {
                let target = &issued[i % issued.len()];
                if let Some(pos) = target.at.get() {
                    assert!(Rc::ptr_eq(heap.get_at(pos).unwrap(), target));
                    let got = heap.remove_at(pos);
                    model.retain(|m| *m != got.key);
                } else {
                    assert!(!model.contains(&target.key));
                }
            }
            Op::Update(i, k) if !issued.is_empty() => {
                // Re-keying goes through a fresh entry (keys are immutable in `Own`):
                // remove by position, push the new key.
                let target = issued[i % issued.len()].clone();
                if let Some(pos) = target.at.get() {
                    let old = heap.remove_at(pos);
                    model.retain(|m| *m != old.key);
                    let e = E(u64::from(k), seq);
                    seq += 1;
                    let own = Rc::new(Own {
                        key: e,
                        at: std::cell::Cell::new(None),
                    });
                    heap.push_indexed(own.clone());
                    model.insert(model.partition_point(|m| m < &e), e);
                    issued.push(own);
                }
            }
            Op::Remove(_) | Op::Update(..) => {}
        }
        check(&heap, &model, &issued);
    }
    let rest: Vec<Rc<Own>> = heap.clear();
    assert!(
        rest.iter().all(|e| e.at.get().is_none()),
        "cleared entries hold no position"
    );
}

#[test]
fn indexed_update_at_moves_the_entry_and_its_position() {
    use std::rc::Rc;
    let mut heap = IndexedHeap::<Rc<Own>, 4, InEntry>::with_capacity(0);
    let owns: Vec<Rc<Own>> = (0..20)
        .map(|k| {
            Rc::new(Own {
                key: E((k + 1) * 10, k),
                at: std::cell::Cell::new(None),
            })
        })
        .collect();
    owns.iter().for_each(|o| {
        heap.push_indexed(o.clone());
    });
    // A key cannot change inside an `Rc`; `update_at`'s closure swaps the entry for
    // one with the new key, which is what re-keying looks like from the heap.
    let last = Rc::new(Own {
        key: E(1, 99),
        at: std::cell::Cell::new(None),
    });
    let pos = owns[19].at.get().unwrap();
    let now = heap.update_at(pos, |e| *e = last.clone());
    assert_eq!(now, 0, "decrease-key to the root");
    assert_eq!(last.at.get(), Some(0));
    heap.check_indexed(|e| e.at.get());
    let out = heap.extract_if(|e| e.key.0 % 20 == 0);
    assert!(out.iter().all(|e| e.at.get().is_none()));
    heap.check_indexed(|e| e.at.get());
}

proptest! {
    #[test]
    fn indexed_binary_heap_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        run_indexed_model::<2>(ops);
    }

    #[test]
    fn indexed_quaternary_heap_matches_model(ops in proptest::collection::vec(op(), 0..200)) {
        run_indexed_model::<4>(ops);
    }
}

/// A zero-sized entry: a heap of them allocates nothing, so it can be filled to the limit.
#[derive(Debug)]
struct Zst;

impl Ordered for Zst {
    fn before(&self, _: &Self) -> bool {
        false
    }
}

impl Indexed for Zst {
    fn set_index(&self, _: Option<usize>) {}
}

/// Limits: a heap at `MAX_LEN` entries refuses one more with "capacity overflow", so every
/// index fits a 32-bit `queue::Position`.
#[test]
fn a_push_past_max_len_panics_with_capacity_overflow() {
    const NODE: Node<Zst, ()> = Node {
        entry: Zst,
        tag: (),
    };
    let mut h = IndexedHeap::<Zst, DEFAULT_ARITY, InEntry> {
        // From a zero-sized array: no loop, so this is quick in a debug build too.
        nodes: Vec::from([NODE; MAX_LEN - 1]),
        keeper: InEntry,
        detached: false,
    };
    assert_eq!(h.push_indexed(Zst), MAX_LEN - 1, "the last index there is");
    let full = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.push_indexed(Zst)));
    let message = full
        .expect_err("a push past MAX_LEN")
        .downcast::<String>()
        .unwrap();
    assert!(message.starts_with("capacity overflow"), "{message}");
    assert_eq!(h.len(), MAX_LEN, "nothing was added");
}

/// An entry whose comparison panics when the countdown armed by the test reaches zero
/// (a `PriorityBlockingQueue` element with a broken `Ord`).
#[derive(Debug, Clone, Copy)]
struct Fragile {
    key: u64,
    id: u64,
}

thread_local! {
    /// Comparisons left before one panics; 0: disarmed.
    static COUNTDOWN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl Ordered for Fragile {
    const MAY_PANIC: bool = true;

    fn before(&self, other: &Self) -> bool {
        COUNTDOWN.with(|c| match c.get() {
            0 => {}
            1 => {
                c.set(0);
                panic!("a comparison that panics");
            }
            n => c.set(n - 1),
        });
        (self.key, self.id) < (other.key, other.id)
    }
}

#[derive(Debug, Clone)]
enum FragileOp {
    Push(u64),
    Pop,
    Remove(usize),
    Update(usize, u64),
    /// The next comparison but `n` panics.
    Arm(u32),
}

fn fragile_op() -> impl Strategy<Value = FragileOp> {
    prop_oneof![
        3 => (0..50u64).prop_map(FragileOp::Push),
        2 => Just(FragileOp::Pop),
        2 => (0..64usize).prop_map(FragileOp::Remove),
        1 => (0..64usize, 0..50u64).prop_map(|(i, k)| FragileOp::Update(i, k)),
        2 => (1..6u32).prop_map(FragileOp::Arm),
    ]
}

/// Whatever comparison panics during push, pop, remove or update, every key reaches its
/// own entry, `remove` never returns another's, positions stay true (H1, H3), the heap
/// stays in order (H2: a panicking sift is undone; a pushed or re-keyed entry that found
/// no place is taken out, as `PriorityBlockingQueue` does with `take_detached`), and
/// nothing else is lost: the entries that come out at the end are exactly the ones
/// never taken out, in order.
fn run_fragile<const D: usize>(ops: Vec<FragileOp>) {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut h = IndexedHeap::<Fragile, D>::new();
    let mut issued: Vec<(Handle, u64)> = Vec::new();
    let mut live: std::collections::HashSet<u64> = Default::default();
    let mut next_id = 0u64;
    for op in ops {
        match op {
            FragileOp::Arm(n) => COUNTDOWN.with(|c| c.set(n)),
            FragileOp::Push(key) => {
                let id = next_id;
                next_id += 1;
                let r = catch_unwind(AssertUnwindSafe(|| h.push(Fragile { key, id })));
                match r {
                    Ok(handle) => {
                        live.insert(id);
                        issued.push((handle, id));
                    }
                    Err(_) => {
                        let out = h.take_detached().expect("the unplaced entry");
                        assert_eq!(out.id, id, "the pushed entry is the one left out");
                    }
                }
            }
            FragileOp::Pop => match catch_unwind(AssertUnwindSafe(|| h.pop())) {
                Ok(Some(e)) => assert!(live.remove(&e.id), "popped {} twice", e.id),
                Ok(None) => assert!(live.is_empty(), "an empty pop with entries left"),
                Err(_) => {} // the popped entry went back
            },
            FragileOp::Remove(i) if !issued.is_empty() => {
                let (handle, id) = issued[i % issued.len()];
                match catch_unwind(AssertUnwindSafe(|| h.remove(handle))) {
                    Ok(Some(e)) => {
                        assert_eq!(e.id, id, "a key removed another's entry");
                        assert!(live.remove(&id));
                    }
                    Ok(None) => assert!(!live.contains(&id), "a live key reached nothing"),
                    Err(_) => assert!(live.contains(&id)),
                }
            }
            FragileOp::Update(i, key) if !issued.is_empty() => {
                let (handle, id) = issued[i % issued.len()];
                let r = catch_unwind(AssertUnwindSafe(|| h.update(handle, |e| e.key = key)));
                match r {
                    Ok(found) => assert_eq!(found, live.contains(&id)),
                    // Undone (back with its old key), or re-keyed and left unplaced.
                    Err(_) => {
                        if let Some(out) = h.take_detached() {
                            assert_eq!(out.id, id, "the re-keyed entry is the one left out");
                            assert!(live.remove(&id));
                        }
                    }
                }
            }
            FragileOp::Remove(_) | FragileOp::Update(..) => {}
        }
        assert!(h.take_detached().is_none(), "nothing left detached");
        // H1, H3, and H2: in order after any panic (the check's own comparisons do not
        // count down to the armed panic).
        let armed = COUNTDOWN.with(|c| c.replace(0));
        h.check_invariants();
        COUNTDOWN.with(|c| c.set(armed));
        assert_eq!(h.len(), live.len(), "entries lost or duplicated");
        for &(handle, id) in &issued {
            match h.get(handle) {
                Some(e) => assert_eq!(e.id, id, "a key reaches another's entry"),
                None => assert!(!live.contains(&id), "a live key reaches nothing"),
            }
        }
    }
    COUNTDOWN.with(|c| c.set(0));
    let mut left = std::collections::HashSet::new();
    let mut last: Option<Fragile> = None;
    while let Some(e) = h.pop() {
        assert!(left.insert(e.id));
        if let Some(l) = last {
            assert!(!e.before(&l), "out of order: {e:?} after {l:?}");
        }
        last = Some(e);
    }
    assert_eq!(left, live);
}

proptest! {
    #[test]
    fn a_panicking_comparison_loses_nothing_binary(
        ops in proptest::collection::vec(fragile_op(), 0..200)
    ) {
        run_fragile::<2>(ops);
    }

    #[test]
    fn a_panicking_comparison_loses_nothing_quaternary(
        ops in proptest::collection::vec(fragile_op(), 0..200)
    ) {
        run_fragile::<4>(ops);
    }
}

thread_local! {
    /// Comparisons made by [`Counted`] entries on this thread.
    static COMPARISONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// An entry that keeps its position (the executor's tasks do) and counts its comparisons;
/// `P`: whether its order may panic (a `PriorityBlockingQueue`'s user order takes the
/// other path of every sift).
#[derive(Debug, Clone)]
struct Counted<const P: bool>(std::rc::Rc<Own>);

impl<const P: bool> Ordered for Counted<P> {
    const MAY_PANIC: bool = P;

    fn before(&self, other: &Self) -> bool {
        COMPARISONS.with(|c| c.set(c.get() + 1));
        self.0.key < other.0.key
    }
}

impl<const P: bool> Indexed for Counted<P> {
    fn set_index(&self, pos: Option<usize>) {
        self.0.at.set(pos);
    }
}

/// A cancel (`remove_at`) and a reschedule (`update_at`) of an entry already in the heap,
/// found by the position it keeps, make O(log n) comparisons: at most `D + 1` for each
/// level, at every size up to 2^14, for a removal from anywhere and a re-key to the root
/// or past the last leaf. A removal that searched or rebuilt would make thousands.
#[test]
fn removal_and_rekeying_by_position_make_logarithmically_many_comparisons() {
    fn run<const D: usize, const P: bool>() {
        use std::rc::Rc;
        const N: u64 = 1 << 14;
        let entry = |key: u64, seq: u64| {
            Counted::<P>(Rc::new(Own {
                key: E(key, seq),
                at: std::cell::Cell::new(None),
            }))
        };
        let mut heap = IndexedHeap::<Counted<P>, D, InEntry>::with_capacity(0);
        // Keys in a scrambled order (an odd multiplier permutes the residues mod 2^k).
        let entries: Vec<_> = (0..N)
            .map(|k| entry(k.wrapping_mul(0x9E37_79B9) % N + 1, k))
            .collect();
        let mut ops = 0;
        for (i, e) in entries.iter().enumerate() {
            heap.push_indexed(e.clone());
            if i < 64 || i % 13 != 0 {
                continue;
            }
            let levels = heap.len().ilog(D) as usize + 1;
            let bound = (D + 1) * (levels + 1);
            // An earlier entry, chosen by the same scramble, and where it is now.
            let victim = &entries[(i * 7919) % i];
            let Some(pos) = victim.0.at.get() else {
                continue; // removed or re-keyed by an earlier round
            };
            COMPARISONS.with(|c| c.set(0));
            match i % 3 {
                0 => drop(heap.remove_at(pos)),
                1 => drop(heap.update_at(pos, |e| *e = entry(0, i as u64))),
                _ => drop(heap.update_at(pos, |e| *e = entry(u64::MAX, i as u64))),
            }
            let made = COMPARISONS.with(std::cell::Cell::get);
            assert!(
                made <= bound,
                "D = {D}, {} entries: {made} comparisons, more than {bound}",
                heap.len()
            );
            ops += 1;
        }
        assert!(ops > 500, "the checks ran: {ops}");
        heap.check_indexed(|e| e.0.at.get());
    }
    run::<2, false>();
    run::<4, false>();
    run::<4, true>();
}
