//! The read-only context every resolver sees.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;
use serde::{Deserialize, Serialize};

use crate::cache::{CacheMode, CacheTtl};
use crate::db::strips::StoredStrip;
use crate::limits::{DEFAULT_TEMPLATE_FUEL, DEFAULT_TEMPLATE_OUTPUT_BYTES, TemplateLimits};
use crate::mail::Fence;
use crate::mail::{
    DEFAULT_ATTACHMENT_PARTS, DEFAULT_MESSAGE_TEXT_BYTES, MailLimits, MailMessage,
    TemplateValue as _, rfc3339_z,
};
use crate::message::ToolDef;
use crate::pricing::PriceOverrides;
pub use crate::render::{MailRender, MailStats, Quoted};
use crate::tokens::Tokenizer;

/// Which provider a persona's model belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI: Chat Completions, or Responses with `[model] api = "responses"`.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl Provider {
    /// The value as written in a persona file and in JSON: `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The environment variable holding the API key when `[model] api_key_env` is unset.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            Provider::Openai => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// Where requests go when `[model] base_url` is unset.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::Openai => "https://api.openai.com",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// Which of OpenAI's APIs a persona's requests use (`[model] api`, with `provider =
/// "openai"` only): Chat Completions (the default) or Responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenaiApi {
    /// Chat Completions: `POST /v1/chat/completions`.
    #[default]
    Chat,
    /// Responses: `POST /v1/responses`.
    Responses,
}

impl OpenaiApi {
    /// The value as written in a persona file: `chat` or `responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            OpenaiApi::Chat => "chat",
            OpenaiApi::Responses => "responses",
        }
    }

    /// The API of a value as written in a persona file, `None` for any other.
    pub fn parse(name: &str) -> Option<OpenaiApi> {
        match name {
            "chat" => Some(OpenaiApi::Chat),
            "responses" => Some(OpenaiApi::Responses),
            _ => None,
        }
    }
}

/// The `[model]` table of a persona: used by the wire formats, and by the agent to reach
/// the provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// The provider, when set.
    pub provider: Option<Provider>,
    /// `api` as written (OpenAI only): Chat Completions when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<OpenaiApi>,
    /// The model name, e.g. `claude-sonnet-4-5`.
    pub name: Option<String>,
    /// The output token budget.
    pub max_tokens: Option<u32>,
    /// Whether wire bodies ask the provider to cache their prefix (`[model] cache`).
    #[serde(default)]
    pub cache: CacheMode,
    /// How long Anthropic keeps the cached prefix (`[model] cache_ttl`, default `5m`).
    #[serde(default, skip_serializing_if = "CacheTtl::is_default")]
    pub cache_ttl: CacheTtl,
    /// `[model] prices` as written: USD per million tokens over the shipped table's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<PriceOverrides>,
    /// `api_key_env` as written: the environment variable holding the API key (see
    /// [`api_key_env`](Self::api_key_env) for the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// `base_url` as written (see [`base_url`](Self::base_url) for the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `timeout` as written (see [`timeout`](Self::timeout) for the default); in JSON,
    /// whole seconds followed by `s`, as in `"120s"`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "seconds_text"
    )]
    pub timeout: Option<Duration>,
}

impl ModelConfig {
    /// The environment variable holding the API key: `api_key_env`, else the provider's
    /// ([`Provider::default_api_key_env`]); `None` without either.
    pub fn api_key_env(&self) -> Option<&str> {
        self.api_key_env
            .as_deref()
            .or_else(|| self.provider.map(Provider::default_api_key_env))
    }

    /// Where requests go: `base_url`, else the provider's
    /// ([`Provider::default_base_url`]); `None` without either.
    pub fn base_url(&self) -> Option<&str> {
        self.base_url
            .as_deref()
            .or_else(|| self.provider.map(Provider::default_base_url))
    }

    /// Whether the persona's requests use OpenAI's Responses API: `provider = "openai"`
    /// with `api = "responses"`.
    pub fn uses_responses(&self) -> bool {
        self.provider == Some(Provider::Openai) && self.api == Some(OpenaiApi::Responses)
    }

    /// The most one provider request may take: `timeout`, else
    /// [`DEFAULT_MODEL_TIMEOUT`](crate::DEFAULT_MODEL_TIMEOUT).
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(crate::DEFAULT_MODEL_TIMEOUT)
    }
}

