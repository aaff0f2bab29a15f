//! Threading parsed messages by participants (see `SECURITY.md`), and storing them where
//! they belong through `store` (insert-or-skip by Message-ID). A message joins the thread of a stored message it references
//! (References newest first, then In-Reply-To) or that replies to it, only when its sender
//! is a participant of that thread; otherwise it starts its own. Threads are never merged
//! and stored messages never move.
//!
//! Two ways lead to the same rows. [`Threader::store_batch`] stores a batch with a few
//! statements whatever its size: it reads what the database holds for all its messages at
//! once, threads them in memory one after the other as [`Threader::store`] would, then
//! writes threads, messages and attachments with multi-row inserts. [`Threader::store`]
//! stores one message in its own savepoint: mail received over HTTP, and the messages of a
//! batch that could not be stored whole (one the database rejects, or one another writer
//! stored at the same moment).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    TransactionSession, TransactionTrait,
};

use super::Threading;
use crate::store::{self, IN_CHUNK, Identity};
use protege_core::Result;
use protege_core::db::entities::{email_thread, message};
use protege_mail::eml::parse::{ParsedEml, thread_subject};
use protege_mail::{Direction, Email};

/// What storing one message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stored {
    /// Inserted into the thread with this id, with this direction.
    Imported {
        /// The thread's id.
        thread: i64,
        /// Inbound or outbound.
        direction: Direction,
    },
    /// Its Message-ID was already stored (or was stored at the same moment by another
    /// writer) for the same message; nothing written.
    Duplicate,
    /// Its Message-ID is stored for another message (another direction, sender or
    /// content); nothing written. The sentence says how they differ.
    Conflict(String),
    /// Its Message-ID was erased (`erased_messages`): the same mail is never stored again.
    Erased,
}

/// The threading state of one import: the persona addresses, and what is known of the
/// threads seen so far (a cache: emptying it changes nothing but the number of reads).
#[derive(Debug)]
pub(super) struct Threader {
    /// The persona addresses, bare and lowercased.
    own: HashSet<String>,
    /// The participants (bare, lowercased) of each thread read or written so far.
    participants: HashMap<i64, HashSet<String>>,
    /// The start (`created_at`) of each thread a batch read or wrote.
    created: HashMap<i64, DateTime<Utc>>,
    /// Whether every sender counts as a participant ([`Threading::References`]).
    trust_references: bool,
}

/// The most threads whose participants are kept from one batch to the next: beyond it the
/// cache is emptied, so memory stays flat however many threads an import touches.
const MAX_CACHED_THREADS: usize = 8192;

/// The bare address of a header-form address, lowercased, on one line.
pub(super) use protege_mail::address_key as key;

/// The participant keys a message adds to its thread: its From address, and the To and Cc
/// addresses of an outbound message (those the persona wrote to). The To and Cc of an
/// inbound message were chosen by its sender, a stranger perhaps: they add no one.
fn participant_keys(email: &Email) -> impl Iterator<Item = String> + '_ {
    let (to, cc): (&[String], &[String]) = match email.direction {
        Direction::Outbound => (&email.to, &email.cc),
        Direction::Inbound => (&[], &[]),
    };
    std::iter::once(&email.from)
        .chain(to)
        .chain(cc)
        .map(|a| key(a))
}

/// Adds the participant keys of a stored message (To and Cc as JSON arrays) to `set`, as
/// [`participant_keys`] does.
fn add_stored_participants(
    set: &mut HashSet<String>,
    direction: &str,
    from: &str,
    to: &str,
    cc: &str,
) {
    set.insert(key(from));
    if Direction::parse(direction) != Some(Direction::Outbound) {
        return;
    }
    for list in [to, cc] {
        let list: Vec<String> = serde_json::from_str(list).unwrap_or_default();
        set.extend(list.iter().map(|a| key(a)));
    }
}

/// Where a message of a batch goes: a stored thread, or the n-th thread the batch creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Stored(i64),
    New(usize),
}

