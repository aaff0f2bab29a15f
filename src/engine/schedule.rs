//! Responsibilities on time (§19): the slots due now of every persona the agent runs
//! ([`Engine::due_slots`], `protege agent due`), and firing them, each slot a job
//! ([`Engine::fire_due`], `protege agent tick` and `protege serve --agent`).

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Serialize, Serializer};

use protege_core::{Due, Schedule};

use super::{Engine, EngineError, JobInfo};
use crate::db;

/// A slot of a responsibility due now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DueSlot {
    /// The persona.
    pub persona: String,
    /// The responsibility's name.
    pub responsibility: String,
    /// The wall-clock time the schedule matched, in [`timezone`](Self::timezone)
    /// (serialised as `2026-03-29T02:30`).
    #[serde(serialize_with = "local_text")]
    pub local: NaiveDateTime,
    /// The responsibility's IANA time zone.
    pub timezone: String,
    /// When it fires (UTC).
    pub at: DateTime<Utc>,
}

fn local_text<S: Serializer>(local: &NaiveDateTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&local.format(protege_core::LOCAL_TIME_FORMAT))
}

impl Engine {
    /// The slots due at `now` of every responsibility of the loaded personas that have an
    /// `[agent]` table, by persona and responsibility in file order, each oldest first. A
    /// responsibility the agent never saw is recorded as seen at `now` (its first slot is
    /// the next one).
    pub async fn due_slots(&self, now: DateTime<Utc>) -> Result<Vec<DueSlot>, EngineError> {
        let conn = self.db().await?;
        let mut out = Vec::new();
        for persona in self.personas() {
            let info = persona.info();
            let Some(agent) = &info.agent else { continue };
            for responsibility in &info.responsibilities {
                let schedule =
                    match Schedule::new(&responsibility.schedule, responsibility.timezone) {
                        Ok(schedule) => schedule,
                        // A loaded persona's schedule parsed when it loaded.
                        Err(e) => {
                            tracing::warn!(
                                persona = %info.name,
                                responsibility = %responsibility.name,
                                "the schedule does not parse: {e}"
                            );
                            continue;
                        }
                    };
                let first_seen =
                    db::see_responsibility(conn, &info.name, &responsibility.name, now).await?;
                let last_fired = db::newest_slot(conn, &info.name, &responsibility.name).await?;
                let due = schedule.due(&Due {
                    first_seen,
                    last_fired,
                    now,
                    catch_up: responsibility.catch_up,
                    max_catch_up: agent.max_catch_up,
                });
                out.extend(due.into_iter().map(|slot| DueSlot {
                    persona: info.name.clone(),
                    responsibility: responsibility.name.clone(),
                    local: slot.local,
                    timezone: responsibility.timezone.name().to_owned(),
                    at: slot.at,
                }));
            }
        }
        Ok(out)
    }

    /// Fires the slots due at `now` ([`due_slots`](Self::due_slots)): each one's row and its
    /// job, `queued`, in one transaction. A slot another process fired first is left to it.
    /// The jobs made, in the order of the slots.
    pub async fn fire_due(&self, now: DateTime<Utc>) -> Result<Vec<JobInfo>, EngineError> {
        let due = self.due_slots(now).await?;
        let conn = self.db().await?;
        let mut out = Vec::with_capacity(due.len());
        for slot in due {
            let fired = db::fire_slot(
                conn,
                &slot.persona,
                &slot.responsibility,
                &protege_core::Slot {
                    local: slot.local,
                    at: slot.at,
                },
                now,
            )
            .await?;
            let Some(job) = fired else { continue };
            tracing::info!(
                persona = %slot.persona,
                responsibility = %slot.responsibility,
                slot = %slot.local.format(protege_core::LOCAL_TIME_FORMAT),
                timezone = %slot.timezone,
                job = job.id,
                "slot fired"
            );
            out.push(self.job_info(job).await?);
        }
        Ok(out)
    }

    /// Fires the due slots every `interval` ([`fire_due`](Self::fire_due) with the clock
    /// of the moment) until `stop` turns true, as `protege serve --agent` does; the agent's
    /// workers run the jobs. A failure (the database down) is logged and tried again at the
    /// next tick.
    pub async fn run_schedules(
        &self,
        interval: std::time::Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            if *stop.borrow() {
                return;
            }
            if let Err(e) = self.fire_due(Utc::now()).await {
                tracing::warn!("the responsibilities' due slots could not be fired: {e}");
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                _ = stop.changed() => {}
            }
        }
    }
}
