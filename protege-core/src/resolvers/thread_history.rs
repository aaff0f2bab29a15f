//! `ThreadHistory`: the prior turns of the inbound message's thread and their tool rounds.

use std::collections::{HashMap, HashSet};

use crate::context::{Context, MailStats, Quoted};
use crate::db::read::history::{self, History, PriorTurn, StoredToolUse};
use crate::db::strips::{self, StoredStrip};
use crate::error::{Error, ErrorKind, Result};
use crate::mail::{Direction, MailMessage, PriorBodies};
use crate::message::{Message, Role, ToolCall, message};
use crate::render::{MailRender, Strip};
use crate::resolver::{Resolved, Resolver};
use crate::source::Source;
use crate::tokens::Tokenizer;
use super::{BuiltinResolver, Given, GivenOptions, Refused};

/// Contributes the prior messages of the thread, oldest first, each followed by its tool
/// rounds.
///
/// In a reply run with a database, it reads (in three statements whatever the thread
/// length, four with `quoted = "strip"`) the `limit` most recent messages of the inbound
/// message's thread sent at or before it (or, with [`Window::Stable`], a window that moves
/// in jumps of `step`), and renders each as a `user` (inbound) or `assistant` (outbound)
/// turn followed by its tool rounds. A scheduled run or a context without a database gives
/// nothing. A message with neither body nor attachments is skipped (its tool rounds stay);
/// a tool result longer than `result_limit` characters is cut and marked
/// `[truncated: N more characters]`; a call without a recorded result gets
/// `{"error":"no result recorded"}`; a successful call of the built-in `read_attachment`
/// gets the image or PDF it returned back after its text, rebuilt from the attachment's
/// stored bytes (one more statement when the window has such calls); with `max_tokens`,
/// whole turns are dropped oldest first until the estimate fits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct ThreadHistory {
    limit: Option<u64>,
    window: Window,
    step: Option<u64>,
    after_summary: bool,
    include_tool_calls: bool,
    result_limit: usize,
    max_tokens: Option<usize>,
    quoted: Option<Quoted>,
}

/// How a limited history window moves as a thread grows (`window`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Window {
    /// The `limit` most recent prior messages: the window's first message moves with every
    /// new message, so consecutive requests share no history prefix.
    #[default]
    Sliding,
    /// Between `limit` and `limit + step - 1` prior messages: the window starts at the prior
    /// message of index `floor((count - limit) / step) * step` (oldest first; 0 while
    /// `count <= limit`), so it moves only in jumps of `step` and consecutive requests
    /// share their history prefix, which providers serve from their prompt cache.
    Stable,
}

impl Window {
    /// The lowercase name used in TOML and the macro.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Sliding => "sliding",
            Window::Stable => "stable",
        }
    }

    /// Parses the lowercase name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Window> {
        match name {
            "sliding" => Some(Window::Sliding),
            "stable" => Some(Window::Stable),
            _ => None,
        }
    }
}

impl Default for ThreadHistory {
    fn default() -> Self {
        Self {
            limit: Some(protege_schema::HISTORY_LIMIT),
            window: Window::Sliding,
            step: None,
            after_summary: false,
            include_tool_calls: true,
            result_limit: protege_schema::HISTORY_RESULT_LIMIT,
            max_tokens: None,
            quoted: None,
        }
    }
}

impl ThreadHistory {
    /// The defaults: `limit` 50, tool calls included, `result_limit` 4000, no token budget,
    /// the persona's `[mail] quoted`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of most recent prior messages; `None` means all, `Some(0)` nothing.
    pub fn limit(mut self, limit: impl Into<Option<u64>>) -> Self {
        self.limit = limit.into();
        self
    }

    /// How the window moves as the thread grows (default [`Window::Sliding`]).
    pub fn window(mut self, window: Window) -> Self {
        self.window = window;
        self
    }

    /// The jump of a [`Window::Stable`] window, in messages (default `max(1, limit / 2)`;
    /// `0` counts as 1). A sliding window ignores it.
    pub fn step(mut self, step: u64) -> Self {
        self.step = Some(step);
        self
    }

    /// Whether the window only takes prior messages sent after the through-message of the
    /// thread's applicable summary (see [`ThreadSummary`](crate::ThreadSummary)); default
    /// false. Without an applicable summary it changes nothing.
    pub fn after_summary(mut self, yes: bool) -> Self {
        self.after_summary = yes;
        self
    }

