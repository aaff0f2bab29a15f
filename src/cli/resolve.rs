//! `resolve`: run a persona's chain for a message or a responsibility and print the request.

use std::sync::Arc;
use std::time::Instant;

use protege::wire::{ModelSpec, to_anthropic, to_openai};
use protege::{AppConfig, Chain, Context, Trigger, build_request, user_turn};

use super::args::{Format, ResolveArgs};
use super::{CliResult, Env, Failure, db, explain, output, personas};

/// What `resolve` produced: the JSON body and, for `--explain`, the table.
pub(crate) struct Resolution {
    pub(crate) body: serde_json::Value,
    pub(crate) explain: String,
}

pub(crate) async fn run(env: &Env, args: &ResolveArgs) -> CliResult {
    let out = resolve(env, args).await?;
    if args.explain {
        output::err(&out.explain)?;
    }
    let text = serde_json::to_string_pretty(&out.body)
        .map_err(|e| Failure::invalid(format!("cannot serialise the request: {e}")))?;
    output::out(&format!("{text}\n"))
}

pub(crate) async fn resolve(env: &Env, args: &ResolveArgs) -> CliResult<Resolution> {
    let persona = personas::load_one(env, &args.persona)?;
    let info = persona.info();
    let model = match args.format {
        Format::Messages => None,
        Format::Openai | Format::Anthropic => Some(ModelSpec::resolve(
            info.model.as_ref(),
            args.model.as_deref(),
        )?),
    };
    let conn = db::connect(env).await?;
    let (trigger, user_content) = match (&args.message, &args.responsibility) {
        (Some(id), _) => {
            let m = protege::db::load_message(&conn, id).await?.ok_or_else(|| {
                Failure::invalid(format!(
                    "unknown message `{id}`: no message with this Message-ID in the database"
                ))
            })?;
            if m.direction == protege::Direction::Outbound {
                return Err(Failure::invalid(format!(
                    "message `{id}` was sent by the persona; a reply run answers an inbound message"
                )));
            }
            let content = user_turn(&m);
            (Trigger::Message(Arc::new(m)), Some(content))
        }
        (None, Some(name)) => {
            let r = info.responsibility(name).cloned().ok_or_else(|| {
                let known: Vec<String> = info
                    .responsibilities
                    .iter()
                    .map(|r| format!("`{}`", r.name))
                    .collect();
                Failure::invalid(if known.is_empty() {
                    format!(
                        "unknown responsibility `{name}`: persona `{}` has no responsibilities",
                        info.name
                    )
                } else {
                    format!(
                        "unknown responsibility `{name}` for persona `{}`; valid: {}",
                        info.name,
                        known.join(", ")
                    )
                })
            })?;
            (Trigger::Responsibility(r), None)
        }
        (None, None) => {
            return Err(Failure {
                code: 2,
                message: "pass `--message MESSAGE_ID` or `--responsibility NAME`".into(),
            });
        }
    };
    let is_reply = matches!(trigger, Trigger::Message(_));
    let mut builder = Context::builder(info.clone(), AppConfig::new(&env.root), trigger).db(conn);
    if let Some(now) = args.now {
        builder = builder.now(now);
    }
    let ctx = builder.build();
    let chain = if is_reply {
        persona.message_chain()
    } else {
        persona.responsibility_chain()
    };
    let start = Instant::now();
    let steps = chain.run(&ctx).await?;
    let elapsed = start.elapsed();
    let explain = explain::table(&steps, user_content.as_ref(), elapsed);
    let messages = steps.into_iter().flat_map(|s| s.messages).collect();
    let request = build_request(user_content, info.tools.clone(), messages)?;
    let body = match (args.format, model) {
        (Format::Openai, Some(m)) => to_openai(&request, &m)?,
        (Format::Anthropic, Some(m)) => to_anthropic(&request, &m)?,
        _ => serde_json::to_value(&request)
            .map_err(|e| Failure::invalid(format!("cannot serialise the request: {e}")))?,
    };
    Ok(Resolution { body, explain })
}
