//! The keys of a persona file outside its resolver chains: the top level, `[model]`,
//! `[limits]`, `[mail]`, `[agent]`, `[outbox]`, `[[tools]]` (with its `http` and `mcp`
//! tables) and `[[responsibilities]]`, each with the shape of its value, its default and
//! what it does.
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
    /// A duration: a positive integer and a unit, `s`, `m`, `h` or `d` (`"90s"`, `"2d"`),
    /// at most [`DURATION_MAX_DAYS`] days.
    Duration,
    /// The URL of an SMTP server: `smtp://host[:port]` or `smtps://host[:port]`, an IPv6
    /// host in brackets, nothing after the port.
    SmtpUrl,
    /// The name of an environment variable: ASCII letters, digits and `_`, not starting
    /// with a digit.
    EnvVar,
    /// The URL of an IMAP folder: `imap://host[:port][/FOLDER]` or
    /// `imaps://host[:port][/FOLDER]`, an IPv6 host in brackets.
    ImapUrl,
    /// An IMAP folder's name: printable ASCII, not blank, no `"` or `\\`.
    Folder,
    /// `"seen"`, or `"move:FOLDER"` with FOLDER as [`Shape::Folder`].
    InboxAfter,
    /// A day, `YYYY-MM-DD`.
    Date,
    /// An `http://` or `https://` URL: a host (an IPv6 address in brackets) and an
    /// optional port, then a path and a query if any; no login, no fragment.
    HttpUrl,
    /// A URL as [`Shape::HttpUrl`], `https://` unless the host is a loopback address
    /// (`localhost`, `127.0.0.0/8`, `[::1]`): the provider's, which receives the API key.
    ProviderUrl,
    /// An array of tool names, each once: a tool of the persona, or a name the `allow` of
    /// one of its `mcp` entries matches.
    ToolNames,
    /// An array of tool-name patterns: ASCII letters, digits, `_` and `-`, and `*`
    /// standing for any run of them.
    ToolPatterns,
    /// An array of strings, not empty, the first not blank: a program and its arguments.
    Command,
    /// One line of text, not blank: no control characters, at most `max` characters.
    OneLine {
        /// The most characters accepted.
        max: usize,
    },
    /// An array of email addresses (a string with `@` and no whitespace inside).
    Addresses,
    /// An array of authserv-ids (host names: not blank, no whitespace, no `;`).
    AuthservIds,
    /// A table of any values, given to templates as they are.
    AnyTable,
    /// A table with these keys.
    Table(&'static [Key]),
    /// A table with these keys and exactly one of `one` (`mcp`: `url` or `command`).
    TableWithOne {
        /// The keys.
        keys: &'static [Key],
        /// The keys of which the table has exactly one.
        one: &'static [&'static str],
    },
    /// An array of tables with these keys (`[[responsibilities]]`).
    Tables(&'static [Key]),
    /// The entries of `[[tools]]`, with these keys: at most one of `http`, `mcp` and
    /// `builtin`; `name`, `description` and `input_schema` required in an entry without
    /// `mcp` or `builtin`; an `mcp` entry without any of the three, a `builtin` entry
    /// without `name` and `input_schema`.
    Tools(&'static [Key]),
    /// A tool name: 1 to 64 ASCII letters, digits, `_` or `-`, unique in the file.
    ToolName,
    /// A standard cron expression of 5 fields.
    Cron,
    /// An IANA time zone name, as the time zone database spells it (`Europe/Paris`,
    /// `America/New_York`, `UTC`).
    TimeZone,
    /// A JSON Schema object with `type = "object"`.
    ObjectSchema,
    /// A chain: an array of resolver entries, each naming its resolver with `use`.
    Chain,
    /// A price: a number (integer or float), finite and not negative.
    Price,
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

/// The APIs `[model] api` names (with `provider = "openai"`).
pub const OPENAI_APIS: [&str; 2] = ["chat", "responses"];

/// The modes of `[model] cache`.
pub const CACHE_MODES: [&str; 2] = ["auto", "off"];

/// The values of `[model] cache_ttl`.
pub const CACHE_TTLS: [&str; 3] = ["auto", "5m", "1h"];

/// `[model] prices`: USD per million tokens.
pub const PRICES: &[Key] = &[
    key(
        "input",
        Shape::Price,
        Default::Unset("the shipped price of the model"),
        "input tokens neither read from nor written to the prompt cache",
    ),
    key(
        "output",
        Shape::Price,
        Default::Unset("the shipped price of the model"),
        "output tokens",
    ),
    key(
        "cache_read",
        Shape::Price,
        Default::Unset("the shipped price of the model"),
        "input tokens read from the prompt cache",
    ),
    key(
        "cache_write_5m",
        Shape::Price,
        Default::Unset("the shipped price of the model"),
        "input tokens written to the prompt cache for five minutes",
    ),
    key(
        "cache_write_1h",
        Shape::Price,
        Default::Unset("the shipped price of the model"),
        "input tokens written to the prompt cache for an hour",
    ),
];

/// The values of `[agent] reply`.
pub const REPLY_MODES: [&str; 3] = ["send", "draft", "off"];

/// The values of `[agent] approval`.
pub const APPROVALS: [&str; 3] = ["never", "always", "first_contact"];

/// The values of `[agent] unauthenticated`.
pub const UNAUTHENTICATED: [&str; 3] = ["draft", "send", "skip"];

/// The values of `[agent] after_person`.
pub const AFTER_PERSON: [&str; 2] = ["skip", "answer"];

/// The tools `[[tools]] builtin` names.
pub const BUILTIN_TOOLS: [&str; 1] = ["read_attachment"];

/// The keys of a `[[tools]]` entry of which it has at most one: what runs the tool.
pub const TOOL_RUNNERS: [&str; 3] = ["http", "mcp", "builtin"];

/// The values of `[outbox] tls`: only `none`, for a loopback server.
pub const TLS_MODES: [&str; 1] = ["none"];

/// The longest duration a persona file may give (`[outbox] give_up_after`,
/// `attempt_timeout`, the durations of `[agent]`, the timeouts), in days.
pub const DURATION_MAX_DAYS: u64 = 365;

/// The most characters of `[outbox] from_name`.
pub const FROM_NAME_MAX_CHARS: usize = 200;

/// The values of `[[responsibilities]] catch_up`.
pub const CATCH_UP: [&str; 3] = ["latest", "all", "none"];

/// The most characters of `[[responsibilities]] subject`.
pub const SUBJECT_MAX_CHARS: usize = 200;

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
        "agent",
        Shape::Table(AGENT),
        Default::Unset("the defaults of each setting"),
        "whether and how replies are sent, and when they wait for a person",
    ),
    key(
        "outbox",
        Shape::Table(OUTBOX),
        Default::Unset("no SMTP server: the application delivers the replies itself"),
        "the SMTP server replies leave through",
    ),
    key(
        "inbox",
        Shape::Table(INBOX),
        Default::Unset("none: mail reaches the persona only when posted or imported"),
        "the IMAP mailbox the agent fetches the persona's mail from",
    ),
    key(
        "tools",
        Shape::Tools(TOOL),
        Default::Unset("none"),
        "the tools the model may call, and what runs them",
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
        "api",
        Shape::OneOf(&OPENAI_APIS),
        Default::Word("chat"),
        "with `provider = \"openai\"`: `chat` for Chat Completions bodies, `responses` for Responses bodies (`openai-responses`)",
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
    key(
        "cache_ttl",
        Shape::OneOf(&CACHE_TTLS),
        Default::Word("5m"),
        "how long Anthropic keeps the cached prefix: `5m`, `1h`, or `auto` (an hour for the system prompt and history when the thread's recent gaps make it pay)",
    ),
    key(
        "prices",
        Shape::Table(PRICES),
        Default::Unset("the shipped prices of the model"),
        "USD per million tokens, over the shipped prices of the model, for `cache-report` and `protege_cost_total`",
    ),
    key(
        "api_key_env",
        Shape::EnvVar,
        Default::Unset("`ANTHROPIC_API_KEY` or `OPENAI_API_KEY`, by `provider`"),
        "the name of the environment variable holding the provider's API key (the agent's)",
    ),
    key(
        "base_url",
        Shape::ProviderUrl,
        Default::Unset("`https://api.anthropic.com` or `https://api.openai.com`, by `provider`"),
        "where the agent sends its requests: `https://`, or `http://` to a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`)",
    ),
    key(
        "timeout",
        Shape::Duration,
        Default::Word("120s"),
        "the most one request of the agent to the provider may take, such as `\"90s\"`",
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

/// `[agent]`.
pub const AGENT: &[Key] = &[
    key(
        "reply",
        Shape::OneOf(&REPLY_MODES),
        Default::Word("send"),
        "`send` queues each reply for delivery, `draft` makes every reply wait for approval, `off` composes none",
    ),
    key(
        "approval",
        Shape::OneOf(&APPROVALS),
        Default::Word("never"),
        "when a reply waits for a person: `never`, `always` (the same as `reply = \"draft\"`) or `first_contact` (a recipient never sent to before)",
    ),
    key(
        "unauthenticated",
        Shape::OneOf(&UNAUTHENTICATED),
        Default::Word("draft"),
        "a reply to a sender who is not authenticated: `draft` waits for approval, `send` is sent like any other, `skip` composes none",
    ),
    key(
        "reply_all",
        Shape::Flag,
        Default::Flag(false),
        "the trigger's To and Cc, minus the persona's addresses, are copied when its sender is authenticated",
    ),
    key(
        "max_cc",
        Shape::Positive { max: u64::MAX },
        Default::Count(10),
        "with more Cc recipients a reply has none and waits for approval",
    ),
    key(
        "html",
        Shape::Flag,
        Default::Flag(false),
        "a reply is `multipart/alternative`, its Markdown also rendered to HTML",
    ),
    key(
        "answer_automated",
        Shape::Flag,
        Default::Flag(false),
        "automated mail (auto-replies, bulk and list mail, delivery reports) is answered too",
    ),
    key(
        "answer_cc",
        Shape::Flag,
        Default::Flag(true),
        "mail that names the persona only in Cc is answered",
    ),
    key(
        "after_person",
        Shape::OneOf(&AFTER_PERSON),
        Default::Word("skip"),
        "a message of a thread whose newest outbound message a person wrote: `skip` leaves it to the person, `answer` answers it",
    ),
    key(
        "max_age",
        Shape::Duration,
        Default::Word("7d"),
        "a message whose Date is more than this before it was received is not answered",
    ),
    key(
        "max_replies_per_thread_per_day",
        Shape::Positive { max: u64::MAX },
        Default::Count(5),
        "the most replies of one thread in the last 24 hours",
    ),
    key(
        "max_replies_per_correspondent_per_day",
        Shape::Positive { max: u64::MAX },
        Default::Count(10),
        "the most replies to one recipient (To or Cc, any thread) in the last 24 hours",
    ),
    key(
        "max_replies_per_day",
        Shape::Positive { max: u64::MAX },
        Default::Count(1000),
        "the most replies of the persona in the last 24 hours",
    ),
    key(
        "tokens_per_day",
        Shape::Positive { max: u64::MAX },
        Default::Unset("no limit"),
        "the tokens of the persona's runs since 00:00 UTC past which jobs wait for the next day",
    ),
    key(
        "provider_attempts",
        Shape::Positive { max: u64::MAX },
        Default::Count(5),
        "the most requests for one round within one claim of a job, before it waits its turn again",
    ),
    key(
        "max_attempts",
        Shape::Positive { max: u64::MAX },
        Default::Count(3),
        "the most claims of a job that does not finish before it fails",
    ),
    key(
        "give_up_after",
        Shape::Duration,
        Default::Word("24h"),
        "how long a job whose provider keeps failing is retried before it fails, such as `\"12h\"`",
    ),
    key(
        "pause",
        Shape::Duration,
        Default::Word("10m"),
        "how long the persona's jobs wait after the provider refused its key or model (401, 403, 404), unless the file changes first",
    ),
    key(
        "reply_tools",
        Shape::ToolNames,
        Default::Unset("every tool"),
        "the tools a reply run offers, by name",
    ),
    key(
        "max_catch_up",
        Shape::Positive {
            max: u32::MAX as u64,
        },
        Default::Count(24),
        "the most missed slots of one responsibility that `catch_up = \"all\"` fires after downtime",
    ),
];

/// `[outbox]`.
pub const OUTBOX: &[Key] = &[
    key(
        "smtp",
        Shape::SmtpUrl,
        Default::Unset("none: the application delivers the replies itself"),
        "the SMTP server: `smtp://host[:port]`, STARTTLS required, port 587 by default, or `smtps://host[:port]`, TLS from the first byte, port 465 by default; an IPv6 host in brackets",
    ),
    key(
        "tls",
        Shape::OneOf(&TLS_MODES),
        Default::Unset("STARTTLS for `smtp://`, TLS for `smtps://`"),
        "`none`: plain text, accepted only with `smtp://` and a loopback host, `localhost`, `127.0.0.0/8` or `[::1]`",
    ),
    key(
        "user",
        Shape::NonBlank,
        Default::Unset("none: no login"),
        "the SMTP login, given with `password_env`",
    ),
    key(
        "password_env",
        Shape::EnvVar,
        Default::Unset("none"),
        "the name of the environment variable holding the SMTP password, given with `user`",
    ),
    key(
        "give_up_after",
        Shape::Duration,
        Default::Word("2d"),
        "how long a reply the server answers with 4xx is retried, such as `\"48h\"`",
    ),
    key(
        "attempt_timeout",
        Shape::Duration,
        Default::Word("11m"),
        "the most one SMTP exchange may take, such as `\"90s\"`",
    ),
    key(
        "ca_file",
        Shape::NonBlank,
        Default::Unset("none: the system's roots only"),
        "a PEM bundle of certificates added to the system's roots, relative to the app root",
    ),
    key(
        "from_name",
        Shape::OneLine {
            max: FROM_NAME_MAX_CHARS,
        },
        Default::Unset("none"),
        "the display name of the From header: one line of at most 200 characters",
    ),
];

/// `[inbox]`.
pub const INBOX: &[Key] = &[
    key(
        "imap",
        Shape::ImapUrl,
        Default::Required,
        "the mailbox: `imaps://host[:port][/FOLDER]`, TLS from the first byte, port 993 by default, or `imap://host[:port][/FOLDER]`, STARTTLS required, port 143 by default; FOLDER defaults to `INBOX`",
    ),
    key(
        "tls",
        Shape::OneOf(&TLS_MODES),
        Default::Unset("STARTTLS for `imap://`, TLS for `imaps://`"),
        "`none`: plain text, accepted only with `imap://` and a loopback host, `localhost`, `127.0.0.0/8` or `[::1]`",
    ),
    key("user", Shape::NonBlank, Default::Required, "the IMAP login"),
    key(
        "password_env",
        Shape::EnvVar,
        Default::Required,
        "the name of the environment variable holding the password (an app password at most providers)",
    ),
    key(
        "after",
        Shape::InboxAfter,
        Default::Word("seen"),
        "what is done to a message once stored: `seen` sets `\\Seen`, `move:FOLDER` moves it to FOLDER",
    ),
    key(
        "since",
        Shape::Date,
        Default::Unset("none: the first sync stores only mail that arrives after it"),
        "a day, `YYYY-MM-DD`: the first sync also stores the folder's mail from this day on, without answering it",
    ),
    key(
        "poll",
        Shape::Duration,
        Default::Word("60s"),
        "how often a server without IDLE is asked for new mail, such as `\"30s\"`",
    ),
    key(
        "sent",
        Shape::Folder,
        Default::Unset("none"),
        "the folder of the mail sent from the mailbox, such as `Sent`: read too, so a person's reply from a mail client is stored outbound",
    ),
    key(
        "ca_file",
        Shape::NonBlank,
        Default::Unset("none: the system's roots only"),
        "a PEM bundle of certificates added to the system's roots, relative to the app root",
    ),
];

/// An entry of `[[tools]]`.
pub const TOOL: &[Key] = &[
    key(
        "name",
        Shape::ToolName,
        Default::Unset("none: required in an entry without `mcp` or `builtin`"),
        "the tool's name: 1 to 64 ASCII letters, digits, `_` or `-`, unique in the file",
    ),
    key(
        "description",
        Shape::Text,
        Default::Unset(
            "none: required in an entry without `mcp` or `builtin`; with `builtin`, it replaces the tool's own",
        ),
        "what the tool does, for the model",
    ),
    key(
        "input_schema",
        Shape::ObjectSchema,
        Default::Unset("none: required in an entry without `mcp` or `builtin`"),
        "the JSON Schema of the tool's input, with `type = \"object\"`",
    ),
    key(
        "http",
        Shape::Table(HTTP_TOOL),
        Default::Unset("none: the application runs the tool"),
        "protege runs the tool: a signed `POST` of its input to `url`",
    ),
    key(
        "mcp",
        Shape::TableWithOne {
            keys: MCP_TOOL,
            one: &["url", "command"],
        },
        Default::Unset("none"),
        "the tools an MCP server lists, filtered by `allow`: the entry declares no tool itself",
    ),
    key(
        "builtin",
        Shape::OneOf(&BUILTIN_TOOLS),
        Default::Unset("none"),
        "a tool protege carries: `read_attachment`, an attachment of the trigger's thread by id",
    ),
    key(
        "approval",
        Shape::Flag,
        Default::Flag(false),
        "a run calling the tool waits for a person before the call is made (with `http`, `mcp` or `builtin`)",
    ),
];

/// The `http` table of a `[[tools]]` entry.
pub const HTTP_TOOL: &[Key] = &[
    key(
        "url",
        Shape::HttpUrl,
        Default::Required,
        "where the input is `POST`ed: an `http://` or `https://` URL",
    ),
    key(
        "secret_env",
        Shape::EnvVar,
        Default::Unset("none: the requests are not signed"),
        "the name of the environment variable holding the key of `X-Protege-Signature`",
    ),
    key(
        "timeout",
        Shape::Duration,
        Default::Word("30s"),
        "the most one call may take, such as `\"10s\"`",
    ),
];

/// The `mcp` table of a `[[tools]]` entry.
pub const MCP_TOOL: &[Key] = &[
    key(
        "url",
        Shape::HttpUrl,
        Default::Unset("none: give `url` or `command`"),
        "the server's streamable HTTP endpoint: an `http://` or `https://` URL",
    ),
    key(
        "command",
        Shape::Command,
        Default::Unset("none: give `url` or `command`"),
        "a program and its arguments, started to speak MCP over its standard input and output",
    ),
    key(
        "allow",
        Shape::ToolPatterns,
        Default::Unset("`[\"*\"]`: every tool"),
        "the tools offered, by name: `*` stands for any run of characters",
    ),
    key(
        "token_env",
        Shape::EnvVar,
        Default::Unset("none"),
        "the name of the environment variable holding the bearer token of a `url` server",
    ),
    key(
        "timeout",
        Shape::Duration,
        Default::Word("30s"),
        "the most one call may take, such as `\"10s\"`",
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
    key(
        "tools",
        Shape::ToolNames,
        Default::Unset("none"),
        "the tools a scheduled run of the agent offers, by name",
    ),
    key(
        "timezone",
        Shape::TimeZone,
        Default::Word("UTC"),
        "the IANA time zone whose wall clock `schedule` is read on, such as `Europe/Paris`",
    ),
    key(
        "to",
        Shape::Addresses,
        Default::Unset("none"),
        "the email addresses a scheduled run's answer is sent to",
    ),
    key(
        "subject",
        Shape::OneLine {
            max: SUBJECT_MAX_CHARS,
        },
        Default::Unset("none"),
        "the subject of a scheduled run's answer: one line of at most 200 characters",
    ),
    key(
        "catch_up",
        Shape::OneOf(&CATCH_UP),
        Default::Word("latest"),
        "after downtime: `latest` fires the newest missed slot, `all` the newest `[agent] max_catch_up` of them, `none` none",
    ),
];

/// The names of `keys`, in order.
pub fn key_names(keys: &[Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}
