//! Responsibilities on time (§19), stored: when a responsibility was first seen, and a slot
//! fired with its job in one transaction, once whatever the number of processes firing it,
//! on every configured backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;

use chrono::{DateTime, NaiveDateTime, Utc};
use common::{backends, on_each_backend};
use protege::db::entities::{agent_job, responsibility_slot};
use protege::db::{self, fire_slot, first_seen, newest_slot, see_responsibility};
use protege_core::{LOCAL_TIME_FORMAT, Slot};
use sea_orm::{DatabaseConnection, EntityTrait, QueryOrder};

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .to_utc()
}

fn slot(local: &str, utc: &str) -> Slot {
    Slot {
        local: NaiveDateTime::parse_from_str(local, LOCAL_TIME_FORMAT)
            .unwrap_or_else(|e| panic!("{local}: {e}")),
        at: at(utc),
    }
}

/// Every job, as `(message_id, slot_id, persona, state, created_at)`.
async fn jobs(db: &DatabaseConnection) -> Vec<(Option<i64>, Option<i64>, String, String, String)> {
    agent_job::Entity::find()
        .order_by_asc(agent_job::Column::Id)
        .all(db)
        .await
        .expect("jobs")
        .into_iter()
        .map(|j| {
            (
                j.message_id,
                j.slot_id,
                j.persona,
                j.state,
                protege::rfc3339_z(&j.created_at),
            )
        })
        .collect()
}

