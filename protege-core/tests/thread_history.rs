//! ThreadHistory (§6 rules 1-6) and the message rendering, on every configured backend.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{expected, import, on_each_backend, reply_ctx, resolve_json};
use protege_core::db;
use protege_core::{
    AppConfig, Context, DynChain, LoadText, PersonaInfo, Resolver, Responsibility, ThreadHistory,
    Tokenizer, Trigger, build_request, user_turn,
};
use sea_orm::DatabaseConnection;
use serde_json::{Value, json};

/// The full request of the acceptance persona: instructions, the history, the trailing
/// user turn.
async fn support_request(
    db: &DatabaseConnection,
    message_id: &str,
    history: ThreadHistory,
    tools: Value,
) -> Value {
    let ctx = reply_ctx(db, message_id).await;
    let chain = DynChain::new()
        .with(LoadText::template("{{ persona.instructions }}"))
        .with(history);
    let messages = protege_core::Chain::resolve(&chain, &ctx).await.unwrap();
    let tools = serde_json::from_value(tools).unwrap();
    let request = build_request(Some(user_turn(ctx.message().unwrap())), tools, messages)
        .expect("a well-formed request");
    serde_json::to_value(&request).unwrap()
}

#[tokio::test]
async fn renders_a_realistic_thread() {
    on_each_backend("renders_a_realistic_thread", |db, _| async move {
        import(&db, "support.json").await;
        let got =
            support_request(&db, "<t1-m5@example.com>", ThreadHistory::new(), json!([])).await;
        assert_eq!(got, expected("history-render-basic.json"));
    })
    .await;
}

#[tokio::test]
async fn groups_and_orders_tool_rounds() {
    on_each_backend("groups_and_orders_tool_rounds", |db, _| async move {
        import(&db, "tools.json").await;
        let want = expected("history-tool-rounds-order.json");
        let got = support_request(
            &db,
            "<lookup-3@example.com>",
            ThreadHistory::new(),
            want["tools"].clone(),
        )
        .await;
        assert_eq!(got, want);
    })
    .await;
}

#[tokio::test]
async fn truncates_results_by_unicode_scalar_values() {
    on_each_backend("truncates_results", |db, _| async move {
        import(&db, "tools.json").await;
        let got = support_request(
            &db,
            "<trunc-2@example.com>",
            ThreadHistory::new().result_limit(10),
            json!([]),
        )
        .await;
        assert_eq!(got, expected("history-truncation-limit-10.json"));
    })
    .await;
}

#[tokio::test]
async fn trailing_turn_carries_images_and_pdfs() {
    on_each_backend("trailing_turn_parts", |db, _| async move {
        import(&db, "attachments.json").await;
        let got = support_request(
            &db,
            "<label-1@example.com>",
            ThreadHistory::new(),
            json!([]),
        )
        .await;
        assert_eq!(got, expected("trailing-parts-image-pdf.json"));
    })
    .await;
}

/// One inbound or outbound message of a synthetic thread.
fn msg(id: &str, direction: &str, sent_at: &str, body: Option<&str>) -> Value {
    json!({
        "message_id": id, "direction": direction,
        "from": if direction == "inbound" { "Alice <alice@example.com>" } else { "support@acme.test" },
        "to": [if direction == "inbound" { "support@acme.test" } else { "alice@example.com" }],
        "subject": "Hi", "sent_at": sent_at, "text_body": body,
    })
}

fn tool(run: &str, turn: i64, pos: i64, id: &str, result: Option<&str>) -> Value {
    let mut t = json!({"run_id": run, "turn_index": turn, "position": pos, "tool_call_id": id,
                       "name": "lookup", "input": {"q": id}});
    if let Some(r) = result {
        t["result"] = json!(r);
    }
    t
}

async fn import_threads(db: &DatabaseConnection, threads: Value) {
    db::import_fixture_str(db, &json!({ "threads": threads }).to_string())
        .await
        .expect("import");
}

