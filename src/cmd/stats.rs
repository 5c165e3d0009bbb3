//! `hmtt stats`.

/// Arguments of `hmtt stats`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt stats` is not available in this build yet")
}
