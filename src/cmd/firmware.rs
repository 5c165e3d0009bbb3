//! `hmtt firmware`.

/// Arguments of `hmtt firmware`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt firmware` is not available in this build yet")
}