/// A duration as whole seconds followed by `s` (`"120s"`), read back from that form or
/// from a count of `m`, `h` or `d`.
mod seconds_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_str(&format!("{}s", d.as_secs())),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        let Some(text) = Option::<String>::deserialize(deserializer)? else {
            return Ok(None);
        };
        let invalid = || {
            serde::de::Error::custom(format!(
                "invalid duration `{text}`: expected a count and a unit `s`, `m`, `h` or `d`, such as `\"120s\"`"
            ))
        };
        let unit = text.chars().last().ok_or_else(invalid)?;
        let per_unit: u64 = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(invalid()),
        };
        let digits = &text[..text.len() - 1];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let seconds = digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(per_unit))
            .ok_or_else(invalid)?;
        Ok(Some(Duration::from_secs(seconds)))
    }
}

/// A scheduled task of a persona.
///
/// The keys a file may leave out have their defaults in [`Default`], so a responsibility
/// built in Rust names the rest with `..Responsibility::default()`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Responsibility {
    /// The name, unique within the persona.
    pub name: String,
    /// The 5-field cron expression, read on the wall clock of [`timezone`](Self::timezone).
    pub schedule: String,
    /// What to do.
    pub instructions: String,
    /// `tools`: the tools a scheduled run of the agent offers, by name (none by default).
    /// The names are checked at load as `[agent] reply_tools` are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// `timezone`: the IANA time zone of [`schedule`](Self::schedule) (default UTC).
    #[serde(default, skip_serializing_if = "is_utc")]
    pub timezone: chrono_tz::Tz,
    /// `to`: the addresses a scheduled run's answer is sent to, bare (none by default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// `subject`: the subject of a scheduled run's answer, one line (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// `catch_up`: what happens to the slots missed while no agent ran (default
    /// [`CatchUp::Latest`](crate::CatchUp::Latest)).
    #[serde(
        default,
        skip_serializing_if = "is_latest",
        serialize_with = "catch_up_name",
        deserialize_with = "catch_up_of_name"
    )]
    pub catch_up: crate::CatchUp,
}

fn is_utc(zone: &chrono_tz::Tz) -> bool {
    *zone == chrono_tz::Tz::UTC
}

fn is_latest(catch_up: &crate::CatchUp) -> bool {
    *catch_up == crate::CatchUp::Latest
}

fn catch_up_name<S: serde::Serializer>(
    catch_up: &crate::CatchUp,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(catch_up.as_str())
}

fn catch_up_of_name<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<crate::CatchUp, D::Error> {
    let name = String::deserialize(deserializer)?;
    crate::CatchUp::parse(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown `catch_up` value `{name}`, expected `latest`, `all` or `none`"
        ))
    })
}

/// What a persona is, apart from its chains: the data templates and wire formats read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PersonaInfo {
    /// The unique name.
    pub name: String,
    /// The instructions (empty when unset).
    pub instructions: String,
    /// The persona's own email addresses.
    pub addresses: Vec<String>,
    /// Free values for templates (`persona.vars`).
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// The model, when configured.
    pub model: Option<ModelConfig>,
    /// The tools the model may call: each `[[tools]]` entry that declares one (`name`,
    /// `description`, `input_schema`) and each `builtin`, in file order. The tools of `mcp`
    /// entries are listed by their servers, not here.
    pub tools: Vec<ToolDef>,
    /// What runs the tools protege runs itself (`http`, `mcp` and `builtin` entries), in
    /// file order; a tool of [`tools`](Self::tools) without one is the application's.
    pub tool_runners: Vec<crate::PersonaTool>,
    /// The scheduled tasks.
    pub responsibilities: Vec<Responsibility>,
    /// The persona's own template budget (`[limits]`), over the application's.
    pub limits: PersonaLimits,
    /// How the persona's mail is imported (`[mail]`).
    pub mail: PersonaMail,
    /// The `[agent]` table, when the file has one (its replies follow the defaults
    /// otherwise).
    pub agent: Option<crate::PersonaAgent>,
    /// The `[outbox]` table: the SMTP server its replies leave through.
    pub outbox: crate::PersonaOutbox,
    /// The `[inbox]` table: the IMAP mailbox its mail is fetched from, if any.
    pub inbox: Option<crate::PersonaInbox>,
}

