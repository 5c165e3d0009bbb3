//! The length of one board tick, and the conversions between ticks and
//! time that every reader makes: one place for the arithmetic and for what
//! a tick length of 0 (unknown) means.

use std::num::NonZeroU16;

/// The length of one tick (one DDR clock, tCK, on the board), in whole
/// picoseconds as the file headers hold it (docs/format.md). Never zero: a
/// header whose tick length is 0 has no times, and
/// [`TickLength::of_ps`] gives `None` for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TickLength(NonZeroU16);

impl TickLength {
    /// The tick length of a header's `tick_ps` field; `None` for 0.
    pub const fn of_ps(ps: u16) -> Option<TickLength> {
        match NonZeroU16::new(ps) {
            Some(ps) => Some(TickLength(ps)),
            None => None,
        }
    }

    pub fn ps(self) -> u16 {
        self.0.get()
    }

    /// Nanoseconds per tick.
    pub fn ns_per_tick(self) -> f64 {
        f64::from(self.0.get()) / 1000.0
    }

    /// `ticks` ticks in nanoseconds.
    pub fn ns(self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick()
    }

    /// `ticks` ticks in milliseconds.
    pub fn ms(self, ticks: u64) -> f64 {
        self.ns(ticks) / 1e6
    }

    /// `ticks` ticks in whole picoseconds, saturating.
    pub fn ps_of(self, ticks: u64) -> u64 {
        ticks.saturating_mul(u64::from(self.0.get()))
    }

    /// `ticks` ticks in whole nanoseconds (rounded down), saturating: the
    /// times capture files and the simulated machine keep.
    pub fn whole_ns(self, ticks: u64) -> u64 {
        self.ps_of(ticks) / 1000
    }

    /// The tick that holds the instant `ns` nanoseconds after tick 0
    /// (rounded down): 0 for a negative or NaN time, `u64::MAX` past the
    /// last tick.
    pub fn tick_at_ns(self, ns: f64) -> u64 {
        // `as` saturates and takes NaN to 0.
        (ns / self.ns_per_tick()).max(0.0) as u64
    }

    /// The whole ticks closest to a duration of `ns` nanoseconds, at least
    /// one: the width of an interval asked for in time.
    pub fn ticks_in_ns(self, ns: f64) -> u64 {
        (ns / self.ns_per_tick()).round().max(1.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip_and_saturate() {
        assert!(TickLength::of_ps(0).is_none());
        let t = TickLength::of_ps(1250).unwrap();
        assert_eq!(t.ps(), 1250);
        assert_eq!(t.whole_ns(7), 8);
        assert_eq!(t.whole_ns(u64::MAX), u64::MAX / 1000);
        assert_eq!(t.ns(8), 10.0);
        assert_eq!(t.ms(800_000), 1.0);
        assert_eq!(t.ps_of(3), 3750);
        assert_eq!(t.ps_of(u64::MAX), u64::MAX);
        assert_eq!(t.tick_at_ns(10.0), 8);
        assert_eq!(t.tick_at_ns(11.0), 8);
        assert_eq!(t.tick_at_ns(-5.0), 0);
        assert_eq!(t.tick_at_ns(f64::NAN), 0);
        assert_eq!(t.tick_at_ns(1e300), u64::MAX);
        assert_eq!(t.ticks_in_ns(1000.0), 800);
        assert_eq!(t.ticks_in_ns(0.1), 1);
        assert_eq!(t.ticks_in_ns(f64::INFINITY), u64::MAX);
    }
}
