//! The `protege` command line: validate personas, import mail, resolve requests, serve.

fn main() -> std::process::ExitCode {
    protege_cli::main()
}
