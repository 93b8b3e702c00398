fn main() {
    std::process::exit(abperf::cli::main());
}
