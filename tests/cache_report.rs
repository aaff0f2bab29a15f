//! `Engine::cache_report`: what a prompt cache would serve over a long thread, with
//! sliding and cache-stable history windows.

use std::path::Path;

use protege::{CacheReport, Engine, EngineErrorKind, Format, Provider};

const INSTRUCTIONS: &str = "You are Acme's support agent. Answer briefly and politely.";

/// A persona replaying the last 20 messages of the thread in a `window` window.
fn persona(window: &str) -> String {
    format!(
        r#"instructions = """{INSTRUCTIONS}"""
addresses = ["support@acme.test"]
[model]
provider = "anthropic"
name = "claude-sonnet-4-5"

[[message_resolvers]]
use = "LoadText"
template = "{{{{ persona.instructions }}}}"

[[message_resolvers]]
use = "ThreadHistory"
limit = 20
window = "{window}"
"#
    )
}

/// One thread of 60 messages, inbound and outbound by turns, an hour apart.
fn thread_of_60() -> String {
    let messages: Vec<serde_json::Value> = (0..60)
        .map(|i| {
            let inbound = i % 2 == 0;
            let line = if inbound {
                "Could you tell me where my order is? It has been a while and I need it for a project next week. "
            } else {
                "Thank you for your patience. Your order is with the carrier and should arrive within two business days. "
            };
            serde_json::json!({
                "message_id": format!("<m{i}@example.com>"),
                "direction": if inbound { "inbound" } else { "outbound" },
                "from": if inbound { "Alice <alice@example.com>" } else { "Acme Support <support@acme.test>" },
                "to": [if inbound { "support@acme.test" } else { "alice@example.com" }],
                "subject": if i == 0 { "Order A-1" } else { "Re: Order A-1" },
                "sent_at": format!("2026-03-{:02}T{:02}:00:00Z", 1 + i / 24, i % 24),
                "text_body": format!("Message {i}: {line}{line}"),
            })
        })
        .collect();
    serde_json::json!({"threads": [{"subject": "Order A-1", "messages": messages}]}).to_string()
}

async fn engine(root: &Path) -> Engine {
    std::fs::create_dir_all(root.join("personas")).unwrap();
    std::fs::write(root.join("personas/sliding.toml"), persona("sliding")).unwrap();
    std::fs::write(root.join("personas/stable.toml"), persona("stable")).unwrap();
    let url = format!("sqlite://{}", root.join("cache.db").display());
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    let db = engine.db().await.unwrap();
    protege::db::import_fixture_str(db, &thread_of_60())
        .await
        .unwrap();
    engine
}

fn totals(report: &CacheReport) -> (usize, usize, usize) {
    (
        report.rows.len(),
        report.input_tokens(),
        report.cached_tokens(),
    )
}

#[tokio::test]
async fn stable_windows_serve_most_of_a_long_thread_from_cache() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path()).await;
    let report = |persona: &'static str, format| {
        let engine = engine.clone();
        async move { engine.cache_report(persona, 1, format).await.unwrap() }
    };

    let sliding = report("sliding", Format::Anthropic).await;
    let stable = report("stable", Format::Anthropic).await;
    assert_eq!(
        (totals(&sliding), totals(&stable)),
        ((30, 48069, 9684), (30, 55375, 44756))
    );
    assert!(stable.cached_fraction() >= 0.6, "{stable}");
    assert!(sliding.cached_fraction() < 0.25, "{sliding}");
    // The first reply has nothing to share; the window of limit 20 (step 10) jumps at the
    // 16th reply (30 prior messages), where only the system prompt is served.
    let row = |r: &CacheReport, i: usize| {
        (
            r.rows[i].message_id.clone(),
            r.rows[i].input_tokens,
            r.rows[i].cached_tokens,
        )
    };
    assert_eq!(row(&stable, 0), ("<m0@example.com>".into(), 108, 0));
    assert_eq!(row(&stable, 14), ("<m28@example.com>".into(), 2666, 2483));
    assert_eq!(row(&stable, 15), ("<m30@example.com>".into(), 1940, 21));
    assert_eq!(row(&stable, 16), ("<m32@example.com>".into(), 2123, 1940));
    // Sliding windows of 20 share only the system prompt once the thread passes 20.
    assert_eq!(row(&sliding, 15), ("<m30@example.com>".into(), 1940, 21));
    assert_eq!(row(&sliding, 16), ("<m32@example.com>".into(), 1940, 21));

    let sliding = report("sliding", Format::Openai).await;
    let stable = report("stable", Format::Openai).await;
    assert_eq!(
        (totals(&sliding), totals(&stable)),
        ((30, 48644, 9843), (30, 56040, 45303))
    );
    assert_eq!(stable.provider, Provider::Openai);
    // `provider` is the persona's own (anthropic).
    let own = report("stable", Format::Provider).await;
    assert_eq!(
        (own.provider, totals(&own)),
        (Provider::Anthropic, (30, 55375, 44756))
    );
}

#[tokio::test]
async fn cache_report_mistakes_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path()).await;
    let err = |persona: &'static str, thread: i64, format| {
        let engine = engine.clone();
        async move {
            let e = engine
                .cache_report(persona, thread, format)
                .await
                .unwrap_err();
            (e.kind(), e.to_string())
        }
    };
    assert_eq!(
        err("stable", 7, Format::Anthropic).await,
        (
            EngineErrorKind::NotFound,
            "unknown thread `7`: no thread with this id in the database".into()
        )
    );
    assert_eq!(
        err("stable", 1, Format::Messages).await,
        (
            EngineErrorKind::BadRequest,
            "a cache report needs a provider's wire format: `openai`, `openai-responses`, `anthropic` or `provider`"
                .into()
        )
    );
    assert_eq!(
        err("nobody", 1, Format::Anthropic).await,
        (
            EngineErrorKind::NotFound,
            "unknown persona `nobody`; known personas: `sliding`, `stable`".into()
        )
    );
}
