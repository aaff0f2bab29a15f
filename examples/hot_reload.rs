//! Hot reload in an embedded engine: `Engine::builder().watch(true)` watches the persona
//! folder; an edit that is valid replaces the persona (a run in flight keeps the version it
//! started with), an invalid one is rejected and the last good version stays live. The
//! engine's event stream says when each edit has been applied, so nothing sleeps and
//! hopes. Every wait is bounded: the example fails instead of hanging.
//!
//! Run with `cargo run --example hot_reload`.

use std::path::Path;
use std::time::Duration;

use protege::config::Event;
use protege::{Engine, ResolveInput};
use tokio::sync::broadcast;

/// The longest wait for one reload event.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Version 1 of the persona: a scheduled run whose chain says hello.
const V1: &str = r#"
[[responsibilities]]
name = "morning"
schedule = "0 8 * * *"
instructions = "Plan the day."

[[responsibility_resolvers]]
use = "LoadText"
template = "v1: {{ responsibility.instructions }}"
"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A throw-away app root holding the persona folder and the database.
    let dir = tempfile::tempdir()?;
    print!("{}", run(dir.path()).await?);
    Ok(())
}

/// Starts a watching engine on `root/personas`, edits the persona twice (valid, then
/// invalid) and returns what each run saw, one line per step.
pub(crate) async fn run(root: &Path) -> anyhow::Result<String> {
    let file = root.join("personas/greeter.toml");
    std::fs::create_dir_all(root.join("personas"))?;
    std::fs::write(&file, V1)?;

    let engine = Engine::builder()
        .root(root)
        .database(format!("sqlite://{}", root.join("protege.db").display()))
        .watch(true) // hot-reload the persona folder
        .build()
        .await?;
    let mut events = engine
        .events()
        .ok_or_else(|| anyhow::anyhow!("a watching engine has an event stream"))?;
    let mut out = String::new();
    let input = ResolveInput::scheduled("greeter", "morning").now("2026-01-05T08:00:00Z".parse()?);
    out += &format!("before: {}\n", first_text(&engine, &input).await?);

    // A valid edit (written the way editors save: a temporary file renamed over the old).
    save(&file, &V1.replace("v1:", "v2:"))?;
    let event = next_event(&mut events, |e| matches!(e, Event::Reloaded { .. })).await?;
    out += &format!(
        "event: reloaded `{}`\n",
        event.persona().unwrap_or_default()
    );
    out += &format!(
        "after a valid edit: {}\n",
        first_text(&engine, &input).await?
    );

    // An invalid edit: a misspelt variable. The engine keeps version 2.
    save(
        &file,
        &V1.replace("v1: {{ responsibility", "v3: {{ responsiblity"),
    )?;
    let event = next_event(&mut events, |e| matches!(e, Event::Rejected { .. })).await?;
    let error = event.error_text().unwrap_or_default();
    let error = error
        .strip_prefix(&format!("{}:", file.display()))
        .unwrap_or(&error);
    out += &format!("event: rejected greeter.toml:{error}\n");
    out += &format!(
        "after an invalid edit: {}\n",
        first_text(&engine, &input).await?
    );
    Ok(out)
}

/// Writes `text` to `path` through a temporary file and a rename, as editors do.
fn save(path: &Path, text: &str) -> std::io::Result<()> {
    let temp = path.with_extension("toml.tmp");
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}

/// The next event that `wanted` accepts, skipping others; an error after [`TIMEOUT`].
async fn next_event(
    events: &mut broadcast::Receiver<Event>,
    wanted: impl Fn(&Event) -> bool,
) -> anyhow::Result<Event> {
    tokio::time::timeout(TIMEOUT, async {
        loop {
            match events.recv().await {
                Ok(event) if wanted(&event) => return Ok(event),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => {
                    anyhow::bail!("the persona folder is no longer watched")
                }
            }
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("no reload event within {TIMEOUT:?}"))?
}

/// The text of the first message the persona's scheduled chain gives for `input`.
async fn first_text(engine: &Engine, input: &ResolveInput) -> anyhow::Result<String> {
    let out = engine.resolve(input).await?;
    Ok(out
        .request
        .messages
        .first()
        .map(|m| m.content.text())
        .unwrap_or_default())
}
