//! `ThreadHistory`: the prior turns of the inbound message's thread and their tool rounds.

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::message::Message;
use crate::resolver::Resolver;

/// Contributes the prior messages of the thread (§6 rules 1-6 of the contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadHistory {
    limit: Option<u64>,
    include_tool_calls: bool,
    result_limit: usize,
    max_tokens: Option<usize>,
}

impl Default for ThreadHistory {
    fn default() -> Self {
        Self {
            limit: Some(50),
            include_tool_calls: true,
            result_limit: 4000,
            max_tokens: None,
        }
    }
}

impl ThreadHistory {
    /// The defaults: `limit` 50, tool calls included, `result_limit` 4000, no token budget.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of most recent prior messages; `None` means all, `Some(0)` nothing.
    pub fn limit(mut self, limit: impl Into<Option<u64>>) -> Self {
        self.limit = limit.into();
        self
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

    /// An optional token budget: whole turns are dropped oldest first until it fits.
    pub fn max_tokens(mut self, tokens: impl Into<Option<usize>>) -> Self {
        self.max_tokens = tokens.into();
        self
    }
}

impl Resolver for ThreadHistory {
    type Output = Vec<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Vec<Message>> {
        let _ = ctx;
        Err(Error::new(
            ErrorKind::Database,
            "ThreadHistory is being built",
        ))
    }

    fn name(&self) -> &str {
        "ThreadHistory"
    }
}
