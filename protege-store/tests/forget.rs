//! Erasing a correspondent (§15): what `forget` removes, what it leaves, its dry run and
//! its errors, on every configured backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;
mod erasure;

use std::collections::HashMap;

use common::{on_each_backend, reply_ctx};
use erasure::{message_ids, setup, tables};
use protege::db::{self, Forgotten};
use protege_core::{ErrorKind, ThreadHistory};
use sea_orm::DatabaseConnection;
use serde_json::json;

/// ThreadHistory for Bob's reply in the shared thread: its contents, in order.
async fn bobs_history(db: &DatabaseConnection) -> Vec<String> {
    let ctx = reply_ctx(db, "<s-3@example.com>").await;
    let messages = protege_core::Resolver::resolve(&ThreadHistory::new(), &ctx)
        .await
        .expect("history");
    messages.iter().map(|m| m.content.text()).collect()
}

const ANN_REMOVED: Forgotten = Forgotten {
    messages: 4,
    attachments: 2,
    tool_uses: 3,
    runs: 2,
    run_rounds: 3,
    thread_summaries: 2,
    message_addresses: 10,
    email_threads: 1,
    agent_jobs: 0,
    outbox: 0,
    tool_approvals: 0,
    inbox_rejects: 0,
    responsibility_slots: 0,
    erased_messages: 4,
};

#[tokio::test]
async fn a_dry_run_counts_and_changes_nothing() {
    on_each_backend("forget_dry_run", |db, _| async move {
        setup(&db).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();
        let before = tables(&db, &names).await;
        let counted = db::forget(&db, "ann@example.com", true).await.unwrap();
        assert_eq!(counted, ANN_REMOVED);
        assert_eq!(tables(&db, &names).await, before);
        // The real run removes what the dry run counted.
        assert_eq!(
            db::forget(&db, "ann@example.com", false).await.unwrap(),
            ANN_REMOVED
        );
    })
    .await;
}

#[tokio::test]
async fn forget_removes_exactly_the_correspondents_rows() {
    on_each_backend("forget_removes", |db, _| async move {
        setup(&db).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();
        let before = bobs_history(&db).await;
        assert_eq!(
            before,
            [
                "From: Ann Example <ann@example.com>\nTo: Acme Support <support@acme.test>\nCc: bob@example.com\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Order A-1\n\nOrder A-1 has not arrived.\n\nAttachments:\n- photo.png (image/png, 3 bytes, id: att-s1)",
                // Its two tool rounds: an assistant turn and the tool's result each.
                "",
                "shipped",
                "",
                "shipped",
                "From: Acme Support <support@acme.test>\nTo: ann@example.com\nCc: bob@example.com\nDate: Tue, 6 Jan 2026 10:00:00 +0000\nSubject: Order A-1\n\nIt left the warehouse.",
            ]
        );

        // Any case, with a display name.
        let removed = db::forget(&db, "ANN <Ann@Example.COM>", false).await.unwrap();
        assert_eq!(removed, ANN_REMOVED);
        assert_eq!(
            tables(&db, &names).await,
            json!({
                "email_threads": ["Order A-1", "Parcel"],
                "messages": ["<s-3@example.com>", "<b-1@example.com>"],
                "attachments": ["<b-1@example.com> att-b1"],
                "tool_uses": ["<s-3@example.com> call-s3"],
                "runs": ["run_bob_1", "run_bob_2", "run_digest"],
                "run_rounds": ["run_bob_1 0", "run_digest 0"],
                "thread_summaries": ["Bob's parcel is with a neighbour."],
                "message_addresses": [
                    "<s-3@example.com> bob@example.com",
                    "<s-3@example.com> support@acme.test",
                    "<b-1@example.com> bob@example.com",
                    "<b-1@example.com> support@acme.test",
                ],
            })
        );
        // Bob's reply no longer shows Ann's mail.
        assert_eq!(bobs_history(&db).await, Vec::<String>::new());

        // Nothing is left to forget; Bob is still there to forget.
        assert_eq!(
            db::forget(&db, "ann@example.com", false).await.unwrap(),
            Forgotten::default()
        );
        assert_eq!(
            db::forget(&db, "Bob <BOB@example.com>", false)
                .await
                .unwrap(),
            Forgotten {
                messages: 2,
                attachments: 1,
                tool_uses: 1,
                runs: 2,
                run_rounds: 1,
                thread_summaries: 1,
                message_addresses: 4,
                email_threads: 2,
                agent_jobs: 0,
                outbox: 0,
                tool_approvals: 0,
                inbox_rejects: 0,
                responsibility_slots: 0,
                erased_messages: 2,
            }
        );
        assert_eq!(
            tables(&db, &names).await,
            json!({
                "email_threads": [], "messages": [], "attachments": [], "tool_uses": [],
                "runs": ["run_digest"], "run_rounds": ["run_digest 0"],
                "thread_summaries": [], "message_addresses": [],
            })
        );
    })
    .await;
}