async fn history(db: &DatabaseConnection, current: &str, h: ThreadHistory) -> Value {
    let ctx = reply_ctx(db, current).await;
    let messages = h.resolve(&ctx).await.expect("history");
    // Every history is well-formed on its own.
    build_request(None, vec![], messages.clone()).expect("well-formed");
    serde_json::to_value(&messages).unwrap()
}

/// The rendered turn of a synthetic message.
fn turn(role: &str, from: &str, to: &str, date: &str, body: &str) -> Value {
    json!({"role": role, "content": format!("From: {from}\nTo: {to}\nCc:\nDate: {date}\nSubject: Hi\n\n{body}")})
}

fn user(date: &str, body: &str) -> Value {
    turn(
        "user",
        "Alice <alice@example.com>",
        "support@acme.test",
        date,
        body,
    )
}

fn assistant(date: &str, body: &str) -> Value {
    turn(
        "assistant",
        "support@acme.test",
        "alice@example.com",
        date,
        body,
    )
}

/// A thread of `n` alternating messages a minute apart, then the current one.
fn numbered_thread(n: usize) -> Value {
    let mut messages: Vec<Value> = (0..n)
        .map(|i| {
            let dir = if i % 2 == 0 { "inbound" } else { "outbound" };
            msg(
                &format!("<n{i}@x>"),
                dir,
                &format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60),
                Some(&format!("body {i}")),
            )
        })
        .collect();
    messages.push(msg(
        "<current@x>",
        "inbound",
        "2026-01-02T00:00:00Z",
        Some("now"),
    ));
    json!([{ "subject": "Hi", "messages": messages }])
}

fn numbered(i: usize) -> Value {
    let date = format!("Thu, 1 Jan 2026 {:02}:{:02}:00 +0000", i / 60, i % 60);
    if i.is_multiple_of(2) {
        user(&date, &format!("body {i}"))
    } else {
        assistant(&date, &format!("body {i}"))
    }
}

#[tokio::test]
async fn limit_default_zero_all_and_n() {
    on_each_backend("limit_semantics", |db, _| async move {
        import_threads(&db, numbered_thread(60)).await;
        let default = history(&db, "<current@x>", ThreadHistory::new()).await;
        assert_eq!(default, Value::Array((10..60).map(numbered).collect()));
        let zero = history(&db, "<current@x>", ThreadHistory::new().limit(0)).await;
        assert_eq!(zero, json!([]));
        let all = history(&db, "<current@x>", ThreadHistory::new().limit(None)).await;
        assert_eq!(all, Value::Array((0..60).map(numbered).collect()));
        let three = history(&db, "<current@x>", ThreadHistory::new().limit(3)).await;
        assert_eq!(three, json!([numbered(57), numbered(58), numbered(59)]));
    })
    .await;
}

#[tokio::test]
async fn same_sent_at_is_prior_and_ties_break_by_id() {
    on_each_backend("ties", |db, _| async move {
        import_threads(
            &db,
            json!([{ "subject": "Hi", "messages": [
                msg("<a@x>", "inbound", "2026-01-01T10:00:00Z", Some("a")),
                msg("<b@x>", "outbound", "2026-01-01T10:00:00Z", Some("b")),
                msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("current")),
                msg("<c@x>", "outbound", "2026-01-01T10:00:00Z", Some("c")),
                msg("<later@x>", "outbound", "2026-01-01T10:00:01Z", Some("later")),
            ]}]),
        )
        .await;
        let date = "Thu, 1 Jan 2026 10:00:00 +0000";
        let got = history(&db, "<cur@x>", ThreadHistory::new()).await;
        assert_eq!(
            got,
            json!([user(date, "a"), assistant(date, "b"), assistant(date, "c")])
        );
        // The limit keeps the most recent by (sent_at, id).
        let got = history(&db, "<cur@x>", ThreadHistory::new().limit(2)).await;
        assert_eq!(got, json!([assistant(date, "b"), assistant(date, "c")]));
    })
    .await;
}

