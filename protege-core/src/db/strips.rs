//! Each message's body as `quoted = "strip"` shows it, stored in `message_strips` when the
//! message is stored, so that a read strips nothing.
//!
//! A message is stripped against the messages before it in its thread, in the thread's
//! order (`sent_at`, ties by `id`): their readable bodies as stored, quotes included; in a
//! thread longer than two [`STRIP_BLOCK`]s, those of its own block and of the block before.
//! So its stripped text does not depend on a history's window, and it changes only when a
//! message is stored before it (mail that arrives late) or one before it is erased. Every writer of
//! messages strips again, in the transaction of its write, the messages of each thread it
//! touched from the first one it wrote or removed ([`restrip`]); the migration that created
//! the table stripped the mail stored before it.
//!
//! A read takes the rows of the current [`STRIP_RULES`] and strips the messages without
//! one itself, in the same walk over their threads ([`derive`]): rows written by another
//! program, or before the rules changed, give the same output, only slower.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DbErr};

use crate::db::dates;
use crate::db::entities::{message, message_strip};
use crate::db::read::rows::{self, columns};
use crate::mail::{MailMessage, PriorBodies};

pub use protege_mail::STRIP_RULES;

/// The most ids bound in one `IN (...)` list, well under every backend's limit.
const IN_CHUNK: usize = 500;

/// The most bytes of stripped text written by one `INSERT`: under MySQL/MariaDB's smallest
/// default `max_allowed_packet` (a larger text alone).
const INSERT_BYTES: usize = 4 << 20;

/// How many threads one page of [`restrip_all`] reads.
const THREAD_PAGE: u64 = 64;

/// A message's body as `strip` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredStrip {
    /// The stripped text; `None` when nothing was removed (the readable body stands).
    pub text: Option<String>,
    /// The characters removed (Unicode scalar values).
    pub removed: usize,
    /// [`body_hash`] of the readable body it was made from.
    pub body_hash: i64,
}

impl StoredStrip {
    /// The body to show: the stripped text, or `readable` when nothing was removed.
    pub fn or<'a>(&'a self, readable: &'a str) -> &'a str {
        self.text.as_deref().unwrap_or(readable)
    }

    /// Whether it was made from `readable` (else the body changed since: strip it again).
    pub fn is_of(&self, readable: &str) -> bool {
        self.body_hash == body_hash(readable)
    }
}

/// The hash of a readable body stored beside its stripped text: the same in every process
/// and on every machine.
pub fn body_hash(readable: &str) -> i64 {
    use std::hash::BuildHasher;
    // A fixed seed: the hash is stored.
    let state = foldhash::fast::FixedState::with_seed(0x7072_6f74_6567_6503);
    state.hash_one(readable.as_bytes()) as i64
}

/// A thread's messages are compared in blocks of this many, in the thread's order: a message
/// is compared with the messages before it in its own block and with the whole block before
/// that (every earlier message in a thread of up to twice as many). So storing a message reads
/// and strips at most two blocks, whatever the thread's length.
pub const STRIP_BLOCK: usize = 50;

/// One message of a thread in the thread's order, with its readable body once read.
struct Walked {
    thread: i64,
    id: i64,
    body: String,
}

/// The messages of `threads`, each thread in its order (`sent_at`, then `id`), bodies not
/// read; with `through`, only the messages sent at or before it.
async fn thread_order<C: ConnectionTrait>(
    db: &C,
    threads: &[i64],
    through: Option<DateTime<Utc>>,
) -> Result<Vec<Walked>, DbErr> {
    use message::Column as M;
    let mut out = Vec::new();
    for chunk in threads.chunks(IN_CHUNK) {
        let mut select = Query::select();
        select
            .columns([M::EmailThreadId, M::Id])
            .from(message::Entity)
            .and_where(Expr::col(M::EmailThreadId).is_in(chunk.iter().copied()))
            .order_by(M::EmailThreadId, Order::Asc)
            .order_by(M::SentAt, Order::Asc)
            .order_by(M::Id, Order::Asc);
        if let Some(through) = through {
            select.and_where(Expr::col(M::SentAt).lte(through));
        }
        for row in db.query_all_raw(dates::statement(db, &select)).await? {
            out.push(Walked {
                thread: row.try_get("", "email_thread_id")?,
                id: row.try_get("", "id")?,
                body: String::new(),
            });
        }
    }
    Ok(out)
}

