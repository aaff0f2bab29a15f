//! The `[agent]` and `[outbox]` tables of a persona: whether and how its replies are sent,
//! when they wait for a person, and the SMTP server they leave through.

use std::path::PathBuf;
use std::time::Duration;

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

names!(ReplyMode { Send => "send", Draft => "draft", Off => "off" });
names!(Approval { Never => "never", Always => "always", FirstContact => "first_contact" });
names!(Unauthenticated { Draft => "draft", Send => "send", Skip => "skip" });

/// The default of `[agent] max_cc`: the most Cc recipients of a reply sent without
/// approval.
pub const DEFAULT_MAX_CC: usize = 10;

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
        }
    }
}

impl PersonaAgent {
    /// Whether every reply waits for approval (`reply = "draft"` or `approval =
    /// "always"`).
    pub fn always_drafts(&self) -> bool {
        self.reply == ReplyMode::Draft || self.approval == Approval::Always
    }
}

/// How the connection to the SMTP server is secured (`[outbox] smtp` and `tls`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SmtpSecurity {
    /// `smtp://`: STARTTLS, required.
    #[default]
    StartTls,
    /// `smtps://`: TLS from the first byte.
    Implicit,
    /// `smtp://` with `tls = "none"`: plain text, accepted only for a loopback host.
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
    pub security: SmtpSecurity,
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
