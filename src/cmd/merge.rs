//! `hmtt merge`.

/// Arguments of `hmtt merge`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt merge` is not available in this build yet")
}
