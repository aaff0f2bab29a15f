//! `CorrespondentHistory`: the sender's earlier threads with the persona.

use std::collections::HashMap;

use crate::context::{Context, MailStats, Quoted};
use crate::db::read::correspondents::{self, Correspondent, EarlierThread};
use crate::db::strips::{self, StoredStrip};
use crate::error::Result;
use crate::mail::{Direction, MailMessage, PriorBodies, address_key};
use crate::message::{Message, Role, message};
use crate::render::{MailRender, Strip};
use crate::resolver::{Resolved, Resolver};
use crate::source::Source;
use crate::template::Template;
use super::{BuiltinResolver, Given, GivenOptions, Refused};

/// The template of a `CorrespondentHistory` that sets none.
pub(crate) const DEFAULT_CORRESPONDENT_TEMPLATE: &str = protege_schema::CORRESPONDENT_TEMPLATE;

/// Contributes what the sender of the inbound message wrote with this persona before: one
/// message (role `system` by default) holding the sender's earlier threads with the
/// persona, oldest first, each rendered by the template (variable `thread`: `subject`,
/// `summary`, `messages`) and trimmed, joined by a blank line.
///
/// The earlier threads are the threads other than the current one whose newest message is
/// sent at or before the inbound message, in which one of the persona's `addresses`
/// appears in a From, To or Cc and the sender is a participant (its From, or the To or Cc
/// of an outbound message: the To and Cc of an inbound message were chosen by its sender);
/// the `threads` most recent of them by their newest message (default 3). Each shows its
/// newest summary when it has one, else its last `messages` messages (default 4), each
/// rendered as the history renders it, with the run's `[mail]` rules (`quoted` may be set
/// for this resolver alone). Another persona's threads and another sender's never appear.
/// Nothing in a scheduled run, without a database, for an outbound trigger, for a persona
/// without addresses, or for a sender that is one of the persona's addresses (a forgery
/// or a loop). At most four statements, whatever the number of threads and messages.
#[derive(Debug, Clone)]
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct CorrespondentHistory {
    threads: u64,
    messages: u64,
    template: Result<Template>,
    role: Role,
    quoted: Option<Quoted>,
}

impl Default for CorrespondentHistory {
    fn default() -> Self {
        Self::new()
    }
}

impl CorrespondentHistory {
    /// The defaults: 3 threads, 4 messages each, the default template, role `system`, the
    /// persona's `[mail] quoted`.
    pub fn new() -> Self {
        Self {
            threads: protege_schema::CORRESPONDENT_THREADS,
            messages: protege_schema::CORRESPONDENT_MESSAGES,
            template: Template::compile(
                "CorrespondentHistory.template",
                DEFAULT_CORRESPONDENT_TEMPLATE,
            ),
            role: Role::System,
            quoted: None,
        }
    }

    /// The most earlier threads shown (default 3; 0 shows nothing).
    pub fn threads(mut self, threads: u64) -> Self {
        self.threads = threads;
        self
    }

    /// The last messages shown of a thread without a summary (default 4).
    pub fn messages(mut self, messages: u64) -> Self {
        self.messages = messages;
        self
    }

    /// Renders each thread with a compiled `template`.
    pub fn template(mut self, template: Template) -> Self {
        self.template = Ok(template);
        self
    }

    /// Compiles `source` as the template; a syntax error is returned.
    pub fn try_template_str(self, source: &str) -> Result<Self> {
        Ok(self.template(Template::compile("CorrespondentHistory.template", source)?))
    }

