//! `hmtt replay`.

/// Arguments of `hmtt replay`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt replay` is not available in this build yet")
}
