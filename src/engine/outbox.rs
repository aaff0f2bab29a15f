//! The outbox (§18): a finished run's answer composed once as a reply, stored before it
//! leaves, approved when it must be, and claimed for delivery.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::Serialize;

use protege_config::Persona;
use protege_core::db::RunStatus;
use protege_core::db::entities::{outbox as outbox_row, run as run_row};
use protege_core::{Approval, Direction, Email, Unauthenticated, bare_address};
use protege_mail::{AutoSubmitted, Reply, ReplyHeaders};
use protege_store::{Change, NewReply, StoredReply, outbox_state as state};

use super::run::Step;
use super::{Engine, EngineError, EngineErrorKind};
use crate::db;

/// The longest subject of a reply, in characters: RFC 5322's line limit.
pub const MAX_SUBJECT_CHARS: usize = 998;

/// How long a lease of [`Engine::claim_outbox`] lasts when the caller names none.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(60);

pub use protege_store::retry_after;

/// An outbox row as the routes and the command line show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxEntry {
    /// The row's id.
    pub id: i64,
    /// The reply's Message-ID.
    pub message_id: String,
    /// The thread the reply belongs to (`GET /v1/threads/{id}/messages`).
    pub thread_id: i64,
    /// The run whose answer it is.
    pub run_id: Option<String>,
    /// The persona that sends it.
    pub persona: String,
    /// `waiting`, `queued`, `sending`, `sent`, `failed` or `rejected`.
    pub state: String,
    /// Why it waits, failed or was rejected.
    pub reason: Option<String>,
    /// Why a queued reply is held.
    pub held_reason: Option<String>,
    /// Delivery attempts made.
    pub attempts: i32,
    /// When the next attempt is due.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The SMTP server's last reply.
    pub smtp_reply: Option<String>,
    /// Recipients a server refused, with its reply.
    pub refused_recipients: serde_json::Value,
    /// Who approved it.
    pub approved_by: Option<String>,
    /// When.
    pub approved_at: Option<DateTime<Utc>>,
    /// When the server accepted it.
    pub sent_at: Option<DateTime<Utc>>,
    /// The bytes to send, when asked for ([`Engine::outbox_entry`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

/// What [`Engine::compose_reply`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Composed {
    /// The reply is stored (now, or by an earlier call for the same run).
    Reply {
        /// Its outbox row.
        outbox: Box<OutboxEntry>,
    },
    /// No reply: why (`no_reply`: a blank answer; `no_recipient`: every recipient was a
    /// persona address; `unauthenticated`: `[agent] unauthenticated = "skip"`;
    /// `trigger_gone`: the trigger was erased).
    Skipped {
        /// The reason.
        reason: String,
    },
}

/// A row claimed for delivery by [`Engine::claim_outbox`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claimed {
    /// The row, with its bytes.
    #[serde(flatten)]
    pub entry: OutboxEntry,
    /// The envelope sender.
    pub envelope_from: String,
    /// The envelope recipients.
    pub recipients: Vec<String>,
    /// When the lease runs out.
    pub lease_until: Option<DateTime<Utc>>,
}

/// The subject of the answer of `responsibility` of `persona`: its `subject` template
/// rendered on one line (it sees `now` and `responsibility`), else its name; at most
/// [`MAX_SUBJECT_CHARS`].
fn scheduled_subject(
    persona: &str,
    responsibility: &protege_core::Responsibility,
    now: DateTime<Utc>,
) -> Result<String, EngineError> {
    let name = &responsibility.name;
    let subject = match &responsibility.subject {
        None => responsibility.name.clone(),
        Some(template) => {
            let vars = serde_json::json!({
                "now": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "responsibility": responsibility,
            });
            let rendered = protege_core::Template::compile("subject", template.as_str())
                .and_then(|t| t.render(&minijinja::Value::from(minijinja::value::Serde(&vars))))
                .map_err(|e| {
                    invalid(format!(
                        "the `subject` of responsibility `{name}` of persona `{persona}` does not render: {e}"
                    ))
                })?;
            protege_mail::one_line(rendered.trim()).into_owned()
        }
    };
    let length = subject.chars().count();
    if length > MAX_SUBJECT_CHARS {
        return Err(invalid(format!(
            "the subject of responsibility `{name}` renders {length} characters, over the {MAX_SUBJECT_CHARS} of one mail header line: no answer is composed"
        )));
    }
    Ok(subject)
}