#[tokio::test]
async fn later_messages_and_other_threads_are_left_out() {
    on_each_backend("excluded", |db, _| async move {
        import_threads(
            &db,
            json!([
                { "subject": "Hi", "messages": [
                    msg("<a@x>", "inbound", "2026-01-01T09:00:00Z", Some("mine")),
                    msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("current")),
                    msg("<later@x>", "outbound", "2026-01-01T11:00:00Z", Some("later")),
                ]},
                { "subject": "Other", "messages": [
                    msg("<o@x>", "inbound", "2026-01-01T09:30:00Z", Some("other thread")),
                ]},
            ]),
        )
        .await;
        let got = history(&db, "<cur@x>", ThreadHistory::new()).await;
        assert_eq!(got, json!([user("Thu, 1 Jan 2026 09:00:00 +0000", "mine")]));
    })
    .await;
}

#[tokio::test]
async fn current_message_tool_uses_are_never_replayed() {
    on_each_backend("current_tools", |db, _| async move {
        let mut prior = msg("<a@x>", "inbound", "2026-01-01T09:00:00Z", Some("first"));
        prior["tool_uses"] = json!([tool("r1", 0, 0, "call_1", Some("ok"))]);
        let mut current = msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("second"));
        current["tool_uses"] = json!([tool("r2", 0, 0, "call_2", Some("mine"))]);
        import_threads(&db, json!([{ "subject": "Hi", "messages": [prior, current] }])).await;
        let got = history(&db, "<cur@x>", ThreadHistory::new()).await;
        assert_eq!(got, json!([
            user("Thu, 1 Jan 2026 09:00:00 +0000", "first"),
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "lookup", "input": {"q": "call_1"}}]},
            {"role": "tool", "content": "ok", "tool_call_id": "call_1"},
        ]));
    })
    .await;
}

#[tokio::test]
async fn empty_messages_are_skipped_but_their_rounds_kept() {
    on_each_backend("empty_skipped", |db, _| async move {
        let mut empty = msg("<e@x>", "inbound", "2026-01-01T09:00:00Z", Some("  \n "));
        empty["html_body"] = json!("<p> </p>");
        empty["tool_uses"] = json!([tool("r1", 0, 0, "call_1", Some("kept"))]);
        let blank = msg("<b@x>", "outbound", "2026-01-01T09:10:00Z", None);
        import_threads(&db, json!([{ "subject": "Hi", "messages": [
            empty, blank, msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("now")),
        ]}])).await;
        let got = history(&db, "<cur@x>", ThreadHistory::new()).await;
        assert_eq!(got, json!([
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "lookup", "input": {"q": "call_1"}}]},
            {"role": "tool", "content": "kept", "tool_call_id": "call_1"},
        ]));
        // The limit counts skipped messages (it is applied before rule 3).
        let got = history(&db, "<cur@x>", ThreadHistory::new().limit(1)).await;
        assert_eq!(got, json!([]));
    })
    .await;
}

#[tokio::test]
async fn missing_results_get_a_placeholder_and_rounds_sort_by_run_turn_position() {
    on_each_backend("missing_result", |db, _| async move {
        let mut m = msg("<a@x>", "inbound", "2026-01-01T09:00:00Z", Some("go"));
        m["tool_uses"] = json!([
            tool("run-b", 0, 0, "b0", Some("B0")),
            tool("run-a", 1, 0, "a10", None),
            tool("run-a", 0, 1, "a01", Some("A01")),
            tool("run-a", 0, 0, "a00", Some("A00")),
        ]);
        import_threads(&db, json!([{ "subject": "Hi", "messages": [
            m, msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("now")),
        ]}])).await;
        let call = |id: &str| json!({"id": id, "name": "lookup", "input": {"q": id}});
        let result = |id: &str, content: &str| json!({"role": "tool", "content": content, "tool_call_id": id});
        let got = history(&db, "<cur@x>", ThreadHistory::new()).await;
        assert_eq!(got, json!([
            user("Thu, 1 Jan 2026 09:00:00 +0000", "go"),
            {"role": "assistant", "content": "", "tool_calls": [call("a00"), call("a01")]},
            result("a00", "A00"), result("a01", "A01"),
            {"role": "assistant", "content": "", "tool_calls": [call("a10")]},
            result("a10", r#"{"error":"no result recorded"}"#),
            {"role": "assistant", "content": "", "tool_calls": [call("b0")]},
            result("b0", "B0"),
        ]));
        let got = history(&db, "<cur@x>", ThreadHistory::new().include_tool_calls(false)).await;
        assert_eq!(got, json!([user("Thu, 1 Jan 2026 09:00:00 +0000", "go")]));
    })
    .await;
}

