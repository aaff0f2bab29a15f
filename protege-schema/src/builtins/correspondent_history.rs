//! `CorrespondentHistory`: the sender's earlier threads with the persona.
//!
//! Its name, options (with docs, defaults and examples), its form in `resolvers!` and the
//! variable its `template` sees, declared once.

use super::{Builtin, Default, Form, Kind, Provided, option, quoted, role};

/// `CorrespondentHistory`'s default `threads`: the sender's three most recent earlier threads.
pub const CORRESPONDENT_THREADS: u64 = 3;

/// `CorrespondentHistory`'s default `messages`: the last four messages of a thread without
/// a summary.
pub const CORRESPONDENT_MESSAGES: u64 = 4;

/// `CorrespondentHistory`'s default `template`, rendered once per earlier thread.
pub const CORRESPONDENT_TEMPLATE: &str = "Earlier thread with this correspondent: {{ thread.subject }}\n{% if thread.summary %}\nSummary: {{ thread.summary }}{% else %}{% for m in thread.messages %}\n{{ m }}\n{% endfor %}{% endif %}";

/// The attributes of `thread`, an earlier thread of a CorrespondentHistory template.
pub const THREAD: &[&str] = &["subject", "summary", "messages"];

/// `CorrespondentHistory`: the sender's earlier threads with the persona.
pub const CORRESPONDENT_HISTORY: Builtin = Builtin {
    name: "CorrespondentHistory",
    aliases: &["CorrespondentHistoryResolver"],
    form: Form::Named,
    provides: Some(Provided {
        variable: "thread",
        attributes: Some(THREAD),
        place: "the `template`",
    }),
    positional: None,
    options: &[
        option(
            "threads",
            Kind::Count,
            Default::Count(CORRESPONDENT_THREADS),
            "5",
            "5",
            "the sender's most recent earlier threads with the persona shown, oldest first",
        ),
        option(
            "messages",
            Kind::Count,
            Default::Count(CORRESPONDENT_MESSAGES),
            "2",
            "2",
            "the last messages shown of an earlier thread that has no summary",
        ),
        option(
            "template",
            Kind::Template,
            Default::Text(CORRESPONDENT_TEMPLATE),
            "\"Earlier: {{ thread.subject }}\"",
            "\"Earlier: {{ thread.subject }}\"",
            "the text of each earlier thread (variable `thread`: `subject`, `summary`, `messages`), trimmed; threads are joined by a blank line",
        ),
        role("who speaks the message"),
        quoted(),
    ],
};
