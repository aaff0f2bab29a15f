//! `OpenThreads`: the persona's threads waiting for an answer, for digests.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{Builtin, Default, Form, Kind, Provided, option, role};

/// `OpenThreads`' default `within`: threads whose newest message is older are left out.
pub const OPEN_THREADS_WITHIN: &str = "7d";

/// `OpenThreads`' default `limit`: the most threads listed.
pub const OPEN_THREADS_LIMIT: u64 = 20;

/// `OpenThreads`' default `template`, rendered once per open thread: one line each.
pub const OPEN_THREADS_TEMPLATE: &str = "- {{ thread.subject }} ({{ thread.messages }} message{% if thread.messages != 1 %}s{% endif %}, waiting since {{ thread.since }}, from {{ thread.from }}, thread {{ thread.id }})";

/// The attributes of `thread`, an open thread of an OpenThreads template: its id, subject,
/// count of messages, the date it waits since and the address it waits for.
pub const OPEN_THREAD: &[&str] = &["id", "subject", "messages", "since", "from"];

/// `OpenThreads`: the persona's threads waiting for an answer (for digests).
pub const OPEN_THREADS: Builtin = Builtin {
    name: "OpenThreads",
    aliases: &["OpenThreadsResolver"],
    form: Form::Named,
    provides: Some(Provided {
        variable: "thread",
        attributes: Some(OPEN_THREAD),
        place: "the `template`",
    }),
    positional: None,
    options: &[
        option(
            "within",
            Kind::Duration,
            Default::Word(OPEN_THREADS_WITHIN),
            "\"3d\"",
            "\"3d\"",
            "threads whose newest message is older than this are left out, such as `\"24h\"`",
        ),
        option(
            "limit",
            Kind::Count,
            Default::Count(OPEN_THREADS_LIMIT),
            "10",
            "10",
            "the most threads listed, longest waiting first",
        ),
        option(
            "template",
            Kind::Template,
            Default::Text(OPEN_THREADS_TEMPLATE),
            "\"- {{ thread.subject }} ({{ thread.from }})\"",
            "\"- {{ thread.subject }} ({{ thread.from }})\"",
            "the line of each open thread (variable `thread`: `id`, `subject`, `messages`, `since`, `from`), trimmed; lines are joined by a line break",
        ),
        role("who speaks the message"),
    ],
};
