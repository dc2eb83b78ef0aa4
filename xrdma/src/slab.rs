//! A slab with generations: records in reusable slots, named by [`ConnId`]s that tell a slot's
//! current record from the ones it held before.
//!
//! The endpoint keeps its connections here. A record stays readable after [`Slab::release`]
//! (an ended connection's counters can still be read) until its slot serves a new record;
//! [`Slab::insert`] then bumps the slot's generation, so an id of the old record no longer
//! resolves. Freed slots are reused last-freed first, so the same sequence of calls gives the
//! same ids.

use crate::error::ConnId;

/// One slot: its current generation, its record, and whether the record has been released.
#[derive(Clone, Debug)]
struct Slot<T> {
    generation: u32,
    released: bool,
    value: T,
}

/// Records in slots reused after release; at most `max` slots.
#[derive(Clone, Debug)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    /// Released slots, the most recently released last.
    free: Vec<u32>,
    max: usize,
}

impl<T> Slab<T> {
    /// An empty slab that grows to at most `max` slots (and at most `u32::MAX`).
    pub fn new(max: usize) -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            max: max.min(u32::MAX as usize),
        }
    }

    /// Put `value` in the most recently released slot (its generation one higher), else in a
    /// new slot; `None` when all `max` slots hold records not released.
    pub fn insert(&mut self, value: T) -> Option<ConnId> {
        if let Some(&index) = self.free.last() {
            return self.reuse(index, value);
        }
        self.push(value)
    }

    /// Put `value` in a new slot, even when released ones wait; `None` when the slab has
    /// `max` slots.
    pub fn push(&mut self, value: T) -> Option<ConnId> {
        if self.slots.len() >= self.max {
            return None;
        }
        let index = self.slots.len() as u32;
        self.slots.push(Slot {
            generation: 0,
            released: false,
            value,
        });
        Some(ConnId::new(index, 0))
    }

    /// The most recently released slot whose record's id `skip` does not refuse, for
    /// [`Slab::reuse`].
    pub fn free_slot(&self, skip: impl Fn(ConnId) -> bool) -> Option<u32> {
        self.free.iter().rev().copied().find(|&i| {
            let s = &self.slots[i as usize];
            !skip(ConnId::new(i, s.generation))
        })
    }

    /// Put `value` in `slot`, a released slot [`Slab::free_slot`] named, its generation one
    /// higher; `None` when the slot is not released.
    pub fn reuse(&mut self, slot: u32, value: T) -> Option<ConnId> {
        let i = self.free.iter().rposition(|&f| f == slot)?;
        self.free.remove(i);
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
        s.released = false;
        s.value = value;
        Some(ConnId::new(slot, s.generation))
    }

    /// Let `id`'s slot serve the next [`Slab::insert`]. The record stays readable through `id`
    /// until then. Releasing a stale id or releasing twice does nothing.
    pub fn release(&mut self, id: ConnId) {
        if let Some(slot) = self.slots.get_mut(id.index()) {
            if slot.generation == id.generation() && !slot.released {
                slot.released = true;
                self.free.push(id.slot());
            }
        }
    }

    /// The record `id` names, or `None` when the slot does not exist or serves a newer record.
    pub fn get(&self, id: ConnId) -> Option<&T> {
        self.slots
            .get(id.index())
            .filter(|s| s.generation == id.generation())
            .map(|s| &s.value)
    }

    /// The record `id` names, mutably (see [`Slab::get`]).
    pub fn get_mut(&mut self, id: ConnId) -> Option<&mut T> {
        self.slots
            .get_mut(id.index())
            .filter(|s| s.generation == id.generation())
            .map(|s| &mut s.value)
    }

    /// Whether `id` once named a record whose slot now serves a newer one.
    pub fn is_stale(&self, id: ConnId) -> bool {
        self.slots
            .get(id.index())
            .is_some_and(|s| s.generation != id.generation())
    }

    /// The id and record of slot `index` when the slot exists and the low `bits` bits of its
    /// generation are `generation` (ids carried in fewer bits than a `u32`).
    pub fn get_by_bits(&self, index: u32, generation: u32, bits: u32) -> Option<(ConnId, &T)> {
        let s = self.slots.get(index as usize)?;
        let mask = u32::MAX >> (32 - bits.clamp(1, 32));
        (s.generation & mask == generation).then(|| (ConnId::new(index, s.generation), &s.value))
    }

    /// The id of the record in slot `index` now, if the slot exists.
    pub fn id_at(&self, index: u32) -> Option<ConnId> {
        self.slots
            .get(index as usize)
            .map(|s| ConnId::new(index, s.generation))
    }

    /// Slots, in use or released.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the slab has no slot.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Every slot's current record and its id, released ones included, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &T)> {
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| (ConnId::new(i as u32, s.generation), &s.value))
    }

    /// [`Slab::iter`], the records mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ConnId, &mut T)> {
        self.slots
            .iter_mut()
            .enumerate()
            .map(|(i, s)| (ConnId::new(i as u32, s.generation), &mut s.value))
    }
}