/// A thread a batch creates.
#[derive(Debug)]
struct NewThread {
    subject: String,
    created_at: DateTime<Utc>,
    participants: HashSet<String>,
}

/// What the database holds for a batch: the threads of its messages and of the ids they
/// refer to, who stored each of its Message-IDs already stored, and the stored replies to
/// its messages (by the matching form of the id they reply to).
#[derive(Debug)]
struct Lookup {
    erased: HashSet<String>,
    stored: HashMap<String, i64>,
    identities: HashMap<String, Identity>,
    replies: HashMap<String, Vec<Place>>,
}

impl Lookup {
    async fn read<C: ConnectionTrait>(txn: &C, batch: &[&ParsedEml]) -> Result<Lookup> {
        let backend = txn.get_database_backend();
        let mut wanted: Vec<&str> = Vec::new();
        let mut own_ids: Vec<&str> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for eml in batch {
            let id = eml.email.message_id.as_str();
            if seen.insert(id) {
                own_ids.push(id);
                wanted.push(id);
            }
        }
        for parent in batch.iter().flat_map(|i| &i.parents) {
            if seen.insert(parent) {
                wanted.push(parent);
            }
        }
        let stored = store::stored_threads(txn, &wanted).await?;
        let again: Vec<&str> = own_ids
            .iter()
            .copied()
            .filter(|id| stored.contains_key(*id))
            .collect();
        let identities = store::stored_identities(txn, &again).await?;
        let mut replies: HashMap<String, Vec<Place>> = HashMap::new();
        for chunk in own_ids.chunks(IN_CHUNK) {
            let rows: Vec<(String, i64)> = message::Entity::find()
                .select_only()
                .column(message::Column::InReplyTo)
                .column(message::Column::EmailThreadId)
                .filter(message::Column::InReplyTo.is_in(chunk.iter().copied()))
                .order_by_asc(message::Column::Id)
                .into_tuple()
                .all(txn)
                .await?;
            for (in_reply_to, thread) in rows {
                replies
                    .entry(match_key(backend, &in_reply_to).to_owned())
                    .or_default()
                    .push(Place::Stored(thread));
            }
        }
        let erased = store::erased_ids(txn, &own_ids).await?;
        Ok(Lookup {
            erased,
            stored,
            identities,
            replies,
        })
    }
}

/// Where the messages of a batch go, worked out in memory before anything is written.
#[derive(Debug)]
struct Plan {
    new_threads: Vec<NewThread>,
    /// Stored threads that take the subject and start of an older message.
    adopted: Vec<(i64, String, DateTime<Utc>)>,
    /// Where each message goes; `Err` for one whose Message-ID is known, with the
    /// sentence of a conflict.
    places: Vec<std::result::Result<Place, Stored>>,
}

impl Threader {
    /// Starts an import with the persona addresses (bare or header form).
    pub(super) fn new(own_addresses: &[String], threading: Threading) -> Self {
        Self {
            own: own_addresses.iter().map(|a| key(a)).collect(),
            participants: HashMap::new(),
            created: HashMap::new(),
            trust_references: threading == Threading::References,
        }
    }

    /// Forgets what is known of the threads (after a batch was rolled back).
    pub(super) fn forget(&mut self) {
        self.participants.clear();
        self.created.clear();
    }

    /// Whether a message from `senders` (its From addresses, as keys) may not join any
    /// thread: inbound mail claiming a persona address is a forgery or a loop.
    fn forged(&self, direction: Direction, senders: &[String]) -> bool {
        direction == Direction::Inbound && senders.iter().any(|s| self.own.contains(s))
    }

