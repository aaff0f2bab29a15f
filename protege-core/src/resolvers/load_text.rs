//! `LoadText`: a rendered template or the output of a Rust closure.

use std::sync::Arc;

use crate::context::Context;
use crate::error::Result;
use crate::message::{Message, Role, message};
use crate::resolver::Resolver;
use crate::template::Template;
use super::{BuiltinResolver, Given, GivenOptions, Refused};

type TextFn = dyn Fn(&Context) -> Result<String> + Send + Sync;

enum Source {
    Template(Template),
    Closure(Arc<TextFn>),
    /// A template that failed to compile: the error is reported when the chain runs.
    Broken(crate::Error),
}

/// Contributes a rendered template (or a closure's text), trimmed; nothing when blank.
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct LoadText {
    source: Source,
    role: Role,
}

impl std::fmt::Debug for LoadText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match &self.source {
            Source::Template(t) => t.name().to_owned(),
            Source::Closure(_) => "closure".to_owned(),
            Source::Broken(e) => format!("broken: {e}"),
        };
        f.debug_struct("LoadText")
            .field("source", &what)
            .field("role", &self.role)
            .finish()
    }
}

impl LoadText {
    /// From a compiled template.
    pub fn new(template: Template) -> Self {
        Self {
            source: Source::Template(template),
            role: Role::System,
        }
    }

    /// Compiles `source` as a template named `LoadText`; a syntax error is returned.
    pub fn try_template(source: &str) -> Result<Self> {
        Template::compile("LoadText", source).map(Self::new)
    }

    /// Compiles `source` as a template; a syntax error is reported when the chain runs
    /// (the `resolvers!` macro checks literal templates at compile time).
    pub fn template(source: &str) -> Self {
        match Self::try_template(source) {
            Ok(t) => t,
            Err(e) => Self {
                source: Source::Broken(e),
                role: Role::System,
            },
        }
    }

    /// From a closure computing the text from the context.
    pub fn from_fn<F>(f: F) -> Self
    where
        F: Fn(&Context) -> Result<String> + Send + Sync + 'static,
    {
        Self {
            source: Source::Closure(Arc::new(f)),
            role: Role::System,
        }
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    fn text(&self, ctx: &Context) -> Result<String> {
        match &self.source {
            Source::Template(t) => t.render_in(ctx, ctx.template_vars()),
            Source::Closure(f) => f(ctx),
            Source::Broken(e) => Err(e.clone()),
        }
    }
}

impl Resolver for LoadText {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        let text = self.text(ctx)?;
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        let text = if trimmed.len() == text.len() {
            text
        } else {
            trimmed.to_owned()
        };
        Ok(Some(message(self.role, text)))
    }

    fn name(&self) -> &str {
        "LoadText"
    }
}

impl BuiltinResolver for LoadText {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::LOAD_TEXT;

    fn from_given(given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let mut template = None;
        let mut role = None;
        for (name, value) in given {
            match (name, value) {
                ("template", Given::Template(t)) => template = Some(t),
                ("role", Given::Role(r)) => role = Some(r),
                _ => {}
            }
        }
        let Some(template) = template else {
            return Ok(None);
        };
        let text = LoadText::new(template);
        Ok(Some(match role {
            Some(role) => text.role(role),
            None => text,
        }))
    }
}
