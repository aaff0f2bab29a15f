//! Finishing a run: the chain's messages, the trigger's user turn and the persona's tools
//! as one validated [`Request`], with one report row per resolver.

use std::time::Duration;

use crate::cache::{CacheHints, Conversation, cache_key};
use crate::calibration::Calibration;
use crate::context::{Context, MailStats, Trigger};
use crate::error::Result;
use crate::mail::PriorBodies;
use crate::message::{Content, Message, Request, Role, message};
use crate::render::Strip;
use crate::request::{build_request, user_turn, user_turn_with};
use crate::source::Source;
use crate::tokens::{Tokenizer, message_chars};

/// The contribution of one resolver in a run, for `--explain` and tracing.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<'a> {
    /// The resolver's name.
    pub name: &'a str,
    /// Its 1-based position in the chain.
    pub position: usize,
    /// The messages it contributed.
    pub messages: Vec<Message>,
    /// Where each message came from, one per message.
    pub sources: Vec<Source>,
    /// How long it took from its first poll to its completion.
    pub elapsed: Duration,
}

/// What one resolver contributed to a finished request: the rows of `--explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport {
    /// The resolver's name (for the trailing user turn: `(trailing user turn)`).
    pub name: String,
    /// Its 1-based position in the chain (0 for the trailing user turn).
    pub position: usize,
    /// How many messages it contributed.
    pub messages: usize,
    /// Their characters (Unicode scalar values).
    pub chars: usize,
    /// Their tokens, counted with [`Assembled::tokenizer`]; `None` until
    /// [`Assembled::count_tokens`] counts them (a real tokenizer costs time, so nothing is
    /// counted unless asked).
    pub tokens: Option<usize>,
    /// How long it ran (zero for the trailing user turn).
    pub elapsed: Duration,
    /// What rendering its mail removed or changed (`[mail]`; all zero for resolvers that
    /// render no mail).
    pub mail: MailStats,
    /// Where each of its messages came from (§15), one per message.
    pub sources: Vec<Source>,
    /// What `--explain` says of it besides its counts (a `LoadRecord` whose key found no
    /// row), one sentence each.
    pub notes: Vec<String>,
}

impl StepReport {
    fn of(
        name: &str,
        position: usize,
        messages: &[Message],
        sources: Vec<Source>,
        elapsed: Duration,
    ) -> Self {
        Self {
            name: name.to_owned(),
            position,
            messages: messages.len(),
            chars: messages.iter().map(message_chars).sum(),
            tokens: None,
            elapsed,
            mail: MailStats::default(),
            sources,
            notes: Vec::new(),
        }
    }
}

/// The name of the trailing user turn's row.
const TRAILING_USER_TURN: &str = "(trailing user turn)";

/// A finished request and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// The validated request.
    pub request: Request,
    /// One row per resolver, in declaration order, then a row for the trailing user turn
    /// of a reply run.
    pub steps: Vec<StepReport>,
    /// The wall time of the whole chain (its resolvers run concurrently).
    pub elapsed: Duration,
    /// How the run counts tokens ([`Context::tokenizer`]).
    pub tokenizer: Tokenizer,
}

impl Assembled {
    /// Counts the tokens of every step with [`Assembled::tokenizer`] (the `tokens` column
    /// of `--explain`); a step already counted is not counted again. Returns the tokens of
    /// each message of the request, in order, whose sums over a step's messages are the
    /// step's tokens.
    pub fn count_tokens(&mut self) -> Vec<usize> {
        let tokenizer = self.tokenizer;
        let per_message: Vec<usize> = self
            .request
            .messages
            .iter()
            .map(|m| tokenizer.count_message(m))
            .collect();
        count_steps(&mut self.steps, per_message.len(), |range| {
            per_message[range].iter().sum()
        });
        per_message
    }

    /// Counts the tokens of every step with `calibration` (fitted to the model's recorded
    /// usage) instead of [`Assembled::tokenizer`]; a step already counted is not counted
    /// again.
    pub fn count_tokens_calibrated(&mut self, calibration: &Calibration) {
        let messages = &self.request.messages;
        count_steps(&mut self.steps, messages.len(), |range| {
            calibration.count(&messages[range])
        });
    }
}

/// Sets the tokens of each step not counted yet to `count` of the range of its messages
/// among the request's `len`.
fn count_steps(
    steps: &mut [StepReport],
    len: usize,
    count: impl Fn(std::ops::Range<usize>) -> usize,
) {
    let mut start = 0;
    for step in steps {
        let end = (start + step.messages).min(len);
        if step.tokens.is_none() {
            step.tokens = Some(count(start..end));
        }
        start = end;
    }
}

/// The name of the resolver whose last message is a cache breakpoint.
const HISTORY: &str = "ThreadHistory";

/// Finishes the request of a chain's `run` (which took `elapsed`): the chain's messages,
/// then the user turn of a reply run, then the tools of the context's persona, checked
/// with [`Request::validate`]; see [`assemble`](crate::assemble).
pub(crate) fn finish(run: Vec<Step<'_>>, elapsed: Duration, ctx: &Context) -> Result<Assembled> {
    let mut steps = Vec::with_capacity(run.len() + 1);
    let total = run.iter().map(|s| s.messages.len()).sum::<usize>() + 1;
    let mut messages = Vec::with_capacity(total);
    let mut sources = Vec::with_capacity(total);
    let mut history_end = None;
    for step in run {
        if step.name == HISTORY && !step.messages.is_empty() {
            history_end = Some(messages.len() + step.messages.len() - 1);
        }
        sources.extend(step.sources.iter().cloned());
        let mut report = StepReport::of(
            step.name,
            step.position,
            &step.messages,
            step.sources,
            step.elapsed,
        );
        report.mail = ctx.mail_stats(step.name);
        report.notes = ctx.take_notes(step.name);
        steps.push(report);
        messages.extend(step.messages);
    }
    let limits = ctx.mail_limits();
    let render = ctx.mail_render();
    let mut stats = MailStats::default();
    let user: Option<Content> = ctx.message().map(|m| {
        if render.is_plain() {
            return user_turn(m, limits);
        }
        // Stripped as stored when `ThreadHistory` read it; else steps 2 and 3 alone.
        let text = match ctx.take_current_strip() {
            Some(strip) => render.render_body(m, &m.readable(), Strip::Stored(&strip), &mut stats),
            None => render.render(m, &mut PriorBodies::new(), &mut stats),
        };
        user_turn_with(m, text, limits)
    });
    if let (Some(content), Some(m)) = (&user, ctx.message()) {
        let turn = [message(Role::User, content.clone())];
        let source = Source::message(&m.message_id);
        sources.push(source.clone());
        let mut report = StepReport::of(TRAILING_USER_TURN, 0, &turn, vec![source], Duration::ZERO);
        report.mail = stats;
        steps.push(report);
    }
    let mut request = build_request(user, ctx.persona().tools.clone(), messages)?;
    request.sources = sources;
    let conversation = match ctx.trigger() {
        Trigger::Message(m) => Conversation::Thread(m.thread_id),
        Trigger::Responsibility(r) => Conversation::Responsibility(&r.name),
    };
    request.cache = CacheHints {
        history_end,
        key: Some(cache_key(&ctx.persona().name, conversation)),
        hour: false,
    };
    Ok(Assembled {
        request,
        steps,
        elapsed,
        tokenizer: ctx.tokenizer(),
    })
}
