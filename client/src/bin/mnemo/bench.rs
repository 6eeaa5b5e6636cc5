//! `mnemo bench`: the benchmarks and the fuzz harness are a binary of their own, `mnemo-bench`
//! (built with the workspace and kept beside `mnemo`), so the CLI carries none of their code
//! or dependencies. This runs it with the same socket and arguments.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct BenchArgs {
    /// What to measure and its options (`mnemo bench --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

const BENCH: &str = "mnemo-bench";

/// `mnemo-bench` beside this binary, else the one on `PATH`.
fn bench_binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(BENCH))
        .filter(|beside| beside.is_file())
        .unwrap_or_else(|| PathBuf::from(BENCH))
}

/// Runs `mnemo-bench` in this process's place (where the platform allows), so its output,
/// signals and exit status are the command's own.
pub fn run(args: BenchArgs, socket: &Path) -> anyhow::Result<()> {
    let binary = bench_binary();
    let mut command = std::process::Command::new(&binary);
    command.arg("--socket").arg(socket).args(&args.args);
    let missing = || {
        format!(
            "cannot run {}: `mnemo bench` needs the {BENCH} binary, which a build from source \
             makes beside mnemo (`cargo build --release -p {BENCH}`); packages do not ship it",
            binary.display()
        )
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = command.exec();
        Err(e).with_context(missing)
    }
    #[cfg(not(unix))]
    {
        let status = command.status().with_context(missing)?;
        std::process::exit(status.code().unwrap_or(1));
    }
}