/// Per-connection state of an application, in a vector indexed by [`ConnId::index`]. Each
/// entry remembers the whole id it belongs to, so when a slot serves a new connection its
/// entry starts afresh instead of carrying the ended connection's state over.
#[derive(Clone, Debug)]
pub struct PerConn<T> {
    slots: Vec<Option<(ConnId, T)>>,
}

impl<T> Default for PerConn<T> {
    fn default() -> Self {
        PerConn { slots: Vec::new() }
    }
}

impl<T> PerConn<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// `conn`'s entry, made by `init` when it has none (or its slot held an older
    /// connection's).
    pub fn entry(&mut self, conn: ConnId, init: impl FnOnce() -> T) -> &mut T {
        let i = conn.index();
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        let slot = &mut self.slots[i];
        if !matches!(slot, Some((id, _)) if *id == conn) {
            *slot = None;
        }
        &mut slot.get_or_insert_with(|| (conn, init())).1
    }

    /// `conn`'s entry, if it has one.
    pub fn get(&self, conn: ConnId) -> Option<&T> {
        match self.slots.get(conn.index()) {
            Some(Some((id, v))) if *id == conn => Some(v),
            _ => None,
        }
    }

    /// Take `conn`'s entry out.
    pub fn remove(&mut self, conn: ConnId) -> Option<T> {
        let slot = self.slots.get_mut(conn.index())?;
        if slot.as_ref().is_some_and(|(id, _)| *id == conn) {
            return slot.take().map(|(_, v)| v);
        }
        None
    }
}

impl<T> std::ops::Index<ConnId> for Slab<T> {
    type Output = T;
    /// The record in `id`'s slot. Internal callers hold ids of live records; the generation
    /// is checked in debug builds.
    fn index(&self, id: ConnId) -> &T {
        let s = &self.slots[id.index()];
        debug_assert_eq!(s.generation, id.generation(), "stale {id}");
        &s.value
    }
}

impl<T> std::ops::IndexMut<ConnId> for Slab<T> {
    fn index_mut(&mut self, id: ConnId) -> &mut T {
        let s = &mut self.slots[id.index()];
        debug_assert_eq!(s.generation, id.generation(), "stale {id}");
        &mut s.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_slot_serves_the_next_record_and_the_old_id_goes_stale() {
        let mut s = Slab::new(8);
        let a = s.insert("a").unwrap();
        let b = s.insert("b").unwrap();
        assert_eq!((a, b), (ConnId::new(0, 0), ConnId::new(1, 0)));
        s.release(a);
        assert_eq!(s.get(a), Some(&"a"), "readable until reused");
        let c = s.insert("c").unwrap();
        assert_eq!(c, ConnId::new(0, 1));
        assert_eq!(s.get(a), None);
        assert!(s.is_stale(a));
        assert_eq!(s.get(c), Some(&"c"));
        assert_eq!(s.get_by_bits(0, 1, 12), Some((c, &"c")));
        assert_eq!(s.get_by_bits(0, 0, 12), None, "the old generation's bits");
        assert_eq!(s.get_by_bits(9, 0, 12), None);
        assert_eq!(s.len(), 2);
        s.release(a); // stale: nothing
        s.release(c);
        s.release(c); // twice: nothing
        assert_eq!(s.insert("d"), Some(ConnId::new(0, 2)));
        assert_eq!(s.insert("e"), Some(ConnId::new(2, 0)));
    }

    #[test]
    fn per_connection_state_starts_afresh_when_a_slot_serves_a_new_connection() {
        let (old, new) = (ConnId::new(3, 0), ConnId::new(3, 1));
        let mut p: PerConn<u32> = PerConn::new();
        *p.entry(old, || 0) += 5;
        assert_eq!(p.get(old), Some(&5));
        assert_eq!(
            *p.entry(new, || 0),
            0,
            "the new connection does not inherit 5"
        );
        assert_eq!(p.get(old), None);
        assert_eq!(p.remove(old), None);
        assert_eq!(p.remove(new), Some(0));
        assert_eq!(p.get(new), None);
    }

    #[test]
    fn a_refused_free_slot_is_skipped_for_an_older_one_or_a_new_one() {
        let mut s = Slab::new(8);
        let (a, b) = (s.insert('a').unwrap(), s.insert('b').unwrap());
        s.release(a);
        s.release(b);
        assert_eq!(s.free_slot(|_| false), Some(1), "the last released first");
        assert_eq!(s.free_slot(|id| id == b), Some(0));
        assert_eq!(s.free_slot(|_| true), None);
        assert_eq!(s.reuse(0, 'c'), Some(ConnId::new(0, 1)));
        assert_eq!(s.reuse(0, 'd'), None, "slot 0 is taken again");
        assert_eq!(s.push('e'), Some(ConnId::new(2, 0)));
        assert_eq!(s.insert('f'), Some(ConnId::new(1, 1)));
    }

    #[test]
    fn a_full_slab_refuses() {
        let mut s = Slab::new(1);
        let a = s.insert(1).unwrap();
        assert_eq!(s.insert(2), None);
        s.release(a);
        assert_eq!(s.insert(3), Some(ConnId::new(0, 1)));
    }
}
