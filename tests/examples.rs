//! The runnable examples print what they should: each example file is compiled here as a
//! module and its `run` function (everything `main` prints) is compared with a committed
//! output, so `cargo test` checks the examples without running cargo again.
//!
//! The quickstart prints exactly what `protege resolve` prints for the same input
//! (`tests/expected/support-refund.anthropic.json.snap`); the other outputs are the insta
//! snapshots of `tests/expected/examples/` (`cargo insta review` accepts a deliberate
//! change). With `PROTEGE_WIRE_OUT=DIR`, the quickstart's Anthropic body and every body the
//! agent loop sends are also written there for the providers' schema check in `.ci/run`.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../examples/quickstart.rs"]
mod quickstart;
#[path = "support/snapshot.rs"]
mod snapshot;

#[allow(dead_code)]
#[path = "../examples/custom_resolver.rs"]
mod custom_resolver;

#[allow(dead_code)]
#[path = "../examples/typed_chain.rs"]
mod typed_chain;

#[allow(dead_code)]
#[path = "../examples/hot_reload.rs"]
mod hot_reload;

#[allow(dead_code)]
#[path = "../examples/agent_loop.rs"]
mod agent_loop;

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compares `actual` with the snapshot `tests/expected/<name>.snap`.
fn expect(name: &str, actual: &str) {
    snapshot::expect(&project().join("tests/expected"), name, actual);
}

/// Writes `body` to `$PROTEGE_WIRE_OUT/name` when the variable is set.
fn wire_out(name: &str, body: &str) {
    if let Ok(out) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(Path::new(&out).join(name), body).unwrap();
    }
}

/// What `main` prints: `run`'s text and a newline.
fn printed(text: String) -> String {
    text + "\n"
}

#[tokio::test(flavor = "multi_thread")]
async fn quickstart_prints_what_protege_resolve_prints() {
    let dir = tempfile::tempdir().unwrap();
    let body = quickstart::run(&dir.path().join("protege.db"))
        .await
        .unwrap();
    wire_out("example-quickstart.anthropic.json", &body);
    // The CLI's committed output for `resolve --persona support --message
    // '<refund-3@example.com>' --format anthropic --now 2026-03-10T08:00:00Z`.
    let cli = snapshot::expected_output(
        &project().join("tests/expected"),
        "support-refund.anthropic.json",
    );
    assert_eq!(printed(body), cli);
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_resolver_prints_the_request_with_the_open_orders() {
    let dir = tempfile::tempdir().unwrap();
    let out = custom_resolver::run(dir.path()).await.unwrap();
    expect("examples/custom_resolver.json", &printed(out));
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_chain_prints_the_request() {
    let out = typed_chain::run().await.unwrap();
    expect("examples/typed_chain.json", &printed(out));
}

#[tokio::test(flavor = "multi_thread")]
async fn hot_reload_sees_the_valid_edit_and_keeps_it_over_the_invalid_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = hot_reload::run(dir.path()).await.unwrap();
    expect("examples/hot_reload.txt", &out);
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_loop_closes_the_loop_and_the_next_request_replays_its_tool_round() {
    let dir = tempfile::tempdir().unwrap();
    let (out, sent) = agent_loop::run(&dir.path().join("protege.db"))
        .await
        .unwrap();
    assert_eq!(sent.len(), 2, "two rounds: the tool calls, then the answer");
    for (round, body) in sent.iter().enumerate() {
        wire_out(
            &format!("example-agent-loop-round-{round}.anthropic.json"),
            &serde_json::to_string_pretty(body).unwrap(),
        );
    }
    expect("examples/agent_loop.txt", &out);
}
