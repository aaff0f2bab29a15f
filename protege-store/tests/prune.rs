//! Retention (§15): what `prune` drops, what it keeps (a thread with a recent reply, one
//! whose newest message is exactly at the cut-off, one without any message), its dry run
//! and its errors, on every configured backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;
mod erasure;

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::on_each_backend;
use erasure::{message_ids, setup, tables};
use protege::db::{self, Pruned};
use protege_core::ErrorKind;
use protege_core::db::entities::email_thread;
use sea_orm::{ActiveValue::Set, DatabaseConnection, EntityTrait};
use serde_json::json;

const DAY: Duration = Duration::from_secs(86_400);

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// The fixture of the erasure tests, and a thread without any message, started in 2020.
async fn setup_with_an_empty_thread(db: &DatabaseConnection) -> HashMap<i64, String> {
    setup(db).await;
    email_thread::Entity::insert(email_thread::ActiveModel {
        subject: Set("Empty".into()),
        created_at: Set(at("2020-01-01T00:00:00Z")),
        ..Default::default()
    })
    .exec(db)
    .await
    .expect("empty thread");
    message_ids(db).await.into_iter().collect()
}

/// The thread "Order A-1" (newest message 2026-01-07T10:00:00Z) with what hangs on it.
const ORDER_THREAD: Pruned = Pruned {
    messages: 3,
    attachments: 1,
    tool_uses: 3,
    runs: 2,
    run_rounds: 3,
    thread_summaries: 1,
    message_addresses: 8,
    email_threads: 1,
    agent_jobs: 0,
    outbox: 0,
    tool_approvals: 0,
    inbox_rejects: 0,
    responsibility_slots: 0,
    erased_messages: 0,
};

#[tokio::test]
async fn a_dry_run_counts_and_changes_nothing() {
    on_each_backend("prune_dry_run", |db, _| async move {
        let names = setup_with_an_empty_thread(&db).await;
        let before = tables(&db, &names).await;
        let now = at("2026-04-01T00:00:00Z");
        for _ in 0..2 {
            assert_eq!(
                db::prune(&db, 60 * DAY, now, true).await.unwrap(),
                ORDER_THREAD
            );
            assert_eq!(tables(&db, &names).await, before);
        }
        // The real run removes what the dry run counted.
        assert_eq!(
            db::prune(&db, 60 * DAY, now, false).await.unwrap(),
            ORDER_THREAD
        );
        assert_eq!(
            db::prune(&db, 60 * DAY, now, true).await.unwrap(),
            Pruned::default()
        );
    })
    .await;
}

#[tokio::test]
async fn prune_drops_the_threads_whose_newest_message_is_older() {
    on_each_backend("prune_drops", |db, _| async move {
        let names = setup_with_an_empty_thread(&db).await;
        let before = tables(&db, &names).await;

        // Two of the three messages of "Order A-1" are older than the cut-off
        // (2026-01-06T12:00:00Z), its newest is not: the thread is kept whole.
        assert_eq!(
            db::prune(&db, DAY, at("2026-01-07T12:00:00Z"), false)
                .await
                .unwrap(),
            Pruned::default()
        );
        assert_eq!(tables(&db, &names).await, before);

        // The cut-off is 2026-03-01T10:00:00Z, the very time of the newest message of
        // "Parcel": only what is strictly older goes.
        let week = 7 * DAY;
        assert_eq!(
            db::prune(&db, week, at("2026-03-08T10:00:00Z"), false)
                .await
                .unwrap(),
            Pruned {
                messages: 5,
                attachments: 2,
                tool_uses: 4,
                runs: 3,
                run_rounds: 4,
                thread_summaries: 2,
                message_addresses: 12,
                email_threads: 2,
                agent_jobs: 0,
                outbox: 0,
                tool_approvals: 0,
                inbox_rejects: 0,
                responsibility_slots: 0,
                erased_messages: 0,
            }
        );
        assert_eq!(
            tables(&db, &names).await,
            json!({
                "email_threads": ["Parcel", "Empty"],
                "messages": ["<b-1@example.com>"],
                "attachments": ["<b-1@example.com> att-b1"],
                "tool_uses": [],
                "runs": ["run_bob_2", "run_digest"],
                "run_rounds": ["run_digest 0"],
                "thread_summaries": ["Bob's parcel is with a neighbour."],
                "message_addresses": [
                    "<b-1@example.com> bob@example.com",
                    "<b-1@example.com> support@acme.test",
                ],
            })
        );

        // A second later "Parcel" is older too; the thread without any message stays, and
        // so does the scheduled run.
        assert_eq!(
            db::prune(&db, week, at("2026-03-08T10:00:01Z"), false)
                .await
                .unwrap(),
            Pruned {
                messages: 1,
                attachments: 1,
                tool_uses: 0,
                runs: 1,
                run_rounds: 0,
                thread_summaries: 1,
                message_addresses: 2,
                email_threads: 1,
                agent_jobs: 0,
                outbox: 0,
                tool_approvals: 0,
                inbox_rejects: 0,
                responsibility_slots: 0,
                erased_messages: 0,
            }
        );
        assert_eq!(
            tables(&db, &names).await,
            json!({
                "email_threads": ["Empty"], "messages": [], "attachments": [], "tool_uses": [],
                "runs": ["run_digest"], "run_rounds": ["run_digest 0"],
                "thread_summaries": [], "message_addresses": [],
            })
        );
    })
    .await;
}

