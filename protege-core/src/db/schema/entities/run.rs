//! `runs`: one run answering a trigger (a reply to an inbound message or one firing of a
//! responsibility), with the usage its rounds reported.

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
    /// The wire format of its bodies and responses: `openai` or `anthropic`.
    pub format: String,
    /// The model of its bodies.
    pub model: String,
    /// `started`, `done` or `stopped`.
    pub status: String,
    /// How many rounds are recorded (0 at start).
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
    /// When it ended (`done` or `stopped`).
    pub finished_at: Option<DateTimeUtc>,
}

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
