//! The `time_ns` cell of the CSV and of the table: a tick's time in
//! nanoseconds with three decimals, exact to the picosecond.

use std::fmt;

/// The time of `tick` ticks of `tick_ps` picoseconds, shown as `ns.ppp`.
/// Held in u128 picoseconds: u64 ticks × u16 ps cannot overflow it, where
/// u64 would from about 2^48 ticks of 65535 ps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickTime {
    ps: u128,
}

impl TickTime {
    pub fn new(tick: u64, tick_ps: u16) -> TickTime {
        TickTime {
            ps: u128::from(tick) * u128::from(tick_ps),
        }
    }
}

impl fmt::Display for TickTime {
    /// A width right-aligns the cell in that many characters (the table's
    /// column); a longer time is written whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole_width = f.width().unwrap_or(0).saturating_sub(".ppp".len());
        write!(f, "{:>whole_width$}.{:03}", self.ps / 1000, self.ps % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::TickTime;

    #[test]
    fn nanoseconds_with_the_picoseconds_as_three_decimals() {
        assert_eq!(TickTime::new(0, 1250).to_string(), "0.000");
        assert_eq!(TickTime::new(u64::MAX, 0).to_string(), "0.000");
        // Ticks that do not make a whole nanosecond.
        assert_eq!(TickTime::new(1, 1250).to_string(), "1.250");
        assert_eq!(TickTime::new(1, 1).to_string(), "0.001");
        assert_eq!(TickTime::new(7, 1250).to_string(), "8.750");
        assert_eq!(TickTime::new(1000, 999).to_string(), "999.000");
        // (2^64 - 1) × 65535 ps = 1208907372870555465089025 ps, beyond u64.
        assert_eq!(
            TickTime::new(u64::MAX, u16::MAX).to_string(),
            "1208907372870555465089.025"
        );
    }

    #[test]
    fn a_width_right_aligns_the_whole_cell() {
        assert_eq!(
            format!("{:>16}", TickTime::new(8, 1250)),
            "          10.000"
        );
        assert_eq!(format!("{:16}", TickTime::new(1, 1)), "           0.001");
        let widest = TickTime::new(u64::MAX, u16::MAX);
        assert_eq!(format!("{widest:>16}"), widest.to_string());
    }
}
