fn main() {
    // First: this binary is also the small process workloads are forked from (max RSS).
    abperf::runner::spawn_helper::main_hook();
    std::process::exit(abperf::cli::main());
}
