//! The `protege` command line: validate personas, import mail, resolve requests.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
