//! `hmtt sim`.

/// Arguments of `hmtt sim`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt sim` is not available in this build yet")
}
