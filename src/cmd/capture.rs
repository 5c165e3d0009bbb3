//! `hmtt capture`.

/// Arguments of `hmtt capture`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt capture` is not available in this build yet")
}