    /// Whether `sender` (a key) is a participant of `thread`: from the participants a batch
    /// read, else one indexed look-up.
    async fn is_participant<C: ConnectionTrait>(
        &mut self,
        db: &C,
        thread: i64,
        sender: &str,
    ) -> Result<bool> {
        if self.trust_references || self.own.contains(sender) {
            return Ok(true);
        }
        if let Some(set) = self.participants.get(&thread) {
            return Ok(set.contains(sender));
        }
        // One indexed look-up (`message_addresses` by address and thread), whatever the
        // thread's length: its participant rows are the From of each message and the To
        // and Cc of the outbound ones, as `add_stored_participants` reads them.
        use protege_core::db::entities::message_address as a;
        let found = a::Entity::find()
            .select_only()
            .column(a::Column::Id)
            .filter(a::Column::Address.eq(sender))
            .filter(a::Column::EmailThreadId.eq(thread))
            .filter(a::Column::Participant.eq(true))
            .into_tuple::<i64>()
            .one(db)
            .await?
            .is_some();
        Ok(found)
    }

    /// Stores `eml` in its own savepoint of `db`: skipped when its Message-ID is
    /// stored, else put in the thread it may join (by participants) or in a new thread.
    pub(super) async fn store<C>(
        &mut self,
        db: &C,
        eml: &ParsedEml,
        job: Option<(&crate::jobs::NewJob, DateTime<Utc>)>,
    ) -> Result<Stored>
    where
        C: ConnectionTrait + TransactionTrait,
    {
        let email = &eml.email;
        if !store::erased_ids(db, &[email.message_id.as_str()])
            .await?
            .is_empty()
        {
            return Ok(Stored::Erased);
        }
        let mut lookup: Vec<&str> = Vec::with_capacity(eml.parents.len() + 1);
        lookup.push(&email.message_id);
        lookup.extend(eml.parents.iter().map(String::as_str));
        let found = store::stored_threads(db, &lookup).await?;
        if found.contains_key(&email.message_id) {
            return again(db, email).await;
        }
        let candidates = candidate_threads(db, eml, &found).await?;
        let join = self.thread_to_join(db, eml, &candidates).await?;
        let direction = email.direction;

        let txn = db.begin().await?;
        match store::insert_email(&txn, join, &thread_subject(&email.subject), email).await {
            // Another writer stored the same Message-ID first: nothing of ours stays.
            Ok(None) => {
                txn.rollback().await?;
                again(db, email).await
            }
            Ok(Some((thread, row))) => {
                // The agent's job is stored with its message, or neither is.
                if let Some((job, now)) = job
                    && let Err(e) = crate::jobs::insert_job(&txn, row, job, now).await
                {
                    txn.rollback().await?;
                    return Err(e);
                }
                // A delivery report marks the replies it returns, with it or not at all.
                if let Some(returned) = eml.bounce_of.as_ref().filter(|ids| !ids.is_empty())
                    && direction == Direction::Inbound
                    && let Err(e) =
                        crate::outbox::mark_bounced(&txn, returned, &email.message_id).await
                {
                    txn.rollback().await?;
                    return Err(e);
                }
                txn.commit().await?;
                // A batch's start times of threads are only a cache: this one may be stale.
                self.created.remove(&thread);
                if let Some(set) = self.participants.get_mut(&thread) {
                    set.extend(participant_keys(email));
                } else if join.is_none() {
                    self.participants
                        .insert(thread, participant_keys(email).collect());
                }
                Ok(Stored::Imported { thread, direction })
            }
            Err(err) => {
                txn.rollback().await?;
                if store::is_duplicate(&err) {
                    again(db, email).await
                } else {
                    Err(err)
                }
            }
        }
    }

