//! `check`, and the persona a command names.

use protege::Engine;
use protege::config::render;

use super::{CliResult, Env, Failure, output};

pub(crate) async fn check(env: &Env) -> CliResult {
    let engine = env.engine().await?;
    let names = match engine.check()? {
        Ok(names) => names,
        Err(diagnostics) => {
            output::err(&format!("{}\n\n", render(&diagnostics)))?;
            return Err(Failure::invalid(format!(
                "check failed: {}",
                protege::problem_summary(&diagnostics)
            )));
        }
    };
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