/// The error of an outbox row `id` that is not in the state a decision needs.
fn wrong_state(id: i64, state: &str, needs: &str) -> EngineError {
    EngineError::new(
        EngineErrorKind::Conflict,
        format!("outbox row {id} is `{state}`: only a `{needs}` row can be changed so"),
    )
}

/// The error of an unknown outbox row.
fn unknown_row(id: i64) -> EngineError {
    EngineError::new(
        EngineErrorKind::NotFound,
        format!("unknown outbox row {id}: no row with this id in the database"),
    )
}

fn invalid(message: String) -> EngineError {
    EngineError::new(EngineErrorKind::InvalidInput, message)
}

impl Engine {
    /// The reply of the finished run `run_id` (§18), composed and stored once: a second
    /// call answers the same row. The reply is an outbound message of the trigger's thread
    /// at once, with an outbox row `queued` or `waiting` (with its reason).
    pub async fn compose_reply(&self, run_id: &str) -> Result<Composed, EngineError> {
        self.compose_reply_at(run_id, Utc::now()).await
    }

    /// [`compose_reply`](Self::compose_reply) at `now` (the reply's `Date`).
    pub async fn compose_reply_at(
        &self,
        run_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Composed, EngineError> {
        self.compose_reply_held(run_id, now, None).await
    }

    /// [`compose_reply_at`](Self::compose_reply_at); with `held`, a reply that would be
    /// queued waits for approval with this reason (a trial run in the foreground).
    pub(crate) async fn compose_reply_held(
        &self,
        run_id: &str,
        now: DateTime<Utc>,
        held: Option<&str>,
    ) -> Result<Composed, EngineError> {
        let conn = self.db().await?;
        if let Some(row) = db::outbox_of_run(conn, run_id).await? {
            return Ok(Composed::Reply {
                outbox: Box::new(self.entry(row, false).await?),
            });
        }
        let run = self.load_run_row(run_id).await?;
        let text = self.final_answer(run_id, &run).await?;
        let Some(trigger_row) = run.message_id else {
            return self.compose_scheduled(&run, text, now, held).await;
        };
        let Some(trigger) = db::load_message_by_row(conn, trigger_row).await? else {
            return Ok(skipped("trigger_gone"));
        };
        if trigger.direction == Direction::Outbound {
            return Err(invalid(format!(
                "the trigger of run `{run_id}` is outbound mail: a reply answers mail received"
            )));
        }
        if text.trim().is_empty() {
            return Ok(skipped("no_reply"));
        }
        let subject = protege_mail::reply_subject(&trigger.subject);
        let length = subject.chars().count();
        if length > MAX_SUBJECT_CHARS {
            return Err(invalid(format!(
                "the subject of run `{run_id}`'s trigger makes a reply subject of {length} characters, over the {MAX_SUBJECT_CHARS} of one mail header line: no reply is composed"
            )));
        }
        let persona = self.require_persona(&run.persona)?;
        let plan = self.plan(&persona, &trigger).await?;
        let Some(plan) = plan else {
            return Ok(skipped("no_recipient"));
        };
        if plan.skip {
            return Ok(skipped("unauthenticated"));
        }
        let reply = Reply {
            from: plan.from.clone(),
            from_name: persona.info.outbox.from_name.clone(),
            to: plan.to.clone(),
            cc: plan.cc.clone(),
            subject,
            message_id: Engine::new_message_id(&persona),
            in_reply_to: Some(trigger.message_id.clone()),
            references: protege_mail::reply_references(
                &trigger.message_id,
                &trigger.reply_headers.references,
                trigger.in_reply_to.as_deref(),
            ),
            date: now,
            auto_submitted: AutoSubmitted::AutoReplied,
            loop_address: loop_address(&persona),
            text: text.clone(),
            html: persona.info.agent.as_ref().is_some_and(|a| a.html),
        };
        let raw = reply_bytes(&reply)?;
        let reason = self.wait_reason(&text, plan.reason.clone(), held).await;
        let new = NewReply {
            trigger: Some(trigger_row),
            thread: Some(trigger.thread_id),
            run_id: Some(run.id.clone()),
            persona: run.persona.clone(),
            email: stored_email(&reply),
            raw,
            envelope_from: plan.from.clone(),
            recipients: plan.envelope.clone(),
            waiting: reason.is_some(),
            reason,
            now,
        };
        self.store_composed(&new, reply.message_id).await
    }

    /// Stores `new` (whose Message-ID is `message_id`) and answers its outbox row.
    async fn store_composed(
        &self,
        new: &NewReply,
        message_id: String,
    ) -> Result<Composed, EngineError> {
        let stored = protege_store::store_reply(self.db().await?, new).await?;
        self.inner.wake.outbox.notify_one();
        match stored {
            StoredReply::Stored(row, thread) => Ok(Composed::Reply {
                outbox: Box::new(entry_of(*row, message_id, thread, false)),
            }),
            StoredReply::Existing(id) => Ok(Composed::Reply {
                outbox: Box::new(self.outbox_entry(id, false).await?),
            }),
            StoredReply::TriggerGone => Ok(skipped("trigger_gone")),
        }
    }

    /// The answer `text` of the scheduled run `run` (§18 "Scheduled runs"): a new thread
    /// from the persona's first address to the responsibility's `to`, with its `subject`
    /// (a template that sees `now` and `responsibility`; the responsibility's name when
    /// unset). `reply = "draft"` and `approval = "always"` hold it; `first_contact` does not.
    /// Skipped (`no_recipient`) when the responsibility names no one: the answer stays in
    /// the run.
    async fn compose_scheduled(
        &self,
        run: &run_row::Model,
        text: String,
        now: DateTime<Utc>,
        held: Option<&str>,
    ) -> Result<Composed, EngineError> {
        let persona = self.require_persona(&run.persona)?;
        let name = run.responsibility.clone().unwrap_or_default();
        let Some(responsibility) = persona
            .info
            .responsibilities
            .iter()
            .find(|r| r.name == name)
        else {
            return Ok(skipped("responsibility_gone"));
        };
        if responsibility.to.is_empty() {
            return Ok(skipped("no_recipient"));
        }
        if text.trim().is_empty() {
            return Ok(skipped("no_reply"));
        }
        let subject = scheduled_subject(&run.persona, responsibility, now)?;
        let from = persona
            .info
            .addresses
            .first()
            .map(|a| bare_address(a).to_lowercase())
            .ok_or_else(|| {
                invalid(format!(
                    "persona `{}` has no address to send from",
                    persona.name()
                ))
            })?;
        let to = responsibility.to.clone();
        let reply = Reply {
            from: from.clone(),
            from_name: persona.info.outbox.from_name.clone(),
            to: to.clone(),
            cc: Vec::new(),
            subject,
            message_id: Engine::new_message_id(&persona),
            in_reply_to: None,
            references: Vec::new(),
            date: now,
            auto_submitted: AutoSubmitted::AutoGenerated,
            loop_address: loop_address(&persona),
            text: text.clone(),
            html: persona.info.agent.as_ref().is_some_and(|a| a.html),
        };
        let raw = reply_bytes(&reply)?;
        let drafts = persona
            .info
            .agent
            .as_ref()
            .is_some_and(|a| a.always_drafts())
            .then(|| "draft".to_owned());
        let reason = self.wait_reason(&text, drafts, held).await;
        let new = NewReply {
            trigger: None,
            thread: None,
            run_id: Some(run.id.clone()),
            persona: run.persona.clone(),
            email: stored_email(&reply),
            raw,
            envelope_from: from,
            recipients: to.iter().map(|a| bare_address(a).to_lowercase()).collect(),
            waiting: reason.is_some(),
            reason,
            now,
        };
        self.store_composed(&new, reply.message_id).await
    }

    /// The answer text of the finished run `run` (asked for as `run_id`): a run that goes
    /// on, or that stopped, has no reply.
    async fn final_answer(
        &self,
        run_id: &str,
        run: &run_row::Model,
    ) -> Result<String, EngineError> {
        if !matches!(run.status, RunStatus::Done | RunStatus::Stopped) {
            return Err(invalid(format!(
                "run `{run_id}` is `{}`: only a finished run has a reply",
                run.status
            )));
        }
        match (run.status, self.answer(run).await?) {
            (RunStatus::Done, Step::Done { text, .. }) => Ok(text),
            (RunStatus::Stopped, Step::Stopped { stop_reason, .. }) => Err(invalid(format!(
                "run `{run_id}` stopped ({stop_reason}): a stopped run composes no reply"
            ))),
            (status, _) => Err(invalid(format!(
                "run `{run_id}` is `{status}`: only a finished run has a reply"
            ))),
        }
    }

    /// Why a reply with the answer `text` waits for approval: because it holds a secret,
    /// else for `reason` (the persona's settings), else for `held` (a trial run in the
    /// foreground); `None` when it goes.
    async fn wait_reason(
        &self,
        text: &str,
        reason: Option<String>,
        held: Option<&str>,
    ) -> Option<String> {
        if self.holds_a_secret(text).await {
            return Some("contains a secret".to_owned());
        }
        reason.or_else(|| held.map(str::to_owned))
    }

    /// Whether `text` holds the value of a secret protege holds (§17): the fence key, the
    /// secrets the personas name (SMTP passwords, API keys, tool secrets and MCP tokens:
    /// [`secret_variables`]), the service token
    /// (`PROTEGE_SERVE_TOKEN`) and the fence key's variable (`PROTEGE_FENCE_KEY`). Values
    /// shorter than 8 characters are not searched (they would match ordinary words).
    async fn holds_a_secret(&self, text: &str) -> bool {
        const SHORTEST: usize = 8;
        let mut secrets: Vec<String> = Vec::new();
        if let Ok(conn) = self.db().await
            && let Ok(key) = self.fence_key(conn).await
        {
            secrets.push(String::from_utf8_lossy(&key).into_owned());
        }
        for persona in self.inner.set.personas() {
            for var in secret_variables(&persona.info) {
                if let Ok(value) = std::env::var(var) {
                    secrets.push(value);
                }
            }
        }
        for var in ["PROTEGE_SERVE_TOKEN", "PROTEGE_FENCE_KEY"] {
            if let Ok(value) = std::env::var(var) {
                secrets.push(value);
            }
        }
        secrets
            .iter()
            .map(|s| s.trim())
            .filter(|s| s.chars().count() >= SHORTEST)
            .any(|secret| text.contains(secret))
    }

    /// What `run` answered: its step after its last round.
    async fn answer(&self, run: &run_row::Model) -> Result<Step, EngineError> {
        if run.rounds == 0 {
            return Err(invalid(format!(
                "run `{}` has no recorded round: it has no answer yet",
                run.id
            )));
        }
        self.step_after(run, u32::try_from(run.rounds - 1).unwrap_or(0))
            .await
    }

    /// Whether the sender of `trigger` is authenticated (§9): a trusted
    /// `Authentication-Results` header reports `dmarc=pass` for its From domain.
    pub(crate) fn sender_authenticated(&self, persona: &Persona, trigger: &Email) -> bool {
        let mut trusted = persona.info.mail.trusted_authserv_ids.clone();
        trusted.extend(self.inner.trusted_authserv_ids.iter().cloned());
        protege_mail::eml::direction::sender_authenticated(
            &trigger.reply_headers.authentication_results,
            &trusted,
            &bare_address(&trigger.from).to_lowercase(),
        )
    }

    /// Who receives the reply to `trigger` and whether it waits; `None` when no one does.
    async fn plan(&self, persona: &Persona, trigger: &Email) -> Result<Option<Plan>, EngineError> {
        let agent = persona.info.agent.clone().unwrap_or_default();
        let own: HashSet<String> = persona
            .info
            .addresses
            .iter()
            .map(|a| bare_address(a).to_lowercase())
            .collect();
        let authenticated = self.sender_authenticated(persona, trigger);
        let recipients = protege_mail::reply_recipients(
            trigger,
            authenticated,
            &own,
            agent.reply_all,
            agent.max_cc,
        );
        if recipients.to.is_empty() {
            return Ok(None);
        }
        let envelope = recipients.envelope();
        let mut reason = None;
        let mut skip = false;
        if agent.always_drafts() {
            reason = Some("draft");
        } else if !authenticated {
            match agent.unauthenticated {
                Unauthenticated::Draft => reason = Some("unauthenticated"),
                Unauthenticated::Skip => skip = true,
                Unauthenticated::Send => {}
            }
        }
        if reason.is_none() && recipients.cc_over {
            reason = Some("max_cc");
        }
        if reason.is_none() && agent.approval == Approval::FirstContact {
            let own: Vec<String> = own.iter().cloned().collect();
            let new = db::first_contacts(self.db().await?, &envelope, &own).await?;
            if !new.is_empty() {
                reason = Some("first_contact");
            }
        }
        // From: the persona address the trigger was sent to, To then Cc, else its first.
        let from = trigger
            .to
            .iter()
            .chain(&trigger.cc)
            .map(|a| bare_address(a).to_lowercase())
            .find(|a| own.contains(a))
            .or_else(|| {
                persona
                    .info
                    .addresses
                    .first()
                    .map(|a| bare_address(a).to_owned())
            })
            .ok_or_else(|| {
                invalid(format!(
                    "persona `{}` has no address to send from",
                    persona.name()
                ))
            })?;
        Ok(Some(Plan {
            from,
            to: recipients.to,
            cc: recipients.cc,
            envelope,
            reason: reason.map(str::to_owned),
            skip,
        }))
    }

    /// The outbox row `id`, with its bytes when `raw`.
    pub async fn outbox_entry(&self, id: i64, raw: bool) -> Result<OutboxEntry, EngineError> {
        let row = db::load_outbox(self.db().await?, id)
            .await?
            .ok_or_else(|| unknown_row(id))?;
        self.entry(row, raw).await
    }

    /// The outbox rows `filter` names, newest first.
    pub async fn outbox(&self, filter: &db::OutboxFilter) -> Result<Vec<OutboxEntry>, EngineError> {
        let rows = db::list_outbox(self.db().await?, filter).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.entry(row, false).await?);
        }
        Ok(out)
    }

    /// `row` as shown.
    async fn entry(&self, row: outbox_row::Model, raw: bool) -> Result<OutboxEntry, EngineError> {
        let (message_id, thread_id) = db::message_key_of(self.db().await?, row.message_id)
            .await?
            .unwrap_or_default();
        Ok(entry_of(row, message_id, thread_id, raw))
    }

    /// Approves the waiting reply `id` (§18): it becomes `queued` with a new `Date` (now)
    /// and `Auto-Submitted: no`; with `text`, the stored message and the bytes carry the
    /// edited text (the run keeps the model's). The first decision wins: a row that is not
    /// `waiting` is a conflict naming its state.
    pub async fn approve_reply(
        &self,
        id: i64,
        by: &str,
        text: Option<&str>,
    ) -> Result<OutboxEntry, EngineError> {
        self.approve_reply_at(id, by, text, Utc::now()).await
    }

    /// [`approve_reply`](Self::approve_reply) at `now`.
    pub async fn approve_reply_at(
        &self,
        id: i64,
        by: &str,
        text: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<OutboxEntry, EngineError> {
        use outbox_row::Column as O;
        let by = check_by(by)?;
        let conn = self.db().await?;
        let row = db::load_outbox(conn, id)
            .await?
            .ok_or_else(|| unknown_row(id))?;
        if row.state != state::WAITING {
            return Err(wrong_state(id, &row.state, state::WAITING));
        }
        if text.is_some_and(|t| t.trim().is_empty()) {
            return Err(invalid(
                "the edited text is blank: reject the reply instead".to_owned(),
            ));
        }
        let stored = db::load_message_by_row(conn, row.message_id)
            .await?
            .ok_or_else(|| unknown_row(id))?;
        let persona = self.persona(&row.persona);
        let reply = Reply {
            from: bare_address(&stored.from).to_owned(),
            from_name: persona
                .as_ref()
                .and_then(|p| p.info.outbox.from_name.clone()),
            to: stored.to.clone(),
            cc: stored.cc.clone(),
            subject: stored.subject.clone(),
            message_id: stored.message_id.clone(),
            in_reply_to: stored.in_reply_to.clone(),
            references: stored.reply_headers.references.clone(),
            date: now,
            auto_submitted: AutoSubmitted::No,
            loop_address: persona
                .as_ref()
                .map_or_else(|| row.envelope_from.clone(), |p| loop_address(p)),
            text: text
                .map(str::to_owned)
                .or_else(|| stored.text_body.clone())
                .unwrap_or_default(),
            html: persona
                .as_ref()
                .and_then(|p| p.info.agent.as_ref())
                .is_some_and(|a| a.html),
        };
        let raw = reply_bytes(&reply)?;
        let change = Change::of(id, now)
            .set(O::State, state::QUEUED)
            .set(O::ApprovedBy, by)
            .set(O::ApprovedAt, now)
            .set(O::QueuedAt, now)
            .set(O::Raw, raw)
            .in_state(state::WAITING);
        let text = text.map(protege_mail::body_text);
        let changed = protege_store::edit_reply(
            conn,
            row.message_id,
            stored.thread_id,
            text.as_deref(),
            now,
            change,
        )
        .await?;
        if !changed {
            let now_state = db::load_outbox(conn, id)
                .await?
                .map_or_else(|| "gone".to_owned(), |r| r.state);
            return Err(wrong_state(id, &now_state, state::WAITING));
        }
        self.outbox_entry(id, false).await
    }

    /// Rejects the waiting reply `id` with `reason`: it is never sent, and the history never
    /// shows it. The first decision wins.
    pub async fn reject_reply(
        &self,
        id: i64,
        by: &str,
        reason: &str,
    ) -> Result<OutboxEntry, EngineError> {
        use outbox_row::Column as O;
        let by = check_by(by)?;
        let now = Utc::now();
        let reason = protege_core::one_line(reason).trim().to_owned();
        let change = Change::of(id, now)
            .set(O::State, state::REJECTED)
            .set(O::ApprovedBy, by)
            .set(O::ApprovedAt, now)
            .set(
                O::Reason,
                if reason.is_empty() {
                    None
                } else {
                    Some(reason)
                },
            )
            .in_state(state::WAITING);
        self.decide(id, change, state::WAITING).await
    }

    /// Queues the failed reply `id` again, with the same bytes.
    pub async fn retry_reply(&self, id: i64, by: &str) -> Result<OutboxEntry, EngineError> {
        use outbox_row::Column as O;
        let _ = check_by(by)?;
        let now = Utc::now();
        let change = Change::of(id, now)
            .set(O::State, state::QUEUED)
            .set(O::NextAttemptAt, Option::<DateTime<Utc>>::None)
            .set(O::QueuedAt, now)
            .set(O::LeaseOwner, Option::<String>::None)
            .set(O::LeaseUntil, Option::<DateTime<Utc>>::None)
            .in_state(state::FAILED);
        self.decide(id, change, state::FAILED).await
    }

    /// Makes `change` of row `id`, which must be in state `needs`.
    async fn decide(
        &self,
        id: i64,
        change: Change,
        needs: &str,
    ) -> Result<OutboxEntry, EngineError> {
        let conn = self.db().await?;
        if change.apply_on(conn).await? {
            return self.outbox_entry(id, false).await;
        }
        let row = db::load_outbox(conn, id)
            .await?
            .ok_or_else(|| unknown_row(id))?;
        Err(wrong_state(id, &row.state, needs))
    }

    /// Holds the queued replies no person approved (of `persona`, or of every persona)
    /// until [`release_outbox`](Self::release_outbox); returns how many were held.
    pub async fn hold_outbox(&self, persona: Option<&str>) -> Result<u64, EngineError> {
        Ok(protege_store::hold(
            self.db().await?,
            persona,
            Some(protege_store::OPERATOR_HOLD),
            Utc::now(),
        )
        .await?)
    }

    /// Releases what [`hold_outbox`](Self::hold_outbox) held; returns how many.
    pub async fn release_outbox(&self, persona: Option<&str>) -> Result<u64, EngineError> {
        Ok(protege_store::hold(self.db().await?, persona, None, Utc::now()).await?)
    }

    /// Claims up to `limit` queued replies for `owner` for `lease` (an application that
    /// delivers the bytes itself, or the delivery worker): each moves to `sending` under
    /// the lease; a lease that runs out returns the row to the claimable ones.
    pub async fn claim_outbox(
        &self,
        owner: &str,
        limit: u64,
        lease: std::time::Duration,
        persona: Option<&str>,
    ) -> Result<Vec<Claimed>, EngineError> {
        let owner = check_owner(owner)?;
        let now = Utc::now();
        let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let conn = self.db().await?;
        let ids = protege_store::claim(conn, owner, until, now, limit, persona).await?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(row) = db::load_outbox(conn, id).await? else {
                continue;
            };
            let recipients = serde_json::from_str(&row.recipients).unwrap_or_default();
            let (envelope_from, lease_until) = (row.envelope_from.clone(), row.lease_until);
            out.push(Claimed {
                entry: self.entry(row, true).await?,
                envelope_from,
                recipients,
                lease_until,
            });
        }
        Ok(out)
    }

    /// Records that the server accepted reply `id` (`smtp_reply`: its answer), only from
    /// `owner` while it holds the lease.
    pub async fn mark_sent(
        &self,
        id: i64,
        owner: &str,
        smtp_reply: &str,
    ) -> Result<OutboxEntry, EngineError> {
        let conn = self.db().await?;
        let done = protege_store::mark_sent(conn, id, owner, smtp_reply, Utc::now()).await?;
        self.leased_outcome(id, owner, done).await
    }

    /// Records a failed attempt of reply `id` (`smtp_reply`: the server's answer or the
    /// error), only from `owner` while it holds the lease: with `retry_at` the row is queued
    /// again for then, else it is `failed`.
    pub async fn mark_failed(
        &self,
        id: i64,
        owner: &str,
        smtp_reply: &str,
        retry_at: Option<DateTime<Utc>>,
    ) -> Result<OutboxEntry, EngineError> {
        let conn = self.db().await?;
        let done =
            protege_store::mark_failed(conn, id, owner, smtp_reply, retry_at, Utc::now()).await?;
        self.leased_outcome(id, owner, done).await
    }

    /// The row `id` after a change only `owner`'s live lease allows, `done` or refused.
    async fn leased_outcome(
        &self,
        id: i64,
        owner: &str,
        done: bool,
    ) -> Result<OutboxEntry, EngineError> {
        let conn = self.db().await?;
        if done {
            return self.outbox_entry(id, false).await;
        }
        let row = db::load_outbox(conn, id)
            .await?
            .ok_or_else(|| unknown_row(id))?;
        Err(EngineError::new(
            EngineErrorKind::Conflict,
            format!(
                "outbox row {id} is `{}`{}: only the holder of a live lease (`{}`) can record its delivery",
                row.state,
                row.lease_owner
                    .as_deref()
                    .map(|o| format!(" under the lease of `{o}`"))
                    .unwrap_or_default(),
                protege_core::one_line(owner)
            ),
        ))
    }
}

