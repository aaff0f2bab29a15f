//! The `[agent]` and `[outbox]` tables of a persona: whether and how its replies are sent,
//! when they wait for a person, which mail the agent answers and how often, and the SMTP
//! server the replies leave through; and what runs each tool of `[[tools]]` (`http`, `mcp`
//! or `builtin`).

use std::path::PathBuf;
use std::time::Duration;

use crate::message::ToolDef;

/// What happens to a reply (`[agent] reply`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ReplyMode {
    /// The reply is queued and delivered (unless another rule makes it wait).
    #[default]
    Send,
    /// Every reply waits for approval.
    Draft,
    /// No reply is composed; queued replies no person approved are held.
    Off,
}

/// When a reply waits for a person (`[agent] approval`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Approval {
    /// Never (other rules may still make it wait).
    #[default]
    Never,
    /// Always: the same as `reply = "draft"`.
    Always,
    /// When any of its recipients never received a sent message of the persona.
    FirstContact,
}

/// What happens to a reply to a sender who is not authenticated (`[agent]
/// unauthenticated`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Unauthenticated {
    /// The reply waits for approval.
    #[default]
    Draft,
    /// The reply is sent like any other.
    Send,
    /// No reply is composed.
    Skip,
}

macro_rules! names {
    ($type:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $type {
            /// Every name, in order, as TOML spells them.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The lowercase name used in TOML.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($type::$variant => $name),+
                }
            }

            /// Parses the lowercase name; `None` for anything else.
            pub fn parse(name: &str) -> Option<Self> {
                match name {
                    $($name => Some($type::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

/// What the agent does with a message of a thread whose newest outbound message a person
/// wrote (`[agent] after_person`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AfterPerson {
    /// The job is skipped (`person_replied`): a person has taken the thread over.
    #[default]
    Skip,
    /// The message is answered like any other.
    Answer,
}

/// What happens to the slots of a responsibility missed while no agent ran
/// (`[[responsibilities]] catch_up`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CatchUp {
    /// Only the newest missed slot fires.
    #[default]
    Latest,
    /// The newest missed slots fire, at most `[agent] max_catch_up` of them.
    All,
    /// None fires: only a slot that is on time does.
    None,
}

/// A tool protege carries itself (`[[tools]] builtin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinTool {
    /// `read_attachment`: an attachment of the trigger's thread, by id.
    ReadAttachment,
}

names!(ReplyMode { Send => "send", Draft => "draft", Off => "off" });
names!(Approval { Never => "never", Always => "always", FirstContact => "first_contact" });
names!(Unauthenticated { Draft => "draft", Send => "send", Skip => "skip" });
names!(AfterPerson { Skip => "skip", Answer => "answer" });
names!(BuiltinTool { ReadAttachment => "read_attachment" });
names!(CatchUp { Latest => "latest", All => "all", None => "none" });

/// The description the model reads of `read_attachment`, unless the entry gives its own.
pub const READ_ATTACHMENT_DESCRIPTION: &str = "Read an attachment of this email thread by its id (the `id` the attachments list shows): its text, or the image or document itself.";

impl BuiltinTool {
    /// The tool as the model is offered it: its name, the default description and its
    /// input schema.
    pub fn tool_def(self) -> ToolDef {
        match self {
            BuiltinTool::ReadAttachment => ToolDef {
                name: self.as_str().to_owned(),
                description: READ_ATTACHMENT_DESCRIPTION.to_owned(),
                input_schema: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "attachment_id": {
                            "type": "string",
                            "description": "The id of the attachment, as the attachments list of a message shows it."
                        }
                    },
                    "required": ["attachment_id"]
                }),
            },
        }
    }
}

