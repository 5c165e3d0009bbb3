//! `hmtt demo`.

/// Arguments of `hmtt demo`.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`hmtt demo` is not available in this build yet")
}
