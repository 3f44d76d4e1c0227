fn main() -> std::process::ExitCode {
    cargo_kprof::commands::main()
}
