//! Chains: resolvers run (possibly concurrently) with output in declaration order.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::assemble::{Assembled, Step, finish};
use crate::context::Context;
use crate::error::Result;
use crate::message::{Message, Request};
use crate::resolver::{BoxResolver, Resolved, Resolver};

/// An ordered list of resolvers with one entry point, [`Chain::resolve`].
///
/// Implemented by [`StaticChain`] (built by the `resolvers!` macro, no boxing) and
/// [`DynChain`] (built from TOML, boxed resolvers). Both run their resolvers concurrently
/// and give the output in declaration order; the first error in declaration order is the
/// chain's error, naming the resolver and its 1-based position.
pub trait Chain: Send + Sync {
    /// Runs every resolver and returns each one's contribution, in declaration order.
    fn run<'a>(&'a self, ctx: &'a Context) -> impl Future<Output = Result<Vec<Step<'a>>>> + Send;

    /// The resolvers' names, in declaration order.
    fn names(&self) -> Vec<&str>;

    /// Runs every resolver and returns their messages concatenated in declaration order.
    fn resolve<'a>(
        &'a self,
        ctx: &'a Context,
    ) -> impl Future<Output = Result<Vec<Message>>> + Send {
        async move {
            let steps = self.run(ctx).await?;
            let total = steps.iter().map(|s| s.messages.len()).sum();
            let mut out = Vec::with_capacity(total);
            for step in steps {
                out.extend(step.messages);
            }
            Ok(out)
        }
    }

    /// Runs the chain and finishes the request: its messages, the user turn of a reply
    /// run (the inbound message with its attachments), the context persona's tools,
    /// checked with [`Request::validate`](crate::Request::validate).
    fn request<'a>(&'a self, ctx: &'a Context) -> impl Future<Output = Result<Request>> + Send {
        async move { Ok(assemble(self, ctx).await?.request) }
    }

    /// Like [`Chain::request`], with one report row per resolver (the `--explain` rows).
    fn assemble<'a>(&'a self, ctx: &'a Context) -> impl Future<Output = Result<Assembled>> + Send {
        assemble(self, ctx)
    }
}

/// Runs `chain` for `ctx` and finishes the request: the chain's messages, then the user
/// turn of a reply run (the inbound message's rendering, with its attachments as parts),
/// then the tools of the context's persona, checked with [`Request::validate`]. The
/// request's [`CacheHints`](crate::CacheHints) name the last message `ThreadHistory`
/// produced and the conversation's [`cache_key`](crate::cache_key). Token counts are left to [`Assembled::count_tokens`].
pub async fn assemble<C: Chain + ?Sized>(chain: &C, ctx: &Context) -> Result<Assembled> {
    let start = Instant::now();
    let run = chain.run(ctx).await?;
    let elapsed = start.elapsed();
    finish(run, elapsed, ctx)
}

async fn timed<R: Resolver + ?Sized>(r: &R, ctx: &Context) -> (Result<Resolved>, Duration) {
    let start = Instant::now();
    let out = r.resolve_sourced(ctx).await;
    (out, start.elapsed())
}

fn step<'a>(
    name: &'a str,
    position: usize,
    (out, elapsed): (Result<Resolved>, Duration),
) -> Result<Step<'a>> {
    match out {
        Ok(resolved) => {
            let (messages, sources) = resolved.into_parts(name);
            Ok(Step {
                name,
                position,
                messages,
                sources,
                elapsed,
            })
        }
        Err(e) => Err(e.in_resolver(name, position)),
    }
}

/// A chain of boxed resolvers assembled at run time.
#[derive(Default)]
#[must_use = "a chain does nothing until it is run with `.request(&ctx)` or `.resolve(&ctx)`"]
pub struct DynChain {
    resolvers: Vec<BoxResolver>,
}

impl DynChain {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a boxed resolver.
    pub fn push(&mut self, resolver: BoxResolver) {
        self.resolvers.push(resolver);
    }

