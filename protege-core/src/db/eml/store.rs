//! Storing parsed messages: insert-or-skip by Message-ID, and threading by participants
//! (see `SECURITY.md`). A message joins the thread of a stored message it references
//! (References newest first, then In-Reply-To) or that replies to it, only when its sender
//! is a participant of that thread; otherwise it starts its own. Threads are never merged
//! and stored messages never move.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, SqlErr,
    TransactionSession, TransactionTrait, sea_query::Expr,
};

use super::parse::{ParsedEml, thread_subject};
use crate::db::entities::{email_thread, message};
use crate::db::fixture::{
    FixtureMessage, ImportSummary, insert_message, insert_thread, stored_threads,
};
use crate::error::{Error, Result};
use crate::mail::{Direction, bare_address, one_line};

/// What storing one message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stored {
    /// Inserted into the thread with this id, with this direction.
    Imported {
        /// The thread's id.
        thread: i64,
        /// Inbound or outbound.
        direction: Direction,
    },
    /// Its Message-ID was already stored (or was stored at the same moment by another
    /// writer); nothing written.
    Duplicate,
}

/// The threading state of one import: the persona addresses and the participants of the
/// threads seen so far.
#[derive(Debug)]
pub(super) struct Threader {
    /// The persona addresses, bare and lowercased.
    own: HashSet<String>,
    /// The participants (bare, lowercased) of each thread read or written so far.
    participants: HashMap<i64, HashSet<String>>,
}

/// The bare address of a header-form address, lowercased, on one line.
fn key(address: &str) -> String {
    bare_address(&one_line(address)).to_lowercase()
}

impl Threader {
    /// Starts an import with the persona addresses (bare or header form).
    pub(super) fn new(own_addresses: &[String]) -> Self {
        Self {
            own: own_addresses.iter().map(|a| key(a)).collect(),
            participants: HashMap::new(),
        }
    }

    /// The direction of a message From `from`: `forced` when given (mail received over
    /// HTTP), else outbound when `from` is a persona address.
    pub(super) fn direction(&self, from: &str, forced: Option<Direction>) -> Direction {
        forced.unwrap_or(if self.own.contains(&key(from)) {
            Direction::Outbound
        } else {
            Direction::Inbound
        })
    }

    /// Whether `sender` (a key) is a participant of `thread`, reading its addresses once.
    async fn is_participant<C: ConnectionTrait>(
        &mut self,
        db: &C,
        thread: i64,
        sender: &str,
    ) -> Result<bool> {
        if self.own.contains(sender) {
            return Ok(true);
        }
        if let Some(set) = self.participants.get(&thread) {
            return Ok(set.contains(sender));
        }
        let rows: Vec<(String, String, String)> = message::Entity::find()
            .select_only()
            .column(message::Column::FromAddress)
            .column(message::Column::ToAddresses)
            .column(message::Column::CcAddresses)
            .filter(message::Column::EmailThreadId.eq(thread))
            .into_tuple()
            .all(db)
            .await?;
        let mut set = HashSet::new();
        for (from, to, cc) in rows {
            set.insert(key(&from));
            for list in [to, cc] {
                let list: Vec<String> = serde_json::from_str(&list).unwrap_or_default();
                set.extend(list.iter().map(|a| key(a)));
            }
        }
        let found = set.contains(sender);
        self.participants.insert(thread, set);
        Ok(found)
    }

    /// Stores `eml` in its own savepoint of `db`: skipped when its Message-ID is stored,
    /// else put in the thread it may join (by participants) or in a new thread. `forced` is
    /// the direction of mail whose direction does not come from its From header.
    pub(super) async fn store<C>(
        &mut self,
        db: &C,
        eml: ParsedEml,
        forced: Option<Direction>,
    ) -> Result<Stored>
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

        // The threads it could join, most relevant first: those of the messages it
        // references, then those of stored replies to it.
        let mut candidates: Vec<i64> = Vec::new();
        for parent in &eml.parents {
            if let Some(&t) = found.get(parent)
                && !candidates.contains(&t)
            {
                candidates.push(t);
            }
        }
        let replies: Vec<i64> = message::Entity::find()
            .select_only()
            .column(message::Column::EmailThreadId)
            .filter(message::Column::InReplyTo.eq(eml.message_id.as_str()))
            .order_by_asc(message::Column::Id)
            .into_tuple()
            .all(db)
            .await?;
        for t in replies {
            if !candidates.contains(&t) {
                candidates.push(t);
            }
        }

        let sender = key(&eml.from);
        let direction = self.direction(&eml.from, forced);
        // Inbound mail claiming a persona's address is a forgery or a loop: it joins
        // nothing.
        let forged = direction == Direction::Inbound && self.own.contains(&sender);
        let mut join = None;
        if !forged {
            for &t in &candidates {
                if self.is_participant(db, t, &sender).await? {
                    join = Some(t);
                    break;
                }
            }
        }

        let txn = db.begin().await?;
        match write(&txn, join, eml_row(eml, direction)).await {
            // Another writer stored the same Message-ID first: nothing of ours stays.
            Ok(None) => {
                txn.rollback().await?;
                Ok(Stored::Duplicate)
            }
            Ok(Some((thread, addresses))) => {
                txn.commit().await?;
                if let Some(set) = self.participants.get_mut(&thread) {
                    set.extend(addresses);
                } else if join.is_none() {
                    self.participants
                        .insert(thread, addresses.into_iter().collect());
                }
                Ok(Stored::Imported { thread, direction })
            }
            Err(err) => {
                txn.rollback().await?;
                if is_unique_violation(&err) {
                    Ok(Stored::Duplicate)
                } else {
                    Err(err)
                }
            }
        }
    }
}

/// The row of `eml` with its direction.
fn eml_row(eml: ParsedEml, direction: Direction) -> FixtureMessage {
    FixtureMessage {
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
    }
}

/// Writes `row` into thread `join` or a new thread; returns the thread and the row's
/// participant keys, or `None` when its Message-ID is already stored (insert-or-skip).
async fn write<C: ConnectionTrait>(
    txn: &C,
    join: Option<i64>,
    row: FixtureMessage,
) -> Result<Option<(i64, Vec<String>)>> {
    let subject = thread_subject(&row.subject);
    let thread = match join {
        Some(t) => {
            adopt_if_older(txn, t, &subject, row.sent_at).await?;
            t
        }
        None => insert_thread(txn, &subject, row.sent_at).await?,
    };
    let mut summary = ImportSummary::default();
    insert_message(txn, thread, &row, &mut summary).await?;
    if summary.already_present > 0 {
        return Ok(None);
    }
    let addresses = std::iter::once(&row.from)
        .chain(&row.to)
        .chain(&row.cc)
        .map(|a| key(a))
        .collect();
    Ok(Some((thread, addresses)))
}

/// Whether `err` is a unique-key violation: another writer stored the same message.
fn is_unique_violation(err: &Error) -> bool {
    err.db_err()
        .is_some_and(|e| matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))))
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
            Expr::value(one_line(subject).into_owned()),
        )
        .col_expr(email_thread::Column::CreatedAt, Expr::value(sent_at))
        .filter(email_thread::Column::Id.eq(thread))
        .filter(email_thread::Column::CreatedAt.gt(sent_at))
        .exec(db)
        .await?;
    Ok(())
}
