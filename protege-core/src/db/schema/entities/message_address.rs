//! `message_addresses`: the addresses of each message's From, To and Cc, one row per
//! distinct address, by which `CorrespondentHistory` finds a correspondent's threads with a
//! persona in one indexed read.

use sea_orm::entity::prelude::*;

use crate::mail::{Direction, address_key};

/// The longest address stored: longer text is no address (RFC 5321 allows 254
/// characters), and the column is indexed.
pub const MAX_ADDRESS_CHARS: usize = 320;

/// A row of `message_addresses`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
#[sea_orm(table_name = "message_addresses")]
pub struct Model {
    /// The auto-increment id (insertion order).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The message (→ `messages.id`).
    pub message_id: i64,
    /// The message's thread (→ `email_threads.id`).
    pub email_thread_id: i64,
    /// The bare address, lowercased (`alice@example.com`).
    pub address: String,
    /// Whether the address makes its owner a participant of the thread (`SECURITY.md`): the
    /// From of any message, the To and Cc of an outbound one. The To and Cc of an inbound
    /// message were chosen by its sender and make no one a participant.
    pub participant: bool,
}

/// The relations of `message_addresses`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The message whose headers hold the address.
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

/// The rows of one message, as `(address, participant)`: its From, To and Cc addresses
/// (header form) as [`address_key`]s, each once (a participant when any of its places makes
/// it one), in order of first appearance; empty addresses and addresses longer than
/// [`MAX_ADDRESS_CHARS`] are left out.
pub fn keys<S: AsRef<str>>(
    direction: Direction,
    from: &str,
    to: &[S],
    cc: &[S],
) -> Vec<(String, bool)> {
    let outbound = direction == Direction::Outbound;
    let places =
        std::iter::once((from, true)).chain(to.iter().chain(cc).map(|a| (a.as_ref(), outbound)));
    let mut out: Vec<(String, bool)> = Vec::with_capacity(1 + to.len() + cc.len());
    for (header, participant) in places {
        let key = address_key(header);
        if key.is_empty() || key.chars().count() > MAX_ADDRESS_CHARS {
            continue;
        }
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, p)) => *p |= participant,
            None => out.push((key, participant)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inbound_message_makes_only_its_sender_a_participant() {
        assert_eq!(
            keys(
                Direction::Inbound,
                "Ann <Ann@Example.com>",
                &["support@acme.test", "ANN@example.com"],
                &["  ", "Bob <bob@example.com>"],
            ),
            [
                ("ann@example.com".to_owned(), true),
                ("support@acme.test".to_owned(), false),
                ("bob@example.com".to_owned(), false),
            ]
        );
    }

    #[test]
    fn an_outbound_message_makes_its_recipients_participants() {
        let long = format!("<{}@example.com>", "a".repeat(MAX_ADDRESS_CHARS));
        assert_eq!(
            keys(
                Direction::Outbound,
                "support@acme.test",
                &["Ann <ann@example.com>", long.as_str()],
                &[],
            ),
            [
                ("support@acme.test".to_owned(), true),
                ("ann@example.com".to_owned(), true),
            ]
        );
    }
}
