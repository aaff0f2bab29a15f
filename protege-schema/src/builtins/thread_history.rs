//! `ThreadHistory`: the prior messages of the thread and their tool rounds.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{Builtin, Default, Form, Kind, OptionSpec, option, quoted};

/// `ThreadHistory`'s default `limit`: the 50 most recent prior messages.
pub const HISTORY_LIMIT: u64 = 50;

/// `ThreadHistory`'s default `result_limit`: the characters of a tool result kept.
pub const HISTORY_RESULT_LIMIT: usize = 4000;

/// `ThreadHistory`: the prior messages of the thread and their tool rounds.
pub const THREAD_HISTORY: Builtin = Builtin {
    name: "ThreadHistory",
    aliases: &["ThreadHistoryResolver"],
    form: Form::Named,
    provides: None,
    positional: None,
    options: &[
        option(
            "limit",
            Kind::CountOrAll,
            Default::Count(HISTORY_LIMIT),
            "10",
            "10",
            "the most recent prior messages kept; `false` in TOML or `None` in Rust for all",
        ),
        option(
            "window",
            Kind::Window,
            Default::Word("sliding"),
            "\"stable\"",
            "stable",
            "`stable` moves the window's first message in jumps of `step`, so replies share their history prefix",
        ),
        OptionSpec {
            with: Some("window"),
            ..option(
                "step",
                Kind::Step,
                Default::Unset("`max(1, limit / 2)`"),
                "5",
                "5",
                "the jump of a stable window (needs `window = stable`)",
            )
        },
        option(
            "after_summary",
            Kind::Flag,
            Default::Flag(false),
            "true",
            "true",
            "only messages after the thread's running summary",
        ),
        option(
            "include_tool_calls",
            Kind::Flag,
            Default::Flag(true),
            "false",
            "false",
            "replay each message's tool rounds",
        ),
        option(
            "result_limit",
            Kind::Count,
            Default::Count(HISTORY_RESULT_LIMIT as u64),
            "2000",
            "2000",
            "the characters of a tool result kept before `[truncated: N more characters]`",
        ),
        option(
            "max_tokens",
            Kind::Count,
            Default::Unset("no budget"),
            "2000",
            "2000",
            "a token budget: whole turns are dropped oldest first until the history fits",
        ),
        quoted(),
    ],
};