#[tokio::test]
async fn an_address_that_is_no_address_is_invalid_input() {
    on_each_backend("forget_invalid", |db, _| async move {
        setup(&db).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();
        let before = tables(&db, &names).await;
        let long = format!("{}@example.com", "a".repeat(320));
        for (address, message) in [
            ("", "the address to forget is empty"),
            ("ann", "`ann` is not an email address: it has no `@`"),
            (
                "ann smith@example.com",
                "`ann smith@example.com` is not an email address: it has a space inside",
            ),
            (
                long.as_str(),
                "the address to forget is 332 characters long, over the limit of 320",
            ),
        ] {
            for dry_run in [false, true] {
                let err = db::forget(&db, address, dry_run).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::InvalidInput);
                assert_eq!(err.to_string(), message);
            }
        }
        assert_eq!(tables(&db, &names).await, before);
    })
    .await;
}

/// What the agent keeps around Ann's mail, besides the fixture: a message that names her
/// only in Reply-To, a digest run whose request held her first message with its job, slot,
/// tool approval and the mail it sent, another digest that held only Bob's mail, a job
/// answering her invoice request with an approval, and refused IMAP mail of hers.
async fn agent_rows(db: &DatabaseConnection, now: chrono::DateTime<chrono::Utc>) {
    use protege_core::db::entities::{agent_job, outbox};
    use sea_orm::{ActiveValue::Set, EntityTrait};
    let mut options = db::EmlOptions::new(vec!["support@acme.test".into()], now);
    options.direction = None;
    let carol = db::ingest_eml(db, CAROL.as_bytes(), &options)
        .await
        .unwrap();
    assert!(carol.imported);
    db::import_fixture_str(
        db,
        &json!({"threads": [{"subject": "Digest", "messages": [{
            "message_id": "<d-1@acme.test>", "direction": "outbound",
            "from": "support@acme.test", "to": ["boss@acme.test"], "cc": [],
            "subject": "Digest", "sent_at": "2026-03-02T08:00:00Z", "text_body": "One open thread."}]}]})
        .to_string(),
    )
    .await
    .unwrap();
    let rows = message_ids(db).await;
    let row_of = |id: &str| rows.iter().find(|(_, m)| m == id).map(|(r, _)| *r).unwrap();
    for (run, quoted) in [
        ("run_digest_ann", "<s-1@example.com>"),
        ("run_digest_bob", "<b-1@example.com>"),
    ] {
        db::insert_run(
            db,
            &db::NewRun {
                id: run.into(),
                persona: "support".into(),
                message_id: None,
                responsibility: Some("digest".into()),
                format: protege_core::db::RunFormat::Openai,
                model: "m".into(),
                request_sha256: "0".repeat(64),
                request: "{}".into(),
                started_at: now,
                sources: vec![db::message_sha256(quoted), db::message_sha256(quoted)],
            },
        )
        .await
        .unwrap();
        erasure::insert_round(db, run, 0, now).await;
    }
    let seen: chrono::DateTime<chrono::Utc> = "2026-03-01T00:00:00Z".parse().unwrap();
    db::see_responsibility(db, "support", "digest", seen)
        .await
        .unwrap();
    let slot = protege_core::Slot {
        local: "2026-03-02T08:00:00".parse().unwrap(),
        at: "2026-03-02T08:00:00Z".parse().unwrap(),
    };
    let job = db::fire_slot(db, "support", "digest", &slot, now)
        .await
        .unwrap()
        .expect("fired");
    let approval = Some(r#"{"round":0,"decision":"approved","by":"kim"}"#.to_owned());
    agent_job::Entity::update(agent_job::ActiveModel {
        id: Set(job.id),
        run_id: Set(Some("run_digest_ann".into())),
        state: Set("done".into()),
        approval: Set(approval.clone()),
        ..Default::default()
    })
    .exec(db)
    .await
    .unwrap();
    agent_job::Entity::insert(agent_job::ActiveModel {
        message_id: Set(Some(row_of("<a-1@example.com>"))),
        persona: Set("support".into()),
        state: Set("done".into()),
        attempts: Set(1),
        approval: Set(approval),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    })
    .exec(db)
    .await
    .unwrap();
    outbox::Entity::insert(outbox::ActiveModel {
        message_id: Set(row_of("<d-1@acme.test>")),
        run_id: Set(Some("run_digest_ann".into())),
        persona: Set("support".into()),
        state: Set("sent".into()),
        envelope_from: Set("support@acme.test".into()),
        recipients: Set("[\"boss@acme.test\"]".into()),
        refused_recipients: Set("[]".into()),
        attempts: Set(1),
        raw: Set("Subject: Digest\r\n\r\nOne open thread.\r\n".into()),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    })
    .exec(db)
    .await
    .unwrap();
    for (uid, message_id, from) in [
        (1, "<x-9@example.com>", "ann@example.com"),
        (2, "<s-1@example.com>", "mallory@example.net"),
        (3, "<y-1@example.com>", "bob@example.com"),
    ] {
        let rejected = db::Rejected {
            uid_validity: 7,
            uid,
            message_id: Some(message_id.into()),
            from_address: Some(from.into()),
            reason: "not an email".into(),
        };
        assert!(
            db::reject_message(db, "support@imap.acme.test:993/INBOX", &rejected, now)
                .await
                .unwrap()
        );
    }
}

/// Carol's mail, whose replies she wants to go to Ann.
const CAROL: &str = "From: Carol <carol@example.com>\r\nReply-To: Ann Example <Ann@Example.com>\r\n\
To: support@acme.test\r\nSubject: Ann handles our orders\r\nMessage-ID: <c-1@example.com>\r\n\
Date: Sun, 1 Mar 2026 09:00:00 +0000\r\n\r\nPlease answer Ann.\r\n";

#[tokio::test]
async fn forget_reaches_the_agents_rows_and_the_same_mail_is_never_stored_again() {
    on_each_backend("forget_agent_rows", |db, _| async move {
        use protege_core::db::entities::{
            agent_job, inbox_reject, outbox, responsibility_slot, run_source,
        };
        use sea_orm::EntityTrait;
        setup(&db).await;
        let now: chrono::DateTime<chrono::Utc> = "2026-04-01T00:00:00Z".parse().unwrap();
        agent_rows(&db, now).await;
        let names: HashMap<i64, String> = message_ids(&db).await.into_iter().collect();

        let removed = db::forget(&db, "ann@example.com", false).await.unwrap();
        assert_eq!(
            removed.to_string(),
            "messages: 6\nattachments: 2\ntool_uses: 3\nruns: 3\nrun_rounds: 4\n\
             thread_summaries: 2\nmessage_addresses: 14\nemail_threads: 3\nagent_jobs: 2\n\
             outbox: 1\ntool_approvals: 2\ninbox_rejects: 2\nresponsibility_slots: 1\n\
             erased_messages: 6"
        );
        let left = tables(&db, &names).await;
        assert_eq!(
            left["runs"],
            json!(["run_bob_1", "run_bob_2", "run_digest", "run_digest_bob"])
        );
        assert_eq!(
            left["messages"],
            json!(["<s-3@example.com>", "<b-1@example.com>"])
        );
        assert_eq!(left["email_threads"], json!(["Order A-1", "Parcel"]));
        assert!(agent_job::Entity::find().all(&db).await.unwrap().is_empty());
        assert!(outbox::Entity::find().all(&db).await.unwrap().is_empty());
        assert!(
            responsibility_slot::Entity::find()
                .all(&db)
                .await
                .unwrap()
                .is_empty()
        );
        let sources: Vec<String> = run_source::Entity::find()
            .all(&db)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.run_id)
            .collect();
        assert_eq!(sources, ["run_digest_bob"]);
        let rejects: Vec<String> = inbox_reject::Entity::find()
            .all(&db)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|r| r.message_id)
            .collect();
        assert_eq!(rejects, ["<y-1@example.com>"]);
        // The slot removed is never fired again: the digest counts as first seen then.
        assert_eq!(
            protege_core::db::first_seen(&db, "support", "digest")
                .await
                .unwrap(),
            Some("2026-03-02T08:00:00Z".parse().unwrap())
        );

        // The same mail again: skipped as erased, posted or imported.
        let mut options = db::EmlOptions::new(vec!["support@acme.test".into()], now);
        options.direction = None;
        let again = db::ingest_eml(&db, CAROL.as_bytes(), &options)
            .await
            .unwrap();
        assert!(again.erased && !again.imported, "{again:?}");
        let summary = db::import_fixture_str(&db, &erasure::fixture().to_string())
            .await
            .unwrap();
        assert_eq!(
            summary.to_string(),
            "imported 0 threads, 0 messages (2 already present, 4 erased)"
        );
        assert_eq!(
            tables(&db, &names).await["messages"],
            json!(["<s-3@example.com>", "<b-1@example.com>"])
        );
        // Forgetting again removes nothing and keeps no hash twice.
        assert_eq!(
            db::forget(&db, "ann@example.com", false).await.unwrap(),
            Forgotten::default()
        );
    })
    .await;
}
