//! The span between two I-code events (`--window BEGIN,END` of `hmtt
//! replay` and `hmtt analyze`): a board is inside the window from a TAG of
//! the first event index to the next TAG of the second, as often as the
//! pair occurs. Each board's stream carries the tags in its own time order,
//! so the state is kept per board.

use hmtt_format::trace::NameTable;

/// Why an event name given on the command line names no event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("no event named '{0}' in the trace (or its events file)")]
    UnknownEvent(String),
    #[error("a window is BEGIN,END (two event names or indices), not '{0}'")]
    NotAPair(String),
}

/// Which boards are inside the window now.
#[derive(Debug, Clone)]
pub struct EventWindow {
    begin: u32,
    end: u32,
    inside: [bool; 256],
}

impl EventWindow {
    /// A window from a TAG of event `begin` to the next TAG of `end`.
    pub fn new(begin: u32, end: u32) -> EventWindow {
        EventWindow {
            begin,
            end,
            inside: [false; 256],
        }
    }

    /// The window `BEGIN,END` of event names (from `names`) or indices.
    pub fn parse(spec: &str, names: &NameTable) -> Result<EventWindow, WindowError> {
        let (a, b) = spec
            .split_once(',')
            .ok_or_else(|| WindowError::NotAPair(spec.to_string()))?;
        Ok(EventWindow::new(
            event_index(a, names)?,
            event_index(b, names)?,
        ))
    }

    /// The (begin, end) event indices.
    pub fn events(&self) -> (u32, u32) {
        (self.begin, self.end)
    }

    /// A TAG of event `index` seen on `board`.
    #[inline]
    pub fn tag(&mut self, board: u8, index: u32) {
        if index == self.begin {
            self.inside[usize::from(board)] = true;
        } else if index == self.end {
            self.inside[usize::from(board)] = false;
        }
    }

    /// Whether `board` is between a BEGIN and its END.
    #[inline]
    pub fn contains(&self, board: u8) -> bool {
        self.inside[usize::from(board)]
    }
}

/// The index of event `s`: a name of `names`, or a number (decimal or
/// `0x` hexadecimal).
pub fn event_index(s: &str, names: &NameTable) -> Result<u32, WindowError> {
    let s = s.trim();
    if let Some((i, _)) = names.names.iter().find(|(_, n)| n == s) {
        return Ok(*i);
    }
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| WindowError::UnknownEvent(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_enter_and_leave_on_their_own_tags() {
        let names = NameTable {
            names: vec![(64, "a_begin".into()), (65, "a_end".into())],
        };
        let mut w = EventWindow::parse("a_begin, 0x41", &names).unwrap();
        assert_eq!(w.events(), (64, 65));
        assert!(!w.contains(0));
        w.tag(0, 64);
        assert!(w.contains(0) && !w.contains(1));
        w.tag(1, 65);
        assert!(w.contains(0));
        w.tag(0, 65);
        assert!(!w.contains(0));
        assert_eq!(
            EventWindow::parse("nope,a_end", &names).unwrap_err(),
            WindowError::UnknownEvent("nope".into())
        );
        assert!(EventWindow::parse("a_begin", &names).is_err());
    }
}
