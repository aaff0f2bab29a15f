//! `watch`: hot-reload the persona folder and print one JSON line per event.

use std::path::PathBuf;

use protege::config::{Diagnostic, Event};
use tokio::sync::broadcast::error::RecvError;

use super::{CliResult, Env, output};

pub(crate) async fn run(env: &Env) -> CliResult {
    let engine = env.engine_builder().watch(true).build().await?;
    let Some(mut events) = engine.events() else {
        return Ok(());
    };
    // Files invalid at start are reported like a rejected edit, one event per file.
    let mut by_file: Vec<(PathBuf, Vec<Diagnostic>)> = Vec::new();
    for d in engine.diagnostics().iter().cloned() {
        match by_file.iter_mut().find(|(p, _)| p == d.path()) {
            Some((_, list)) => list.push(d),
            None => by_file.push((d.path().to_owned(), vec![d])),
        }
    }
    for (path, diagnostics) in by_file {
        let diagnostics = diagnostics.into();
        if !print(&Event::Rejected { path, diagnostics })? {
            return Ok(());
        }
    }
    loop {
        match events.recv().await {
            Ok(event) => {
                if !print(&event)? {
                    return Ok(());
                }
            }
            // Printing keeps up with any edit rate a person can make; a burst beyond the
            // channel's room is skipped rather than stopping the watch.
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return Ok(()),
        }
    }
}

/// Prints one event line and flushes; false once stdout is closed (e.g. `watch | head`).
fn print(event: &Event) -> CliResult<bool> {
    output::out(&format!("{}\n", event.to_json_line()))?;
    Ok(!output::stdout_closed())
}