    /// The first of the stored threads `candidates` whose participants include every
    /// sender of `eml`: inbound mail claiming a persona's address is a forgery or a loop,
    /// and joins nothing.
    async fn thread_to_join<C: ConnectionTrait>(
        &mut self,
        db: &C,
        eml: &ParsedEml,
        candidates: &[i64],
    ) -> Result<Option<i64>> {
        if self.forged(eml.email.direction, &eml.origin.from) {
            return Ok(None);
        }
        'threads: for &t in candidates {
            for sender in &eml.origin.from {
                if !self.is_participant(db, t, sender).await? {
                    continue 'threads;
                }
            }
            return Ok(Some(t));
        }
        Ok(None)
    }

    /// Stores the messages of `batch` in `txn`, in order, with the same outcome as
    /// [`store`](Self::store) for each: the stored rows, ids included, are the same.
    ///
    /// Returns `None` when another writer stored one of the messages after it was looked
    /// up: the caller rolls `txn` back and stores the messages one by one. On `None` or an
    /// error, `txn` holds part of the batch and must be rolled back, and
    /// [`forget`](Self::forget) called.
    pub(super) async fn store_batch<C: ConnectionTrait>(
        &mut self,
        txn: &C,
        batch: &[&ParsedEml],
    ) -> Result<Option<Vec<Stored>>> {
        let backend = txn.get_database_backend();
        if self.participants.len() > MAX_CACHED_THREADS {
            self.forget();
        }
        let mut lookup = Lookup::read(txn, batch).await?;

        // The stored threads a message may join: their participants and start times.
        let mut threads: Vec<i64> = Vec::new();
        for eml in batch {
            for parent in &eml.parents {
                if let Some(&t) = lookup.stored.get(parent) {
                    threads.push(t);
                }
            }
        }
        threads.extend(lookup.replies.values().flatten().filter_map(|p| match p {
            Place::Stored(t) => Some(*t),
            Place::New(_) => None,
        }));
        threads.sort_unstable();
        threads.dedup();
        self.load_threads(txn, &threads).await?;

        let plan = self.place(backend, batch, &mut lookup);
        self.write(txn, batch, plan).await
    }

    /// Threads each message of `batch` in order, in memory: where it goes (a stored thread,
    /// a new one, or nowhere for a known Message-ID), the new threads, and the stored
    /// threads that take the subject and start of an older message.
    fn place<'b>(
        &mut self,
        backend: DbBackend,
        batch: &[&'b ParsedEml],
        lookup: &'b mut Lookup,
    ) -> Plan {
        let mut known: HashMap<&str, Place> = lookup
            .stored
            .iter()
            .map(|(id, &t)| (id.as_str(), Place::Stored(t)))
            .collect();
        let mut plan = Plan {
            new_threads: Vec::new(),
            adopted: Vec::new(),
            places: Vec::with_capacity(batch.len()),
        };
        // The messages of the batch placed so far, by Message-ID.
        let mut placed: HashMap<&str, &Email> = HashMap::new();
        for eml in batch {
            let email = &eml.email;
            let id = email.message_id.as_str();
            if lookup.erased.contains(id) {
                plan.places.push(Err(Stored::Erased));
                continue;
            }
            if known.contains_key(id) {
                let first = lookup
                    .identities
                    .get(id)
                    .cloned()
                    .or_else(|| placed.get(id).map(|e| Identity::of(e)));
                plan.places.push(Err(match conflict(first.as_ref(), email) {
                    Some(reason) => Stored::Conflict(reason),
                    None => Stored::Duplicate,
                }));
                continue;
            }
            let mut candidates: Vec<Place> = Vec::new();
            for parent in &eml.parents {
                if let Some(&place) = known.get(parent.as_str())
                    && !candidates.contains(&place)
                {
                    candidates.push(place);
                }
            }
            for &place in lookup
                .replies
                .get(match_key(backend, &email.message_id))
                .into_iter()
                .flatten()
            {
                if !candidates.contains(&place) {
                    candidates.push(place);
                }
            }
            let join = self.joined(eml, candidates, &plan.new_threads);
            let place = self.join(email, join, &mut plan);
            known.insert(&email.message_id, place);
            placed.insert(&email.message_id, email);
            if let Some(parent) = &email.in_reply_to {
                lookup
                    .replies
                    .entry(match_key(backend, parent).to_owned())
                    .or_default()
                    .push(place);
            }
            plan.places.push(Ok(place));
        }
        plan
    }

    /// The first of `candidates` whose participants include every sender of `eml` (or
    /// none, for a message forging a persona's address).
    fn joined(
        &self,
        eml: &ParsedEml,
        candidates: Vec<Place>,
        new_threads: &[NewThread],
    ) -> Option<Place> {
        let senders = &eml.origin.from;
        if self.forged(eml.email.direction, senders) {
            return None;
        }
        candidates.into_iter().find(|&place| {
            senders.iter().all(|sender| {
                self.trust_references
                    || self.own.contains(sender)
                    || match place {
                        Place::Stored(t) => self
                            .participants
                            .get(&t)
                            .is_some_and(|set| set.contains(sender)),
                        Place::New(n) => new_threads[n].participants.contains(sender),
                    }
            })
        })
    }

    /// Puts `email` in the thread it joins, or in a new thread: the thread takes the
    /// subject and start of a message older than its start, and the message's participants.
    fn join(&mut self, email: &Email, join: Option<Place>, plan: &mut Plan) -> Place {
        let subject = thread_subject(&email.subject);
        match join {
            Some(Place::Stored(t)) => {
                if let Some(created) = self.created.get_mut(&t)
                    && *created > email.sent_at
                {
                    *created = email.sent_at;
                    match plan.adopted.iter_mut().find(|(a, _, _)| *a == t) {
                        Some(entry) => *entry = (t, subject, email.sent_at),
                        None => plan.adopted.push((t, subject, email.sent_at)),
                    }
                }
                if let Some(set) = self.participants.get_mut(&t) {
                    set.extend(participant_keys(email));
                }
                Place::Stored(t)
            }
            Some(Place::New(n)) => {
                let thread = &mut plan.new_threads[n];
                if thread.created_at > email.sent_at {
                    thread.created_at = email.sent_at;
                    thread.subject = subject;
                }
                thread.participants.extend(participant_keys(email));
                Place::New(n)
            }
            None => {
                plan.new_threads.push(NewThread {
                    subject,
                    created_at: email.sent_at,
                    participants: participant_keys(email).collect(),
                });
                Place::New(plan.new_threads.len() - 1)
            }
        }
    }

    /// Writes `plan`: the new threads, the start of adopted ones, the messages, their
    /// attachments; `None` when another writer stored one of the messages meanwhile.
    async fn write<C: ConnectionTrait>(
        &mut self,
        txn: &C,
        batch: &[&ParsedEml],
        plan: Plan,
    ) -> Result<Option<Vec<Stored>>> {
        let Plan {
            new_threads,
            adopted,
            places,
        } = plan;
        let thread_rows: Vec<(&str, DateTime<Utc>)> = new_threads
            .iter()
            .map(|t| (t.subject.as_str(), t.created_at))
            .collect();
        let thread_ids = store::insert_threads(txn, &thread_rows).await?;
        for (t, subject, sent_at) in adopted {
            store::backdate_thread(txn, t, &subject, sent_at).await?;
        }
        let thread_of = |place: Place| match place {
            Place::Stored(t) => t,
            Place::New(n) => thread_ids[n],
        };
        let rows: Vec<(i64, &Email)> = batch
            .iter()
            .zip(&places)
            .filter_map(|(i, place)| place.as_ref().ok().map(|&p| (thread_of(p), &i.email)))
            .collect();
        let Some(message_ids) = store::insert_messages(txn, &rows).await? else {
            return Ok(None);
        };
        store::insert_attachments(txn, &rows, &message_ids).await?;
        store::insert_addresses(txn, &rows, &message_ids).await?;
        let threads: Vec<i64> = rows.iter().map(|(t, _)| *t).collect();
        let written: HashSet<i64> = message_ids.iter().copied().collect();
        protege_core::db::strips::restrip(txn, &threads, &written).await?;

        for (n, thread) in new_threads.into_iter().enumerate() {
            self.participants.insert(thread_ids[n], thread.participants);
            self.created.insert(thread_ids[n], thread.created_at);
        }
        Ok(Some(
            batch
                .iter()
                .zip(places)
                .map(|(i, place)| match place {
                    Ok(place) => Stored::Imported {
                        thread: thread_of(place),
                        direction: i.email.direction,
                    },
                    Err(skipped) => skipped,
                })
                .collect(),
        ))
    }

    /// Reads the participants and start times of the stored `threads` not known yet.
    async fn load_threads<C: ConnectionTrait>(&mut self, db: &C, threads: &[i64]) -> Result<()> {
        let missing: Vec<i64> = threads
            .iter()
            .copied()
            .filter(|t| !self.participants.contains_key(t))
            .collect();
        for chunk in missing.chunks(IN_CHUNK) {
            let rows: Vec<(i64, String, String, String, String)> = message::Entity::find()
                .select_only()
                .column(message::Column::EmailThreadId)
                .column(message::Column::Direction)
                .column(message::Column::FromAddress)
                .column(message::Column::ToAddresses)
                .column(message::Column::CcAddresses)
                .filter(message::Column::EmailThreadId.is_in(chunk.iter().copied()))
                .into_tuple()
                .all(db)
                .await?;
            for &t in chunk {
                self.participants.entry(t).or_default();
            }
            for (thread, direction, from, to, cc) in rows {
                let set = self.participants.entry(thread).or_default();
                add_stored_participants(set, &direction, &from, &to, &cc);
            }
        }
        let missing: Vec<i64> = threads
            .iter()
            .copied()
            .filter(|t| !self.created.contains_key(t))
            .collect();
        for chunk in missing.chunks(IN_CHUNK) {
            let rows: Vec<(i64, DateTime<Utc>)> = email_thread::Entity::find()
                .select_only()
                .column(email_thread::Column::Id)
                .column(email_thread::Column::CreatedAt)
                .filter(email_thread::Column::Id.is_in(chunk.iter().copied()))
                .into_tuple()
                .all(db)
                .await?;
            self.created.extend(rows);
        }
        Ok(())
    }
}

