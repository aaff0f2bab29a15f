//! `OpenThreads`: the persona's threads waiting for an answer, for digests.

use std::time::Duration;

use crate::context::Context;
use crate::db::read::open_threads::{self, Asked, OpenThread};
use crate::error::Result;
use crate::mail::address_key;
use crate::message::{Message, Role, message};
use crate::resolver::{Resolved, Resolver};
use crate::source::Source;
use crate::template::Template;
use super::{BuiltinResolver, Given, GivenOptions, Refused};

/// The template of an `OpenThreads` that sets none.
pub(crate) const DEFAULT_OPEN_THREADS_TEMPLATE: &str = protege_schema::OPEN_THREADS_TEMPLATE;

/// Contributes the persona's threads waiting for an answer: one message (role `system` by
/// default) with one line per thread, longest waiting first, each rendered by the template
/// (variable `thread`: `id`, `subject`, `messages`, `since`, `from`) and trimmed, joined by
/// line breaks. By default a line reads `- SUBJECT (N messages, waiting since DATE, from
/// ADDRESS, thread ID)`, DATE as a rendered message's `Date:` header
/// (`Mon, 5 Jan 2026 10:00:00 +0000`).
///
/// A thread is the persona's when one of its `addresses` appears in the From, To or Cc of
/// one of its messages; it waits when its newest message is inbound: its inbound messages
/// that no sent reply follows are waiting, `since` is when the first of them was sent and
/// `from` the bare address of the last one's sender. A thread is listed when that last
/// waiting message was sent within `within` (default 7 days) before the run's clock; the
/// `limit` longest waiting (default 20) are. Only messages sent by the run's clock count,
/// and a reply that waits for approval, failed or was rejected answers nothing. Subjects
/// and addresses are shown on one line. Nothing without a database, for a persona without
/// addresses, or when no thread waits. One statement, whatever the number of threads.
#[derive(Debug, Clone)]
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct OpenThreads {
    within: Duration,
    limit: u64,
    template: Result<Template>,
    role: Role,
}

impl Default for OpenThreads {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenThreads {
    /// The defaults: threads of the last 7 days, at most 20, the default template, role
    /// `system`.
    pub fn new() -> Self {
        Self {
            within: protege_schema::parse_duration(protege_schema::OPEN_THREADS_WITHIN)
                .unwrap_or(Duration::from_secs(7 * 86_400)),
            limit: protege_schema::OPEN_THREADS_LIMIT,
            template: Template::compile("OpenThreads.template", DEFAULT_OPEN_THREADS_TEMPLATE),
            role: Role::System,
        }
    }

    /// Leaves out the threads whose newest message is older than `within` before the run's
    /// clock (default 7 days).
    pub fn within(mut self, within: Duration) -> Self {
        self.within = within;
        self
    }

    /// The most threads listed (default 20; 0 lists none).
    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = limit;
        self
    }

    /// Renders each thread with a compiled `template`.
    pub fn template(mut self, template: Template) -> Self {
        self.template = Ok(template);
        self
    }

    /// Compiles `source` as the template; a syntax error is returned.
    pub fn try_template_str(self, source: &str) -> Result<Self> {
        Ok(self.template(Template::compile("OpenThreads.template", source)?))
    }

    /// Compiles `source` as the template; a syntax error is reported when the chain runs
    /// (the `resolvers!` macro checks literal templates at compile time).
    pub fn template_str(mut self, source: &str) -> Self {
        self.template = Template::compile("OpenThreads.template", source);
        self
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The line of one open thread; `None` when it renders blank.
    fn render_thread(
        &self,
        ctx: &Context,
        template: &Template,
        thread: &OpenThread,
    ) -> Result<Option<String>> {
        let since = protege_mail::header_date(&thread.since).to_string();
        let vars = minijinja::value::merge_maps([
            minijinja::context! {
                thread => minijinja::context! {
                    id => thread.id,
                    subject => crate::mail::one_line(&thread.subject).into_owned(),
                    messages => thread.messages,
                    since => since,
                    from => address_key(&thread.from),
                },
            },
            ctx.template_vars().clone(),
        ]);
        let text = template.render_in(ctx, &vars)?;
        let text = text.trim();
        Ok((!text.is_empty()).then(|| text.to_owned()))
    }

    /// The message of the open threads and its source: the newest waiting message of each
    /// thread listed.
    async fn load(&self, ctx: &Context) -> Result<Option<(Message, Source)>> {
        let Some(db) = ctx.db() else {
            return Ok(None);
        };
        let persona: Vec<String> = ctx
            .persona()
            .addresses
            .iter()
            .map(|a| address_key(a))
            .filter(|a| !a.is_empty())
            .collect();
        let template = match &self.template {
            Ok(t) => t,
            Err(e) => return Err(e.clone()),
        };
        let now = ctx.now();
        let within = chrono::Duration::from_std(self.within).unwrap_or(chrono::Duration::MAX);
        let asked = Asked {
            persona: &persona,
            since: now
                .checked_sub_signed(within)
                .unwrap_or(chrono::DateTime::UNIX_EPOCH),
            now,
            limit: self.limit,
        };
        let threads = open_threads::read(db, &asked).await?;
        let mut lines = Vec::with_capacity(threads.len());
        let mut shown = Vec::with_capacity(threads.len());
        for thread in &threads {
            if let Some(line) = self.render_thread(ctx, template, thread)? {
                lines.push(line);
                shown.push(thread.message_id.clone());
            }
        }
        if lines.is_empty() {
            return Ok(None);
        }
        let source = Source::Messages {
            message_ids: shown,
            summary_ids: Vec::new(),
        };
        Ok(Some((message(self.role, lines.join("\n")), source)))
    }
}

impl Resolver for OpenThreads {
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
        "OpenThreads"
    }
}

impl BuiltinResolver for OpenThreads {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::OPEN_THREADS;

    fn from_given(given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let mut open = OpenThreads::new();
        for (name, value) in given {
            open = match (name, value) {
                ("within", Given::Duration(d)) => open.within(d),
                ("limit", Given::Count(n)) => open.limit(n),
                ("template", Given::Template(t)) => open.template(t),
                ("role", Given::Role(role)) => open.role(role),
                _ => open,
            };
        }
        Ok(Some(open))
    }
}
