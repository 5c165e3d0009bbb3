//! `hmtt dump`.

/// Arguments of `hmtt dump`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt dump` is not available in this build yet")
}
