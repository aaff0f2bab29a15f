//! The `Resolver` trait, its output, and the boxed adapter for chains built at run time.

use std::future::Future;
use std::pin::Pin;

use crate::context::Context;
use crate::error::Result;
use crate::message::Message;
use crate::source::Source;

/// What a resolver contributes: zero, one or many messages, in order, and optionally
/// where each came from (§15).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    messages: Vec<Message>,
    sources: Option<Vec<Source>>,
}

impl Resolved {
    /// Nothing to contribute.
    pub fn none() -> Self {
        Self::default()
    }

    /// These messages, with no declared sources: each is reported as
    /// `{"kind":"text","resolver":NAME}`.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            sources: None,
        }
    }

    /// Declares the source of each message, in order. A chain reports a message without
    /// a declared source (the list is shorter) as text of the resolver, and ignores
    /// sources beyond the last message.
    pub fn with_sources(mut self, sources: Vec<Source>) -> Self {
        self.sources = Some(sources);
        self
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The declared sources, when there are any.
    pub fn sources(&self) -> Option<&[Source]> {
        self.sources.as_deref()
    }

    /// The messages, in order.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The messages and one source per message: the declared ones, the rest
    /// `{"kind":"text","resolver":resolver}`.
    pub fn into_parts(self, resolver: &str) -> (Vec<Message>, Vec<Source>) {
        let mut sources = self.sources.unwrap_or_default();
        sources.truncate(self.messages.len());
        while sources.len() < self.messages.len() {
            sources.push(Source::text(resolver));
        }
        (self.messages, sources)
    }
}

impl From<()> for Resolved {
    fn from(_: ()) -> Self {
        Self::none()
    }
}

impl From<Message> for Resolved {
    fn from(m: Message) -> Self {
        Self::new(vec![m])
    }
}

impl From<Option<Message>> for Resolved {
    fn from(m: Option<Message>) -> Self {
        Self::new(m.into_iter().collect())
    }
}

impl From<Vec<Message>> for Resolved {
    fn from(ms: Vec<Message>) -> Self {
        Self::new(ms)
    }
}

/// A step of a chain: looks at the read-only [`Context`] and contributes messages.
///
/// Implementors write `async fn resolve`; the future must be `Send` so chains can run on
/// a multi-threaded runtime.
///
/// ```
/// use protege::{message, Context, Message, Resolver, Result, Role};
///
/// struct Greeting;
///
/// impl Resolver for Greeting {
///     type Output = Option<Message>;
///     async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
///         Ok(Some(message(Role::System, format!("You are {}.", ctx.persona().name))))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a protege resolver",
    label = "this type does not implement `protege_core::Resolver`",
    note = "implement `protege_core::Resolver` for `{Self}` (an `async fn resolve(&self, ctx: &Context)`) to use it in a chain"
)]
pub trait Resolver: Send + Sync + 'static {
    /// What `resolve` returns: `()`, `Message`, `Option<Message>` or `Vec<Message>`.
    type Output: Into<Resolved> + Send;

    /// Contributes this resolver's messages for the run described by `ctx`.
    fn resolve(&self, ctx: &Context) -> impl Future<Output = Result<Self::Output>> + Send;

    /// [`resolve`](Self::resolve) with the source of each message, which is what chains
    /// call. The default keeps the sources an output of type [`Resolved`] declares (see
    /// [`Resolved::with_sources`]); without any, each message is reported as
    /// `{"kind":"text","resolver":NAME}`. The built-in resolvers report the rows, files and
    /// summaries they read.
    fn resolve_sourced(&self, ctx: &Context) -> impl Future<Output = Result<Resolved>> + Send {
        async move { self.resolve(ctx).await.map(Into::into) }
    }

    /// The name shown in errors and `--explain` (the short type name by default).
    fn name(&self) -> &str {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        base.rsplit("::").next().unwrap_or(base)
    }
}

/// A boxed future of a boxed resolver.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

trait DynResolver: Send + Sync {
    fn resolve_boxed<'a>(&'a self, ctx: &'a Context) -> BoxFuture<'a, Result<Resolved>>;
    fn dyn_name(&self) -> &str;
}

impl<R: Resolver> DynResolver for R {
    fn resolve_boxed<'a>(&'a self, ctx: &'a Context) -> BoxFuture<'a, Result<Resolved>> {
        Box::pin(self.resolve_sourced(ctx))
    }

    fn dyn_name(&self) -> &str {
        self.name()
    }
}

/// A type-erased resolver, for chains assembled at run time (TOML personas).
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct BoxResolver {
    inner: Box<dyn DynResolver>,
    name: Option<String>,
}

impl BoxResolver {
    /// Boxes `resolver`.
    pub fn new<R: Resolver>(resolver: R) -> Self {
        Self {
            inner: Box::new(resolver),
            name: None,
        }
    }

    /// Overrides the name shown in errors and `--explain` (e.g. the TOML `use` value).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

impl std::fmt::Debug for BoxResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Resolver::name(self))
    }
}

impl Resolver for BoxResolver {
    type Output = Resolved;

    async fn resolve(&self, ctx: &Context) -> Result<Resolved> {
        self.inner.resolve_boxed(ctx).await
    }

    fn name(&self) -> &str {
        self.name
            .as_deref()
            .unwrap_or_else(|| self.inner.dyn_name())
    }
}