/// The attachment a call of the built-in `read_attachment` asks for: its `attachment_id`
/// (a number, or a string) as text; `None` when the input has none.
pub fn read_attachment_id(input: &serde_json::Value) -> Option<String> {
    match input.get("attachment_id")? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The default of `[agent] max_cc`: the most Cc recipients of a reply sent without
/// approval.
pub const DEFAULT_MAX_CC: usize = 10;

/// The default of `[agent] max_age`: a message whose Date is more than this before it was
/// received is not answered (`stale`; 7 days).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The default of `[agent] max_replies_per_thread_per_day`: the most replies of one thread
/// in the last 24 hours.
pub const DEFAULT_MAX_REPLIES_PER_THREAD_PER_DAY: u32 = 5;

/// The default of `[agent] max_replies_per_correspondent_per_day`: the most replies to one
/// recipient (To or Cc, any thread) in the last 24 hours.
pub const DEFAULT_MAX_REPLIES_PER_CORRESPONDENT_PER_DAY: u32 = 10;

/// The default of `[agent] max_replies_per_day`: the most replies of the persona in the
/// last 24 hours.
pub const DEFAULT_MAX_REPLIES_PER_DAY: u32 = 1000;

/// The default of `[agent] provider_attempts`: the most requests for one round within one
/// claim of a job, the first included.
pub const DEFAULT_PROVIDER_ATTEMPTS: u32 = 5;

/// The default of `[agent] max_attempts`: the most claims of a job that does not finish
/// before it fails (`crashed`).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The default of `[agent] give_up_after`: how long a job whose provider keeps failing is
/// retried before it fails (24 hours). Not the outbox's [`DEFAULT_GIVE_UP_AFTER`].
pub const DEFAULT_JOB_GIVE_UP_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The default of `[agent] pause`: how long the jobs of a persona wait after the provider
/// refused its key or model (401, 403, 404), unless the file changes first (10 minutes).
pub const DEFAULT_PAUSE: Duration = Duration::from_secs(10 * 60);

/// The default of `[agent] max_catch_up`: the most missed slots of one responsibility that
/// `catch_up = "all"` fires at once.
pub const DEFAULT_MAX_CATCH_UP: u32 = 24;

/// The default of `[model] timeout`: the most one provider request may take (120 s).
pub const DEFAULT_MODEL_TIMEOUT: Duration = Duration::from_secs(120);

/// The default of the `timeout` of an `http` or `mcp` tool: the most one call may take
/// (30 s).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// The `[agent]` table of a persona, as far as its replies are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonaAgent {
    /// `reply` (default [`ReplyMode::Send`]).
    pub reply: ReplyMode,
    /// `approval` (default [`Approval::Never`]).
    pub approval: Approval,
    /// `unauthenticated` (default [`Unauthenticated::Draft`]).
    pub unauthenticated: Unauthenticated,
    /// `reply_all` (default false): the trigger's To and Cc, minus persona addresses, are
    /// copied when its sender is authenticated.
    pub reply_all: bool,
    /// `max_cc` (default [`DEFAULT_MAX_CC`]): with more Cc recipients the reply has none and
    /// waits for approval.
    pub max_cc: usize,
    /// `html` (default false): the reply is `multipart/alternative` with the Markdown
    /// rendered to HTML.
    pub html: bool,
    /// `answer_automated` (default false): automated mail (auto-replies, bulk and list
    /// mail, delivery reports) is answered too.
    pub answer_automated: bool,
    /// `answer_cc` (default true): mail that names the persona only in Cc is answered.
    pub answer_cc: bool,
    /// `after_person` (default [`AfterPerson::Skip`]).
    pub after_person: AfterPerson,
    /// `max_age` (default [`DEFAULT_MAX_AGE`]).
    pub max_age: Duration,
    /// `max_replies_per_thread_per_day` (default
    /// [`DEFAULT_MAX_REPLIES_PER_THREAD_PER_DAY`]).
    pub max_replies_per_thread_per_day: u32,
    /// `max_replies_per_correspondent_per_day` (default
    /// [`DEFAULT_MAX_REPLIES_PER_CORRESPONDENT_PER_DAY`]).
    pub max_replies_per_correspondent_per_day: u32,
    /// `max_replies_per_day` (default [`DEFAULT_MAX_REPLIES_PER_DAY`]).
    pub max_replies_per_day: u32,
    /// `tokens_per_day`: all tokens of the persona's runs since 00:00 UTC past which jobs
    /// wait for the next day; `None` (the default) for no limit.
    pub tokens_per_day: Option<u64>,
    /// `provider_attempts` (default [`DEFAULT_PROVIDER_ATTEMPTS`]).
    pub provider_attempts: u32,
    /// `max_attempts` (default [`DEFAULT_MAX_ATTEMPTS`]).
    pub max_attempts: u32,
    /// `give_up_after` (default [`DEFAULT_JOB_GIVE_UP_AFTER`]).
    pub give_up_after: Duration,
    /// `pause` (default [`DEFAULT_PAUSE`]).
    pub pause: Duration,
    /// `reply_tools`: the tools a reply run offers, by name; `None` (the default) for
    /// every tool of the persona. The names are checked at load: each is a tool of the
    /// persona, or matches the `allow` of one of its `mcp` entries.
    pub reply_tools: Option<Vec<String>>,
    /// `max_catch_up` (default [`DEFAULT_MAX_CATCH_UP`]): the most missed slots of one
    /// responsibility that `catch_up = "all"` fires at once.
    pub max_catch_up: u32,
}

