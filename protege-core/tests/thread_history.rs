// Tests may stay long: one ThreadHistory case after another, each self-contained.
//! ThreadHistory (window, skipped messages, tool rounds, truncation, budget) and the message rendering, on every configured backend.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{expected, import, on_each_backend, reply_ctx, resolve_json};
use protege::db;
use protege_core::{
    AppConfig, CacheHints, Chain, Context, Conversation, DynChain, LoadText, PersonaInfo, Resolver,
    Responsibility, Role, ThreadHistory, ThreadSummary, Tokenizer, Trigger, Window, build_request,
    cache_key, user_turn,
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
    let messages = Chain::resolve(&chain, &ctx).await.unwrap();
    let tools = serde_json::from_value(tools).unwrap();
    let request = build_request(
        Some(user_turn(ctx.message().unwrap(), ctx.mail_limits())),
        tools,
        messages,
    )
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
            .map(|m| Tokenizer::Estimate.count_message(m))
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
                ..Responsibility::default()
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
    let embedded = || db::direct_round_trips(&conn) as usize;
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
        for h in [
            ThreadHistory::new(),
            ThreadHistory::new().limit(None),
            ThreadHistory::new().limit(20).window(Window::Stable),
            ThreadHistory::new().limit(None).window(Window::Stable),
            ThreadHistory::new()
                .limit(20)
                .window(Window::Stable)
                .after_summary(true),
        ] {
            let (small, small_len) = statements_for(&url, "<scur@x>", h.clone()).await;
            let (large, large_len) = statements_for(&url, "<lcur@x>", h.clone()).await;
            // Three statements; on PostgreSQL joined into one, one round trip.
            let expected = if backend.name == "postgres" { 1 } else { 3 };
            assert_eq!((small, large), (expected, expected), "on {}", backend.name);
            assert!(large_len > small_len);
        }
        backend.drop_database(name).await;
    }
}

#[tokio::test]
async fn a_finished_request_knows_where_the_history_ends_and_its_cache_key() {
    on_each_backend("cache_hints", |db, _| async move {
        import_threads(&db, numbered_thread(4)).await;
        let ctx = reply_ctx(&db, "<current@x>").await;
        let thread_id = ctx.message().unwrap().thread_id;
        let chain = DynChain::new()
            .with(LoadText::template("{{ persona.instructions }}"))
            .with(ThreadHistory::new().limit(3))
            .with(LoadText::template("Reply briefly."));
        let request = Chain::request(&chain, &ctx).await.unwrap();
        // system, 3 history messages (indexes 1-3), system, the trailing user turn.
        assert_eq!(request.messages.len(), 6);
        assert_eq!(
            request.cache,
            CacheHints {
                history_end: Some(3),
                key: Some(cache_key(
                    &ctx.persona().name,
                    Conversation::Thread(thread_id)
                )),
                hour: false,
            }
        );
        // An empty history marks nothing.
        let chain = DynChain::new()
            .with(LoadText::template("{{ persona.instructions }}"))
            .with(ThreadHistory::new().limit(0));
        let request = Chain::request(&chain, &ctx).await.unwrap();
        assert_eq!(request.cache.history_end, None);
    })
    .await;
}

/// The stable window of a thread of `count` prior messages: the numbered messages from
/// `start` on.
async fn stable_window(db: &DatabaseConnection, count: usize, h: ThreadHistory) -> Value {
    let marker = format!("<current-{count}@x>");
    let mut thread = numbered_thread(count);
    for m in thread[0]["messages"].as_array_mut().unwrap() {
        let id = m["message_id"]
            .as_str()
            .unwrap()
            .replace("@x>", &format!("-{count}@x>"));
        m["message_id"] = json!(id);
    }
    import_threads(db, thread).await;
    history(db, &marker, h).await
}

fn from(start: usize, count: usize) -> Value {
    Value::Array((start..count).map(numbered).collect())
}