#[tokio::test]
async fn max_tokens_drops_whole_turns_oldest_first() {
    on_each_backend("max_tokens", |db, _| async move {
        // Turn 1: a message and a round (a message of 4 + 25 tokens, a round of
        // 4 + 2 + 3 = 9 and a result of 4 + 1 = 5): 43 tokens.
        let mut first = msg("<a@x>", "inbound", "2026-01-01T09:00:00Z", Some("first"));
        first["tool_uses"] = json!([tool("r", 0, 0, "c1", Some("ok"))]);
        let second = msg("<b@x>", "outbound", "2026-01-01T09:30:00Z", Some("second"));
        import_threads(
            &db,
            json!([{ "subject": "Hi", "messages": [
                first, second, msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("now")),
            ]}]),
        )
        .await;
        let all = history(&db, "<cur@x>", ThreadHistory::new()).await;
        let messages: Vec<protege_core::Message> = serde_json::from_value(all.clone()).unwrap();
        let cost: Vec<usize> = messages
            .iter()
            .map(protege_core::tokens::estimate_message_tokens)
            .collect();
        let first_turn: usize = cost[..3].iter().sum();
        let second_turn = cost[3];
        let last = json!([assistant("Thu, 1 Jan 2026 09:30:00 +0000", "second")]);
        let fits = history(
            &db,
            "<cur@x>",
            ThreadHistory::new().max_tokens(first_turn + second_turn),
        )
        .await;
        assert_eq!(fits, all);
        // One token short: the oldest turn goes whole, its round with it.
        let short = history(
            &db,
            "<cur@x>",
            ThreadHistory::new().max_tokens(first_turn + second_turn - 1),
        )
        .await;
        assert_eq!(short, last);
        let exact = history(&db, "<cur@x>", ThreadHistory::new().max_tokens(second_turn)).await;
        assert_eq!(exact, last);
        let none = history(
            &db,
            "<cur@x>",
            ThreadHistory::new().max_tokens(second_turn - 1),
        )
        .await;
        assert_eq!(none, json!([]));
    })
    .await;
}

/// A reply-run context for `message_id` whose persona's model is `model`.
async fn model_ctx(db: &DatabaseConnection, message_id: &str, model: &str) -> Context {
    let m = db::load_message(db, message_id).await.unwrap().unwrap();
    let mut persona = common::support_persona();
    persona.model = Some(protege_core::ModelConfig {
        name: Some(model.into()),
        ..Default::default()
    });
    Context::builder(persona, AppConfig::new("."), Trigger::Message(m.into()))
        .db(db.clone())
        .build()
}