impl Default for PersonaAgent {
    fn default() -> Self {
        Self {
            reply: ReplyMode::default(),
            approval: Approval::default(),
            unauthenticated: Unauthenticated::default(),
            reply_all: false,
            max_cc: DEFAULT_MAX_CC,
            html: false,
            answer_automated: false,
            answer_cc: true,
            after_person: AfterPerson::default(),
            max_age: DEFAULT_MAX_AGE,
            max_replies_per_thread_per_day: DEFAULT_MAX_REPLIES_PER_THREAD_PER_DAY,
            max_replies_per_correspondent_per_day: DEFAULT_MAX_REPLIES_PER_CORRESPONDENT_PER_DAY,
            max_replies_per_day: DEFAULT_MAX_REPLIES_PER_DAY,
            tokens_per_day: None,
            provider_attempts: DEFAULT_PROVIDER_ATTEMPTS,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            give_up_after: DEFAULT_JOB_GIVE_UP_AFTER,
            pause: DEFAULT_PAUSE,
            reply_tools: None,
            max_catch_up: DEFAULT_MAX_CATCH_UP,
        }
    }
}

/// The daily reply caps of `[agent]` (§17), checked in the transaction that claims a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyCaps {
    /// `max_replies_per_thread_per_day`.
    pub thread: u32,
    /// `max_replies_per_correspondent_per_day`.
    pub correspondent: u32,
    /// `max_replies_per_day`.
    pub persona: u32,
}

impl PersonaAgent {
    /// Its daily reply caps.
    pub fn reply_caps(&self) -> ReplyCaps {
        ReplyCaps {
            thread: self.max_replies_per_thread_per_day,
            correspondent: self.max_replies_per_correspondent_per_day,
            persona: self.max_replies_per_day,
        }
    }

    /// Whether every reply waits for approval (`reply = "draft"` or `approval =
    /// "always"`).
    pub fn always_drafts(&self) -> bool {
        self.reply == ReplyMode::Draft || self.approval == Approval::Always
    }

    /// Whether a reply run offers the tool called `name` (`reply_tools`, every tool when
    /// unset).
    pub fn offers_reply_tool(&self, name: &str) -> bool {
        self.reply_tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// A tool of `[[tools]]` that protege runs: an `http` or `builtin` tool, or the tools of an
/// `mcp` server. An entry without a runner is a tool the application runs; it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonaTool {
    /// The tool's name; `None` for an `mcp` entry, whose tools the server lists.
    pub name: Option<String>,
    /// What runs it.
    pub runner: ToolRunner,
    /// `approval` (default false): a run that calls it waits for a person before the call
    /// is made.
    pub approval: bool,
}

/// What runs a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRunner {
    /// `http = { url, secret_env, timeout }`: a signed `POST` of the input.
    Http(HttpTool),
    /// `mcp = { url | command, allow, token_env, timeout }`: the tools an MCP server lists.
    Mcp(McpTool),
    /// `builtin = "NAME"`: a tool protege carries.
    Builtin(BuiltinTool),
}

/// An `http` tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTool {
    /// `url`: an `http://` or `https://` URL, the input `POST`ed to it.
    pub url: String,
    /// `secret_env`: the environment variable holding the key of the request signature.
    pub secret_env: Option<String>,
    /// `timeout` (default [`DEFAULT_TOOL_TIMEOUT`]): the most one call may take.
    pub timeout: Duration,
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServer {
    /// `url`: streamable HTTP.
    Url(String),
    /// `command`: a program and its arguments, spoken to over its standard input and
    /// output.
    Command(Vec<String>),
}

/// An `mcp` entry: the tools of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpTool {
    /// `url` or `command`, exactly one.
    pub server: McpServer,
    /// `allow` (default `["*"]`): the patterns of the tool names offered, `*` standing for
    /// any run of characters.
    pub allow: Vec<String>,
    /// `token_env`: the environment variable holding the bearer token of a `url` server.
    pub token_env: Option<String>,
    /// `timeout` (default [`DEFAULT_TOOL_TIMEOUT`]): the most one call may take.
    pub timeout: Duration,
}

impl McpTool {
    /// Whether a tool the server lists as `name` is offered: it matches a pattern of
    /// `allow`.
    pub fn allows(&self, name: &str) -> bool {
        self.allow.iter().any(|pattern| glob_matches(pattern, name))
    }
}

/// Whether `name` matches `pattern`, in which `*` stands for any run of characters (none
/// too) and every other character for itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    // `split` yields at least one part.
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        // No `*`: the whole name.
        return rest.is_empty();
    };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// How the connection to a mail server is secured (`[outbox] smtp` and `tls`, `[inbox]
/// imap` and `tls`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TlsMode {
    /// `smtp://`, `imap://`: STARTTLS, required.
    #[default]
    StartTls,
    /// `smtps://`, `imaps://`: TLS from the first byte.
    Implicit,
    /// `smtp://` or `imap://` with `tls = "none"`: plain text, accepted only for a
    /// loopback host.
    None,
}

