//! Erasing a correspondent (§15): what `forget` removes, what it leaves, its dry run and
//! its errors, on every configured backend.

#[path = "../../protege-core/tests/common/mod.rs"]
mod common;

use std::collections::HashMap;

use common::{on_each_backend, reply_ctx};
use protege::db::{self, Forgotten, NewRun};
use protege_core::db::entities::*;
use protege_core::{ErrorKind, ThreadHistory};
use sea_orm::{ActiveValue::Set, DatabaseConnection, EntityTrait, QueryOrder};
use serde_json::{Value, json};

const ANN: &str = "Ann Example <ann@example.com>";
const BOB: &str = "bob@example.com";
const SUPPORT: &str = "Acme Support <support@acme.test>";

fn attachment(id: &str) -> Value {
    json!({"id": id, "filename": "photo.png", "content_type": "image/png", "byte_size": 3, "data_base64": "YWJj"})
}

fn tool_use(run: &str, call: &str) -> Value {
    json!({"run_id": run, "turn_index": 0, "position": 0, "tool_call_id": call,
           "name": "lookup_order", "input": {"order": "A-1"}, "result": "shipped"})
}

#[allow(clippy::too_many_arguments)]
fn msg(
    id: &str,
    direction: &str,
    from: &str,
    to: &[&str],
    cc: &[&str],
    day: &str,
    body: &str,
    extra: Value,
) -> Value {
    let mut m = json!({
        "message_id": id, "direction": direction, "from": from, "to": to, "cc": cc,
        "subject": "Order A-1", "sent_at": format!("{day}T10:00:00Z"), "text_body": body,
    });
    m.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    m
}

/// Ann and Bob in one thread with support, Ann alone in another, Bob alone in a third
/// (where Ann's address is only quoted in the body).
fn fixture() -> Value {
    let none = json!({});
    json!({"threads": [
        {"subject": "Order A-1", "messages": [
            msg("<s-1@example.com>", "inbound", ANN, &[SUPPORT], &[BOB], "2026-01-05", "Order A-1 has not arrived.",
                json!({"attachments": [attachment("att-s1")],
                       "tool_uses": [tool_use("run-s1", "call-s1a"), tool_use("run-s1b", "call-s1b")]})),
            msg("<s-2@acme.test>", "outbound", SUPPORT, &["ann@example.com"], &[BOB], "2026-01-06", "It left the warehouse.", none.clone()),
            msg("<s-3@example.com>", "inbound", BOB, &[SUPPORT], &[], "2026-01-07", "I am waiting for the same order.",
                json!({"tool_uses": [tool_use("run-s3", "call-s3")]})),
        ]},
        {"subject": "Invoice", "messages": [
            msg("<a-1@example.com>", "inbound", "ANN@EXAMPLE.COM", &[SUPPORT], &[], "2026-02-01", "Can I get an invoice?",
                json!({"attachments": [attachment("att-a1")],
                       "tool_uses": [tool_use("run-a1", "call-a1")]})),
            msg("<a-2@acme.test>", "outbound", SUPPORT, &[ANN], &[], "2026-02-02", "Attached.", none.clone()),
        ]},
        {"subject": "Parcel", "messages": [
            msg("<b-1@example.com>", "inbound", BOB, &[SUPPORT], &[], "2026-03-01", "My neighbour ann@example.com has my parcel.",
                json!({"attachments": [attachment("att-b1")]})),
        ]},
    ]})
}