#[tokio::test]
async fn a_zero_duration_or_a_time_out_of_range_is_invalid_input() {
    on_each_backend("prune_invalid", |db, _| async move {
        let names = setup_with_an_empty_thread(&db).await;
        let before = tables(&db, &names).await;
        for dry_run in [false, true] {
            for (older_than, now, message) in [
                (
                    Duration::ZERO,
                    "2026-04-01T00:00:00Z",
                    "the duration must be above zero, such as `365d`, `12w` or `48h`",
                ),
                (
                    DAY,
                    "1969-12-31T23:59:59Z",
                    "the time of the prune 1969-12-31T23:59:59Z is outside the years 1970 to 9999 (UTC) that the database stores",
                ),
            ] {
                let err = db::prune(&db, older_than, at(now), dry_run)
                    .await
                    .unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidInput);
                assert_eq!(err.to_string(), message);
            }
        }
        // A cut-off before 1970 (the longest duration) finds nothing older.
        let longest = db::parse_duration("3652500d").unwrap();
        assert_eq!(
            db::prune(&db, longest, at("2026-04-01T00:00:00Z"), false)
                .await
                .unwrap(),
            Pruned::default()
        );
        assert_eq!(tables(&db, &names).await, before);
    })
    .await;
}

#[tokio::test]
async fn prune_drops_the_scheduled_runs_slots_and_refused_mail_older_than_the_cut_off() {
    on_each_backend("prune_agent_rows", |db, _| async move {
        use protege_core::db::entities::{inbox_reject, responsibility_slot};
        let names = setup_with_an_empty_thread(&db).await;
        // The digest's slot fired on 2026-03-02; a refused message came on 2026-04-01,
        // the day the scheduled run `run_digest` started.
        db::see_responsibility(&db, "support", "digest", at("2026-03-01T00:00:00Z"))
            .await
            .unwrap();
        let slot = protege_core::Slot {
            local: "2026-03-02T08:00:00".parse().unwrap(),
            at: at("2026-03-02T08:00:00Z"),
        };
        db::fire_slot(&db, "support", "digest", &slot, at("2026-03-02T08:00:00Z"))
            .await
            .unwrap()
            .expect("fired");
        let rejected = db::Rejected {
            uid_validity: 7,
            uid: 1,
            message_id: Some("<x-1@example.com>".into()),
            from_address: Some("eve@example.net".into()),
            reason: "not an email".into(),
        };
        db::reject_message(
            &db,
            "a@imap.test:993/INBOX",
            &rejected,
            at("2026-04-01T00:00:00Z"),
        )
        .await
        .unwrap();
        // A cut-off between the slot and the scheduled run takes every thread, the slot
        // and its job, and leaves the run and the refused mail.
        let removed = db::prune(&db, 30 * DAY, at("2026-04-15T00:00:00Z"), false)
            .await
            .unwrap();
        assert_eq!(
            (
                removed.agent_jobs,
                removed.responsibility_slots,
                removed.inbox_rejects
            ),
            (1, 1, 0)
        );
        assert_eq!(tables(&db, &names).await["runs"], json!(["run_digest"]));
        assert!(
            responsibility_slot::Entity::find()
                .all(&db)
                .await
                .unwrap()
                .is_empty()
        );
        // The slot removed is never fired again.
        assert_eq!(
            protege_core::db::first_seen(&db, "support", "digest")
                .await
                .unwrap(),
            Some(at("2026-03-02T08:00:00Z"))
        );
        // A later cut-off takes the scheduled run with its round, and the refused mail.
        let removed = db::prune(&db, 30 * DAY, at("2026-06-01T00:00:00Z"), false)
            .await
            .unwrap();
        assert_eq!(
            (removed.runs, removed.run_rounds, removed.inbox_rejects),
            (1, 1, 1)
        );
        assert_eq!(tables(&db, &names).await["runs"], json!([]));
        assert!(
            inbox_reject::Entity::find()
                .all(&db)
                .await
                .unwrap()
                .is_empty()
        );
    })
    .await;
}