    /// The step a stable window of `limit` messages uses.
    fn effective_step(&self) -> Option<u64> {
        match (self.window, self.limit) {
            (Window::Stable, Some(n)) => Some(self.step.unwrap_or(n / 2).max(1)),
            _ => None,
        }
    }

    /// Whether tool rounds are replayed (default true).
    pub fn include_tool_calls(mut self, yes: bool) -> Self {
        self.include_tool_calls = yes;
        self
    }

    /// The characters of a tool result kept before the truncation marker (default 4000).
    pub fn result_limit(mut self, chars: usize) -> Self {
        self.result_limit = chars;
        self
    }

    /// An optional token budget: whole turns are dropped oldest first until it fits,
    /// counted with the run's tokenizer ([`Context::tokenizer`]).
    pub fn max_tokens(mut self, tokens: impl Into<Option<usize>>) -> Self {
        self.max_tokens = tokens.into();
        self
    }

    /// What the history's bodies show of the text they quote, for this resolver (default:
    /// the persona's `[mail] quoted`). The trailing user turn follows the persona's.
    pub fn quoted(mut self, quoted: Quoted) -> Self {
        self.quoted = Some(quoted);
        self
    }
}

impl ThreadHistory {
    /// Renders the turns read from the database: one list of messages per turn (a message
    /// and its tool rounds), oldest first; each message rendered by `render` (the run's
    /// `[mail]` rules), with `quoted = "strip"` its body as its turn's stripped body says.
    fn render(
        &self,
        turns: Vec<PriorTurn>,
        render: &MailRender,
        stats: &mut MailStats,
    ) -> Result<Vec<Turn>> {
        let mut out = Vec::with_capacity(turns.len());
        // A body without a stripped one (none is missing after `fill_strips`) gets steps
        // 2 and 3 alone.
        let mut no_prior = PriorBodies::new();
        for turn in turns {
            let mut messages = Vec::with_capacity(1);
            let mut sources = Vec::with_capacity(1);
            let m = &turn.message;
            let body = m.readable();
            if !body.is_empty() || !m.attachments.is_empty() {
                let role = match m.direction {
                    Direction::Inbound => Role::User,
                    Direction::Outbound => Role::Assistant,
                };
                let strip = match &turn.strip {
                    Some(strip) => Strip::Stored(strip),
                    None => Strip::Walk(&mut no_prior),
                };
                messages.push(message(role, render.render_body(m, &body, strip, stats)));
                sources.push(Source::message(&m.message_id));
            }
            if self.include_tool_calls && !turn.tool_uses.is_empty() {
                self.push_rounds(&m.message_id, turn.tool_uses, &mut messages, &mut sources)?;
            }
            if !messages.is_empty() {
                out.push((messages, sources));
            }
        }
        Ok(out)
    }

    /// Appends the tool rounds of one message: one assistant turn per round, then its results.
    fn push_rounds(
        &self,
        message_id: &str,
        mut uses: Vec<StoredToolUse>,
        out: &mut Vec<Message>,
        sources: &mut Vec<Source>,
    ) -> Result<()> {
        uses.sort_by(|a, b| {
            (a.run_id.as_str(), a.turn_index, a.position, a.id).cmp(&(
                b.run_id.as_str(),
                b.turn_index,
                b.position,
                b.id,
            ))
        });
        let mut start = 0;
        while start < uses.len() {
            let key = (&uses[start].run_id, uses[start].turn_index);
            let end = uses[start..]
                .iter()
                .position(|u| (&u.run_id, u.turn_index) != key)
                .map_or(uses.len(), |n| start + n);
            let round = &uses[start..end];
            let mut calls = Vec::with_capacity(round.len());
            for u in round {
                let input: serde_json::Value = match serde_json::from_str(&u.input) {
                    Ok(v @ serde_json::Value::Object(_)) => v,
                    _ => {
                        return Err(Error::new(
                            ErrorKind::Database,
                            format!(
                                "tool use `{}` of message `{message_id}` has an input that is not a JSON object",
                                u.tool_call_id
                            ),
                        ));
                    }
                };
                calls.push(ToolCall::new(&u.tool_call_id, &u.name, input));
            }
            out.push(message(Role::Assistant, "").with_tool_calls(calls));
            sources.push(tool_use_source(&round[0]));
            for u in round {
                let content = match &u.result {
                    Some(result) => truncate(result, self.result_limit),
                    None => MISSING_RESULT.to_owned(),
                };
                out.push(
                    message(Role::Tool, content)
                        .with_tool_call_id(&u.tool_call_id)
                        .with_is_error(u.is_error),
                );
                sources.push(tool_use_source(u));
            }
            start = end;
        }
        Ok(())
    }
}

