//! Helpers of the end-to-end tests of the `protege` binary.
#![allow(dead_code)]

use std::path::PathBuf;

#[cfg(unix)]
pub(crate) mod dovecot;
#[cfg(unix)]
pub(crate) mod postfix;
pub(crate) mod server;
#[path = "../../../tests/support/snapshot.rs"]
pub(crate) mod snapshot;

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
    command
        .current_dir(project())
        .env("PROTEGE_FENCE_KEY", FENCE_KEY);
    command
}

/// Runs `protege --database URL ARGS` from the workspace root, without the environment's
/// `PROTEGE_DATABASE_URL`: (exit code, stdout, stderr).
pub(crate) fn run_on(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = protege_command()
        .arg("--database")
        .arg(url)
        .args(args)
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .expect("run protege");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

/// The fence key of the tests (the examples' own), so the shipped `support` persona, whose
/// bodies are fenced, gives the same bytes at every run.
pub(crate) const FENCE_KEY: &str = "protege-example-fence-key";

/// The `agent` persona of the runs' tests: instructions, the thread, two tools, a scheduled
/// task, on a model without a public tokenizer.
pub(crate) const AGENT: &str = r#"addresses = ["support@acme.test"]

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"

[[tools]]
name = "lookup_order"
description = "Find an order"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[tools]]
name = "tracking_log"
description = "The carrier's events of an order"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[message_resolvers]]
use = "LoadText"
template = "You are Acme's support agent."

[[message_resolvers]]
use = "ThreadHistory"

[[responsibilities]]
name = "digest"
schedule = "0 8 * * *"
instructions = "Summarise yesterday's orders."

[[responsibility_resolvers]]
use = "LoadText"
template = "Summarise yesterday's orders."
"#;

/// SHA-256 in hex, written out here so the tests do not use the code they check.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
