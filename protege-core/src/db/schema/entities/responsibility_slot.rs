//! `responsibility_slots`: each due time of a responsibility that was fired (§19), unique by
//! its wall-clock time, so several replicas fire a slot once.

use sea_orm::entity::prelude::*;

/// A row of `responsibility_slots`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "responsibility_slots")]
pub struct Model {
    /// The auto-increment id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The persona.
    pub persona: String,
    /// The responsibility's name.
    pub responsibility: String,
    /// The instant the slot fires at (UTC): its wall-clock time, or the first instant
    /// after a daylight-saving gap that skipped it.
    pub slot_at: DateTimeUtc,
    /// When it was fired.
    pub created_at: DateTimeUtc,
    /// The wall-clock time the schedule matched, in the responsibility's zone, as
    /// `2026-03-29T02:30`: the slot's identity, unique per persona and responsibility.
    pub local_time: String,
}

/// `responsibility_slots` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
