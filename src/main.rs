fn main() {
    std::process::exit(abperf::commands::main());
}