/// The `[mail]` table of a persona: how its mail is imported and how mail bodies are
/// rendered for the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PersonaMail {
    /// The authserv-ids (RFC 8601) whose `Authentication-Results` headers an import trusts
    /// (`trusted_authserv_ids`): mail that arrived from outside counts as the persona's own
    /// only with such a header reporting `dmarc=pass` for its From domain.
    pub trusted_authserv_ids: Vec<String>,
    /// What a body shows of the text it quotes (`quoted`, default [`Quoted::Keep`]).
    pub quoted: Quoted,
    /// Whether every body sits between the lines of its thread's fence (`fence`, default
    /// false; see [`Fence`](crate::Fence)).
    pub fence: bool,
}

/// The `[limits]` table of a persona: each value set replaces the [`AppConfig`] default
/// for this persona's templates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PersonaLimits {
    /// The fuel of each render (`template_fuel`).
    pub template_fuel: Option<u64>,
    /// The output cap of each render in bytes (`template_output_bytes`).
    pub template_output_bytes: Option<usize>,
    /// The most bytes of one rendered message that reach the model (`message_text_bytes`).
    pub message_text_bytes: Option<usize>,
    /// The most attachments of a request sent as image or document parts
    /// (`attachment_parts`).
    pub attachment_parts: Option<usize>,
    /// The most rounds of a run (`max_rounds`, default
    /// [`DEFAULT_MAX_ROUNDS`](crate::DEFAULT_MAX_ROUNDS)).
    pub max_rounds: Option<u32>,
    /// The most bytes of one tool result recorded in a run (`tool_result_bytes`, default
    /// [`DEFAULT_TOOL_RESULT_BYTES`](crate::DEFAULT_TOOL_RESULT_BYTES)).
    pub tool_result_bytes: Option<usize>,
}

/// The default of `[limits] max_rounds`: the most rounds of one run.
pub const DEFAULT_MAX_ROUNDS: u32 = 16;

/// The default of `[limits] tool_result_bytes`: the most bytes of one tool result (1 MiB).
pub const DEFAULT_TOOL_RESULT_BYTES: usize = 1 << 20;

impl PersonaInfo {
    /// A persona with `name` and nothing else.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// The responsibility called `name`.
    pub fn responsibility(&self, name: &str) -> Option<&Responsibility> {
        self.responsibilities.iter().find(|r| r.name == name)
    }

    /// What runs the tool called `name`: its `http` or `builtin` entry, else the first
    /// `mcp` entry whose `allow` matches it; `None` for a tool the application runs or
    /// none of the persona.
    pub fn tool_runner(&self, name: &str) -> Option<&crate::PersonaTool> {
        self.tool_runners
            .iter()
            .find(|t| t.name.as_deref() == Some(name))
            .or_else(|| {
                if self.tools.iter().any(|t| t.name == name) {
                    return None;
                }
                self.tool_runners
                    .iter()
                    .find(|t| matches!(&t.runner, crate::ToolRunner::Mcp(mcp) if mcp.allows(name)))
            })
    }
}

/// Application settings: the root relative paths resolve against, the template budget,
/// how much of each email reaches the model, plus free settings.
///
/// ```
/// use protege::AppConfig;
/// let config = AppConfig::new("/srv/app").template_fuel(1_000_000).template_output_bytes(64 << 10);
/// assert_eq!((config.template_fuel, config.template_output_bytes), (1_000_000, 65_536));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// The app root.
    pub root: PathBuf,
    /// The fuel of each template render (default 5,000,000); a persona's
    /// `[limits] template_fuel` replaces it.
    pub template_fuel: u64,
    /// The most bytes of text one template render may write (default 1 MiB); a persona's
    /// `[limits] template_output_bytes` replaces it.
    pub template_output_bytes: usize,
    /// The most bytes of one rendered message that reach the model (default 256 KiB): a
    /// longer one is cut and ends with `[truncated: N more bytes]`; a persona's
    /// `[limits] message_text_bytes` replaces it.
    pub message_text_bytes: usize,
    /// The most attachments of one request sent as image or document parts (default 20);
    /// the others stay lines of the attachments block. A persona's
    /// `[limits] attachment_parts` replaces it.
    pub attachment_parts: usize,
    /// Free settings for custom resolvers.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Whether every file path, a literal one too, must lead inside the app root once its
    /// symlinks are followed (default `false`: a literal path an operator wrote is trusted).
    /// Set for personas that come from a request, such as the candidates of `POST /v1/diff`.
    pub confine_paths: bool,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self::new(PathBuf::new())
    }
}