/// The fixture, with a run (and rounds) for Ann's two inbound messages, one for Bob's
/// messages, a scheduled run, and a summary of each thread.
async fn setup(db: &DatabaseConnection) {
    db::import_fixture_str(db, &fixture().to_string())
        .await
        .expect("import");
    let now: chrono::DateTime<chrono::Utc> = "2026-04-01T00:00:00Z".parse().unwrap();
    let rows = message_ids(db).await;
    let row_of = |id: &str| rows.iter().find(|(_, m)| m == id).map(|(r, _)| *r);
    for (run, message, rounds) in [
        ("run_ann_1", Some("<s-1@example.com>"), 2),
        ("run_ann_2", Some("<a-1@example.com>"), 1),
        ("run_bob_1", Some("<s-3@example.com>"), 1),
        ("run_bob_2", Some("<b-1@example.com>"), 0),
        ("run_digest", None, 1),
    ] {
        db::insert_run(
            db,
            &NewRun {
                id: run.into(),
                persona: "support".into(),
                message_id: message.and_then(row_of),
                responsibility: message.is_none().then(|| "digest".into()),
                format: "openai".into(),
                model: "m".into(),
                request_sha256: "0".repeat(64),
                request: "{}".into(),
                started_at: now,
            },
        )
        .await
        .expect("run");
        for round in 0..rounds {
            run_round::Entity::insert(run_round::ActiveModel {
                run_id: Set(run.into()),
                round: Set(round),
                response: Set("{}".into()),
                results: Set("[]".into()),
                stop_reason: Set("stop".into()),
                input_tokens: Set(1),
                output_tokens: Set(1),
                cache_read_tokens: Set(0),
                cache_write_tokens: Set(0),
                created_at: Set(now),
                ..Default::default()
            })
            .exec(db)
            .await
            .expect("round");
        }
    }
    for (through, text) in [
        ("<s-2@acme.test>", "Ann and Bob wait for A-1."),
        ("<a-2@acme.test>", "Ann got her invoice."),
        ("<b-1@example.com>", "Bob's parcel is with a neighbour."),
    ] {
        db::store_summary(db, through, text, now)
            .await
            .expect("summary")
            .expect("stored");
    }
}

/// Every message's row id and Message-ID, by id.
async fn message_ids(db: &DatabaseConnection) -> Vec<(i64, String)> {
    message::Entity::find()
        .order_by_asc(message::Column::Id)
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.id, m.message_id))
        .collect()
}

/// What every table holds, each row by what names it (a message by its Message-ID).
async fn tables(db: &DatabaseConnection, names: &HashMap<i64, String>) -> Value {
    let name = |id: i64| names[&id].clone();
    json!({
        "email_threads": email_thread::Entity::find().order_by_asc(email_thread::Column::Id).all(db).await.unwrap()
            .into_iter().map(|t| t.subject).collect::<Vec<_>>(),
        "messages": message::Entity::find().order_by_asc(message::Column::Id).all(db).await.unwrap()
            .into_iter().map(|m| m.message_id).collect::<Vec<_>>(),
        "attachments": attachment::Entity::find().order_by_asc(attachment::Column::Id).all(db).await.unwrap()
            .into_iter().map(|a| format!("{} {}", name(a.message_id), a.attachment_id)).collect::<Vec<_>>(),
        "tool_uses": tool_use::Entity::find().order_by_asc(tool_use::Column::Id).all(db).await.unwrap()
            .into_iter().map(|u| format!("{} {}", name(u.message_id), u.tool_call_id)).collect::<Vec<_>>(),
        "runs": run::Entity::find().order_by_asc(run::Column::Id).all(db).await.unwrap()
            .into_iter().map(|r| r.id).collect::<Vec<_>>(),
        "run_rounds": run_round::Entity::find().order_by_asc(run_round::Column::Id).all(db).await.unwrap()
            .into_iter().map(|r| format!("{} {}", r.run_id, r.round)).collect::<Vec<_>>(),
        "thread_summaries": thread_summary::Entity::find().order_by_asc(thread_summary::Column::Id).all(db).await.unwrap()
            .into_iter().map(|s| s.content).collect::<Vec<_>>(),
        "message_addresses": message_address::Entity::find().order_by_asc(message_address::Column::Id).all(db).await.unwrap()
            .into_iter().map(|a| format!("{} {}", name(a.message_id), a.address)).collect::<Vec<_>>(),
    })
}

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
