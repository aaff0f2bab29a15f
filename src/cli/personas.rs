//! `check` and persona lookup for the other commands.

use std::sync::Arc;

use protege::config::{Diagnostics, Persona, PersonaSet, render};

use super::{CliResult, Env, Failure, output};

impl From<protege::config::Error> for Failure {
    fn from(e: protege::config::Error) -> Self {
        Failure::invalid(e.to_string())
    }
}

/// Loads the persona folder: the valid personas and the problems of the invalid files.
pub(crate) fn load(env: &Env) -> CliResult<(PersonaSet, Diagnostics)> {
    if !env.personas.is_dir() {
        let problem = if env.personas.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(Failure::invalid(format!(
            "persona folder `{}` {problem}",
            env.personas.display()
        )));
    }
    Ok(PersonaSet::load(&env.personas)?)
}

pub(crate) fn check(env: &Env) -> CliResult {
    let (set, diagnostics) = load(env)?;
    if !diagnostics.is_empty() {
        output::err(&format!("{}\n\n", render(&diagnostics)))?;
        return Err(Failure::invalid(format!(
            "check failed: {}",
            protege::problem_summary(&diagnostics)
        )));
    }
    let names = set.names();
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

/// The persona called `name`; when it is missing, the problems of the invalid files (one
/// of them may be the persona) are printed before the error.
pub(crate) fn load_one(env: &Env, name: &str) -> CliResult<Arc<Persona>> {
    let (set, diagnostics) = load(env)?;
    if let Some(persona) = set.get(name) {
        return Ok(persona);
    }
    if !diagnostics.is_empty() {
        output::err(&format!("{}\n\n", render(&diagnostics)))?;
        return Err(Failure::invalid(format!(
            "unknown persona `{name}`: it is not among the valid personas, and the persona folder has {}",
            protege::problem_summary(&diagnostics)
        )));
    }
    let known: Vec<String> = set.names().iter().map(|n| format!("`{n}`")).collect();
    Err(Failure::invalid(if known.is_empty() {
        format!(
            "unknown persona `{name}`: the persona folder `{}` holds no personas",
            env.personas.display()
        )
    } else {
        format!(
            "unknown persona `{name}`; known personas: {}",
            known.join(", ")
        )
    }))
}