    /// Compiles `source` as the template; a syntax error is reported when the chain runs
    /// (the `resolvers!` macro checks literal templates at compile time).
    pub fn template_str(mut self, source: &str) -> Self {
        self.template = Template::compile("CorrespondentHistory.template", source);
        self
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// What the bodies show of the text they quote, for this resolver (default: the
    /// persona's `[mail] quoted`).
    pub fn quoted(mut self, quoted: Quoted) -> Self {
        self.quoted = Some(quoted);
        self
    }

    /// The text of one earlier thread, `None` when it renders blank or has neither a
    /// summary nor a message to show; its bodies rendered by `render`, stripped as `strips`
    /// says.
    fn render_thread(
        &self,
        ctx: &Context,
        template: &Template,
        thread: EarlierThread,
        (render, strips): (&MailRender, &HashMap<i64, StoredStrip>),
        stats: &mut MailStats,
        shown: &mut (Vec<String>, Vec<i64>),
    ) -> Result<Option<String>> {
        let before = (shown.0.len(), shown.1.len());
        let messages: Vec<String> = thread
            .messages
            .iter()
            .filter_map(|m| {
                let body = m.readable();
                (!body.is_empty() || !m.attachments.is_empty()).then(|| {
                    shown.0.push(m.message_id.clone());
                    let mut no_prior = PriorBodies::new();
                    let strip = match strips.get(&m.id) {
                        Some(strip) => Strip::Stored(strip),
                        None => Strip::Walk(&mut no_prior),
                    };
                    render.render_body(m, &body, strip, stats)
                })
            })
            .collect();
        if thread.summary.is_none() && messages.is_empty() {
            return Ok(None);
        }
        shown.1.extend(thread.summary_id);
        let vars = minijinja::value::merge_maps([
            minijinja::context! {
                thread => minijinja::context! {
                    subject => crate::mail::one_line(&thread.subject).into_owned(),
                    summary => thread.summary,
                    messages => messages,
                },
            },
            ctx.template_vars().clone(),
        ]);
        let text = template.render_in(ctx, &vars)?;
        let text = text.trim();
        if text.is_empty() {
            shown.0.truncate(before.0);
            shown.1.truncate(before.1);
            return Ok(None);
        }
        Ok(Some(text.to_owned()))
    }
}

impl Resolver for CorrespondentHistory {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        Ok(self.load(ctx).await?.map(|(m, _)| m))
    }

    async fn resolve_sourced(&self, ctx: &Context) -> Result<Resolved> {
        Ok(match self.load(ctx).await? {
            Some((m, source)) => Resolved::new(vec![m]).with_sources(vec![source]),
            None => Resolved::none(),
        })
    }

    fn name(&self) -> &str {
        "CorrespondentHistory"
    }
}

impl CorrespondentHistory {
    /// The message of the sender's earlier threads and its source: the messages and
    /// summaries rendered into it.
    async fn load(&self, ctx: &Context) -> Result<Option<(Message, Source)>> {
        let (Some(current), Some(db)) = (ctx.message(), ctx.db()) else {
            return Ok(None);
        };
        if current.direction != Direction::Inbound {
            return Ok(None);
        }
        let persona: Vec<String> = ctx
            .persona()
            .addresses
            .iter()
            .map(|a| address_key(a))
            .filter(|a| !a.is_empty())
            .collect();
        let sender = address_key(&current.from);
        if sender.is_empty() || persona.is_empty() || persona.contains(&sender) {
            return Ok(None);
        }
        let template = match &self.template {
            Ok(t) => t,
            Err(e) => return Err(e.clone()),
        };
        let who = Correspondent {
            current,
            sender,
            persona,
        };
        let threads = correspondents::read(db, &who, self.threads, self.messages).await?;
        let mut render = ctx.mail_render();
        if let Some(quoted) = self.quoted {
            render.quoted = quoted;
        }
        // Each body as stored stripped: against the earlier messages of its thread.
        let strips = if render.quoted == Quoted::Strip {
            let messages: Vec<&MailMessage> =
                threads.iter().flat_map(|t| t.messages.iter()).collect();
            strips::of_messages(db, &messages).await?
        } else {
            HashMap::new()
        };
        let mut stats = MailStats::default();
        let mut parts = Vec::with_capacity(threads.len());
        let mut shown = (Vec::new(), Vec::new());
        for thread in threads {
            if let Some(text) = self.render_thread(
                ctx,
                template,
                thread,
                (&render, &strips),
                &mut stats,
                &mut shown,
            )? {
                parts.push(text);
            }
        }
        ctx.note_mail(self.name(), stats, None);
        if parts.is_empty() {
            return Ok(None);
        }
        let source = Source::Messages {
            message_ids: shown.0,
            summary_ids: shown.1,
        };
        Ok(Some((message(self.role, parts.join("\n\n")), source)))
    }
}

impl BuiltinResolver for CorrespondentHistory {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::CORRESPONDENT_HISTORY;

    fn from_given(given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let mut history = CorrespondentHistory::new();
        for (name, value) in given {
            history = match (name, value) {
                ("threads", Given::Count(n)) => history.threads(n),
                ("messages", Given::Count(n)) => history.messages(n),
                ("template", Given::Template(t)) => history.template(t),
                ("role", Given::Role(role)) => history.role(role),
                ("quoted", Given::Quoted(q)) => history.quoted(q),
                _ => history,
            };
        }
        Ok(Some(history))
    }
}
