//! Each message's body as `quoted = "strip"` shows it, stored in `message_strips` when the
//! message is stored, so that a read strips nothing.
//!
//! A message is stripped against the messages before it in its thread, in the thread's
//! order (`sent_at`, ties by `id`), that were stored before it (a smaller `id`): their
//! readable bodies as stored, quotes included; an outbound message (the persona's own
//! words) only against the earlier outbound ones. In a thread longer than two
//! [`STRIP_BLOCK`]s, only those of its own block and of the block before, blocks counted in
//! the order the messages were stored. So no text is ever removed from a message because of
//! a message stored after it, whatever its `Date` claims, a correspondent's text never
//! removes the persona's, and a message's stripped text does not depend on a history's
//! window. Storing a message strips that message alone; erasing one strips its threads
//! again ([`restrip`]), in the transaction of the write; the migration that created the
//! table stripped the mail stored before it.
//!
//! A read takes the rows of the current [`STRIP_RULES`] and strips the messages without
//! one itself, in the same walk over their threads ([`derive`]): rows written by another
//! program, or before the rules changed, give the same output, only slower.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DbErr};

use crate::db::entities::{message, message_strip};
use crate::db::read::rows::{self, columns};
use crate::db::tx::Tx;
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

    /// A row of `message_strips`: its message's row id and the stripped body.
    pub(crate) fn read(row: &impl rows::Row) -> crate::error::Result<(i64, StoredStrip)> {
        use message_strip::Column as S;
        let removed: i64 = row.get(S::Removed)?;
        Ok((
            row.get(S::MessageId)?,
            StoredStrip {
                text: row.get(S::Text)?,
                removed: usize::try_from(removed).unwrap_or(0),
                body_hash: row.get(S::BodyHash)?,
            },
        ))
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

/// A thread's messages are compared in blocks of this many, counted in the order they were
/// stored: a message is compared with the earlier messages of its own block and of the
/// whole block before that (every earlier message in a thread of up to twice as many). So
/// storing a message reads at most two blocks and strips one message, whatever the
/// thread's length.
pub const STRIP_BLOCK: usize = 50;

/// One message of a thread in the thread's order, with its readable body once read.
struct Walked {
    thread: i64,
    id: i64,
    /// Whether the persona sent it.
    outbound: bool,
    /// Its place among its thread's messages in the order they were stored (by `id`).
    rank: usize,
    body: String,
}

/// The messages of `threads`, each thread in its order (`sent_at`, then `id`), bodies not
/// read; with `through`, only the messages sent at or before it.
async fn thread_order<W: Tx>(
    db: &W,
    threads: &[i64],
    through: Option<DateTime<Utc>>,
) -> Result<Vec<Walked>, DbErr> {
    use message::Column as M;
    let mut out = Vec::new();
    for chunk in threads.chunks(IN_CHUNK) {
        let mut select = Query::select();
        select
            .columns([M::EmailThreadId, M::Id, M::Direction])
            .from(message::Entity)
            .and_where(Expr::col(M::EmailThreadId).is_in(chunk.iter().copied()))
            .order_by(M::EmailThreadId, Order::Asc)
            .order_by(M::SentAt, Order::Asc)
            .order_by(M::Id, Order::Asc);
        if let Some(through) = through {
            select.and_where(Expr::col(M::SentAt).lte(through));
        }
        out.extend(walked_rows(db, &select).await?);
    }
    rank(&mut out);
    Ok(out)
}

/// The messages `select` reads (its thread, id and direction columns, in this order),
/// bodies not read and not ranked yet.
async fn walked_rows<W: Tx>(
    db: &W,
    select: &sea_orm::sea_query::SelectStatement,
) -> Result<Vec<Walked>, DbErr> {
    let mut out = Vec::new();
    db.select(select, |row| {
        out.push(Walked {
            thread: row.int(0)?,
            id: row.int(1)?,
            outbound: row.text(2)?.as_deref() == Some("outbound"),
            rank: 0,
            body: String::new(),
        });
        Ok(())
    })
    .await?;
    Ok(out)
}

/// Sets each message's [`Walked::rank`]: its place in its thread by `id`.
fn rank(order: &mut [Walked]) {
    for (start, end) in threads_of(order) {
        let mut ids: Vec<(i64, usize)> = order[start..end]
            .iter()
            .enumerate()
            .map(|(i, w)| (w.id, start + i))
            .collect();
        ids.sort_unstable();
        for (rank, (_, at)) in ids.into_iter().enumerate() {
            order[at].rank = rank;
        }
    }
}

/// Reads the readable body of each `order[i]` where `need[i]`.
async fn read_bodies<W: Tx>(db: &W, order: &mut [Walked], need: &[bool]) -> Result<(), DbErr> {
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
        db.select(&select, |row| {
            let (text, html_text, html) = (row.text(1)?, row.text(2)?, row.text(3)?);
            let body =
                protege_mail::readable_of(text.as_deref(), html_text.as_deref(), html.as_deref())
                    .into_owned();
            bodies.insert(row.int(0)?, body);
            Ok(())
        })
        .await?;
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

/// One walk: the positions of `order` it reads, in the thread's order, and the first rank
/// of the block whose wanted messages it strips.
struct Walk {
    members: Vec<usize>,
    block_start: usize,
}

/// For each block of a thread (`STRIP_BLOCK` ranks) that holds a wanted message: the
/// messages of that block and of the block before, in the thread's order up to the block's
/// last wanted message.
fn walks(order: &[Walked], wanted: &[bool]) -> Vec<Walk> {
    let mut out = Vec::new();
    for (start, end) in threads_of(order) {
        // Ranks may start past 0 (a walk of the end of a thread, see `restrip_written`).
        let blocks = order[start..end]
            .iter()
            .map(|w| w.rank / STRIP_BLOCK + 1)
            .max()
            .unwrap_or(0);
        let mut last_wanted = vec![None; blocks];
        for p in start..end {
            if wanted[p] {
                last_wanted[order[p].rank / STRIP_BLOCK] = Some(p);
            }
        }
        for (block, last) in last_wanted.into_iter().enumerate() {
            let Some(last) = last else { continue };
            let block_start = block * STRIP_BLOCK;
            let from = block_start.saturating_sub(STRIP_BLOCK);
            let to = block_start + STRIP_BLOCK;
            let members = (start..=last)
                .filter(|&p| (from..to).contains(&order[p].rank))
                .collect();
            out.push(Walk {
                members,
                block_start,
            });
        }
    }
    out
}

/// The positions of `order` whose bodies the walks of `wanted` read.
fn needed(order: &[Walked], wanted: &[bool]) -> Vec<bool> {
    let mut need = vec![false; order.len()];
    for walk in walks(order, wanted) {
        for p in walk.members {
            need[p] = true;
        }
    }
    need
}

/// Strips the wanted messages of `order` (bodies read where [`needed`]), each against the
/// messages before it in its thread's order that were stored before it, of its block and
/// the block before (an outbound one against the outbound ones alone); the results in walk
/// order.
fn walk(order: &[Walked], wanted: &[bool]) -> Vec<(i64, StoredStrip)> {
    let mut out = Vec::new();
    for Walk {
        members,
        block_start,
    } in walks(order, wanted)
    {
        let bytes = members.iter().map(|&p| order[p].body.len()).sum::<usize>();
        // Every message walked so far, and the outbound ones of them.
        let mut all = PriorBodies::with_capacity(bytes);
        let mut own = PriorBodies::new();
        let mut highest: Option<usize> = None;
        for (i, &p) in members.iter().enumerate() {
            let b = &order[p];
            let target = wanted[p] && b.rank >= block_start;
            if !target {
                all.add(&b.body);
                if b.outbound {
                    own.add(&b.body);
                }
                highest = highest.max(Some(b.rank));
                continue;
            }
            let stripped = if highest.is_none_or(|h| h < b.rank) {
                // Everything walked so far was stored before it: the running indexes.
                if b.outbound {
                    let stripped = own.strip_next(&b.body);
                    all.add(&b.body);
                    stripped
                } else {
                    all.strip_next(&b.body)
                }
            } else {
                // A message stored after it was placed before it (its `Date` is earlier):
                // an index of the ones stored before it alone.
                let mut prior = PriorBodies::new();
                for &q in &members[..i] {
                    let c = &order[q];
                    if c.rank < b.rank && (c.outbound || !b.outbound) {
                        prior.add(&c.body);
                    }
                }
                all.add(&b.body);
                if b.outbound {
                    own.add(&b.body);
                }
                protege_mail::strip_quoted(&b.body, &prior)
            };
            highest = highest.max(Some(b.rank));
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
            let (id, strip) = StoredStrip::read(&row)?;
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

/// Strips, and stores, the messages `written` of each of `threads` (every message of a
/// thread none of them is in): run by every write that stores or removes messages, in its
/// transaction, with the messages it wrote (nothing for a removal). A message stored now
/// changes no other message's stripped text, since each is stripped against the messages
/// stored before it; a removal changes those stored after it, so their threads are
/// stripped again whole.
pub async fn restrip<W: Tx>(db: &W, threads: &[i64], written: &HashSet<i64>) -> Result<(), DbErr> {
    if let ([thread], false) = (threads, written.is_empty()) {
        return restrip_written(db, *thread, written).await;
    }
    let mut threads = threads.to_vec();
    threads.sort_unstable();
    threads.dedup();
    for chunk in threads.chunks(THREAD_PAGE as usize) {
        let mut order = thread_order(db, chunk, None).await?;
        let named: HashSet<i64> = order
            .iter()
            .filter(|b| written.contains(&b.id))
            .map(|b| b.thread)
            .collect();
        let wanted: Vec<bool> = order
            .iter()
            .map(|b| written.contains(&b.id) || !named.contains(&b.thread))
            .collect();
        let need = needed(&order, &wanted);
        read_bodies(db, &mut order, &need).await?;
        store(db, &walk(&order, &wanted)).await?;
    }
    Ok(())
}

/// [`restrip`] of the messages `written` into `thread` (one message stored, or a few): only
/// the end of the thread they need is read, from the block before the one of the first of
/// them on (ranks counted in the order messages were stored), so the cost is the same
/// whatever the thread's length: two counting statements over the thread's index, and the
/// rows of at most the two blocks the walk reads (and the written ones).
async fn restrip_written<W: Tx>(db: &W, thread: i64, written: &HashSet<i64>) -> Result<(), DbErr> {
    use message::Column as M;
    let Some(&first) = written.iter().min() else {
        return Ok(());
    };
    let before = Query::select()
        .expr(Expr::col(M::Id).count())
        .from(message::Entity)
        .and_where(Expr::col(M::EmailThreadId).eq(thread))
        .and_where(Expr::col(M::Id).lt(first))
        .to_owned();
    let mut stored_before = 0_i64;
    db.select(&before, |row| {
        stored_before = row.int(0)?;
        Ok(())
    })
    .await?;
    let lo =
        (usize::try_from(stored_before).unwrap_or(0) / STRIP_BLOCK).saturating_sub(1) * STRIP_BLOCK;
    // The id of rank `lo`: the first message the walk may read.
    let from = Query::select()
        .column(M::Id)
        .from(message::Entity)
        .and_where(Expr::col(M::EmailThreadId).eq(thread))
        .order_by(M::Id, Order::Asc)
        .limit(1)
        .offset(lo as u64)
        .to_owned();
    let mut from_id = None;
    db.select(&from, |row| {
        from_id = Some(row.int(0)?);
        Ok(())
    })
    .await?;
    let Some(from_id) = from_id else {
        return Ok(());
    };
    let select = Query::select()
        .columns([M::EmailThreadId, M::Id, M::Direction])
        .from(message::Entity)
        .and_where(Expr::col(M::EmailThreadId).eq(thread))
        .and_where(Expr::col(M::Id).gte(from_id))
        .order_by(M::SentAt, Order::Asc)
        .order_by(M::Id, Order::Asc)
        .to_owned();
    let mut order = walked_rows(db, &select).await?;
    rank(&mut order);
    for w in &mut order {
        w.rank += lo;
    }
    let wanted: Vec<bool> = order.iter().map(|b| written.contains(&b.id)).collect();
    let need = needed(&order, &wanted);
    read_bodies(db, &mut order, &need).await?;
    store(db, &walk(&order, &wanted)).await
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
async fn store<W: Tx>(db: &W, rows: &[(i64, StoredStrip)]) -> Result<(), DbErr> {
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
async fn delete_rows<W: Tx>(db: &W, ids: &[i64]) -> Result<(), DbErr> {
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
            outbound: false,
            rank: 0,
            body: body.to_owned(),
        }
    }

    fn ranked(mut order: Vec<Walked>) -> Vec<Walked> {
        rank(&mut order);
        order
    }

    #[test]
    fn each_message_is_stripped_against_the_earlier_ones_of_its_own_thread() {
        let first = "Can you resend the invoice for March?\nThe PDF was empty.\nThanks, Ann";
        // The earlier message below the answer, without `>` or attribution: step 1 alone
        // finds it.
        let reply = format!("Sent again.\n\n{first}");
        let bodies = ranked(vec![
            walked(1, 1, first),
            walked(1, 3, &reply),
            // The same reply in another thread: nothing before it there.
            walked(2, 2, &reply),
        ]);
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
        let bodies = ranked(vec![
            walked(1, 1, "one two three four five six seven"),
            walked(1, 2, "two"),
            walked(1, 3, "three"),
        ]);
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
        let mut bodies: Vec<Walked> = ranked(
            (0..2 * B + 5)
                .map(|i| walked(1, i as i64, &text(i)))
                .collect(),
        );
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
        let bodies = ranked(bodies);
        let rows = walk(&bodies, &[true; 4]);
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[3].0, rows[3].1.text.as_deref()), (99, None));
    }

    /// The agent's refusal, pasted by a customer into a mail dated before it.
    const REFUSAL: &str = "We cannot refund an order after 30 days.\nThis is our policy for every customer.\nWe can offer a voucher instead.";

    #[test]
    fn a_message_stored_later_removes_nothing_whatever_its_date() {
        let question = "Can I get a refund for order A-1042?\nIt arrived broken.\nKim";
        let mut reply = walked(1, 2, REFUSAL);
        reply.outbound = true;
        // Stored third, dated before the reply: placed before it in the thread's order.
        let backdated = walked(1, 3, &format!("Please note:\n\n{REFUSAL}"));
        let bodies = ranked(vec![walked(1, 1, question), backdated, reply]);
        let rows: HashMap<i64, StoredStrip> = walk(&bodies, &[true; 3]).into_iter().collect();
        assert_eq!(rows[&2].text, None);
        assert_eq!(rows[&2].removed, 0);
        // The backdated mail is not stripped against the reply placed after it either.
        assert_eq!(rows[&3].text, None);
        // Storing it strips it alone, against the messages before it.
        let need = needed(&bodies, &[false, true, false]);
        assert_eq!(need, [true, true, false]);
    }

    #[test]
    fn the_personas_words_are_never_stripped_against_a_correspondents() {
        // The customer writes the refusal first (a quote of an older letter, say); the
        // agent's reply repeating it keeps it, while a customer's paste of it goes.
        let mut reply = walked(1, 2, REFUSAL);
        reply.outbound = true;
        let mut again = walked(1, 4, &format!("As I said:\n\n{REFUSAL}"));
        again.outbound = true;
        let bodies = ranked(vec![
            walked(1, 1, &format!("Your letter said:\n\n{REFUSAL}")),
            reply,
            walked(1, 3, &format!("Really?\n\n{REFUSAL}")),
            again,
        ]);
        let rows: HashMap<i64, StoredStrip> = walk(&bodies, &[true; 4]).into_iter().collect();
        assert_eq!(rows[&2].text, None);
        assert_eq!(rows[&3].text.as_deref(), Some("Really?"));
        // Against its own earlier words, the agent's message is stripped.
        assert_eq!(rows[&4].text.as_deref(), Some("As I said:"));
    }
}
