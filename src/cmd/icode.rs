//! `hmtt icode`.

/// Arguments of `hmtt icode`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt icode` is not available in this build yet")
}
