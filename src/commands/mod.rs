//! One file per subcommand: glue from parsed options to the library.

pub mod compare;
pub mod compare_input;
pub mod delete;
pub mod doctor;
pub mod export;
pub mod import;
pub mod list;
pub mod micro;
pub mod plan;
pub mod report;
pub mod run;
pub mod show;
pub mod trace;
pub mod workload;

use crate::cli::{Cli, Command};
use clap::Parser;

/// Parse the command line, run the subcommand, print a one-line error; returns the exit code.
pub fn main() -> i32 {
    // Die quietly on a closed pipe (`abperf show 3 | head`), as Unix tools do, instead of
    // panicking in println!. Commands that change system settings restore them before printing.
    // SAFETY: setting a signal disposition to SIG_DFL has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
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
        Command::Run(a) => run::run(a),
        Command::List(a) => list::run(a),
        Command::Show(a) => show::run(a),
        Command::Export(a) => export::run(a),
        Command::Delete(a) => delete::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Import(args) => import::run(args),
        Command::Report(args) => report::run(args),
        Command::Micro(a) => micro::run(a),
        Command::Compare(args) => compare::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Trace(a) => trace::run(a),
        Command::Workload(a) => workload::run(a),
    }
}
