//! The `Resolver` trait, its output, and the boxed adapter for chains built at run time.

use std::future::Future;
use std::pin::Pin;

use crate::context::Context;
use crate::error::Result;
use crate::message::Message;

/// What a resolver contributes: zero, one or many messages, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved(pub Vec<Message>);

impl Resolved {
    /// Nothing to contribute.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// The messages, in order.
    pub fn into_messages(self) -> Vec<Message> {
        self.0
    }
}

impl From<()> for Resolved {
    fn from(_: ()) -> Self {
        Self::none()
    }
}

impl From<Message> for Resolved {
    fn from(m: Message) -> Self {
        Self(vec![m])
    }
}

impl From<Option<Message>> for Resolved {
    fn from(m: Option<Message>) -> Self {
        Self(m.into_iter().collect())
    }
}

impl From<Vec<Message>> for Resolved {
    fn from(ms: Vec<Message>) -> Self {
        Self(ms)
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
        Box::pin(async move { self.resolve(ctx).await.map(Into::into) })
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