impl AppConfig {
    /// Settings rooted at `root`, with the default template budget.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            template_fuel: DEFAULT_TEMPLATE_FUEL,
            template_output_bytes: DEFAULT_TEMPLATE_OUTPUT_BYTES,
            message_text_bytes: DEFAULT_MESSAGE_TEXT_BYTES,
            attachment_parts: DEFAULT_ATTACHMENT_PARTS,
            settings: serde_json::Map::new(),
            confine_paths: false,
        }
    }

    /// Sets whether literal file paths are confined to the app root as templated ones are.
    #[must_use = "returns the changed settings"]
    pub fn confine_paths(mut self, confine: bool) -> Self {
        self.confine_paths = confine;
        self
    }

    /// Sets the fuel of each template render.
    #[must_use = "returns the changed settings"]
    pub fn template_fuel(mut self, fuel: u64) -> Self {
        self.template_fuel = fuel;
        self
    }

    /// Sets the output cap of each template render, in bytes.
    #[must_use = "returns the changed settings"]
    pub fn template_output_bytes(mut self, bytes: usize) -> Self {
        self.template_output_bytes = bytes;
        self
    }

    /// Sets the most bytes of one rendered message that reach the model.
    #[must_use = "returns the changed settings"]
    pub fn message_text_bytes(mut self, bytes: usize) -> Self {
        self.message_text_bytes = bytes;
        self
    }

    /// Sets the most attachments of one request sent as image or document parts.
    #[must_use = "returns the changed settings"]
    pub fn attachment_parts(mut self, parts: usize) -> Self {
        self.attachment_parts = parts;
        self
    }
}

/// Why a chain runs: exactly one of a reply to a message or a scheduled responsibility.
#[derive(Debug, Clone)]
pub enum Trigger {
    /// A reply run: the inbound message being answered.
    Message(Arc<MailMessage>),
    /// A scheduled run.
    Responsibility(Responsibility),
}

/// The read-only context of one run: cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Context(Arc<Inner>);

struct Inner {
    persona: Arc<PersonaInfo>,
    config: Arc<AppConfig>,
    correlation_id: Option<String>,
    now: DateTime<Utc>,
    db: Option<DatabaseConnection>,
    trigger: Trigger,
    tokenizer: Tokenizer,
    vars: OnceLock<minijinja::Value>,
    fence_key: Option<Arc<[u8]>>,
    explain: bool,
    mail: Mutex<MailNotes>,
}

/// What rendering mail did in a run: the trailing user turn's stripped body, as
/// `ThreadHistory` read it, and, per resolver, what was removed.
#[derive(Debug, Default)]
struct MailNotes {
    current_strip: Option<StoredStrip>,
    stats: Vec<(String, MailStats)>,
    /// Per resolver, what `--explain` should say of it (a `LoadRecord` that found no row).
    notes: Vec<(String, String)>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("persona", &self.0.persona.name)
            .field("root", &self.0.config.root)
            .field("correlation_id", &self.0.correlation_id)
            .field("now", &self.0.now)
            .field("db", &self.0.db.is_some())
            .field("trigger", &self.0.trigger)
            .field("tokenizer", &self.0.tokenizer)
            .finish()
    }
}

/// Builds a [`Context`]; the trigger is required up front so there is always exactly one.
#[derive(Debug)]
#[must_use = "a ContextBuilder does nothing until `.build()`"]
pub struct ContextBuilder {
    persona: Arc<PersonaInfo>,
    config: Arc<AppConfig>,
    correlation_id: Option<String>,
    now: Option<DateTime<Utc>>,
    db: Option<DatabaseConnection>,
    trigger: Trigger,
    tokenizer: Option<Tokenizer>,
    fence_key: Option<Arc<[u8]>>,
    explain: bool,
}

impl ContextBuilder {
    /// Sets the secret the fences of `[mail] fence = true` derive their nonces from (the
    /// engine's: kept in the database, or `PROTEGE_FENCE_KEY`). Without one, a key drawn
    /// once per process serves: fences stay unguessable but change when the process
    /// restarts, and with them the cached prefix of a thread's requests.
    pub fn fence_key(mut self, key: impl Into<Arc<[u8]>>) -> Self {
        self.fence_key = Some(key.into());
        self
    }

    /// Whether the run also counts what the HTML converter dropped as hidden from the
    /// bodies it renders ([`MailStats::hidden_chars`], for `--explain`; default false): it
    /// converts each HTML body again, so a plain resolve leaves it off.
    pub fn explain(mut self, yes: bool) -> Self {
        self.explain = yes;
        self
    }

