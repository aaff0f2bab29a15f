//! The mail every erasure test starts from: three threads with attachments, tool uses,
//! runs with rounds and summaries, and what every table holds, each row by what names it.
//! Shared by the tests of `forget` and `prune` (`mod erasure;`).
#![allow(dead_code)]

use std::collections::HashMap;

use protege::db::{self, NewRun};
use protege_core::db::entities::*;
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
pub(crate) fn fixture() -> Value {
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
pub(crate) async fn setup(db: &DatabaseConnection) {
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
                format: protege_core::db::RunFormat::Openai,
                model: "m".into(),
                request_sha256: "0".repeat(64),
                request: "{}".into(),
                started_at: now,
                sources: Vec::new(),
            },
        )
        .await
        .expect("run");
        for round in 0..rounds {
            insert_round(db, run, round, now).await;
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

/// Inserts round `round` of run `run`, recorded at `now`.
pub(crate) async fn insert_round(
    db: &DatabaseConnection,
    run: &str,
    round: i32,
    now: chrono::DateTime<chrono::Utc>,
) {
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

/// Every message's row id and Message-ID, by id.
pub(crate) async fn message_ids(db: &DatabaseConnection) -> Vec<(i64, String)> {
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
pub(crate) async fn tables(db: &DatabaseConnection, names: &HashMap<i64, String>) -> Value {
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