/// Reads the readable body of each `order[i]` where `need[i]`.
async fn read_bodies<C: ConnectionTrait>(
    db: &C,
    order: &mut [Walked],
    need: &[bool],
) -> Result<(), DbErr> {
    use message::Column as M;
    let ids: Vec<i64> = order
        .iter()
        .zip(need)
        .filter(|(_, need)| **need)
        .map(|(w, _)| w.id)
        .collect();
    let mut bodies = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(IN_CHUNK) {
        let select = Query::select()
            .columns([M::Id, M::TextBody, M::HtmlText])
            // The HTML itself only for a row stored without its text.
            .expr_as(
                Expr::case(Expr::col(M::HtmlText).is_null(), Expr::col(M::HtmlBody)),
                M::HtmlBody,
            )
            .from(message::Entity)
            .and_where(Expr::col(M::Id).is_in(chunk.iter().copied()))
            .to_owned();
        for row in db.query_all(&select).await? {
            let text: Option<String> = row.try_get("", "text_body")?;
            let html_text: Option<String> = row.try_get("", "html_text")?;
            let html: Option<String> = row.try_get("", "html_body")?;
            let body =
                protege_mail::readable_of(text.as_deref(), html_text.as_deref(), html.as_deref())
                    .into_owned();
            bodies.insert(row.try_get::<i64>("", "id")?, body);
        }
    }
    for w in order.iter_mut() {
        if let Some(body) = bodies.remove(&w.id) {
            w.body = body;
        }
    }
    Ok(())
}

/// The threads of `order` (runs of one thread each): `(start, end)` ranges.
fn threads_of(order: &[Walked]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let thread = order[start].thread;
        let end = order[start..]
            .iter()
            .position(|b| b.thread != thread)
            .map_or(order.len(), |n| start + n);
        out.push((start, end));
        start = end;
    }
    out
}

/// For each block of a thread (`STRIP_BLOCK` positions) that holds a wanted message: the
/// positions its walk reads, from the start of the block before it to its last wanted
/// message, and where the block itself starts. Positions are of `order`.
fn walks(order: &[Walked], wanted: &[bool]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (start, end) in threads_of(order) {
        let mut block = start;
        while block < end {
            let block_end = Ord::min(block + STRIP_BLOCK, end);
            if let Some(last) = wanted[block..block_end].iter().rposition(|w| *w) {
                let from = if block - start >= STRIP_BLOCK {
                    block - STRIP_BLOCK
                } else {
                    start
                };
                out.push((from, block, block + last));
            }
            block = block_end;
        }
    }
    out
}

/// The positions of `order` whose bodies the walks of `wanted` read.
fn needed(order: &[Walked], wanted: &[bool]) -> Vec<bool> {
    let mut need = vec![false; order.len()];
    for (from, _, last) in walks(order, wanted) {
        need[from..=last].fill(true);
    }
    need
}

/// Strips the wanted messages of `order` (bodies read where [`needed`]), each against the
/// messages before it in its block and the block before that; the results in walk order.
fn walk(order: &[Walked], wanted: &[bool]) -> Vec<(i64, StoredStrip)> {
    let mut out = Vec::new();
    for (from, block, last) in walks(order, wanted) {
        let part = &order[from..=last];
        let mut prior =
            PriorBodies::with_capacity(part.iter().map(|b| b.body.len()).sum::<usize>());
        for b in &order[from..block] {
            prior.add(&b.body);
        }
        for (b, wanted) in order[block..=last].iter().zip(&wanted[block..]) {
            if !*wanted {
                prior.add(&b.body);
                continue;
            }
            let stripped = prior.strip_next(&b.body);
            let text = match stripped.text {
                std::borrow::Cow::Owned(text) => Some(text),
                // Borrowed: the body itself, trimmed at most.
                std::borrow::Cow::Borrowed(text) => {
                    (stripped.removed > 0 || text != b.body).then(|| text.to_owned())
                }
            };
            out.push((
                b.id,
                StoredStrip {
                    text,
                    removed: stripped.removed,
                    body_hash: body_hash(&b.body),
                },
            ));
        }
    }
    out
}

/// The stripped bodies of the messages `ids` of `threads` that a read found no row for,
/// made as a writer makes them: the order of each thread's messages sent at or before
/// `through` in one statement per 500 threads, then the bodies the walks need.
pub(crate) async fn derive<C: ConnectionTrait>(
    db: &C,
    threads: &[i64],
    through: Option<DateTime<Utc>>,
    ids: &HashSet<i64>,
) -> Result<HashMap<i64, StoredStrip>, DbErr> {
    let mut order = thread_order(db, threads, through).await?;
    let wanted: Vec<bool> = order.iter().map(|b| ids.contains(&b.id)).collect();
    let need = needed(&order, &wanted);
    read_bodies(db, &mut order, &need).await?;
    Ok(walk(&order, &wanted).into_iter().collect())
}

