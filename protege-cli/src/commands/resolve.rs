//! `resolve`: run a persona's chain for a message or a responsibility and print the request.

use protege::config::render;
use protege::{Engine, EngineError, EngineErrorKind, Resolution, ResolveInput};

use super::args::{ExplainFormat, Format, ResolveArgs};
use super::{CliResult, Env, Failure, explain, output};

pub(crate) async fn run(env: &Env, args: &ResolveArgs) -> CliResult {
    let engine = env.engine().await?;
    let out = resolve(&engine, &input(args)).await?;
    match args.explain {
        Some(ExplainFormat::Table) => output::err(&explain::table(&out))?,
        Some(ExplainFormat::Json) => {
            let json = serde_json::to_string_pretty(&out.explain_json())
                .map_err(|e| Failure::invalid(format!("cannot serialise the explain rows: {e}")))?;
            output::err(&format!("{json}\n"))?;
        }
        None => {}
    }
    let text = serde_json::to_string_pretty(&out.body)
        .map_err(|e| Failure::invalid(format!("cannot serialise the request: {e}")))?;
    output::out(&format!("{text}\n"))
}

/// The engine's input for the command line's arguments.
pub(crate) fn input(args: &ResolveArgs) -> ResolveInput {
    ResolveInput {
        persona: args.persona.clone(),
        message_id: args.message.clone(),
        responsibility: args.responsibility.clone(),
        format: match args.format {
            Format::Messages => protege::Format::Messages,
            Format::Openai => protege::Format::Openai,
            Format::OpenaiResponses => protege::Format::OpenaiResponses,
            Format::Anthropic => protege::Format::Anthropic,
            Format::Provider => protege::Format::Provider,
        },
        model: args.model.clone(),
        now: args.now,
        explain: args.explain.is_some(),
    }
}

/// Resolves `input`; when the persona is unknown and some persona files are invalid, their
/// problems are printed before the error (one of them may be the persona).
pub(crate) async fn resolve(engine: &Engine, input: &ResolveInput) -> CliResult<Resolution> {
    engine.resolve(input).await.map_err(|e| {
        if e.kind() == EngineErrorKind::NotFound
            && engine.persona(&input.persona).is_none()
            && !engine.diagnostics().is_empty()
        {
            let _ = output::err(&format!("{}\n\n", render(engine.diagnostics())));
        }
        Failure::from(e)
    })
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Self {
        Failure {
            code: if e.kind() == EngineErrorKind::BadRequest {
                2
            } else {
                1
            },
            message: e.to_string(),
        }
    }
}