    /// Sets the correlation id (exposed to templates as `correlation_id`).
    pub fn correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Fixes `now` for reproducible output; defaults to the current time.
    pub fn now(mut self, now: DateTime<Utc>) -> Self {
        self.now = Some(now);
        self
    }

    /// Sets the database connection used by LoadRecord and ThreadHistory.
    pub fn db(mut self, db: DatabaseConnection) -> Self {
        self.db = Some(db);
        self
    }

    /// Sets how the run counts tokens (`ThreadHistory`'s `max_tokens`); defaults to the
    /// tokenizer of the persona's `[model] name` ([`Tokenizer::for_model`]).
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = Some(tokenizer);
        self
    }

    /// Finishes the context.
    pub fn build(self) -> Context {
        let tokenizer = self.tokenizer.unwrap_or_else(|| {
            Tokenizer::for_optional_model(
                self.persona.model.as_ref().and_then(|m| m.name.as_deref()),
            )
        });
        Context(Arc::new(Inner {
            persona: self.persona,
            config: self.config,
            correlation_id: self.correlation_id,
            now: self.now.unwrap_or_else(Utc::now),
            db: self.db,
            trigger: self.trigger,
            tokenizer,
            vars: OnceLock::new(),
            fence_key: self.fence_key,
            explain: self.explain,
            mail: Mutex::default(),
        }))
    }
}

impl Context {
    /// Starts a context for `persona` under `config`, run by `trigger`.
    pub fn builder(
        persona: impl Into<Arc<PersonaInfo>>,
        config: impl Into<Arc<AppConfig>>,
        trigger: Trigger,
    ) -> ContextBuilder {
        ContextBuilder {
            persona: persona.into(),
            config: config.into(),
            correlation_id: None,
            now: None,
            db: None,
            trigger,
            tokenizer: None,
            fence_key: None,
            explain: false,
        }
    }

    /// The persona being run.
    pub fn persona(&self) -> &PersonaInfo {
        &self.0.persona
    }

    /// The application settings (app root).
    pub fn config(&self) -> &AppConfig {
        &self.0.config
    }

    /// The correlation id, when set.
    pub fn correlation_id(&self) -> Option<&str> {
        self.0.correlation_id.as_deref()
    }

    /// The time of the run.
    pub fn now(&self) -> DateTime<Utc> {
        self.0.now
    }

    /// The database connection, when configured.
    pub fn db(&self) -> Option<&DatabaseConnection> {
        self.0.db.as_ref()
    }

    /// What triggered the run.
    pub fn trigger(&self) -> &Trigger {
        &self.0.trigger
    }

    /// How the run counts tokens: the tokenizer of its model.
    pub fn tokenizer(&self) -> Tokenizer {
        self.0.tokenizer
    }

    /// The inbound message of a reply run; `None` in a scheduled run.
    pub fn message(&self) -> Option<&MailMessage> {
        match &self.0.trigger {
            Trigger::Message(m) => Some(m),
            Trigger::Responsibility(_) => None,
        }
    }

    /// The responsibility of a scheduled run; `None` in a reply run.
    pub fn responsibility(&self) -> Option<&Responsibility> {
        match &self.0.trigger {
            Trigger::Responsibility(r) => Some(r),
            Trigger::Message(_) => None,
        }
    }

    /// The budget of each template render in this run: the persona's `[limits]` where
    /// set, else the application's.
    pub fn template_limits(&self) -> TemplateLimits {
        let app = &self.0.config;
        let persona = &self.0.persona.limits;
        TemplateLimits {
            fuel: persona.template_fuel.unwrap_or(app.template_fuel),
            output_bytes: persona
                .template_output_bytes
                .unwrap_or(app.template_output_bytes),
        }
    }

    /// How much of each email reaches the model in this run: the persona's `[limits]`
    /// where set, else the application's.
    pub fn mail_limits(&self) -> MailLimits {
        let app = &self.0.config;
        let persona = &self.0.persona.limits;
        MailLimits {
            message_text_bytes: persona.message_text_bytes.unwrap_or(app.message_text_bytes),
            attachment_parts: persona.attachment_parts.unwrap_or(app.attachment_parts),
        }
    }