/// Who receives a reply and whether it waits.
#[derive(Debug)]
struct Plan {
    from: String,
    to: Vec<String>,
    cc: Vec<String>,
    envelope: Vec<String>,
    reason: Option<String>,
    skip: bool,
}

fn skipped(reason: &str) -> Composed {
    Composed::Skipped {
        reason: reason.to_owned(),
    }
}

/// `row`, whose reply's Message-ID is `message_id` in thread `thread_id`, as shown; with
/// its bytes when `raw`.
fn entry_of(row: outbox_row::Model, message_id: String, thread_id: i64, raw: bool) -> OutboxEntry {
    OutboxEntry {
        id: row.id,
        message_id,
        thread_id,
        run_id: row.run_id,
        persona: row.persona,
        state: row.state,
        reason: row.reason,
        held_reason: row.held_reason,
        attempts: row.attempts,
        next_attempt_at: row.next_attempt_at,
        smtp_reply: row.smtp_reply,
        refused_recipients: serde_json::from_str(&row.refused_recipients)
            .unwrap_or(serde_json::Value::Array(Vec::new())),
        approved_by: row.approved_by,
        approved_at: row.approved_at,
        sent_at: row.sent_at,
        raw: raw.then_some(row.raw),
    }
}

/// The `X-Protege-Loop` of `persona`'s mail: its first address.
fn loop_address(persona: &Persona) -> String {
    persona
        .info
        .addresses
        .first()
        .map(|a| bare_address(a).to_lowercase())
        .unwrap_or_default()
}

