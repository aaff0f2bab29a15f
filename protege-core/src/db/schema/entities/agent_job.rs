//! `agent_jobs`: one unit of the agent's work (§17): answering an inbound message, or one
//! firing of a responsibility.

use sea_orm::entity::prelude::*;

/// A row of `agent_jobs`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "agent_jobs")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The inbound message answered (→ `messages.id`), unique; `None` for a scheduled job.
    #[sea_orm(unique)]
    pub message_id: Option<i64>,
    /// The responsibility's slot fired (→ `responsibility_slots.id`), unique; `None` for a
    /// reply job.
    #[sea_orm(unique)]
    pub slot_id: Option<i64>,
    /// The persona that answers.
    pub persona: String,
    /// `queued`, `running`, `waiting`, `done`, `skipped` or `failed`.
    pub state: String,
    /// Why it was skipped, deferred, paused or failed.
    #[sea_orm(column_type = "Text", nullable)]
    pub reason: Option<String>,
    /// What the message's headers decided when it was stored (`automated`,
    /// `no_reply_address`, `loop`, `stale`); `None` when they let it through.
    #[sea_orm(column_type = "Text", nullable)]
    pub gate_reason: Option<String>,
    /// The run answering it, once started (→ `runs.id`).
    pub run_id: Option<String>,
    /// How many times it was claimed.
    pub attempts: i32,
    /// When it may be claimed again; `None` when now.
    pub next_attempt_at: Option<DateTimeUtc>,
    /// The worker holding it while it is `running`.
    #[sea_orm(column_type = "Text", nullable)]
    pub lease_owner: Option<String>,
    /// When that lease runs out.
    pub lease_until: Option<DateTimeUtc>,
    /// A person's decision on the tool calls the run waits for, as JSON: `{"round",
    /// "decision" ("approved" | "rejected"), "by", "at", "reason", "calls":
    /// [{"tool_call_id","input","original"}]}`; `None` until one is made.
    #[sea_orm(column_type = "Text", nullable)]
    pub approval: Option<String>,
    /// The last error (a provider's error body, a crash).
    #[sea_orm(column_type = "Text", nullable)]
    pub error: Option<String>,
    /// When the row was made.
    pub created_at: DateTimeUtc,
    /// When the row last changed.
    pub updated_at: DateTimeUtc,
}

/// The relations of `agent_jobs`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The message answered.
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
