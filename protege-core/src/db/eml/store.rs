//! Storing parsed messages: duplicate detection, threading by References/In-Reply-To,
//! merging threads a late message links, one transaction per message.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, TransactionSession, TransactionTrait, sea_query::Expr,
};

use super::parse::{ParsedEml, thread_subject};
use crate::db::entities::{email_thread, message};
use crate::db::fixture::{
    FixtureMessage, IN_CHUNK, ImportSummary, insert_message, insert_thread, stored_threads,
};
use crate::error::Result;
use crate::mail::{Direction, bare_address};

/// What storing one message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stored {
    /// Inserted.
    Imported,
    /// Its Message-ID was already stored; nothing written.
    Duplicate,
}

/// The state of one import: threads merged so far and ids referenced but not yet seen.
#[derive(Debug)]
pub(super) struct Threader {
    own: HashSet<String>,
    /// A referenced Message-ID not stored yet → the thread of a message that referenced
    /// it; when it arrives (or another message references it) it joins that thread.
    pending: HashMap<String, i64>,
    /// A thread merged away → the thread it was merged into.
    merged: HashMap<i64, i64>,
    /// The highest `messages.id` before the import started (0 for an empty table).
    before_max_id: i64,
}

impl Threader {
    /// Starts an import into `db`, with the persona addresses that mark outbound mail.
    pub(super) async fn new(db: &DatabaseConnection, own_addresses: &[String]) -> Result<Self> {
        let before_max_id: Option<i64> = message::Entity::find()
            .select_only()
            .column(message::Column::Id)
            .order_by_desc(message::Column::Id)
            .limit(1)
            .into_tuple()
            .one(db)
            .await?;
        Ok(Self {
            own: own_addresses
                .iter()
                .map(|a| bare_address(a).to_lowercase())
                .collect(),
            pending: HashMap::new(),
            merged: HashMap::new(),
            before_max_id: before_max_id.unwrap_or(0),
        })
    }

    fn resolve(&self, mut thread: i64) -> i64 {
        while let Some(&next) = self.merged.get(&thread) {
            thread = next;
        }
        thread
    }

    /// Stores `eml` in its own transaction (a savepoint when `db` is itself a
    /// transaction): skipped when its Message-ID is stored, else
    /// put in the thread of the first message it references (stored or pending), merging
    /// every other thread it links, or in a new thread.
    pub(super) async fn store<C>(&mut self, db: &C, eml: ParsedEml) -> Result<Stored>
    where
        C: ConnectionTrait + TransactionTrait,
    {
        let mut lookup: Vec<&str> = Vec::with_capacity(eml.parents.len() + 1);
        lookup.push(&eml.message_id);
        lookup.extend(eml.parents.iter().map(String::as_str));
        let found = stored_threads(db, &lookup).await?;
        if found.contains_key(&eml.message_id) {
            return Ok(Stored::Duplicate);
        }

        // The threads this message links, the one it joins first.
        let mut linked: Vec<i64> = Vec::new();
        for parent in &eml.parents {
            if let Some(&t) = found.get(parent) {
                push(t, &mut linked);
            }
        }
        for parent in &eml.parents {
            if let Some(&t) = self.pending.get(parent) {
                push(self.resolve(t), &mut linked);
            }
        }
        if let Some(&t) = self.pending.get(&eml.message_id) {
            push(self.resolve(t), &mut linked);
        }

        let direction = if self.own.contains(&bare_address(&eml.from).to_lowercase()) {
            Direction::Outbound
        } else {
            Direction::Inbound
        };
        let subject = thread_subject(&eml.subject);

        let txn = db.begin().await?;
        let target = match linked.first() {
            Some(&t) => {
                adopt_if_older(&txn, t, &subject, eml.sent_at).await?;
                t
            }
            None => insert_thread(&txn, &subject, eml.sent_at).await?,
        };
        for &other in linked.iter().skip(1) {
            merge_threads(&txn, other, target).await?;
        }
        let unresolved: Vec<String> = eml
            .parents
            .iter()
            .filter(|p| !found.contains_key(*p))
            .cloned()
            .collect();
        let message_id = eml.message_id.clone();
        let row = FixtureMessage {
            message_id: eml.message_id,
            direction,
            from: eml.from,
            to: eml.to,
            cc: eml.cc,
            subject: eml.subject,
            sent_at: eml.sent_at,
            text_body: eml.text_body,
            html_body: eml.html_body,
            in_reply_to: eml.in_reply_to,
            attachments: eml.attachments,
            tool_uses: Vec::new(),
        };
        insert_message(&txn, target, &row, &mut ImportSummary::default()).await?;
        txn.commit().await?;

        for &other in linked.iter().skip(1) {
            self.merged.insert(other, target);
        }
        self.pending.remove(&message_id);
        for parent in unresolved {
            self.pending.insert(parent, target);
        }
        Ok(Stored::Imported)
    }