#[tokio::test]
async fn max_tokens_counts_with_the_models_tokenizer() {
    on_each_backend("max_tokens_tokenizer", |db, _| async move {
        // Japanese text costs more real tokens than the estimate, so the same budget keeps
        // fewer turns with the model's tokenizer.
        import_threads(
            &db,
            json!([{ "subject": "Hi", "messages": [
                msg("<a@x>", "inbound", "2026-01-01T09:00:00Z", Some("注文を確認しました")),
                msg("<b@x>", "outbound", "2026-01-01T09:30:00Z", Some("ご注文を確認しました。")),
                msg("<c@x>", "inbound", "2026-01-01T09:45:00Z", Some("確認ありがとうございます")),
                msg("<cur@x>", "inbound", "2026-01-01T10:00:00Z", Some("now")),
            ]}]),
        )
        .await;
        let ctx = model_ctx(&db, "<cur@x>", "gpt-4o").await;
        assert_eq!(ctx.tokenizer(), Tokenizer::O200kBase);
        let all = ThreadHistory::new().resolve(&ctx).await.unwrap();
        let count =
            |t: Tokenizer| -> Vec<usize> { all.iter().map(|m| t.count_message(m)).collect() };
        // Each turn: 4 + the rendering (five header lines, a blank line, the body).
        assert_eq!(count(Tokenizer::O200kBase), [50, 50, 48]);
        assert_eq!(count(Tokenizer::Cl100kBase), [55, 55, 52]);
        assert_eq!(count(Tokenizer::Estimate), [34, 32, 34]);
        let bodies = |messages: &[protege_core::Message]| -> Vec<String> {
            messages
                .iter()
                .map(|m| m.content.text().rsplit("\n\n").next().unwrap().to_owned())
                .collect()
        };
        let (a, b, c) = (
            "注文を確認しました",
            "ご注文を確認しました。",
            "確認ありがとうございます",
        );
        let cases = [
            // (model, budget, bodies kept)
            ("gpt-4o", 50 + 48, vec![b, c]),
            ("gpt-4o", 50 + 48 - 1, vec![c]),
            ("gpt-4o", 50 + 50 + 48, vec![a, b, c]),
            ("gpt-4o", 47, vec![]),
            ("gpt-4", 55 + 52, vec![b, c]),
            ("gpt-4", 55 + 52 - 1, vec![c]),
            // One budget, three models: the estimate keeps every turn, o200k_base two,
            // cl100k_base one.
            ("claude-sonnet-4-5", 100, vec![a, b, c]),
            ("o4-mini", 100, vec![b, c]),
            ("gpt-3.5-turbo", 100, vec![c]),
        ];
        for (model, budget, want) in cases {
            let ctx = model_ctx(&db, "<cur@x>", model).await;
            let got = ThreadHistory::new()
                .max_tokens(budget)
                .resolve(&ctx)
                .await
                .unwrap();
            assert_eq!(bodies(&got), want, "{model} {budget}");
        }
    })
    .await;
}

#[tokio::test]
async fn renders_cc_attachments_and_html_bodies() {
    on_each_backend("rendering", |db, _| async move {
        import(&db, "attachments.json").await;
        let got = history(&db, "<html-3@example.com>", ThreadHistory::new()).await;
        assert_eq!(got, json!([
            {"role": "user", "content": "From: Kim Lee <kim@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 2 Mar 2026 09:00:00 +0000\nSubject: Invoice question\n\nHello team & thanks,\n\nMy invoice shows the wrong address.\nCan you fix it?"},
            {"role": "user", "content": "From: Kim Lee <kim@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 2 Mar 2026 09:20:00 +0000\nSubject: Re: Invoice question\n\nThe new address is 1 Main St & Co."},
        ]));
        import_threads(&db, json!([{ "subject": "Files", "messages": [
            {"message_id": "<f1@x>", "direction": "inbound", "from": "Bo <bo@x.test>",
             "to": ["a@acme.test", "B <b@acme.test>"], "cc": ["c@x.test", "Dee <d@x.test>"],
             "subject": "Files", "sent_at": "2026-05-09T23:30:00-02:00",
             "attachments": [
                {"id": "att-f1", "filename": "a.txt", "content_type": "text/plain", "byte_size": 3, "data_base64": "YWJj"},
                {"id": "att-f2", "filename": "b.pdf", "content_type": "application/pdf", "byte_size": 9}]},
            msg("<f2@x>", "inbound", "2026-05-11T00:00:00Z", Some("next")),
        ]}])).await;
        let got = history(&db, "<f2@x>", ThreadHistory::new()).await;
        assert_eq!(got, json!([
            {"role": "user", "content": "From: Bo <bo@x.test>\nTo: a@acme.test, B <b@acme.test>\nCc: c@x.test, Dee <d@x.test>\nDate: Sun, 10 May 2026 01:30:00 +0000\nSubject: Files\n\nAttachments:\n- a.txt (text/plain, 3 bytes, id: att-f1)\n- b.pdf (application/pdf, 9 bytes, id: att-f2)"},
        ]));
    })
    .await;
}

