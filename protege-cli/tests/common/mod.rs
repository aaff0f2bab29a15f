//! Helpers of the end-to-end tests of the `protege` binary.
#![allow(dead_code)]

use std::path::PathBuf;

pub(crate) mod server;

/// The workspace root: the shipped personas, examples and expected outputs.
pub(crate) fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_owned()
}

/// The `protege` binary, run from the workspace root as before it had a package of its own.
pub(crate) fn protege_command() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_protege"));
    command.current_dir(project());
    command
}
