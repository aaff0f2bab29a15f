//! `runs`: one run answering a trigger (a reply to an inbound message or one firing of a
//! responsibility), with the usage its rounds reported. The usage columns sum every stored
//! round's, a pending round's included (the provider was paid for its response).

use sea_orm::entity::prelude::*;

/// A row of `runs`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "runs")]
pub struct Model {
    /// The run's id: `run_` and a ULID (unique, sortable by start time).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The persona that runs.
    pub persona: String,
    /// The inbound message answered (→ `messages.id`); `None` for a scheduled run.
    pub message_id: Option<i64>,
    /// The responsibility fired; `None` for a reply run.
    pub responsibility: Option<String>,
    /// The wire format of its bodies and responses, stored as its name (`openai`,
    /// `openai-responses` or `anthropic`).
    pub format: RunFormat,
    /// The model of its bodies.
    pub model: String,
    /// Where the run stands, stored as its name (`started`, `waiting`, `done`, `stopped` or
    /// `abandoned`).
    pub status: RunStatus,
    /// How many rounds are recorded with their results (0 at start); a pending round (its
    /// response stored, its results not yet) is not counted.
    pub rounds: i32,
    /// Uncached input tokens, summed over the rounds.
    pub input_tokens: i64,
    /// Output tokens, summed over the rounds.
    pub output_tokens: i64,
    /// Input tokens read from the provider's cache, summed over the rounds.
    pub cache_read_tokens: i64,
    /// Input tokens written to the provider's cache, summed over the rounds.
    pub cache_write_tokens: i64,
    /// The SHA-256 (hex) of round 0's body as compact JSON.
    pub request_sha256: String,
    /// Round 0's request in canonical JSON with what the wire format needs to build the
    /// next bodies (cache hints, output budget, cache mode): the next bodies are built from
    /// it, never by resolving again.
    #[sea_orm(column_type = "Text")]
    pub request: String,
    /// When the run started.
    pub started_at: DateTimeUtc,
    /// When it ended (`done`, `stopped` or `abandoned`).
    pub finished_at: Option<DateTimeUtc>,
}

/// The wire format of a run's bodies and responses, stored as its name: the text of
/// [`RunFormat::as_str`], the same in JSON.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "Text")]
pub enum RunFormat {
    /// OpenAI Chat Completions.
    #[sea_orm(string_value = "openai")]
    #[serde(rename = "openai")]
    Openai,
    /// OpenAI Responses.
    #[sea_orm(string_value = "openai-responses")]
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Anthropic Messages.
    #[sea_orm(string_value = "anthropic")]
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl RunFormat {
    /// Every format.
    pub const ALL: [RunFormat; 3] = [
        RunFormat::Openai,
        RunFormat::OpenaiResponses,
        RunFormat::Anthropic,
    ];

    /// Its name, as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunFormat::Openai => "openai",
            RunFormat::OpenaiResponses => "openai-responses",
            RunFormat::Anthropic => "anthropic",
        }
    }

    /// The format named `name`, as stored.
    pub fn parse(name: &str) -> Option<RunFormat> {
        RunFormat::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// The provider whose API speaks it.
    pub const fn provider(self) -> crate::Provider {
        match self {
            RunFormat::Anthropic => crate::Provider::Anthropic,
            RunFormat::Openai | RunFormat::OpenaiResponses => crate::Provider::Openai,
        }
    }
}

impl std::fmt::Display for RunFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a run stands, stored as its name: the text of [`RunStatus::as_str`], the same
/// in JSON.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "Text")]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It goes on: its next round may be recorded.
    #[sea_orm(string_value = "started")]
    Started,
    /// It waits for an operator's decision on its pending tool calls.
    #[sea_orm(string_value = "waiting")]
    Waiting,
    /// Its model answered without tool calls.
    #[sea_orm(string_value = "done")]
    Done,
    /// The provider or a limit stopped it (a refusal, an output budget, `[limits]
    /// max_rounds`).
    #[sea_orm(string_value = "stopped")]
    Stopped,
    /// The application gave it up (`POST /v1/runs/{id}/abandon`).
    #[sea_orm(string_value = "abandoned")]
    Abandoned,
}

impl RunStatus {
    /// Every status, in the order a run goes through them.
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Started,
        RunStatus::Waiting,
        RunStatus::Done,
        RunStatus::Stopped,
        RunStatus::Abandoned,
    ];

    /// Its name, as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunStatus::Started => "started",
            RunStatus::Waiting => "waiting",
            RunStatus::Done => "done",
            RunStatus::Stopped => "stopped",
            RunStatus::Abandoned => "abandoned",
        }
    }

    /// The status named `name`, as stored.
    pub fn parse(name: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether the run has not ended ([`GOING_ON`]): only such a run can be abandoned.
    pub fn is_going_on(self) -> bool {
        matches!(self, RunStatus::Started | RunStatus::Waiting)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The status of a run that goes on: its next round may be recorded.
pub const STARTED: &str = RunStatus::Started.as_str();
/// The status of a run that waits for an operator's decision on its pending tool calls.
pub const WAITING: &str = RunStatus::Waiting.as_str();
/// The status of a run whose model answered without tool calls.
pub const DONE: &str = RunStatus::Done.as_str();
/// The status of a run that the provider or a limit stopped (a refusal, an output budget,
/// `[limits] max_rounds`).
pub const STOPPED: &str = RunStatus::Stopped.as_str();
/// The status of a run given up by the application (`POST /v1/runs/{id}/abandon`).
pub const ABANDONED: &str = RunStatus::Abandoned.as_str();

/// The statuses of a run that has not ended: [`STARTED`] and [`WAITING`]. Only such a run
/// can be abandoned.
pub const GOING_ON: [&str; 2] = [STARTED, WAITING];

/// The statuses of a run whose tool rounds a thread's history replays: [`DONE`] and
/// [`STOPPED`]. A run that goes on or was abandoned is not replayed, so an application that
/// starts over never replays a half run next to the new one.
pub const REPLAYED: [&str; 2] = [DONE, STOPPED];

/// The relations of `runs`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The inbound message answered.
    #[sea_orm(
        belongs_to = "super::message::Entity",
        from = "Column::MessageId",
        to = "super::message::Column::Id"
    )]
    Message,
}

impl Related<super::message::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Message.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