/// One turn of the history: a message and its tool rounds, with their sources.
type Turn = (Vec<Message>, Vec<Source>);

/// The source of a replayed tool call or result.
fn tool_use_source(u: &StoredToolUse) -> Source {
    Source::ToolUse {
        run_id: u.run_id.clone(),
        tool_call_id: u.tool_call_id.clone(),
    }
}

/// The content of a tool message whose call has no recorded result.
const MISSING_RESULT: &str = r#"{"error":"no result recorded"}"#;

/// `text` cut to its first `limit` characters (Unicode scalar values) followed by
/// `\n[truncated: N more characters]`; unchanged when it is not longer than `limit`.
fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}\n[truncated: {rest} more characters]", &text[..cut])
        }
    }
}

/// Drops whole turns, oldest first, until their tokens fit `budget`: keeps the longest
/// run of newest turns that fits, counting from the newest so that turns which cannot fit
/// are never counted.
fn fit_budget(turns: &mut Vec<Turn>, budget: usize, tokenizer: Tokenizer) {
    let mut total = 0;
    let mut keep = 0;
    for turn in turns.iter().rev() {
        total += turn
            .0
            .iter()
            .map(|m| tokenizer.count_message(m))
            .sum::<usize>();
        if total > budget {
            break;
        }
        keep += 1;
    }
    let drop = turns.len() - keep;
    turns.drain(..drop);
}

impl Resolver for ThreadHistory {
    type Output = Vec<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Vec<Message>> {
        Ok(self
            .turns(ctx)
            .await?
            .into_iter()
            .flat_map(|t| t.0)
            .collect())
    }

    async fn resolve_sourced(&self, ctx: &Context) -> Result<Resolved> {
        let turns = self.turns(ctx).await?;
        let count = turns.iter().map(|t| t.0.len()).sum();
        let (mut messages, mut sources) = (Vec::with_capacity(count), Vec::with_capacity(count));
        for (m, s) in turns {
            messages.extend(m);
            sources.extend(s);
        }
        Ok(Resolved::new(messages).with_sources(sources))
    }

    fn name(&self) -> &str {
        "ThreadHistory"
    }
}

impl ThreadHistory {
    /// The rendered turns of the window, with their sources, after the token budget.
    async fn turns(&self, ctx: &Context) -> Result<Vec<Turn>> {
        let (Some(current), Some(db)) = (ctx.message(), ctx.db()) else {
            return Ok(Vec::new());
        };
        let mut render = ctx.mail_render();
        // The trailing user turn follows the persona's rule, the history its own.
        let strip_current = render.quoted == Quoted::Strip;
        if let Some(quoted) = self.quoted {
            render.quoted = quoted;
        }
        let strip_window = render.quoted == Quoted::Strip;
        let mut read = history::read(
            db,
            current,
            self.limit,
            self.effective_step(),
            self.after_summary,
            self.include_tool_calls,
            strip_window || strip_current,
        )
        .await?;
        if strip_window || strip_current {
            fill_strips(db, current, &mut read, strip_window, strip_current).await?;
        }
        let mut stats = MailStats::default();
        let mut turns = self.render(read.turns, &render, &mut stats)?;
        if self.include_tool_calls {
            attach_read_parts(db, current.id, &mut turns).await?;
        }
        ctx.note_mail(
            self.name(),
            stats,
            read.current_strip.filter(|_| strip_current),
        );
        if let Some(budget) = self.max_tokens {
            fit_budget(&mut turns, budget, ctx.tokenizer());
        }
        Ok(turns)
    }
}

