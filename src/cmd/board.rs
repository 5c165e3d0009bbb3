//! `hmtt board`.

/// Arguments of `hmtt board`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt board` is not available in this build yet")
}
