//! One file per subcommand: glue from parsed options to the library.

pub mod micro;

use crate::cli::{Cli, Command};
use clap::Parser;

/// Parse the command line, run the subcommand, print a one-line error; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("abperf: error: {e:#}");
            crate::error::exit_code(&e)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Micro(a) => micro::run(a),
    }
}
