//! What the `protege` library brings into the build of a program that depends on it.

use std::process::Command;

/// `cargo tree` of the `protege` package's normal dependencies, one crate a line
/// (`name vX.Y.Z`), with `args` after it.
fn library_tree(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "protege",
            "-e",
            "normal",
        ])
        .args(["--prefix", "none"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo tree prints UTF-8")
}

/// The subscriber of `tracing` events is the program's choice (the `protege` command
/// installs its own): no feature of the library depends on `tracing-subscriber`.
#[test]
fn the_library_leaves_the_tracing_subscriber_to_the_program() {
    for features in [&[][..], &["--all-features"]] {
        let tree = library_tree(features);
        let subscribers: Vec<&str> = tree
            .lines()
            .filter(|line| line.starts_with("tracing-subscriber "))
            .collect();
        assert!(
            subscribers.is_empty(),
            "protege {features:?} depends on {subscribers:?}"
        );
    }
}
