//! The keys of a persona file outside its resolver chains: the top level, `[model]`,
//! `[limits]`, `[mail]`, `[[tools]]` and `[[responsibilities]]`, each with the shape of its
//! value, its default and what it does.
//!
//! The TOML reader of `protege-config` takes the keys a table may have from here, and the
//! JSON Schema of a persona file (`protege schema`) is generated from these tables and the
//! table of built-in resolvers ([`BUILTINS`](crate::BUILTINS)).

use crate::builtins::Default;

/// The shape of a key's value, as the TOML reader checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Any string.
    Text,
    /// A string that is not blank.
    NonBlank,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An integer from 1 to `max`.
    Positive {
        /// The largest value accepted.
        max: u64,
    },
    /// A boolean.
    Flag,
    /// An array of email addresses (a string with `@` and no whitespace inside).
    Addresses,
    /// An array of authserv-ids (host names: not blank, no whitespace, no `;`).
    AuthservIds,
    /// A table of any values, given to templates as they are.
    AnyTable,
    /// A table with these keys.
    Table(&'static [Key]),
    /// An array of tables with these keys (`[[tools]]`).
    Tables(&'static [Key]),
    /// A tool name: 1 to 64 ASCII letters, digits, `_` or `-`, unique in the file.
    ToolName,
    /// A standard cron expression of 5 fields.
    Cron,
    /// A JSON Schema object with `type = "object"`.
    ObjectSchema,
    /// A chain: an array of resolver entries, each naming its resolver with `use`.
    Chain,
}

/// One key of a table of a persona file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The key.
    pub name: &'static str,
    /// The shape of its value.
    pub shape: Shape,
    /// What it is when left out.
    pub default: Default,
    /// What it does.
    pub doc: &'static str,
}

const fn key(name: &'static str, shape: Shape, default: Default, doc: &'static str) -> Key {
    Key {
        name,
        shape,
        default,
        doc,
    }
}

/// The providers `[model] provider` names.
pub const PROVIDERS: [&str; 2] = ["openai", "anthropic"];

/// The modes of `[model] cache`.
pub const CACHE_MODES: [&str; 2] = ["auto", "off"];

/// The top level of a persona file.
pub const PERSONA: &[Key] = &[
    key(
        "name",
        Shape::NonBlank,
        Default::Unset("the file's name without `.toml`"),
        "the persona's unique name",
    ),
    key(
        "instructions",
        Shape::Text,
        Default::Text(""),
        "what the persona is told to be; templates read it as `persona.instructions`",
    ),
    key(
        "addresses",
        Shape::Addresses,
        Default::Unset("none"),
        "the email addresses the persona answers",
    ),
    key(
        "vars",
        Shape::AnyTable,
        Default::Unset("none"),
        "values templates read as `persona.vars.NAME`",
    ),
    key(
        "model",
        Shape::Table(MODEL),
        Default::Unset("no model: a wire format needs `resolve --model`"),
        "the model the requests are for",
    ),
    key(
        "limits",
        Shape::Table(LIMITS),
        Default::Unset("the defaults of each limit"),
        "the bounds of template renders, of what one email brings and of a run",
    ),
    key(
        "mail",
        Shape::Table(MAIL),
        Default::Unset("the defaults of each setting"),
        "how the persona's mail is imported and how bodies reach the model",
    ),
    key(
        "tools",
        Shape::Tables(TOOL),
        Default::Unset("none"),
        "the tools the model may call",
    ),
    key(
        "message_resolvers",
        Shape::Chain,
        Default::Unset("an empty chain"),
        "the chain of a reply run, in order",
    ),
    key(
        "responsibilities",
        Shape::Tables(RESPONSIBILITY),
        Default::Unset("none"),
        "scheduled runs",
    ),
    key(
        "responsibility_resolvers",
        Shape::Chain,
        Default::Unset("an empty chain"),
        "the chain of a scheduled run, in order",
    ),
];

/// `[model]`.
pub const MODEL: &[Key] = &[
    key(
        "provider",
        Shape::OneOf(&PROVIDERS),
        Default::Unset("none"),
        "the provider whose wire format `protege serve` answers with by default",
    ),
    key(
        "name",
        Shape::Text,
        Default::Unset("none: a wire format needs `resolve --model`"),
        "the model's name, the `model` of the request body",
    ),
    key(
        "max_tokens",
        Shape::Positive {
            max: u32::MAX as u64,
        },
        Default::Unset("none for OpenAI, 1024 for Anthropic"),
        "the most tokens the model may answer with",
    ),
    key(
        "cache",
        Shape::OneOf(&CACHE_MODES),
        Default::Word("auto"),
        "`auto` marks prompt-cache breakpoints in Anthropic bodies, `off` marks none",
    ),
];

/// `[limits]`.
pub const LIMITS: &[Key] = &[
    key(
        "template_fuel",
        Shape::Positive { max: u64::MAX },
        Default::Count(5_000_000),
        "the instructions one template render may execute",
    ),
    key(
        "template_output_bytes",
        Shape::Positive { max: u64::MAX },
        Default::Count(1_048_576),
        "the bytes one template render may write",
    ),
    key(
        "message_text_bytes",
        Shape::Positive { max: u64::MAX },
        Default::Count(262_144),
        "the bytes of one email's text that reach the model",
    ),
    key(
        "attachment_parts",
        Shape::Positive { max: u64::MAX },
        Default::Count(20),
        "the attachments of one email that reach the model as image or document parts",
    ),
    key(
        "max_rounds",
        Shape::Positive { max: u64::MAX },
        Default::Count(16),
        "the rounds of tool calls a run may take",
    ),
    key(
        "tool_result_bytes",
        Shape::Positive { max: u64::MAX },
        Default::Count(1_048_576),
        "the bytes of one tool result a run accepts",
    ),
];

/// `[mail]`.
pub const MAIL: &[Key] = &[
    key(
        "trusted_authserv_ids",
        Shape::AuthservIds,
        Default::Unset("none"),
        "the receiving servers whose `Authentication-Results` headers count when relayed mail says it is from the persona",
    ),
    key(
        "quoted",
        Shape::OneOf(&crate::QUOTED),
        Default::Word("keep"),
        "`strip` removes quoted text, attributions, signatures and taglines from each body, `keep` shows it whole",
    ),
    key(
        "fence",
        Shape::Flag,
        Default::Flag(false),
        "each email body sits between two lines carrying a per-thread secret; `mail.fence_note` says so to the model",
    ),
];

/// An entry of `[[tools]]`.
pub const TOOL: &[Key] = &[
    key(
        "name",
        Shape::ToolName,
        Default::Required,
        "the tool's name: 1 to 64 ASCII letters, digits, `_` or `-`, unique in the file",
    ),
    key(
        "description",
        Shape::Text,
        Default::Required,
        "what the tool does, for the model",
    ),
    key(
        "input_schema",
        Shape::ObjectSchema,
        Default::Required,
        "the JSON Schema of the tool's input, with `type = \"object\"`",
    ),
];

/// An entry of `[[responsibilities]]`.
pub const RESPONSIBILITY: &[Key] = &[
    key(
        "name",
        Shape::NonBlank,
        Default::Required,
        "the responsibility's name, unique in the file",
    ),
    key(
        "schedule",
        Shape::Cron,
        Default::Required,
        "when it runs: a cron expression of 5 fields (minute hour day-of-month month day-of-week)",
    ),
    key(
        "instructions",
        Shape::Text,
        Default::Text(""),
        "what to do, read by templates as `responsibility.instructions`",
    ),
];

/// The names of `keys`, in order.
pub fn key_names(keys: &[Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}
