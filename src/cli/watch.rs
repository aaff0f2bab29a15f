//! `watch`: hot-reload the persona folder and print one JSON line per event.

use std::path::PathBuf;

use protege::config::{Diagnostic, Event};

use super::{CliResult, Env, output, personas};

pub(crate) async fn run(env: &Env) -> CliResult {
    let (set, diagnostics) = personas::load(env)?;
    let mut watch = set.watch()?;
    // Files invalid at start are reported like a rejected edit, one event per file.
    let mut by_file: Vec<(PathBuf, Vec<Diagnostic>)> = Vec::new();
    for d in diagnostics {
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
    while let Some(event) = watch.next().await {
        if !print(&event)? {
            break;
        }
    }
    Ok(())
}

/// Prints one event line and flushes; false once stdout is closed (e.g. `watch | head`).
fn print(event: &Event) -> CliResult<bool> {
    output::out(&format!("{}\n", event.to_json_line()))?;
    Ok(!output::stdout_closed())
}
