//! `hmtt log`.

/// Arguments of `hmtt log`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt log` is not available in this build yet")
}
