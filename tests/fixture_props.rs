//! Property: importing a mutated valid fixture either succeeds, adding exactly what its
//! summary reports, or leaves the database unchanged, rows and contents alike.
//! A few hundred cases by default; set `PROPTEST_CASES` for more.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::sample::Index;
use protege::db::entities::{attachment, email_thread, message, tool_use};
use protege::db::{self, sea_orm::DatabaseConnection};
use sea_orm::{EntityTrait, QueryOrder};
use serde_json::{Value, json};

/// A valid fixture whose ids end in `n`, so every case can add new rows.
fn valid(n: usize) -> Value {
    json!({"threads": [
        {"subject": "Refund", "messages": [
            {"message_id": format!("<m1-{n}@example.com>"), "direction": "inbound",
             "from": "Alice <alice@example.com>", "to": ["support@acme.test"],
             "cc": ["bob@example.com"], "subject": "Refund",
             "sent_at": "2026-01-05T10:00:00Z", "text_body": "Hi", "html_body": null,
             "in_reply_to": null,
             "attachments": [{"id": format!("att-{n}"), "filename": "a.pdf",
                              "content_type": "application/pdf", "byte_size": 3,
                              "data_base64": "YWJj"}],
             "tool_uses": [{"run_id": "run-1", "turn_index": 0, "position": 0,
                            "tool_call_id": "call_1", "name": "lookup_order",
                            "input": {"order": "A-1"}, "result": "shipped"}]},
            {"message_id": format!("<m2-{n}@acme.test>"), "direction": "outbound",
             "from": "support@acme.test", "to": ["Alice <alice@example.com>"],
             "subject": "Re: Refund", "sent_at": "2026-01-05T11:00:00+01:00",
             "text_body": "Done", "in_reply_to": format!("<m1-{n}@example.com>")}]},
        {"subject": "Other", "messages": [
            {"message_id": format!("<m3-{n}@example.com>"), "direction": "inbound",
             "from": "carol@example.com", "to": [], "subject": "Other",
             "sent_at": "2026-02-01T09:00:00Z", "html_body": "<p>Hello</p>"}]}]})
}

