//! The outbox's delivery worker (§18): claims queued replies of the personas with an
//! `[outbox] smtp` server, sends their stored bytes, and records what the server said.
//!
//! Each row is claimed with a conditional update under a lease, so several processes
//! deliver each row once; the lease is renewed while an exchange lasts; `sent` is written
//! only while the lease is held. A process killed after the server's final reply and
//! before `sent` is written leaves the row `sending`: when its lease runs out another
//! worker sends the same bytes again (at least once, never two different replies).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;

use protege_config::Persona;
use protege_core::db::entities::outbox as outbox_row;
use protege_core::{PersonaAgent, PersonaOutbox, ReplyMode, Result, bare_address};
use protege_store::{outbox_state as state, retry_after};

use crate::smtp::{self, Attempt, Outcome};

/// The personas a worker delivers for, read afresh before each attempt (a reload changes
/// what the next attempt does).
pub trait Personas: Send + Sync {
    /// The persona called `name`, when it is loaded.
    fn get(&self, name: &str) -> Option<Arc<Persona>>;
    /// Every loaded persona.
    fn all(&self) -> Vec<Arc<Persona>>;
}

impl Personas for protege_config::PersonaSet {
    fn get(&self, name: &str) -> Option<Arc<Persona>> {
        protege_config::PersonaSet::get(self, name)
    }

    fn all(&self) -> Vec<Arc<Persona>> {
        self.personas()
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Replies the server accepted.
    pub sent: usize,
    /// Replies queued again for a later attempt.
    pub retried: usize,
    /// Replies failed for good.
    pub failed: usize,
    /// Replies the persona's settings hold back now.
    pub held: usize,
    /// Personas whose server could not be reached (name, why).
    pub down: Vec<(String, String)>,
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sent {}, retried {}, failed {}, held {}",
            self.sent, self.retried, self.failed, self.held
        )?;
        for (persona, why) in &self.down {
            write!(f, "\noutbox of `{persona}` is down: {why}")?;
        }
        Ok(())
    }
}