/// The stored threads `eml` could join, most relevant first: those of the messages it
/// references (`found`: the stored threads by Message-ID), then those of stored replies
/// to it.
async fn candidate_threads<C: ConnectionTrait>(
    db: &C,
    eml: &ParsedEml,
    found: &HashMap<String, i64>,
) -> Result<Vec<i64>> {
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
        .filter(message::Column::InReplyTo.eq(eml.email.message_id.as_str()))
        .order_by_asc(message::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
    for t in replies {
        if !candidates.contains(&t) {
            candidates.push(t);
        }
    }
    Ok(candidates)
}

/// What storing `email` again is, its Message-ID being stored: a duplicate when the stored
/// message is the same (direction, sender and content), else a conflict.
async fn again<C: ConnectionTrait>(db: &C, email: &Email) -> Result<Stored> {
    let stored = store::stored_identities(db, &[email.message_id.as_str()]).await?;
    Ok(match conflict(stored.values().next(), email) {
        Some(reason) => Stored::Conflict(reason),
        None => Stored::Duplicate,
    })
}

/// The sentence of the conflict between `email` and the message `first` stored under its
/// Message-ID; `None` when they are the same message (or nothing is known of `first`).
fn conflict(first: Option<&Identity>, email: &Email) -> Option<String> {
    let how = first?.differs(&Identity::of(email))?;
    Some(store::conflict_reason(&email.message_id, &how))
}

/// A stored text as the database's equality sees it: MySQL/MariaDB compare `utf8mb4_bin`
/// text ignoring trailing spaces.
fn match_key(backend: DbBackend, text: &str) -> &str {
    match backend {
        DbBackend::MySql => text.trim_end_matches(' '),
        _ => text,
    }
}
