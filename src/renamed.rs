//! Options renamed for consistency across commands (issue 37): each old
//! spelling is a hidden clap alias of the new option, kept for one release,
//! and whoever still uses it is told.

use crate::output::status;

/// Options renamed for consistency across commands (issue 37): (command,
/// old spelling, new spelling). Each old spelling is a hidden clap alias
/// of the new option, kept for one release; [`warn_renamed_options`] tells
/// whoever still uses it.
pub const RENAMED_OPTIONS: &[(&str, &str, &str)] = &[
    ("merge", "--output", "-o/--out"),
    ("pack", "--output", "-o/--out"),
    ("unpack", "--output", "-o/--out"),
    ("board", "--window", "--config-window"),
    ("export", "--interval-ns", "--interval-ms (in ms, not ns)"),
    (
        "capture",
        "--stripe-mib",
        "--stripe-size (a size: 64M, 64MiB)",
    ),
    ("capture", "--rcvbuf-mib", "--rcvbuf (a size: 64M, 64MiB)"),
];

/// Switches that became options with a value (issue 37): (command, the
/// switch, its new spelling). The switch alone still works for one release,
/// with a warning; given a value, it is the new option.
pub const SWITCHES_GIVEN_VALUES: &[(&str, &str, &str)] =
    &[("firmware", "--json", "--json - (or --json FILE)")];

/// The renamed options ([`RENAMED_OPTIONS`]) of `command` spelled the old
/// way in its command line `args` (parsed by clap already), once each.
/// Everything after `--` is another program's command line (`hmtt qemu`).
/// clap refuses an option name where a value is due, so a token spelled
/// like an option before `--` is one.
pub fn renamed_options_used<S: AsRef<std::ffi::OsStr>>(
    command: &str,
    args: impl IntoIterator<Item = S>,
) -> Vec<(&'static str, &'static str)> {
    let mut used = Vec::new();
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let args = &args[..args.iter().position(|a| a == "--").unwrap_or(args.len())];
    for (i, arg) in args.iter().enumerate() {
        let arg = arg.as_str();
        let name = arg.split_once('=').map_or(arg, |(name, _)| name);
        let bare = name == arg
            && args
                .get(i + 1)
                .is_none_or(|n| n.starts_with('-') && *n != "-");
        let renamed = RENAMED_OPTIONS.iter().filter(|(_, old, _)| name == *old);
        let switches = SWITCHES_GIVEN_VALUES.iter().filter(|_| bare);
        for &(cmd, old, new) in renamed.chain(switches.filter(|(_, old, _)| arg == *old)) {
            if cmd == command && !used.contains(&(old, new)) {
                used.push((old, new));
            }
        }
    }
    used
}

/// Warns on standard error, through [`status!`] (under `-q` too, as every
/// warning), of each renamed option spelled
/// the old way in `command`'s `args`.
pub fn warn_renamed_options<S: AsRef<std::ffi::OsStr>>(
    command: &str,
    args: impl IntoIterator<Item = S>,
) {
    for (old, new) in renamed_options_used(command, args) {
        status!(
            "warning: `hmtt {command} {old}` is deprecated and will be removed \
             in the next release: use {new}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_options_are_found_by_command_before_the_double_dash() {
        let used = |cmd: &str, args: &[&str]| renamed_options_used(cmd, args);
        assert_eq!(
            used(
                "merge",
                &["hmtt", "merge", "c/", "--output", "t", "--output=u"]
            ),
            [("--output", "-o/--out")]
        );
        assert_eq!(
            used("board", &["hmtt", "board", "--window=0,1,2"]),
            [("--window", "--config-window")]
        );
        assert!(used("merge", &["hmtt", "merge", "c/", "-o", "t", "--outputs"]).is_empty());
        assert!(used("analyze", &["hmtt", "analyze", "t", "--window", "a,b"]).is_empty());
        assert!(used("board", &["hmtt", "board", "--", "--window"]).is_empty());
        let json = [("--json", "--json - (or --json FILE)")];
        let report = ["hmtt", "firmware", "report", "--board", "ecp5-85f"];
        assert_eq!(used("firmware", &[&report[..], &["--json"]].concat()), json);
        assert_eq!(
            used(
                "firmware",
                &["hmtt", "firmware", "build", "--json", "--board", "x"]
            ),
            json
        );
        for given in [&["--json", "-"][..], &["--json", "r.json"], &["--json=-"]] {
            assert!(used("firmware", &[&report[..], given].concat()).is_empty());
        }
        assert!(used("analyze", &["hmtt", "analyze", "t", "--json"]).is_empty());
    }
}