/// Reads an environment variable.
type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The delivery worker of one process.
#[derive(Clone)]
pub struct Delivery {
    db: DatabaseConnection,
    personas: Arc<dyn Personas>,
    owner: String,
    lease: Duration,
    /// Reads an environment variable (the SMTP password); the process's environment by
    /// default.
    env: EnvReader,
    /// Notified when a reply is queued in this process: the next pass starts at once.
    wake: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("owner", &self.owner)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// The lease of a claimed row: renewed every third of it while an exchange lasts.
pub const LEASE: Duration = Duration::from_secs(60);

impl Delivery {
    /// A worker named `owner` (its leases carry the name) over `db` and `personas`.
    pub fn new(db: DatabaseConnection, personas: Arc<dyn Personas>, owner: String) -> Self {
        Self {
            db,
            personas,
            owner,
            lease: LEASE,
            env: Arc::new(|name| std::env::var(name).ok()),
            wake: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Starts a pass at once when `wake` is notified (a reply queued), not only every
    /// `interval` of [`run`](Self::run).
    pub fn wake(mut self, wake: Arc<tokio::sync::Notify>) -> Self {
        self.wake = wake;
        self
    }

    /// The lease of each claimed row (default [`LEASE`]).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Reads environment variables with `env` instead of the process's environment.
    pub fn env(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// One pass: claims what may leave now, persona by persona (those with `[outbox]
    /// smtp`, or only `persona`), and delivers it, one row at a time per persona.
    pub async fn deliver_once(&self, persona: Option<&str>) -> Result<Pass> {
        let mut pass = Pass::default();
        let personas: Vec<Arc<Persona>> = match persona {
            Some(name) => self.personas.get(name).into_iter().collect(),
            None => self.personas.all(),
        };
        let mut down: HashMap<String, String> = HashMap::new();
        for p in personas {
            if p.info.outbox.smtp.is_none() {
                continue;
            }
            let agent = p.info.agent.clone().unwrap_or_default();
            if agent.reply == ReplyMode::Send && !agent.always_drafts() {
                // What was held because of settings that no longer hold goes now.
                protege_store::release_setting_holds(&self.db, p.name(), Utc::now()).await?;
            }
            loop {
                let now = Utc::now();
                let until = now + lease_of(self.lease);
                let claimed =
                    protege_store::claim(&self.db, &self.owner, until, now, 1, Some(p.name()))
                        .await?;
                let Some(&id) = claimed.first() else {
                    break;
                };
                let Some(row) = protege_core::db::load_outbox(&self.db, id).await? else {
                    continue;
                };
                protege_core::fault("outbox.after_claim");
                let delivered = self.deliver(&row).await?;
                metrics::counter!(
                    "protege_outbox_deliveries_total",
                    "persona" => p.name().to_owned(),
                    "outcome" => delivered.name()
                )
                .increment(1);
                match delivered {
                    Delivered::Sent => pass.sent += 1,
                    Delivered::Retried => pass.retried += 1,
                    Delivered::Failed => pass.failed += 1,
                    Delivered::Held => pass.held += 1,
                    Delivered::Down(why) => {
                        pass.retried += 1;
                        down.insert(p.name().to_owned(), why);
                        // The server is unreachable: the persona's other rows wait too.
                        break;
                    }
                    Delivered::LeaseLost => {}
                }
            }
        }
        let mut down: Vec<(String, String)> = down.into_iter().collect();
        down.sort();
        pass.down = down;
        Ok(pass)
    }

    /// Runs passes until `stop` turns true, waking every `interval` (and at once after a
    /// pass that delivered something).
    pub async fn run(&self, interval: Duration, mut stop: tokio::sync::watch::Receiver<bool>) {
        loop {
            if *stop.borrow() {
                return;
            }
            let busy = match self.deliver_once(None).await {
                Ok(pass) => {
                    for (persona, why) in &pass.down {
                        tracing::warn!(persona, why, "outbox down");
                    }
                    pass.sent + pass.failed > 0
                }
                Err(e) => {
                    tracing::warn!(error = %e, "outbox delivery pass failed");
                    false
                }
            };
            if busy {
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                () = self.wake.notified() => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Delivers the row `row`, claimed by this worker.
    async fn deliver(&self, row: &outbox_row::Model) -> Result<Delivered> {
        let now = Utc::now();
        let Some(persona) = self.personas.get(&row.persona) else {
            return self.hold(row, "the persona is not loaded").await;
        };
        let agent = persona.info.agent.clone().unwrap_or_default();
        if row.approved_by.is_none()
            && let Some(reason) = held_by(&agent)
        {
            return self.hold(row, reason).await;
        }
        let outbox = &persona.info.outbox;
        let Some(server) = &outbox.smtp else {
            return self.hold(row, "the persona has no `[outbox] smtp`").await;
        };
        let (password, ca_pem) = match self.secrets(outbox) {
            Ok(secrets) => secrets,
            Err(why) => {
                self.requeue(row, &why, now).await?;
                return Ok(Delivered::Down(why));
            }
        };
        let recipients: Vec<String> = serde_json::from_str(&row.recipients).unwrap_or_default();
        let hello = row
            .envelope_from
            .rsplit_once('@')
            .map_or("localhost", |(_, domain)| domain)
            .to_owned();
        let from = bare_address(&row.envelope_from).to_owned();
        let attempt = Attempt {
            server,
            login: outbox.user.as_deref().zip(password.as_deref()),
            ca_pem: ca_pem.as_deref(),
            hello: &hello,
            timeout: outbox.attempt_timeout,
            from: &from,
            recipients: &recipients,
            raw: row.raw.as_bytes(),
        };
        let outcome = self.with_renewed_lease(row.id, smtp::send(&attempt)).await;
        self.record(row, &recipients, outbox.give_up_after, outcome)
            .await
    }

    /// The SMTP password of `outbox` (read from its `password_env` when it has a `user`)
    /// and the PEM roots of its `ca_file`; why not, when either cannot be read.
    fn secrets(
        &self,
        outbox: &PersonaOutbox,
    ) -> std::result::Result<(Option<String>, Option<Vec<u8>>), String> {
        let password = match (&outbox.user, &outbox.password_env) {
            (Some(_), Some(var)) => match (self.env)(var) {
                Some(p) => Some(p),
                None => {
                    return Err(format!(
                        "the environment variable `{var}` of `password_env` is not set"
                    ));
                }
            },
            _ => None,
        };
        let ca_pem = match &outbox.ca_file {
            Some(path) => match std::fs::read(path) {
                Ok(bytes) => Some(bytes),
                Err(e) => {
                    return Err(format!(
                        "`ca_file` `{}` cannot be read: {e}",
                        path.display()
                    ));
                }
            },
            None => None,
        };
        Ok((password, ca_pem))
    }

    /// Records on `row`, while this worker holds its lease, how its attempt to
    /// `recipients` ended: sent (without the recipients refused for good), failed, queued
    /// again until `give_up_after` since it was queued, or queued again with its server
    /// down.
    async fn record(
        &self,
        row: &outbox_row::Model,
        recipients: &[String],
        give_up_after: Duration,
        outcome: Outcome,
    ) -> Result<Delivered> {
        let now = Utc::now();
        let (db, owner) = (&self.db, self.owner.as_str());
        let outcome = match outcome {
            Outcome::Sent { reply, refused } => {
                protege_core::fault("outbox.after_250");
                if !refused.is_empty() {
                    let left: Vec<String> = recipients
                        .iter()
                        .filter(|r| !refused.iter().any(|(a, _)| a == *r))
                        .cloned()
                        .collect();
                    let refused = refused_json(row, &refused);
                    protege_store::drop_recipients(db, row.id, owner, &left, &refused, now).await?;
                }
                if protege_store::mark_sent(db, row.id, owner, &reply, now).await? {
                    Delivered::Sent
                } else {
                    Delivered::LeaseLost
                }
            }
            Outcome::Permanent { reply, refused } => {
                if !refused.is_empty() {
                    let refused = refused_json(row, &refused);
                    protege_store::drop_recipients(db, row.id, owner, &[], &refused, now).await?;
                }
                if protege_store::mark_failed(db, row.id, owner, &reply, None, now).await? {
                    Delivered::Failed
                } else {
                    Delivered::LeaseLost
                }
            }
            Outcome::Transient(reply) => {
                let queued_at = row.queued_at.unwrap_or(row.created_at);
                let give_up = queued_at + lease_of(give_up_after);
                let retry_at = now + retry_after(row.attempts);
                let (retry, delivered) = if retry_at > give_up {
                    (None, Delivered::Failed)
                } else {
                    (Some(retry_at), Delivered::Retried)
                };
                if protege_store::mark_failed(db, row.id, owner, &reply, retry, now).await? {
                    delivered
                } else {
                    Delivered::LeaseLost
                }
            }
            Outcome::Connection(why) => {
                self.requeue(row, &why, now).await?;
                Delivered::Down(why)
            }
        };
        Ok(outcome)
    }

    /// Returns `row` to `queued` for a later attempt after a failure that is not about it
    /// (the attempt is not counted against `give_up_after`).
    async fn requeue(&self, row: &outbox_row::Model, why: &str, now: DateTime<Utc>) -> Result<()> {
        use outbox_row::Column as O;
        protege_store::Change::of(row.id, now)
            .set(O::State, state::QUEUED)
            .set(O::SmtpReply, protege_core::one_line(why).into_owned())
            .set(O::NextAttemptAt, now + retry_after(row.attempts.min(3)))
            .set(O::LeaseOwner, Option::<String>::None)
            .set(O::LeaseUntil, Option::<DateTime<Utc>>::None)
            .when(protege_store::leased_by(&self.owner, now))
            .apply_on(&self.db)
            .await?;
        Ok(())
    }

    /// Returns `row` to `queued`, held for `reason`.
    async fn hold(&self, row: &outbox_row::Model, reason: &str) -> Result<Delivered> {
        protege_store::unclaim(&self.db, row.id, &self.owner, Some(reason), Utc::now()).await?;
        Ok(Delivered::Held)
    }

    /// Runs `work` while renewing this worker's lease of row `id` every third of the lease.
    async fn with_renewed_lease<T>(
        &self,
        id: i64,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let renew = async {
            let mut every = tokio::time::interval(self.lease / 3);
            every.tick().await;
            loop {
                every.tick().await;
                let now = Utc::now();
                let until = now + lease_of(self.lease);
                match protege_store::renew_lease(&self.db, id, &self.owner, until, now).await {
                    Ok(true) => {}
                    // The lease is lost: the exchange finishes, and its outcome is not
                    // recorded (another worker holds the row).
                    _ => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            out = work => out,
            () = renew => unreachable!("the renewal loop never ends"),
        }
    }
}

/// Why a reply not approved by hand is held under `agent`'s settings, if it is.
fn held_by(agent: &PersonaAgent) -> Option<&'static str> {
    match agent.reply {
        ReplyMode::Off => Some("reply = \"off\""),
        ReplyMode::Draft => Some("reply = \"draft\""),
        ReplyMode::Send if agent.always_drafts() => Some("approval = \"always\""),
        ReplyMode::Send => None,
    }
}

/// The refused recipients of `row` with `refused` (address, reply) added, as the JSON
/// array stored in its `refused_recipients`.
fn refused_json(row: &outbox_row::Model, refused: &[(String, String)]) -> serde_json::Value {
    let mut all: Vec<serde_json::Value> =
        serde_json::from_str(&row.refused_recipients).unwrap_or_default();
    all.extend(
        refused
            .iter()
            .map(|(address, reply)| serde_json::json!({"address": address, "reply": reply})),
    );
    serde_json::Value::Array(all)
}

/// What became of one claimed row.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Delivered {
    Sent,
    Retried,
    Failed,
    Held,
    Down(String),
    LeaseLost,
}

impl Delivered {
    /// The `outcome` label of `protege_outbox_deliveries_total`.
    fn name(&self) -> &'static str {
        match self {
            Delivered::Sent => "sent",
            Delivered::Retried => "retried",
            Delivered::Failed => "failed",
            Delivered::Held => "held",
            Delivered::Down(_) => "down",
            Delivered::LeaseLost => "lease_lost",
        }
    }
}

/// `duration` as a `chrono` duration (saturating).
fn lease_of(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::MAX)
}