/// The SMTP server of a persona's outbox (`[outbox] smtp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpServer {
    /// The host name or address.
    pub host: String,
    /// The port (default 587 for `smtp://`, 465 for `smtps://`).
    pub port: u16,
    /// How the connection is secured.
    pub security: TlsMode,
}

/// The default of `[outbox] give_up_after`: how long a reply the server answers with 4xx
/// is retried (2 days).
pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(2 * 24 * 3600);

/// The default of `[outbox] attempt_timeout`: the most one SMTP exchange may take (11
/// minutes, above RFC 5321's 10-minute wait for the final reply).
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(11 * 60);

/// The `[outbox]` table of a persona: the SMTP server its replies leave through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonaOutbox {
    /// `smtp`; `None` when the application delivers the bytes itself.
    pub smtp: Option<SmtpServer>,
    /// `user`: the SMTP login, if any.
    pub user: Option<String>,
    /// `password_env`: the environment variable holding the SMTP password.
    pub password_env: Option<String>,
    /// `give_up_after` (default [`DEFAULT_GIVE_UP_AFTER`]).
    pub give_up_after: Duration,
    /// `attempt_timeout` (default [`DEFAULT_ATTEMPT_TIMEOUT`]).
    pub attempt_timeout: Duration,
    /// `ca_file`: a PEM bundle added to the system roots, resolved against the app root.
    pub ca_file: Option<PathBuf>,
    /// `from_name`: the display name of the From header (none by default).
    pub from_name: Option<String>,
}

impl Default for PersonaOutbox {
    fn default() -> Self {
        Self {
            smtp: None,
            user: None,
            password_env: None,
            give_up_after: DEFAULT_GIVE_UP_AFTER,
            attempt_timeout: DEFAULT_ATTEMPT_TIMEOUT,
            ca_file: None,
            from_name: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stands_for_any_run() {
        for (pattern, name) in [
            ("*", "anything"),
            ("*", ""),
            ("search_*", "search_"),
            ("search_*", "search_articles"),
            ("*_article", "get_article"),
            ("get_*_v2", "get_order_v2"),
            ("a*b*c", "abc"),
            ("a*b*c", "a-x-b-y-c"),
            ("exact", "exact"),
            ("**", "x"),
        ] {
            assert!(glob_matches(pattern, name), "{pattern} {name}");
        }
        for (pattern, name) in [
            ("search_*", "research_x"),
            ("search_*", "search"),
            ("*_article", "get_articles"),
            ("a*b*c", "acb"),
            ("a*a", "a"),
            ("exact", "exactly"),
            ("", "x"),
        ] {
            assert!(!glob_matches(pattern, name), "{pattern} {name}");
        }
    }
}

/// The default of `[inbox] poll`: how often a server without IDLE is asked for new mail.
pub const DEFAULT_INBOX_POLL: Duration = Duration::from_secs(60);

/// What is done to a fetched message once it is stored (`[inbox] after`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum InboxAfter {
    /// `"seen"`: the `\Seen` flag is set; the message stays in the folder.
    #[default]
    Seen,
    /// `"move:FOLDER"`: the message is moved to FOLDER.
    Move(String),
}

/// The `[inbox]` table of a persona: the IMAP mailbox its mail is fetched from (§19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonaInbox {
    /// The server's host name or address (of `imap`).
    pub host: String,
    /// The port (default 143 for `imap://`, 993 for `imaps://`).
    pub port: u16,
    /// How the connection is secured.
    pub security: TlsMode,
    /// The folder read (the URL's path, default `INBOX`).
    pub folder: String,
    /// `user`: the IMAP login.
    pub user: String,
    /// `password_env`: the environment variable holding the password.
    pub password_env: String,
    /// `after`.
    pub after: InboxAfter,
    /// `since`: older mail from this day on is stored too (without jobs) on the first sync.
    pub since: Option<chrono::NaiveDate>,
    /// `poll` (default [`DEFAULT_INBOX_POLL`]).
    pub poll: Duration,
    /// `sent`: the folder of the mail sent from the mailbox, read too (stored outbound).
    pub sent: Option<String>,
    /// `ca_file`: a PEM bundle added to the system roots, resolved against the app root.
    pub ca_file: Option<PathBuf>,
}

impl PersonaInbox {
    /// The mailbox as one key: `user@host:port/FOLDER` (lowercased host), what
    /// `inbox_state` and `inbox_rejects` name it by, and what two personas may not share.
    pub fn key(&self) -> String {
        self.key_of(&self.folder)
    }

    /// [`key`](Self::key) of another folder of the same account (`sent`).
    pub fn key_of(&self, folder: &str) -> String {
        format!(
            "{}@{}:{}/{}",
            self.user,
            self.host.to_ascii_lowercase(),
            self.port,
            folder
        )
    }
}
