fn main() {
    std::process::exit(cargo_kprof::cli::main());
}