    /// How this run renders mail bodies: the persona's `[mail] quoted`, the fence of the
    /// trigger's thread when `[mail] fence` is on (none in a scheduled run), and the
    /// `[limits] message_text_bytes` cut.
    pub fn mail_render(&self) -> MailRender {
        let mail = &self.0.persona.mail;
        let fence = match (&self.0.trigger, mail.fence) {
            (Trigger::Message(m), true) => {
                let key = self.0.fence_key.clone().unwrap_or_else(process_fence_key);
                Some(Fence::new(&key, &m.thread_id.to_string()))
            }
            _ => None,
        };
        MailRender {
            quoted: mail.quoted,
            fence,
            text_limit: self.mail_limits().message_text_bytes,
            count_hidden: self.0.explain,
        }
    }

    /// Records what rendering the mail of `resolver` removed and changed; with
    /// `current_strip`, also the trigger's stripped body, for the trailing user turn.
    pub(crate) fn note_mail(
        &self,
        resolver: &str,
        stats: MailStats,
        current_strip: Option<StoredStrip>,
    ) {
        let mut notes = self
            .0
            .mail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(strip) = current_strip {
            notes.current_strip = Some(strip);
        }
        if stats.is_empty() {
            return;
        }
        match notes.stats.iter_mut().find(|(name, _)| name == resolver) {
            Some((_, total)) => total.add(stats),
            None => notes.stats.push((resolver.to_owned(), stats)),
        }
    }

    /// The trigger's stripped body as `ThreadHistory` read it in this run, taken (`None`
    /// when it did not run with `quoted = "strip"` for the persona).
    pub(crate) fn take_current_strip(&self) -> Option<StoredStrip> {
        self.0
            .mail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .current_strip
            .take()
    }

    /// Records a sentence `--explain` shows under its table for `resolver`.
    pub(crate) fn note(&self, resolver: &str, text: String) {
        self.0
            .mail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .notes
            .push((resolver.to_owned(), text));
    }

    /// The sentences recorded for `resolver`, in order, taken: the first step of that name
    /// reports them (each names what it is about, such as the table).
    pub(crate) fn take_notes(&self, resolver: &str) -> Vec<String> {
        let mut mail = self
            .0
            .mail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut mail.notes)
            .into_iter()
            .partition(|(name, _)| name == resolver);
        mail.notes = others;
        mine.into_iter().map(|(_, text)| text).collect()
    }

    /// What rendering mail removed and changed, per resolver name.
    pub(crate) fn mail_stats(&self, resolver: &str) -> MailStats {
        self.0
            .mail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .stats
            .iter()
            .find(|(name, _)| name == resolver)
            .map(|(_, s)| *s)
            .unwrap_or_default()
    }

    /// The template variables of this run, computed once and shared.
    pub fn template_vars(&self) -> &minijinja::Value {
        self.0.vars.get_or_init(|| self.compute_vars())
    }

    fn compute_vars(&self) -> minijinja::Value {
        use minijinja::Value;
        let p = &self.0.persona;
        let mut map = std::collections::BTreeMap::<&str, Value>::new();
        map.insert(
            "persona",
            minijinja::context! {
                name => p.name.clone(),
                instructions => p.instructions.clone(),
                vars => Value::from(minijinja::value::Serde(&p.vars)),
            },
        );
        match &self.0.trigger {
            Trigger::Message(m) => {
                let limit = self.mail_limits().message_text_bytes;
                let fence = self.mail_render().fence;
                map.insert("message", m.template_value(limit, fence.as_ref()));
            }
            Trigger::Responsibility(r) => {
                map.insert(
                    "responsibility",
                    minijinja::context! {
                        name => r.name.clone(),
                        schedule => r.schedule.clone(),
                        instructions => r.instructions.clone(),
                    },
                );
            }
        }
        let fence_note = self
            .mail_render()
            .fence
            .map(|f| f.note())
            .unwrap_or_default();
        map.insert("mail", minijinja::context! { fence_note => fence_note });
        if let Some(id) = &self.0.correlation_id {
            map.insert("correlation_id", Value::from(id.as_str()));
        }
        map.insert("now", Value::from(rfc3339_z(&self.0.now)));
        Value::from(map)
    }
}

/// The fence key of a context given none: 32 random bytes drawn once per process.
fn process_fence_key() -> Arc<[u8]> {
    static KEY: OnceLock<Arc<[u8]>> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // The operating system's source failed: the process's randomly keyed hasher.
            use std::hash::{BuildHasher, Hasher};
            for chunk in key.chunks_mut(8) {
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u128(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos()),
                );
                chunk.copy_from_slice(&h.finish().to_le_bytes());
            }
        }
        Arc::from(key.as_slice())
    })
    .clone()
}