/// The stripped bodies of `messages` (stored ones of other threads, such as
/// `CorrespondentHistory`'s): the rows stored for them, and for those without a row of the
/// current rules made from their body, made now as [`derive`] makes them. Two statements
/// per 500 messages at most; one when every row was there.
pub(crate) async fn of_messages<C: ConnectionTrait>(
    db: &C,
    messages: &[&MailMessage],
) -> crate::error::Result<HashMap<i64, StoredStrip>> {
    use message_strip::Column as S;
    let mut found = HashMap::with_capacity(messages.len());
    let ids: Vec<i64> = messages.iter().map(|m| m.id).collect();
    for chunk in ids.chunks(IN_CHUNK) {
        let select = Query::select()
            .columns(columns(message_strip::Entity))
            .from(message_strip::Entity)
            .and_where(Expr::col(S::MessageId).is_in(chunk.iter().copied()))
            .and_where(Expr::col(S::Rules).eq(STRIP_RULES))
            .to_owned();
        for row in db.query_all(&select).await? {
            let (id, strip) = rows::strip(&row)?;
            found.insert(id, strip);
        }
    }
    let mut missing = HashSet::new();
    let mut threads = Vec::new();
    for m in messages {
        let body = m.readable();
        if !body.is_empty() && !found.get(&m.id).is_some_and(|s| s.is_of(&body)) {
            missing.insert(m.id);
            threads.push(m.thread_id);
        }
    }
    if !missing.is_empty() {
        threads.sort_unstable();
        threads.dedup();
        found.extend(derive(db, &threads, None, &missing).await?);
    }
    Ok(found)
}

/// Strips again, and stores, the messages of each of `threads` from its first message in
/// `from` on (every message of a thread without one): run by every write that stores or
/// removes messages, in its transaction, with the messages it wrote (or the first message
/// after those it removed).
pub async fn restrip<C: ConnectionTrait>(
    db: &C,
    threads: &[i64],
    from: &HashSet<i64>,
) -> Result<(), DbErr> {
    let mut threads = threads.to_vec();
    threads.sort_unstable();
    threads.dedup();
    for chunk in threads.chunks(THREAD_PAGE as usize) {
        let mut order = thread_order(db, chunk, None).await?;
        // From the first message in `from` of each thread on; all of a thread without one.
        let named: HashSet<i64> = order
            .iter()
            .filter(|b| from.contains(&b.id))
            .map(|b| b.thread)
            .collect();
        let mut started: HashSet<i64> = HashSet::new();
        let wanted: Vec<bool> = order
            .iter()
            .map(|b| {
                if from.contains(&b.id) {
                    started.insert(b.thread);
                }
                !named.contains(&b.thread) || started.contains(&b.thread)
            })
            .collect();
        let need = needed(&order, &wanted);
        read_bodies(db, &mut order, &need).await?;
        store(db, &walk(&order, &wanted)).await?;
    }
    Ok(())
}

/// Strips every stored message again (the migration that creates the table, and one that
/// changes the rules): the threads a page at a time, in bounded memory per page.
pub(crate) async fn restrip_all<C: ConnectionTrait>(db: &C) -> Result<(), DbErr> {
    use crate::db::entities::email_thread::{Column as T, Entity as Threads};
    let mut after = 0_i64;
    loop {
        let page = Query::select()
            .column(T::Id)
            .from(Threads)
            .and_where(Expr::col(T::Id).gt(after))
            .order_by(T::Id, Order::Asc)
            .limit(THREAD_PAGE)
            .to_owned();
        let threads: Vec<i64> = db
            .query_all(&page)
            .await?
            .iter()
            .map(|row| row.try_get_by_index(0))
            .collect::<Result<_, _>>()?;
        let Some(&last) = threads.last() else {
            return Ok(());
        };
        after = last;
        restrip(db, &threads, &HashSet::new()).await?;
    }
}

/// Replaces the rows of the messages of `rows` with these.
async fn store<C: ConnectionTrait>(db: &C, rows: &[(i64, StoredStrip)]) -> Result<(), DbErr> {
    use message_strip::Column as S;
    delete_rows(db, &rows.iter().map(|(id, _)| *id).collect::<Vec<_>>()).await?;
    let mut at = 0;
    while at < rows.len() {
        let mut insert = Query::insert();
        insert.into_table(message_strip::Entity).columns([
            S::MessageId,
            S::Rules,
            S::Text,
            S::Removed,
            S::BodyHash,
        ]);
        let mut bytes = 0;
        while at < rows.len() && (bytes == 0 || bytes < INSERT_BYTES) {
            let (id, strip) = &rows[at];
            bytes += 64 + strip.text.as_ref().map_or(0, String::len);
            insert.values_panic([
                (*id).into(),
                STRIP_RULES.into(),
                strip.text.clone().into(),
                i64::try_from(strip.removed).unwrap_or(i64::MAX).into(),
                strip.body_hash.into(),
            ]);
            at += 1;
            if bytes >= INSERT_BYTES || at % IN_CHUNK == 0 {
                break;
            }
        }
        db.execute(&insert).await?;
    }
    Ok(())
}

