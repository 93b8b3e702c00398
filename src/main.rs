fn main() {
    // First: this binary is also the small process workloads are forked from (max RSS).
    abperf::runner::spawn_helper::main_hook();
    abperf::measure::build::set_identity(env!("ABPERF_COMMIT"), env!("ABPERF_BUILD_DATE"));
    std::process::exit(abperf::cli::main());
}
