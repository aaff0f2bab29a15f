//! `Engine::cache_report`: what a prompt cache would serve over a long thread, with
//! sliding and cache-stable history windows.

use std::path::Path;

use protege::{CacheReport, CacheTtl, Engine, EngineErrorKind, Format, Provider};

const INSTRUCTIONS: &str = "You are Acme's support agent. Answer briefly and politely.";

/// A persona's head: its instructions, address and model, then its first resolver, the
/// instructions followed by `more` system text.
fn persona_head(more: &str) -> String {
    format!(
        r#"instructions = """{INSTRUCTIONS}"""
addresses = ["support@acme.test"]
[model]
provider = "anthropic"
name = "claude-sonnet-4-5"

[[message_resolvers]]
use = "LoadText"
template = "{{{{ persona.instructions }}}}{more}"
"#
    )
}

/// A persona replaying the last 20 messages of the thread in a `window` window.
fn persona(window: &str) -> String {
    let head = persona_head("");
    format!(
        r#"{head}
[[message_resolvers]]
use = "ThreadHistory"
limit = 20
window = "{window}"
"#
    )
}

/// One thread of 60 messages, inbound and outbound by turns, an hour apart.
fn thread_of_60() -> String {
    thread_of(60)
}

/// One thread of `count` messages, inbound and outbound by turns, an hour apart.
fn thread_of(count: usize) -> String {
    thread_spaced(count, 60)
}

/// One thread of `count` messages, inbound and outbound by turns, `minutes` apart.
fn thread_spaced(count: usize, minutes: i64) -> String {
    let messages: Vec<serde_json::Value> = (0..count)
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
                "sent_at": (chrono::DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z").unwrap()
                    + chrono::Duration::minutes(minutes * i as i64))
                    .to_utc()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "text_body": format!("Message {i}: {line}{line}"),
            })
        })
        .collect();
    serde_json::json!({"threads": [{"subject": "Order A-1", "messages": messages}]}).to_string()
}

async fn engine(root: &Path) -> Engine {
    let personas = [
        ("sliding", persona("sliding")),
        ("stable", persona("stable")),
    ];
    engine_with(root, &personas, &thread_of_60()).await
}