#[tokio::test]
async fn stable_windows_jump_by_step_at_the_boundaries() {
    on_each_backend("stable_windows", |db, _| async move {
        // limit N = 4, step 3: the window starts at floor((count - 4) / 3) * 3.
        let h = ThreadHistory::new().limit(4).window(Window::Stable).step(3);
        for (count, start) in [
            (2, 0),  // fewer than N: all
            (4, 0),  // count = N
            (5, 0),  // N + 1
            (6, 0),  // N + step - 1: the widest window, N + step - 1 messages
            (7, 3),  // N + step: the first jump
            (9, 3),  // N + 2 step - 1
            (10, 6), // N + 2 step: the second jump
        ] {
            assert_eq!(
                stable_window(&db, count, h.clone()).await,
                from(start, count),
                "count {count}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn stable_windows_default_step_is_half_the_limit() {
    on_each_backend("stable_default_step", |db, _| async move {
        // limit 4: step 2.
        let h = ThreadHistory::new().limit(4).window(Window::Stable);
        for (count, start) in [(4, 0), (5, 0), (6, 2), (7, 2), (8, 4)] {
            assert_eq!(
                stable_window(&db, count, h.clone()).await,
                from(start, count),
                "count {count}"
            );
        }
        // limit 1: step max(1, 0) = 1, the same as a sliding window.
        let h = ThreadHistory::new().limit(1).window(Window::Stable);
        assert_eq!(stable_window(&db, 3, h).await, from(2, 3));
        // step 0 counts as 1.
        let h = ThreadHistory::new().limit(2).window(Window::Stable).step(0);
        assert_eq!(stable_window(&db, 11, h).await, from(9, 11));
    })
    .await;
}

#[tokio::test]
async fn stable_windows_without_a_limit_or_with_limit_zero() {
    on_each_backend("stable_unlimited", |db, _| async move {
        let all = ThreadHistory::new()
            .limit(None)
            .window(Window::Stable)
            .step(5);
        assert_eq!(stable_window(&db, 12, all).await, from(0, 12));
        let none = ThreadHistory::new().limit(0).window(Window::Stable);
        assert_eq!(stable_window(&db, 13, none).await, json!([]));
    })
    .await;
}

#[tokio::test]
async fn consecutive_replies_share_the_stable_window_prefix() {
    on_each_backend("stable_prefix", |db, _| async move {
        import_threads(&db, numbered_thread(40)).await;
        // Replies to n20, n22, n24 ... of one thread: the window of limit 10, step 5 keeps
        // its first message until the jump.
        let h = ThreadHistory::new()
            .limit(10)
            .window(Window::Stable)
            .step(5);
        let mut firsts = Vec::new();
        for i in (20..40).step_by(2) {
            let window = history(&db, &format!("<n{i}@x>"), h.clone()).await;
            firsts.push((i, window.as_array().unwrap().len(), window[0].clone()));
        }
        let got: Vec<(usize, usize, Value)> = firsts;
        let want: Vec<(usize, usize, Value)> = [
            (20, 10, 10),
            (22, 12, 10),
            (24, 14, 10),
            (26, 11, 15),
            (28, 13, 15),
            (30, 10, 20),
            (32, 12, 20),
            (34, 14, 20),
            (36, 11, 25),
            (38, 13, 25),
        ]
        .into_iter()
        .map(|(i, len, first)| (i, len, numbered(first)))
        .collect();
        assert_eq!(got, want);
    })
    .await;
}

/// Stores `content` as the summary through `message_id`, `minutes` after a fixed time.
async fn summarise(db: &DatabaseConnection, message_id: &str, content: &str, minutes: i64) {
    let at = chrono::DateTime::parse_from_rfc3339("2026-02-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
        + chrono::Duration::minutes(minutes);
    let stored = db::store_summary(db, message_id, content, at)
        .await
        .unwrap()
        .expect("a stored message");
    assert_eq!(stored.through_message_id, message_id);
}

async fn summary_of(db: &DatabaseConnection, current: &str, s: ThreadSummary) -> Value {
    let ctx = reply_ctx(db, current).await;
    serde_json::to_value(s.resolve(&ctx).await.expect("summary")).unwrap()
}

#[tokio::test]
async fn the_newest_summary_prior_to_the_current_message_applies() {
    on_each_backend("summaries", |db, _| async move {
        import_threads(&db, numbered_thread(10)).await;
        // Another thread's summary never applies.
        import_threads(
            &db,
            json!([{"subject": "Other", "messages": [msg("<other@x>", "inbound", "2026-01-01T00:30:00Z", Some("other"))]}]),
        )
        .await;
        let none = ThreadSummary::new();
        assert_eq!(summary_of(&db, "<n6@x>", none.clone()).await, Value::Null);
        let all = ThreadHistory::new().limit(None).after_summary(true);
        assert_eq!(
            history(&db, "<n6@x>", all.clone()).await,
            from(0, 6),
            "no summary: the whole window"
        );

        summarise(&db, "<n3@x>", "through three", 0).await;
        summarise(&db, "<n5@x>", "through five", 1).await;
        summarise(&db, "<other@x>", "elsewhere", 2).await;
        // Through a message after n6: stored last, ignored when answering n6.
        summarise(&db, "<n8@x>", "through eight", 3).await;

        let system = |text: &str| json!({"role": "system", "content": format!("Summary of the conversation so far:\n{text}")});
        assert_eq!(
            summary_of(&db, "<n6@x>", none.clone()).await,
            system("through five")
        );
        assert_eq!(history(&db, "<n6@x>", all.clone()).await, json!([]));
        // n8 itself is not prior to n8: the summary through n5 applies.
        assert_eq!(
            summary_of(&db, "<n8@x>", none.clone()).await,
            system("through five")
        );
        assert_eq!(history(&db, "<n8@x>", all.clone()).await, from(6, 8));
        // The current message: the summary through n8, then the window after it.
        assert_eq!(
            summary_of(&db, "<current@x>", none.clone()).await,
            system("through eight")
        );
        assert_eq!(history(&db, "<current@x>", all.clone()).await, from(9, 10));
        // Before any summary's through-message: none applies.
        assert_eq!(summary_of(&db, "<n2@x>", none.clone()).await, Value::Null);
        assert_eq!(history(&db, "<n2@x>", all).await, from(0, 2));
        // Without `after_summary` the window ignores summaries.
        assert_eq!(
            history(&db, "<n6@x>", ThreadHistory::new().limit(3)).await,
            from(3, 6)
        );
        // Template and role.
        let custom = ThreadSummary::new()
            .try_template_str("Earlier ({{ persona.name }}): {{ summary }}")
            .unwrap()
            .role(Role::User);
        assert_eq!(
            summary_of(&db, "<n6@x>", custom).await,
            json!({"role": "user", "content": "Earlier (support): through five"})
        );
    })
    .await;
}

#[tokio::test]
async fn a_limited_or_stable_window_counts_only_messages_after_the_summary() {
    on_each_backend("summary_windows", |db, _| async move {
        import_threads(&db, numbered_thread(30)).await;
        summarise(&db, "<n9@x>", "first ten", 0).await;
        // 20 prior messages after the summary (n10..n29).
        let limited = ThreadHistory::new().limit(4).after_summary(true);
        assert_eq!(history(&db, "<current@x>", limited).await, from(26, 30));
        // Stable, limit 4, step 3 over count 20: start floor(16 / 3) * 3 = 15 → n25.
        let stable = ThreadHistory::new()
            .limit(4)
            .window(Window::Stable)
            .step(3)
            .after_summary(true);
        assert_eq!(history(&db, "<current@x>", stable).await, from(25, 30));
    })
    .await;
}

#[tokio::test]
async fn storing_a_summary_needs_a_known_message_and_some_text() {
    on_each_backend("summary_store", |db, _| async move {
        import_threads(&db, numbered_thread(2)).await;
        let now = chrono::Utc::now();
        assert_eq!(
            db::store_summary(&db, "<nope@x>", "text", now)
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            db::store_summary(&db, "<n1@x>", " \n\0", now)
                .await
                .unwrap_err()
                .to_string(),
            "the summary through `<n1@x>` is empty"
        );
        let stored = db::store_summary(&db, "<n1@x>", "a\0b", now)
            .await
            .unwrap()
            .unwrap();
        let thread = reply_ctx(&db, "<current@x>")
            .await
            .message()
            .unwrap()
            .thread_id;
        assert_eq!(
            (stored.thread_id, stored.through_message_id.as_str()),
            (thread, "<n1@x>")
        );
        assert_eq!(
            summary_of(&db, "<current@x>", ThreadSummary::new()).await,
            json!({"role": "system", "content": "Summary of the conversation so far:\nab"})
        );
    })
    .await;
}

/// A `limit` or `step` beyond what a database's `LIMIT` takes (the largest TOML integer,
/// 2^63 - 1, plus a step; or `u64::MAX` from Rust) saturates: here every prior message (a
/// step of 2^63 - 1 keeps a stable window growing from its first message), on every
/// backend and on a SQLite file, never a panic or a failing reply.
#[tokio::test]
async fn huge_limits_and_steps_mean_every_message() {
    let huge = i64::MAX as u64;
    let cases = [
        ThreadHistory::new()
            .limit(huge)
            .window(Window::Stable)
            .step(huge),
        ThreadHistory::new()
            .limit(huge)
            .window(Window::Stable)
            .step(2),
        ThreadHistory::new()
            .limit(2)
            .window(Window::Stable)
            .step(huge),
        ThreadHistory::new()
            .limit(u64::MAX)
            .window(Window::Stable)
            .step(u64::MAX),
        ThreadHistory::new().limit(u64::MAX).window(Window::Stable),
        ThreadHistory::new().limit(u64::MAX),
        ThreadHistory::new().limit(huge),
    ];
    on_each_backend("huge_limits", |db, _| {
        let cases = cases.clone();
        async move {
            for (i, h) in cases.into_iter().enumerate() {
                assert_eq!(
                    stable_window(&db, 3 + i, h).await,
                    from(0, 3 + i),
                    "case {i}"
                );
            }
        }
    })
    .await;
    // The SQLite file reader binds the limit itself.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let db = db::open(&url).await.unwrap();
    for (i, h) in cases.into_iter().enumerate() {
        assert_eq!(
            stable_window(&db, 3 + i, h).await,
            from(0, 3 + i),
            "file, case {i}"
        );
    }
}
