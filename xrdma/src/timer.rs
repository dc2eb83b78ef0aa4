//! The timer table: at most one deadline per connection, earliest first.
//!
//! Setting a connection's deadline replaces its previous one; stale heap entries are skipped
//! lazily when they surface, so both `set` and `expire` cost O(log n).

use crate::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Deadlines keyed by a dense index (the connection id).
#[derive(Clone, Debug, Default)]
pub struct TimerTable {
    deadline: Vec<Option<Time>>,
    heap: BinaryHeap<Reverse<(Time, u32)>>,
}

impl TimerTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set (or with `None`, clear) the deadline of `key`.
    pub fn set(&mut self, key: u32, at: Option<Time>) {
        let i = key as usize;
        if self.deadline.len() <= i {
            self.deadline.resize(i + 1, None);
        }
        if self.deadline[i] == at {
            return;
        }
        self.deadline[i] = at;
        if let Some(t) = at {
            self.heap.push(Reverse((t, key)));
        }
    }

    /// The deadline of `key`, if any.
    pub fn get(&self, key: u32) -> Option<Time> {
        self.deadline.get(key as usize).copied().flatten()
    }

    /// The earliest live deadline.
    pub fn earliest(&mut self) -> Option<Time> {
        self.drop_stale();
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Remove and return one key whose deadline is at or before `now` (earliest first).
    pub fn expire(&mut self, now: Time) -> Option<u32> {
        self.drop_stale();
        let Reverse((t, key)) = *self.heap.peek()?;
        if t > now {
            return None;
        }
        self.heap.pop();
        self.deadline[key as usize] = None;
        Some(key)
    }

    fn drop_stale(&mut self) {
        while let Some(&Reverse((t, key))) = self.heap.peek() {
            if self.deadline.get(key as usize).copied().flatten() == Some(t) {
                return;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_replacement() {
        let mut t = TimerTable::new();
        t.set(0, Some(Time::from_ps(50)));
        t.set(1, Some(Time::from_ps(20)));
        t.set(2, Some(Time::from_ps(30)));
        t.set(1, Some(Time::from_ps(60))); // replaces 20
        t.set(2, None); // cleared
        assert_eq!(t.earliest(), Some(Time::from_ps(50)));
        assert_eq!(t.expire(Time::from_ps(49)), None);
        assert_eq!(t.expire(Time::from_ps(100)), Some(0));
        assert_eq!(t.expire(Time::from_ps(100)), Some(1));
        assert_eq!(t.expire(Time::from_ps(100)), None);
        assert_eq!(t.earliest(), None);
    }
}