/// An engine on a new SQLite file under `root` with `personas` (name, TOML) and the
/// threads of `fixture`.
async fn engine_with(root: &Path, personas: &[(&str, String)], fixture: &str) -> Engine {
    std::fs::create_dir_all(root.join("personas")).unwrap();
    for (name, toml) in personas {
        std::fs::write(root.join(format!("personas/{name}.toml")), toml).unwrap();
    }
    let url = format!("sqlite://{}", root.join("cache.db").display());
    let engine = Engine::builder()
        .root(root)
        .database(url)
        .build()
        .await
        .unwrap();
    let db = engine.db().await.unwrap();
    protege::db::import_fixture_str(db, fixture).await.unwrap();
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

/// A persona whose chain renders per-request system text after `ThreadHistory` (as the
/// shipped support persona does), or, with `late = false`, the same text before it: the
/// body the old placement gave, when every system message joined the top-level `system`.
fn persona_with_closing_line(late: bool) -> String {
    let policy = "Refunds are possible within 30 days of delivery. Orders ship from Lyon within two business days; the carrier's tracking number is in the order record. Never promise a date the carrier has not given. ".repeat(30);
    let closing = r#"
[[message_resolvers]]
use = "LoadText"
template = "Reply to {{ message.from }} about {{ message.subject }} (message {{ message.message_id }})."
"#;
    let history = r#"
[[message_resolvers]]
use = "ThreadHistory"
"#;
    let (middle, end) = if late {
        (history, closing)
    } else {
        (closing, history)
    };
    let head = persona_head(&format!("\\n\\n{policy}"));
    format!("{head}{middle}{end}")
}

/// §8's placement measured with the simulated cache: in a thread of five customer mails
/// (and four replies), a system line naming the current message after `ThreadHistory`
/// leaves the history's prefix cached, where the top-level `system` holding it missed it.
/// The first request has no turn before the line, so it is still system text there, and
/// the second request shares nothing with it; from the third on, all but the previous
/// request's own line is.
#[tokio::test]
async fn a_closing_system_line_after_the_history_keeps_the_prefix_cached() {
    let dir = tempfile::tempdir().unwrap();
    let personas = [
        ("late", persona_with_closing_line(true)),
        ("early", persona_with_closing_line(false)),
    ];
    let engine = engine_with(dir.path(), &personas, &thread_of(9)).await;
    let share = |report: &CacheReport| {
        let rows = &report.rows[2..];
        let cached: usize = rows.iter().map(|r| r.cached_tokens).sum();
        let input: usize = rows.iter().map(|r| r.input_tokens).sum();
        cached as f64 / input as f64
    };
    for format in [Format::Anthropic, Format::OpenaiResponses, Format::Openai] {
        let late = engine.cache_report("late", 1, format).await.unwrap();
        let early = engine.cache_report("early", 1, format).await.unwrap();
        assert_eq!((late.rows.len(), early.rows.len()), (5, 5));
        println!(
            "{format:?}: from the third request on, {:.1}% of input tokens cached with the line after the history, {:.1}% with it in the top-level system text",
            share(&late) * 100.0,
            share(&early) * 100.0
        );
        if format != Format::Openai {
            // Everything the previous request sent but its closing line (a block of about
            // 30 tokens) is served from cache. Chat Completions keeps the line where it
            // stands, a `system` message before the customer's turn, so there the
            // previous request's last turn is not shared.
            for k in 2..5 {
                assert!(
                    late.rows[k].cached_tokens + 50 >= late.rows[k - 1].input_tokens,
                    "{format:?}: {late}"
                );
            }
            assert!(share(&late) >= 0.85, "{format:?}: {late}");
        }
        assert!(share(&late) > share(&early), "{format:?}: {late}\n{early}");
        if format == Format::Anthropic {
            assert!(share(&early) < 0.3, "{early}");
        }
    }
}

/// The thread's input cost with each `cache_ttl` (each request at its message's send time),
/// rounded to the hundredth of a cent: `auto`, `5m`, `1h`, without caching.
fn costs(report: &CacheReport) -> [f64; 4] {
    let round = |c: f64| (c * 1e4).round() / 1e4;
    [
        round(report.cost(CacheTtl::Auto).unwrap()),
        round(report.cost(CacheTtl::FiveMinutes).unwrap()),
        round(report.cost(CacheTtl::OneHour).unwrap()),
        round(report.uncached_cost().unwrap()),
    ]
}

/// Customers who answer within the hour (every 20 minutes): once two gaps have shown it,
/// `auto` keeps the prefix an hour and reads it where five minutes write it again, so it
/// costs about half of `5m` (and more than `1h`, which did not wait for the evidence).
/// Customers who answer two days later: every prefix has expired by the next request, and
/// `auto` stays on five minutes, a third cheaper than `1h`; caching then costs more than
/// not caching at all.
#[tokio::test]
async fn cache_ttl_costs_follow_the_thread_s_gaps() {
    let policy = "Refunds are possible within 30 days of delivery. Orders ship from Lyon within two business days. ".repeat(60);
    let head = persona_head(&format!("\\n\\n{policy}"));
    let persona = format!(
        "{head}\n[[message_resolvers]]\nuse = \"ThreadHistory\"\nlimit = 20\nwindow = \"stable\"\n"
    );
    for (minutes, expected) in [
        (10, [0.0342, 0.0661, 0.0215, 0.0528]),
        (24 * 60, [0.0661, 0.0661, 0.1057, 0.0529]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine_with(
            dir.path(),
            &[("policy", persona.clone())],
            &thread_spaced(16, minutes),
        )
        .await;
        let report = engine
            .cache_report("policy", 1, Format::Anthropic)
            .await
            .unwrap();
        assert_eq!(
            costs(&report),
            expected,
            "{minutes} minutes apart: {report}"
        );
    }
}

/// `cache_ttl = "auto"` in a reply run's body: in a thread answered every 20 minutes the
/// third reply's system and history breakpoints last an hour, its final one five minutes;
/// the first reply's all last five minutes (`{"type":"ephemeral"}`). A run started there
/// keeps the choice for its next rounds. With `PROTEGE_WIRE_OUT=DIR` the bodies are
/// written to `DIR/cache-ttl-*.anthropic.json` for the wirecheck pass.
#[tokio::test]
async fn cache_ttl_auto_marks_the_prefix_for_an_hour_in_a_quick_thread() {
    let head = persona_head("").replace(
        "name = \"claude-sonnet-4-5\"\n",
        "name = \"claude-sonnet-4-5\"\ncache_ttl = \"auto\"\n",
    );
    let persona = format!("{head}\n[[message_resolvers]]\nuse = \"ThreadHistory\"\n");
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), &[("quick", persona)], &thread_spaced(7, 10)).await;
    let controls = |body: &serde_json::Value| -> Vec<String> {
        let text = body.to_string();
        text.match_indices("\"cache_control\":")
            .map(|(i, _)| {
                let rest = &text[i + 16..];
                rest[..rest.find('}').unwrap() + 1].to_owned()
            })
            .collect()
    };
    let mut bodies = Vec::new();
    for (id, at) in [
        ("<m0@example.com>", "2026-03-01T00:00:00Z"),
        ("<m6@example.com>", "2026-03-01T01:00:00Z"),
    ] {
        let input = protege::ResolveInput::reply("quick", id)
            .format(Format::Anthropic)
            .now(at.parse().unwrap());
        bodies.push(engine.resolve(&input).await.unwrap().body);
    }
    assert_eq!(controls(&bodies[0]), [r#"{"type":"ephemeral"}"#; 2]);
    assert_eq!(
        controls(&bodies[1]),
        [
            r#"{"type":"ephemeral","ttl":"1h"}"#,
            r#"{"type":"ephemeral","ttl":"1h"}"#,
            r#"{"type":"ephemeral","ttl":"5m"}"#
        ]
    );
    let input = protege::ResolveInput::reply("quick", "<m6@example.com>")
        .format(Format::Anthropic)
        .now("2026-03-01T01:00:00Z".parse().unwrap());
    let run = engine.start_run(&input).await.unwrap();
    assert_eq!(run.body, bodies[1]);
    if let Ok(out) = std::env::var("PROTEGE_WIRE_OUT") {
        std::fs::create_dir_all(&out).unwrap();
        for (i, body) in bodies.iter().enumerate() {
            let path = std::path::Path::new(&out).join(format!("cache-ttl-{i}.anthropic.json"));
            std::fs::write(path, serde_json::to_string_pretty(body).unwrap()).unwrap();
        }
    }
}

/// `cache_ttl = "auto"` on OpenAI: in the same quick thread the third reply asks for
/// extended retention (`prompt_cache_retention: "24h"`) in both OpenAI formats, the first
/// reply for none; the cache key is sent either way.
#[tokio::test]
async fn cache_ttl_auto_asks_openai_for_extended_retention_in_a_quick_thread() {
    let head = persona_head("").replace(
        "provider = \"anthropic\"\nname = \"claude-sonnet-4-5\"\n",
        "provider = \"openai\"\nname = \"gpt-4.1\"\ncache_ttl = \"auto\"\n",
    );
    let persona = format!("{head}\n[[message_resolvers]]\nuse = \"ThreadHistory\"\n");
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), &[("quick", persona)], &thread_spaced(7, 10)).await;
    for format in [Format::Openai, Format::OpenaiResponses] {
        let mut fields = Vec::new();
        for (id, at) in [
            ("<m0@example.com>", "2026-03-01T00:00:00Z"),
            ("<m6@example.com>", "2026-03-01T01:00:00Z"),
        ] {
            let input = protege::ResolveInput::reply("quick", id)
                .format(format)
                .now(at.parse().unwrap());
            let body = engine.resolve(&input).await.unwrap().body;
            fields.push((
                body["prompt_cache_key"].is_string(),
                body["prompt_cache_retention"].clone(),
            ));
        }
        assert_eq!(
            fields,
            [
                (true, serde_json::Value::Null),
                (true, serde_json::json!("24h"))
            ],
            "{format:?}"
        );
    }
}
