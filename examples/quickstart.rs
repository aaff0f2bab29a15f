//! Quickstart: the `Engine` on the shipped `personas/` folder, a fresh SQLite database and
//! the demo mail (`examples/data/demo.json`), printing the Anthropic Messages body of the
//! `support` persona's reply to `<refund-3@example.com>` — ready to send, and byte for byte
//! what `protege resolve --persona support --message '<refund-3@example.com>' --format
//! anthropic` prints.
//!
//! Run with `cargo run --example quickstart`.

use std::path::Path;

use protege::{Engine, Format, ResolveInput};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A throw-away database file, so every run starts from the same data.
    let dir = tempfile::tempdir()?;
    println!("{}", run(&dir.path().join("protege.db")).await?);
    Ok(())
}

/// Builds the engine on the database file `database`, fills it with the demo data and
/// returns the body of one reply as pretty JSON.
pub(crate) async fn run(database: &Path) -> anyhow::Result<String> {
    // The app root holds `personas/`, `prompts/` and `examples/data/`: here, the repository.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let engine = Engine::builder()
        .root(root) // personas from <root>/personas
        .database(format!("sqlite://{}", database.display())) // created and migrated on first use
        // The support persona fences mail bodies; a fixed key makes this example print the
        // same bytes at every run. An application leaves the key to the database (drawn at
        // random when it is created) or to `PROTEGE_FENCE_KEY`.
        .fence_key("protege-example-fence-key")
        .build()
        .await?;

    // The demo mail (idempotent by Message-ID), and the application's own `customers`
    // table that the support persona's `LoadRecord` reads.
    engine
        .import_fixture(&root.join("examples/data/demo.json"))
        .await?;
    let customers = std::fs::read_to_string(root.join("examples/data/customers.sql"))?;
    engine.run_sql_script(&customers).await?;

    let input = ResolveInput::reply("support", "<refund-3@example.com>")
        .format(Format::Anthropic)
        .now("2026-03-10T08:00:00Z".parse()?); // a fixed clock: the same output every run
    let out = engine.resolve(&input).await?;
    Ok(serde_json::to_string_pretty(&out.body)?)
}
