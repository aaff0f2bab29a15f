//! `check` (with `--database`, also the files and tables the personas name), and the
//! persona a command names.

use protege::Engine;
use protege::config::render;

use super::{CliResult, Env, Failure, output};

pub(crate) async fn check(env: &Env) -> CliResult {
    let engine = env.engine().await?;
    let names = match engine.check()? {
        Ok(names) => names,
        Err(diagnostics) => return Err(failed(&diagnostics)),
    };
    // With a database named, what the personas read outside themselves is checked too.
    if env.database_given {
        let problems = engine.check_resources().await?;
        if !problems.is_empty() {
            return Err(failed(&problems));
        }
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