/// The bytes of `reply`, as ASCII text.
fn reply_bytes(reply: &Reply) -> Result<String, EngineError> {
    let bytes = reply.to_bytes().map_err(invalid)?;
    String::from_utf8(bytes).map_err(|_| invalid("the reply is not 7-bit text".to_owned()))
}

/// `reply` as the outbound message stored for it.
fn stored_email(reply: &Reply) -> Email {
    let from = match reply.from_name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => format!("{name} <{}>", reply.from),
        _ => reply.from.clone(),
    };
    Email {
        message_id: reply.message_id.clone(),
        direction: Direction::Outbound,
        from,
        to: reply.to.clone(),
        cc: reply.cc.clone(),
        subject: reply.subject.clone(),
        sent_at: reply.date,
        text_body: Some(protege_mail::body_text(&reply.text)),
        html_body: None,
        html_text: None,
        in_reply_to: reply.in_reply_to.clone(),
        attachments: Vec::new(),
        reply_headers: ReplyHeaders {
            references: reply.references.clone(),
            ..ReplyHeaders::default()
        },
    }
}

/// `by` checked: one line, not blank, at most 200 characters.
fn check_by(by: &str) -> Result<String, EngineError> {
    let by = protege_core::one_line(by).trim().to_owned();
    if by.is_empty() || by.chars().count() > 200 {
        return Err(invalid(
            "`by` must name who decides: 1 to 200 characters on one line".to_owned(),
        ));
    }
    Ok(by)
}