/// Puts back the image or document each replayed call of the built-in `read_attachment`
/// returned after its result's text, rebuilt from the attachment's stored bytes (a result
/// stores only the text): one statement for the thread of `message`, none when no replayed
/// call read an attachment. An attachment erased or gone since leaves the text alone.
async fn attach_read_parts(
    db: &sea_orm::DatabaseConnection,
    message: i64,
    turns: &mut [Turn],
) -> Result<()> {
    // The successful results, each with its call, and where each result stands.
    let mut calls = Vec::new();
    let mut at = HashMap::new();
    for (t, (messages, _)) in turns.iter().enumerate() {
        let mut round: Vec<&ToolCall> = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            match m.role {
                Role::Assistant => round = m.tool_calls.iter().collect(),
                Role::Tool if !m.is_error && m.content.text() != MISSING_RESULT => {
                    let id = m.tool_call_id.as_deref().unwrap_or_default();
                    if let Some(call) = round.iter().find(|c| c.id == id) {
                        calls.push((call.id.as_str(), call.name.as_str(), &call.input));
                        at.insert(call.id.clone(), (t, i));
                    }
                }
                _ => {}
            }
        }
    }
    let parts = crate::db::read_attachment_parts(db, message, calls).await?;
    for (call, part) in parts {
        if let Some(&(t, i)) = at.get(&call) {
            let m = &mut turns[t].0[i];
            m.content = std::mem::take(&mut m.content).and_parts(vec![part]);
        }
    }
    Ok(())
}

/// Strips, as a writer would have, the bodies the read found no stored row for (written by
/// another program, or by an earlier version of the rules) or a row made from another body:
/// of the window's messages when `window`, of `current` when `own`. One more statement,
/// which reads the thread up to `current`; none when every row was there.
async fn fill_strips(
    db: &sea_orm::DatabaseConnection,
    current: &MailMessage,
    read: &mut History,
    window: bool,
    own: bool,
) -> Result<()> {
    let stale =
        |strip: &Option<StoredStrip>, body: &str| !strip.as_ref().is_some_and(|s| s.is_of(body));
    let mut missing = HashSet::new();
    if window {
        for turn in &read.turns {
            let body = turn.message.readable();
            if !body.is_empty() && stale(&turn.strip, &body) {
                missing.insert(turn.message.id);
            }
        }
    }
    let own_body = current.readable();
    if own && !own_body.is_empty() && stale(&read.current_strip, &own_body) {
        missing.insert(current.id);
    }
    if missing.is_empty() {
        return Ok(());
    }
    let mut made =
        strips::derive(db, &[current.thread_id], Some(current.sent_at), &missing).await?;
    for turn in &mut read.turns {
        if let Some(strip) = made.remove(&turn.message.id) {
            turn.strip = Some(strip);
        }
    }
    if let Some(strip) = made.remove(&current.id) {
        read.current_strip = Some(strip);
    }
    Ok(())
}

impl BuiltinResolver for ThreadHistory {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::THREAD_HISTORY;

    /// A `step` needs a stable window; said only when `limit` and `window` themselves are
    /// fine, so a misspelt window is not reported twice.
    fn from_given(given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let limit_and_window_ok = !given.failed("limit") && !given.failed("window");
        let mut history = ThreadHistory::new();
        let mut step = None;
        for (name, value) in given {
            history = match (name, value) {
                ("limit", Given::CountOrAll(n)) => history.limit(n),
                ("window", Given::Window(w)) => history.window(w),
                ("step", Given::Step(n)) => {
                    step = Some(n);
                    history
                }
                ("after_summary", Given::Flag(b)) => history.after_summary(b),
                ("include_tool_calls", Given::Flag(b)) => history.include_tool_calls(b),
                ("result_limit", Given::Count(n)) => {
                    history.result_limit(usize::try_from(n).unwrap_or(usize::MAX))
                }
                ("max_tokens", Given::Count(n)) => {
                    history.max_tokens(usize::try_from(n).unwrap_or(usize::MAX))
                }
                ("quoted", Given::Quoted(q)) => history.quoted(q),
                _ => history,
            };
        }
        match step {
            Some(n) if history.window == Window::Stable => Ok(Some(history.step(n))),
            Some(_) if limit_and_window_ok => Err(Refused {
                option: "step",
                message: "`step` applies to a stable window: add `window = \"stable\"`".to_owned(),
            }),
            Some(_) => Ok(None),
            None => Ok(Some(history)),
        }
    }
}
