//! `ThreadSummary`: the thread's running summary.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{Builtin, Default, Form, Kind, Provided, option, role};

/// `ThreadSummary`'s default `template`.
pub const SUMMARY_TEMPLATE: &str = "Summary of the conversation so far:\n{{ summary }}";

/// `ThreadSummary`: the thread's running summary.
pub const THREAD_SUMMARY: Builtin = Builtin {
    name: "ThreadSummary",
    aliases: &["ThreadSummaryResolver"],
    form: Form::Named,
    provides: Some(Provided {
        variable: "summary",
        attributes: Some(&[]),
        place: "the `template`",
    }),
    positional: None,
    options: &[
        option(
            "template",
            Kind::Template,
            Default::Text(SUMMARY_TEMPLATE),
            "\"Earlier: {{ summary }}\"",
            "\"Earlier: {{ summary }}\"",
            "the text (variable `summary`); nothing when the thread has no summary yet",
        ),
        role("who speaks the message"),
    ],
};