/// A lease owner checked: 1 to 200 characters on one line.
fn check_owner(owner: &str) -> Result<&str, EngineError> {
    if owner.trim().is_empty() || owner.chars().count() > 200 || owner.contains(char::is_control) {
        return Err(invalid(
            "`owner` must name the claimer: 1 to 200 characters on one line".to_owned(),
        ));
    }
    Ok(owner)
}

#[cfg(feature = "agent")]
impl Engine {
    /// A delivery worker over this engine's database and personas, its leases named
    /// `owner` (§18): [`deliver_once`](protege_agent::Delivery::deliver_once) for one pass,
    /// [`run`](protege_agent::Delivery::run) inside a service.
    pub async fn delivery(
        &self,
        owner: impl Into<String>,
    ) -> Result<protege_agent::Delivery, EngineError> {
        Ok(protege_agent::Delivery::new(
            self.db().await?.clone(),
            std::sync::Arc::new(self.inner.set.clone()),
            owner.into(),
        )
        .wake(self.inner.wake.outbox.clone()))
    }
}

/// The environment variables holding the secrets of a persona: `[outbox] password_env`,
/// `[model] api_key_env` (when the persona has an `[agent]` table: only the agent reads
/// it), each `http` tool's `secret_env` and each `mcp` entry's `token_env`.
pub(crate) fn secret_variables(info: &protege_core::PersonaInfo) -> Vec<&str> {
    let mut vars: Vec<&str> = Vec::new();
    vars.extend(info.outbox.password_env.as_deref());
    if info.agent.is_some() {
        vars.extend(info.model.as_ref().and_then(|m| m.api_key_env()));
    }
    for tool in &info.tool_runners {
        match &tool.runner {
            protege_core::ToolRunner::Http(http) => vars.extend(http.secret_env.as_deref()),
            protege_core::ToolRunner::Mcp(mcp) => vars.extend(mcp.token_env.as_deref()),
            protege_core::ToolRunner::Builtin(_) => {}
        }
    }
    vars
}