/// Removes the rows of the messages `ids`, about to be stripped again.
async fn delete_rows<C: ConnectionTrait>(db: &C, ids: &[i64]) -> Result<(), DbErr> {
    use message_strip::Column as S;
    for chunk in ids.chunks(IN_CHUNK) {
        let delete = Query::delete()
            .from_table(message_strip::Entity)
            .and_where(Expr::col(S::MessageId).is_in(chunk.iter().copied()))
            .to_owned();
        db.execute(&delete).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walked(thread: i64, id: i64, body: &str) -> Walked {
        Walked {
            thread,
            id,
            body: body.to_owned(),
        }
    }

    #[test]
    fn each_message_is_stripped_against_the_earlier_ones_of_its_own_thread() {
        let first = "Can you resend the invoice for March?\nThe PDF was empty.\nThanks, Ann";
        // The earlier message below the answer, without `>` or attribution: step 1 alone
        // finds it.
        let reply = format!("Sent again.\n\n{first}");
        let bodies = [
            walked(1, 1, first),
            walked(1, 3, &reply),
            // The same reply in another thread: nothing before it there.
            walked(2, 2, &reply),
        ];
        let rows = walk(&bodies, &[true; 3]);
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].0, rows[0].1.text.as_deref()), (1, None));
        assert_eq!(rows[0].1.removed, 0);
        assert!(rows[0].1.is_of(first));
        assert_eq!(
            (rows[1].0, rows[1].1.text.as_deref()),
            (3, Some("Sent again."))
        );
        assert_eq!(
            rows[1].1.removed,
            reply.chars().count() - "Sent again.".len()
        );
        assert!(rows[1].1.is_of(&reply) && !rows[1].1.is_of(first));
        assert_eq!((rows[2].0, rows[2].1.text.as_deref()), (2, None));
        assert_eq!(rows[2].1.removed, 0);
    }

    #[test]
    fn only_the_wanted_messages_are_returned_and_the_walk_stops_after_the_last() {
        let bodies = [
            walked(1, 1, "one two three four five six seven"),
            walked(1, 2, "two"),
            walked(1, 3, "three"),
        ];
        let rows = walk(&bodies, &[false, true, false]);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].0, rows[0].1.text.as_deref()), (2, None));
    }

    #[test]
    fn a_message_is_compared_with_its_block_and_the_block_before() {
        const B: usize = STRIP_BLOCK;
        let text = |i: usize| {
            format!(
                "Message {i} of the thread says something of its own about parcel {i}, \
                 nothing that another message says."
            )
        };
        let mut bodies: Vec<Walked> = (0..2 * B + 5)
            .map(|i| walked(1, i as i64, &text(i)))
            .collect();
        // In block 1, a paste of message 0 (block 0): found. In block 2, a paste of
        // message 1 (block 0, two blocks back): not compared, stays.
        bodies[B + 3].body = format!("Reply.\n\n{}", text(0));
        bodies[2 * B + 3].body = format!("Reply.\n\n{}", text(1));
        let all = vec![true; bodies.len()];
        let rows: HashMap<i64, StoredStrip> = walk(&bodies, &all).into_iter().collect();
        assert_eq!(rows.len(), 2 * B + 5);
        assert_eq!(rows[&((B + 3) as i64)].text.as_deref(), Some("Reply."));
        assert_eq!(rows[&((2 * B + 3) as i64)].text, None);
        // Storing the last message reads its block and the one before, not the first.
        let mut last = vec![false; bodies.len()];
        last[2 * B + 4] = true;
        let need = needed(&bodies, &last);
        assert_eq!(need.iter().position(|n| *n), Some(B));
        assert_eq!(need.iter().filter(|n| **n).count(), B + 5);
        // Two threads side by side: each has its own blocks.
        bodies.truncate(3);
        bodies.push(walked(2, 99, &text(0)));
        let rows = walk(&bodies, &[true; 4]);
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[3].0, rows[3].1.text.as_deref()), (99, None));
    }
}