#[tokio::test]
async fn no_database_or_scheduled_run_gives_nothing() {
    on_each_backend("no_trigger", |db, _| async move {
        import(&db, "support.json").await;
        let m = db::load_message(&db, "<t1-m5@example.com>")
            .await
            .unwrap()
            .unwrap();
        let without_db = Context::builder(
            PersonaInfo::new("p"),
            AppConfig::new("."),
            Trigger::Message(Arc::new(m)),
        )
        .build();
        assert_eq!(
            ThreadHistory::new().resolve(&without_db).await.unwrap(),
            vec![]
        );
        let scheduled = Context::builder(
            PersonaInfo::new("p"),
            AppConfig::new("."),
            Trigger::Responsibility(Responsibility {
                name: "d".into(),
                schedule: "0 8 * * *".into(),
                instructions: "x".into(),
            }),
        )
        .db(db.clone())
        .build();
        assert_eq!(
            ThreadHistory::new().resolve(&scheduled).await.unwrap(),
            vec![]
        );
        let chain = DynChain::new().with(ThreadHistory::new());
        assert_eq!(resolve_json(&chain, &scheduled).await, json!([]));
    })
    .await;
}

/// Counts the statements one history runs on a fresh connection to `url`.
async fn statements_for(url: &str, current: &str, h: ThreadHistory) -> (usize, usize) {
    let mut conn = db::connect(url).await.unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    conn.set_metric_callback(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    });
    let ctx = reply_ctx(&conn, current).await;
    // Reads on a SQLite file run through the SQLite C library, which SeaORM's callback
    // does not see; the engine counts those.
    let embedded = || db::embedded_statements(&conn).unwrap_or(0) as usize;
    let before = count.load(Ordering::SeqCst) + embedded();
    let messages = h.resolve(&ctx).await.unwrap();
    let n = count.load(Ordering::SeqCst) + embedded() - before;
    conn.close().await.ok();
    (n, messages.len())
}

#[tokio::test]
async fn constant_number_of_statements_whatever_the_thread_length() {
    let dir = tempfile::tempdir().unwrap();
    for backend in common::backends() {
        let (url, name) = backend.fresh_url("statements", dir.path()).await;
        let conn = db::open(&url).await.unwrap();
        let thread = |prefix: &str, n: usize| {
            let mut messages: Vec<Value> = (0..n)
                .map(|i| {
                    let mut m = msg(
                        &format!("<{prefix}{i}@x>"),
                        if i % 2 == 0 { "inbound" } else { "outbound" },
                        "2026-01-01T00:00:00Z",
                        Some("body"),
                    );
                    if i % 3 == 0 {
                        m["tool_uses"] =
                            json!([tool("r", 0, 0, &format!("{prefix}c{i}"), Some("ok"))]);
                    }
                    m
                })
                .collect();
            messages.push(msg(
                &format!("<{prefix}cur@x>"),
                "inbound",
                "2026-01-02T00:00:00Z",
                Some("now"),
            ));
            json!({ "subject": "Hi", "messages": messages })
        };
        import_threads(&conn, json!([thread("s", 10), thread("l", 1000)])).await;
        conn.close().await.ok();
        for h in [ThreadHistory::new(), ThreadHistory::new().limit(None)] {
            let (small, small_len) = statements_for(&url, "<scur@x>", h.clone()).await;
            let (large, large_len) = statements_for(&url, "<lcur@x>", h.clone()).await;
            assert_eq!((small, large), (3, 3), "on {}", backend.name);
            assert!(large_len > small_len);
        }
        backend.drop_database(name).await;
    }
}
