//! `ThreadSummary`: the running summary of the inbound message's thread.

use crate::context::Context;
use crate::db::read::summary;
use crate::error::Result;
use crate::message::{Message, Role, message};
use crate::resolver::{Resolved, Resolver};
use crate::source::Source;
use crate::template::Template;
use super::{BuiltinResolver, Given, GivenOptions, Refused};

/// The template of a `ThreadSummary` that sets none.
pub(crate) const DEFAULT_SUMMARY_TEMPLATE: &str = protege_schema::SUMMARY_TEMPLATE;

/// Contributes the newest summary of the current thread whose through-message is prior to
/// the current message, rendered by its template (variable `summary`, besides the usual
/// ones), trimmed; nothing when there is none, when the template renders blank, in a
/// scheduled run or without a database. Summaries are written by the application
/// (`protege db summary`, `POST /v1/summaries`, `Engine::store_summary`).
#[derive(Debug, Clone)]
pub struct ThreadSummary {
    /// The compiled template, or the error of a source that did not compile (reported when
    /// the chain runs).
    template: Result<Template>,
    role: Role,
}

impl Default for ThreadSummary {
    fn default() -> Self {
        Self::new()
    }
}

impl ThreadSummary {
    /// The default template and role `system`.
    pub fn new() -> Self {
        Self {
            template: Template::compile("ThreadSummary.template", DEFAULT_SUMMARY_TEMPLATE),
            role: Role::System,
        }
    }

    /// Renders the summary with a compiled `template`.
    pub fn template(mut self, template: Template) -> Self {
        self.template = Ok(template);
        self
    }

    /// Compiles `source` as the template; a syntax error is returned.
    pub fn try_template_str(self, source: &str) -> Result<Self> {
        Ok(self.template(Template::compile("ThreadSummary.template", source)?))
    }

    /// Compiles `source` as the template; a syntax error is reported when the chain runs
    /// (the `resolvers!` macro checks literal templates at compile time).
    pub fn template_str(mut self, source: &str) -> Self {
        self.template = Template::compile("ThreadSummary.template", source);
        self
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }
}

impl Resolver for ThreadSummary {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        Ok(self.summarise(ctx).await?.map(|(m, _)| m))
    }

    async fn resolve_sourced(&self, ctx: &Context) -> Result<Resolved> {
        Ok(match self.summarise(ctx).await? {
            Some((m, id)) => Resolved::new(vec![m]).with_sources(vec![Source::Summary { id }]),
            None => Resolved::none(),
        })
    }

    fn name(&self) -> &str {
        "ThreadSummary"
    }
}

impl ThreadSummary {
    /// The summary's message (`None` without a summary, or when the template renders
    /// blank) and the summary's row id.
    async fn summarise(&self, ctx: &Context) -> Result<Option<(Message, i64)>> {
        let (Some(current), Some(db)) = (ctx.message(), ctx.db()) else {
            return Ok(None);
        };
        let Some((id, content)) = summary::latest(db, current).await? else {
            return Ok(None);
        };
        let vars = minijinja::value::merge_maps([
            minijinja::context! { summary => content },
            ctx.template_vars().clone(),
        ]);
        let template = match &self.template {
            Ok(t) => t,
            Err(e) => return Err(e.clone()),
        };
        let text = template.render_in(ctx, &vars)?;
        let text = text.trim();
        Ok((!text.is_empty()).then(|| (message(self.role, text), id)))
    }
}

impl BuiltinResolver for ThreadSummary {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::THREAD_SUMMARY;

    fn from_given(given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let mut summary = ThreadSummary::new();
        for (name, value) in given {
            summary = match (name, value) {
                ("template", Given::Template(t)) => summary.template(t),
                ("role", Given::Role(role)) => summary.role(role),
                _ => summary,
            };
        }
        Ok(Some(summary))
    }
}