    /// Appends any resolver, boxing it.
    pub fn with<R: Resolver>(mut self, resolver: R) -> Self {
        self.resolvers.push(BoxResolver::new(resolver));
        self
    }

    /// The number of resolvers.
    pub fn len(&self) -> usize {
        self.resolvers.len()
    }

    /// Whether the chain has no resolvers.
    pub fn is_empty(&self) -> bool {
        self.resolvers.is_empty()
    }
}

impl FromIterator<BoxResolver> for DynChain {
    fn from_iter<I: IntoIterator<Item = BoxResolver>>(iter: I) -> Self {
        Self {
            resolvers: iter.into_iter().collect(),
        }
    }
}

impl std::fmt::Debug for DynChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Chain for DynChain {
    async fn run<'a>(&'a self, ctx: &'a Context) -> Result<Vec<Step<'a>>> {
        let outs = futures::future::join_all(self.resolvers.iter().map(|r| timed(r, ctx))).await;
        let mut steps = Vec::with_capacity(outs.len());
        for (i, (r, out)) in self.resolvers.iter().zip(outs).enumerate() {
            steps.push(step(r.name(), i + 1, out)?);
        }
        Ok(steps)
    }

    fn names(&self) -> Vec<&str> {
        self.resolvers.iter().map(|r| r.name()).collect()
    }
}

/// A statically typed chain over a tuple of resolvers (what `resolvers!` builds).
#[must_use = "a chain does nothing until it is run with `.request(&ctx)` or `.resolve(&ctx)`"]
pub struct StaticChain<T>(T);

impl<T: ResolverTuple> StaticChain<T> {
    /// Wraps a tuple of resolvers, e.g. `(LoadText, LoadFile)`.
    pub fn new(resolvers: T) -> Self {
        Self(resolvers)
    }
}

impl<T: ResolverTuple> std::fmt::Debug for StaticChain<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.names()).finish()
    }
}

impl<T: ResolverTuple> Chain for StaticChain<T> {
    fn run<'a>(&'a self, ctx: &'a Context) -> impl Future<Output = Result<Vec<Step<'a>>>> + Send {
        self.0.run_all(ctx)
    }

    fn names(&self) -> Vec<&str> {
        self.0.names()
    }
}

/// A tuple of resolvers that a [`StaticChain`] can run (implemented for 1 to 16).
pub trait ResolverTuple: Send + Sync + 'static {
    /// Runs all resolvers concurrently; contributions in declaration order.
    fn run_all<'a>(
        &'a self,
        ctx: &'a Context,
    ) -> impl Future<Output = Result<Vec<Step<'a>>>> + Send;
    /// The resolvers' names.
    fn names(&self) -> Vec<&str>;
}

macro_rules! tuple_chain {
    ($count:expr; $($T:ident $idx:tt),+) => {
        impl<$($T: Resolver),+> ResolverTuple for ($($T,)+) {
            async fn run_all<'a>(&'a self, ctx: &'a Context) -> Result<Vec<Step<'a>>> {
                let outs = futures::join!($(timed(&self.$idx, ctx)),+);
                let mut steps = Vec::with_capacity($count);
                $( steps.push(step(self.$idx.name(), $idx + 1, outs.$idx)?); )+
                Ok(steps)
            }

            fn names(&self) -> Vec<&str> {
                vec![$(self.$idx.name()),+]
            }
        }
    };
}

tuple_chain!(1; A 0);
tuple_chain!(2; A 0, B 1);
tuple_chain!(3; A 0, B 1, C 2);
tuple_chain!(4; A 0, B 1, C 2, D 3);
tuple_chain!(5; A 0, B 1, C 2, D 3, E 4);
tuple_chain!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_chain!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_chain!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_chain!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_chain!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_chain!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_chain!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_chain!(13; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_chain!(14; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_chain!(15; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_chain!(16; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