    /// After the import: a message stored by an earlier import that replies (In-Reply-To)
    /// to one imported now joins its thread. Reads the new messages page by page, so the
    /// memory used does not depend on the size of the import.
    pub(super) async fn link_earlier_replies(&mut self, db: &DatabaseConnection) -> Result<()> {
        if self.before_max_id == 0 {
            return Ok(());
        }
        let mut after = self.before_max_id;
        loop {
            let page: Vec<(i64, String, i64)> = message::Entity::find()
                .select_only()
                .column(message::Column::Id)
                .column(message::Column::MessageId)
                .column(message::Column::EmailThreadId)
                .filter(message::Column::Id.gt(after))
                .order_by_asc(message::Column::Id)
                .limit(IN_CHUNK as u64)
                .into_tuple()
                .all(db)
                .await?;
            let Some(&(last, _, _)) = page.last() else {
                break;
            };
            after = last;
            let parents: HashMap<&str, i64> =
                page.iter().map(|(_, id, t)| (id.as_str(), *t)).collect();
            let replies: Vec<(Option<String>, i64)> = message::Entity::find()
                .select_only()
                .column(message::Column::InReplyTo)
                .column(message::Column::EmailThreadId)
                .filter(message::Column::Id.lte(self.before_max_id))
                .filter(message::Column::InReplyTo.is_in(parents.keys().copied()))
                .into_tuple()
                .all(db)
                .await?;
            for (in_reply_to, reply_thread) in replies {
                let Some(&parent_thread) = in_reply_to.as_deref().and_then(|id| parents.get(id))
                else {
                    continue;
                };
                let (from, into) = (self.resolve(reply_thread), self.resolve(parent_thread));
                if from != into {
                    let txn = db.begin().await?;
                    merge_threads(&txn, from, into).await?;
                    txn.commit().await?;
                    self.merged.insert(from, into);
                }
            }
        }
        Ok(())
    }
}

/// When a message sent at `sent_at` is older than thread `thread`'s start, the thread
/// takes its subject and start time (so the subject is the earliest message's).
async fn adopt_if_older<C: ConnectionTrait>(
    db: &C,
    thread: i64,
    subject: &str,
    sent_at: DateTime<Utc>,
) -> Result<()> {
    email_thread::Entity::update_many()
        .col_expr(
            email_thread::Column::Subject,
            Expr::value(subject.to_owned()),
        )
        .col_expr(email_thread::Column::CreatedAt, Expr::value(sent_at))
        .filter(email_thread::Column::Id.eq(thread))
        .filter(email_thread::Column::CreatedAt.gt(sent_at))
        .exec(db)
        .await?;
    Ok(())
}

/// Moves the messages of thread `from` into `into` and deletes `from`; `into` keeps the
/// subject and start of whichever thread started first.
async fn merge_threads<C: ConnectionTrait>(db: &C, from: i64, into: i64) -> Result<()> {
    message::Entity::update_many()
        .col_expr(message::Column::EmailThreadId, Expr::value(into))
        .filter(message::Column::EmailThreadId.eq(from))
        .exec(db)
        .await?;
    if let Some(old) = email_thread::Entity::find_by_id(from).one(db).await? {
        adopt_if_older(db, into, &old.subject, old.created_at).await?;
    }
    email_thread::Entity::delete_by_id(from).exec(db).await?;
    Ok(())
}

fn push(thread: i64, linked: &mut Vec<i64>) {
    if !linked.contains(&thread) {
        linked.push(thread);
    }
}
