//! The template variables of a run, declared once; the guide's "Template variables"
//! table (`docs/src/reference.md`) and the `protege` crate docs list the same.

/// Every top-level variable a template can name: `persona`, `message`, `responsibility`,
/// `mail`, `correlation_id`, `now`, `record` (only in a LoadRecord per-record template),
/// `summary` (only in a ThreadSummary template) and `thread` (only in a CorrespondentHistory
/// or an OpenThreads template).
pub const VARIABLES: &[&str] = &[
    "persona",
    "message",
    "responsibility",
    "mail",
    "correlation_id",
    "now",
    "record",
    "summary",
    "thread",
];

/// The attributes of `persona`.
pub const PERSONA: &[&str] = &["name", "instructions", "vars"];

/// The attributes of `message`, the inbound message of a reply run.
pub const MESSAGE: &[&str] = &[
    "message_id",
    "from",
    "from_display",
    "to",
    "cc",
    "subject",
    "sent_at",
    "body",
    "thread_id",
];

/// The attributes of `responsibility`, the task of a scheduled run.
pub const RESPONSIBILITY: &[&str] = &["name", "schedule", "instructions"];

/// The attributes of `mail`, how the persona renders mail (`[mail]`).
pub const MAIL: &[&str] = &["fence_note"];

/// The functions minijinja itself defines for every template.
pub const GLOBALS: &[&str] = &["range", "dict", "debug", "namespace"];

/// The attributes of a known object, `None` for a variable whose contents are free
/// (`record`) and an empty list for a string (`correlation_id`, `now`, `summary`).
pub(crate) fn attributes(variable: &str) -> Option<&'static [&'static str]> {
    match variable {
        "persona" => Some(PERSONA),
        "message" => Some(MESSAGE),
        "responsibility" => Some(RESPONSIBILITY),
        "mail" => Some(MAIL),
        "correlation_id" | "now" => Some(&[]),
        // A built-in's own variable: its first declaration's attributes.
        _ => crate::providers(variable)
            .find_map(|b| b.provides)
            .and_then(|p| p.attributes),
    }
}