/// Every location in `value`: object fields and array items, as paths of keys.
fn locations(value: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                path.push(Value::String(k.clone()));
                out.push(path.clone());
                locations(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                path.push(Value::from(i));
                out.push(path.clone());
                locations(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value at a location.
    Set(Index, Value),
    /// Remove the location (a field or an array item).
    Remove(Index),
    /// Copy one location's value over another's (duplicate ids, swapped types).
    Copy(Index, Index),
}

fn apply(root: &mut Value, m: &Mutation) {
    let mut all = Vec::new();
    locations(root, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    let get = |root: &Value, path: &[Value]| -> Option<Value> {
        let mut v = root;
        for key in path {
            v = match key {
                Value::String(k) => v.get(k)?,
                _ => v.get(key.as_u64()? as usize)?,
            };
        }
        Some(v.clone())
    };
    let (target, value) = match m {
        Mutation::Set(at, value) => (at.get(&all).clone(), Some(value.clone())),
        Mutation::Remove(at) => (at.get(&all).clone(), None),
        Mutation::Copy(from, to) => (to.get(&all).clone(), get(root, from.get(&all).as_slice())),
    };
    let Some((last, parent_path)) = target.split_last() else {
        return;
    };
    let mut parent = root;
    for key in parent_path {
        parent = match key {
            Value::String(k) => &mut parent[k.as_str()],
            _ => &mut parent[key.as_u64().unwrap_or(0) as usize],
        };
    }
    match (parent, last, value) {
        (Value::Object(map), Value::String(k), Some(v)) => {
            map.insert(k.clone(), v);
        }
        (Value::Object(map), Value::String(k), None) => {
            map.remove(k);
        }
        (Value::Array(items), i, Some(v)) => {
            if let Some(slot) = items.get_mut(i.as_u64().unwrap_or(0) as usize) {
                *slot = v;
            }
        }
        (Value::Array(items), i, None) => {
            let i = i.as_u64().unwrap_or(0) as usize;
            if i < items.len() {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// Values that probe the rules: ids already stored, bad timestamps and names, odd types.
fn interesting() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-2i64..70).prop_map(Value::from),
        Just(json!(1.5)),
        Just(json!([])),
        Just(json!({})),
        Just(json!(["x@example.com", 3])),
        prop::sample::select(vec![
            "",
            " ",
            "<m1-0@example.com>",
            "att-0",
            "call_1",
            "inbound",
            "outbound",
            "sideways",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "9999-12-31T23:00:00-02:00",
            "2026-13-01T00:00:00Z",
            "yesterday",
            "YW\r\nJj",
            "YW Jj \n",
            "not base64!",
            "lookup order",
            "a\u{0}b",
            "Bob <bob@example.com>\r\nBcc: eve@example.com",
            "\u{feff}",
        ])
        .prop_map(Value::from),
        "[a-zA-Z0-9_<>@. -]{0,12}".prop_map(Value::from),
        Just(Value::from("x".repeat(600))),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), interesting()).prop_map(|(i, v)| Mutation::Set(i, v)),
        1 => any::<Index>().prop_map(Mutation::Remove),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Copy(a, b)),
    ]
}

/// Every row of every table, in id order.
async fn dump(conn: &DatabaseConnection) -> String {
    let threads = email_thread::Entity::find()
        .order_by_asc(email_thread::Column::Id)
        .all(conn)
        .await
        .unwrap();
    let messages = message::Entity::find()
        .order_by_asc(message::Column::Id)
        .all(conn)
        .await
        .unwrap();
    let attachments = attachment::Entity::find()
        .order_by_asc(attachment::Column::Id)
        .all(conn)
        .await
        .unwrap();
    let uses = tool_use::Entity::find()
        .order_by_asc(tool_use::Column::Id)
        .all(conn)
        .await
        .unwrap();
    format!("{threads:?}\n{messages:?}\n{attachments:?}\n{uses:?}")
}

async fn counts(conn: &DatabaseConnection) -> [usize; 3] {
    [
        message::Entity::find().all(conn).await.unwrap().len(),
        attachment::Entity::find().all(conn).await.unwrap().len(),
        tool_use::Entity::find().all(conn).await.unwrap().len(),
    ]
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

static CASE: AtomicUsize = AtomicUsize::new(1);

#[test]
fn a_mutated_fixture_imports_whole_or_changes_nothing() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcomes = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(mutations in prop::collection::vec(mutation(), 0..4),
                        bom in any::<bool>(),
                        cut in prop::option::weighted(0.05, any::<Index>()))| {
        let n = CASE.fetch_add(1, Ordering::Relaxed);
        let mut fixture = valid(n);
        for m in &mutations {
            apply(&mut fixture, m);
        }
        let mut text = fixture.to_string();
        if let Some(cut) = cut {
            let at = cut.index(text.len() + 1);
            let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            text.truncate(at);
        }
        if bom {
            text.insert(0, '\u{feff}');
        }
        rt.block_on(async {
            // A fresh database per case, holding data the mutations can collide with.
            let conn = db::open("sqlite::memory:").await.unwrap();
            db::import_fixture_str(&conn, &valid(0).to_string())
                .await
                .unwrap();
            let before = dump(&conn).await;
            let counts_before = counts(&conn).await;
            match db::import_fixture_str(&conn, &text).await {
                Ok(summary) => {
                    outcomes[0].fetch_add(1, Ordering::Relaxed);
                    let after = counts(&conn).await;
                    assert_eq!(
                        after,
                        [
                            counts_before[0] + summary.messages,
                            counts_before[1] + summary.attachments,
                            counts_before[2] + summary.tool_uses,
                        ],
                        "{text}"
                    );
                }
                Err(e) => {
                    outcomes[1].fetch_add(1, Ordering::Relaxed);
                    assert!(!e.to_string().is_empty());
                    assert_eq!(dump(&conn).await, before, "a failed import wrote: {e}\n{text}");
                }
            }
        });
    });
    // Both outcomes are exercised.
    let [ok, failed] = outcomes.map(AtomicUsize::into_inner);
    eprintln!("{ok} imported, {failed} rejected");
    assert!(ok > 0 && failed > 0, "{ok} imported, {failed} rejected");
}
