//! `check` (unless `--no-env`, also the environment variables the personas name; with
//! `--database`, also the files and tables they name), and the persona a command names.

use protege::Engine;
use protege::config::{Diagnostic, process_env, render};

use super::{CliResult, Env, Failure, output};

/// `check`; `check_env` unless `--no-env`.
pub(crate) async fn check(env: &Env, check_env: bool, reach_mcp: bool) -> CliResult {
    let engine = env.engine().await?;
    let names = match engine.check()? {
        Ok(names) => names,
        Err(diagnostics) => return Err(failed(&diagnostics)),
    };
    if check_env {
        let problems = env_problems(&engine);
        if !problems.is_empty() {
            return Err(failed(&problems));
        }
    }
    // With a database named, what the personas read outside themselves is checked too; a
    // check reads a database and makes none, so a SQLite file that is not there is an error.
    if env.database_given {
        if let Some(path) = missing_sqlite_file(&env.database) {
            return Err(Failure::invalid(format!(
                "database file `{}` does not exist: `check --database` reads a database and creates none",
                path.display()
            )));
        }
        let problems = engine.check_resources().await?;
        if !problems.is_empty() {
            return Err(failed(&problems));
        }
    }
    for persona in engine.personas() {
        if let Ok(source) = std::fs::read_to_string(persona.path()) {
            for w in persona.warnings(&source) {
                output::err(&format!(
                    "{}:{}:{}: warning: {}\n",
                    w.path().display(),
                    w.line(),
                    w.column(),
                    w.message()
                ))?;
            }
        }
    }
    if reach_mcp {
        check_mcp(&engine).await?;
    }
    output::out(&format!(
        "ok: {} {} ({})\n",
        names.len(),
        if names.len() == 1 {
            "persona"
        } else {
            "personas"
        },
        names.join(", ")
    ))
}

/// Reaches the MCP servers of the personas and prints, for each, the tools the model is
/// offered with their descriptions and the tools left out; a server down is a warning on
/// stderr, a tool whose name is taken an error.
async fn check_mcp(engine: &Engine) -> CliResult {
    let mut text = String::new();
    let mut clashes = Vec::new();
    for (persona, entries) in engine.check_mcp(process_env).await? {
        for entry in entries {
            match entry.reason {
                None => {
                    text.push_str(&format!(
                        "mcp {persona} {}: up, {} {}\n",
                        entry.server,
                        entry.tools.len(),
                        if entry.tools.len() == 1 {
                            "tool"
                        } else {
                            "tools"
                        }
                    ));
                    for (name, description) in entry.tools.iter().zip(&entry.descriptions) {
                        text.push_str(&format!("  {name}: {}\n", one_line(description)));
                    }
                    for left in &entry.left_out {
                        text.push_str(&format!("  {left}\n"));
                    }
                }
                Some(reason) if entry.clash => clashes.push(format!(
                    "persona `{persona}`: MCP server `{}`: {reason}",
                    entry.server
                )),
                Some(reason) => output::err(&format!(
                    "warning: persona `{persona}`: MCP server `{}` is down, its tools are not offered: {reason}\n",
                    entry.server
                ))?,
            }
        }
    }
    output::out(&text)?;
    match clashes.len() {
        0 => Ok(()),
        _ => Err(Failure::invalid(clashes.join("\n"))),
    }
}

/// A description on one line: its line breaks as spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The environment variables the loaded personas name that this process does not have,
/// by file, then line.
fn env_problems(engine: &Engine) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for persona in engine.personas() {
        match std::fs::read_to_string(persona.path()) {
            Ok(source) => problems.extend(persona.env_diagnostics(&source, &process_env)),
            Err(e) => problems.push(Diagnostic::whole_file(
                persona.path(),
                format!("cannot read the persona file again: {e}"),
            )),
        }
    }
    problems
        .sort_by(|a, b| (a.path(), a.line(), a.column()).cmp(&(b.path(), b.line(), b.column())));
    problems
}

/// The file of a SQLite URL that would be created on connect (no `mode=` of its own, not in
/// memory) and does not exist.
fn missing_sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path.contains(":memory:") || url.contains("mode=") {
        return None;
    }
    let path = std::path::PathBuf::from(path);
    (!path.exists()).then_some(path)
}

/// Prints `diagnostics` on stderr; the failure that sums them up.
fn failed(diagnostics: &[protege::config::Diagnostic]) -> Failure {
    if let Err(failure) = output::err(&format!("{}\n\n", render(diagnostics))) {
        return failure;
    }
    Failure::invalid(format!(
        "check failed: {}",
        protege::problem_summary(diagnostics)
    ))
}

/// Fails unless the engine has a persona called `name`; when it is missing and some persona
/// files are invalid, their problems are printed before the error (one of them may be the
/// persona).
pub(crate) fn require(engine: &Engine, name: &str) -> CliResult {
    match engine.require_persona(name) {
        Ok(_) => Ok(()),
        Err(e) => {
            if e.kind() == protege::EngineErrorKind::NotFound && !engine.diagnostics().is_empty() {
                output::err(&format!("{}\n\n", render(engine.diagnostics())))?;
            }
            Err(Failure::from(e))
        }
    }
}