/// Every slot row, as `(id, persona, responsibility, local_time, slot_at, created_at)`.
async fn slots(db: &DatabaseConnection) -> Vec<(i64, String, String, String, String, String)> {
    responsibility_slot::Entity::find()
        .order_by_asc(responsibility_slot::Column::Id)
        .all(db)
        .await
        .expect("slots")
        .into_iter()
        .map(|s| {
            (
                s.id,
                s.persona,
                s.responsibility,
                s.local_time,
                protege::rfc3339_z(&s.slot_at),
                protege::rfc3339_z(&s.created_at),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_first_look_at_a_responsibility_is_kept() {
    on_each_backend("slots_first_seen", |db, _| async move {
        assert_eq!(first_seen(&db, "digest", "daily").await.unwrap(), None);
        let first = at("2026-03-29T06:00:00Z");
        assert_eq!(
            see_responsibility(&db, "digest", "daily", first)
                .await
                .unwrap(),
            first
        );
        // A later look, this process's or another's, finds the first one.
        assert_eq!(
            see_responsibility(&db, "digest", "daily", at("2026-04-01T00:00:00Z"))
                .await
                .unwrap(),
            first
        );
        assert_eq!(
            first_seen(&db, "digest", "daily").await.unwrap(),
            Some(first)
        );
        // Another responsibility, or the same name in another persona, is seen apart.
        let later = at("2026-04-02T00:00:00Z");
        assert_eq!(
            see_responsibility(&db, "digest", "weekly", later)
                .await
                .unwrap(),
            later
        );
        assert_eq!(
            see_responsibility(&db, "sales", "daily", later)
                .await
                .unwrap(),
            later
        );
    })
    .await;
}

#[tokio::test]
async fn a_slot_fires_once_with_its_job() {
    on_each_backend("slots_fire", |db, _| async move {
        let now = at("2026-03-29T01:00:04Z");
        // 02:30 did not happen in Paris that night: the slot fires at 03:00 CEST.
        let gap = slot("2026-03-29T02:30", "2026-03-29T01:00:00Z");
        let job = fire_slot(&db, "digest", "daily", &gap, now)
            .await
            .unwrap()
            .expect("a job");
        let first = slots(&db).await[0].0;
        assert_eq!(
            (
                job.message_id,
                job.slot_id,
                job.persona.as_str(),
                job.state.as_str(),
                job.attempts,
                job.created_at
            ),
            (None, Some(first), "digest", "queued", 0, now)
        );
        assert_eq!(
            slots(&db).await,
            [(
                first,
                "digest".to_owned(),
                "daily".to_owned(),
                "2026-03-29T02:30".to_owned(),
                "2026-03-29T01:00:00Z".to_owned(),
                "2026-03-29T01:00:04Z".to_owned()
            )]
        );
        assert_eq!(
            newest_slot(&db, "digest", "daily").await.unwrap(),
            Some(gap)
        );
        // Fired again (by a tick that read before the first committed): already fired.
        assert_eq!(
            fire_slot(&db, "digest", "daily", &gap, at("2026-03-29T01:00:09Z"))
                .await
                .unwrap(),
            None
        );
        // Another wall-clock time on the same instant is the same firing.
        let same_instant = slot("2026-03-29T03:00", "2026-03-29T01:00:00Z");
        assert_eq!(
            fire_slot(&db, "digest", "daily", &same_instant, now)
                .await
                .unwrap(),
            None
        );
        // The next day's slot, and the same slot of another responsibility, fire.
        let next = slot("2026-03-30T02:30", "2026-03-30T00:30:00Z");
        let next_job = fire_slot(&db, "digest", "daily", &next, at("2026-03-30T00:30:02Z"))
            .await
            .unwrap()
            .expect("a job");
        let other = fire_slot(&db, "digest", "weekly", &gap, now)
            .await
            .unwrap()
            .expect("a job");
        // Ids are not dense (a key taken by a firing that found the slot fired may be
        // skipped): the rows are matched by their order.
        let ids: Vec<i64> = slots(&db).await.iter().map(|s| s.0).collect();
        assert_eq!(
            slots(&db)
                .await
                .into_iter()
                .map(|s| (s.2, s.3, s.4))
                .collect::<Vec<_>>(),
            [
                (
                    "daily".into(),
                    "2026-03-29T02:30".into(),
                    "2026-03-29T01:00:00Z".into()
                ),
                (
                    "daily".into(),
                    "2026-03-30T02:30".into(),
                    "2026-03-30T00:30:00Z".into()
                ),
                (
                    "weekly".into(),
                    "2026-03-29T02:30".into(),
                    "2026-03-29T01:00:00Z".into()
                ),
            ]
        );
        assert_eq!(
            (next_job.slot_id, other.slot_id),
            (Some(ids[1]), Some(ids[2]))
        );
        assert_eq!(
            jobs(&db).await,
            [
                (
                    None,
                    Some(ids[0]),
                    "digest".into(),
                    "queued".into(),
                    "2026-03-29T01:00:04Z".into()
                ),
                (
                    None,
                    Some(ids[1]),
                    "digest".into(),
                    "queued".into(),
                    "2026-03-30T00:30:02Z".into()
                ),
                (
                    None,
                    Some(ids[2]),
                    "digest".into(),
                    "queued".into(),
                    "2026-03-29T01:00:04Z".into()
                ),
            ]
        );
        assert_eq!(
            newest_slot(&db, "digest", "daily").await.unwrap(),
            Some(next)
        );
        assert_eq!(newest_slot(&db, "sales", "daily").await.unwrap(), None);
        // The job is listed like any other.
        let listed = db::list_jobs(
            &db,
            &db::JobFilter {
                state: None,
                persona: Some("digest".into()),
                limit: 10,
            },
        )
        .await
        .unwrap();
        assert_eq!(
            listed.iter().map(|j| j.slot_id).collect::<Vec<_>>(),
            [Some(ids[2]), Some(ids[1]), Some(ids[0])]
        );
    })
    .await;
}

/// How many processes fire each slot at once, and how many slots.
const FIRERS: usize = 4;
const SLOTS: usize = 12;

#[tokio::test]
async fn concurrent_firings_of_a_slot_make_one_job() {
    let dir = tempfile::tempdir().unwrap();
    for backend in backends() {
        let (url, name) = backend.fresh_url("slots_race", dir.path()).await;
        // One connection per firer, as separate processes have.
        let mut conns = Vec::new();
        for _ in 0..FIRERS {
            conns.push(db::open(&url).await.expect("connect"));
        }
        for n in 0..SLOTS {
            let local = format!("2026-06-{:02}T08:00", n + 1);
            let utc = format!("2026-06-{:02}T06:00:00Z", n + 1);
            let firing = slot(&local, &utc);
            let now = at(&utc);
            let outcomes = futures::future::join_all(
                conns
                    .iter()
                    .map(|c| fire_slot(c, "digest", "daily", &firing, now)),
            )
            .await;
            let mut made = Vec::new();
            for outcome in outcomes {
                match outcome {
                    Ok(Some(job)) => made.push(job.slot_id),
                    Ok(None) => {}
                    Err(e) => panic!("backend {}: slot {local}: {e}", backend.name),
                }
            }
            let stored = slots(&conns[0]).await;
            let row = stored.iter().find(|s| s.3 == local).map(|s| s.0);
            assert_eq!(made, [row], "backend {}: slot {local}", backend.name);
        }
        // One slot row and one job per slot, each job naming its slot.
        let stored: Vec<i64> = slots(&conns[0]).await.iter().map(|s| s.0).collect();
        let fired: Vec<i64> = jobs(&conns[0]).await.iter().filter_map(|j| j.1).collect();
        assert_eq!(stored.len(), SLOTS, "backend {}", backend.name);
        assert_eq!(fired, stored, "backend {}", backend.name);
        for c in conns {
            c.close().await.ok();
        }
        backend.drop_database(name).await;
    }
}
