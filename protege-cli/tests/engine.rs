//! The front door: `Engine::resolve` gives exactly what `protege resolve` prints, for every
//! format, and reports each kind of mistake with its kind.

use chrono::{DateTime, Utc};
use protege::{Engine, EngineErrorKind, ErrorKind, Format, ResolveInput, Tokenizer};

mod common;
use common::{project, protege_command, snapshot};

const NOW: &str = "2026-03-10T08:00:00Z";

fn now() -> DateTime<Utc> {
    NOW.parse().unwrap()
}

/// A SQLite database holding the demo data (made by `protege demo`).
fn demo_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("demo.db").display());
    let out = protege_command()
        .arg("--root")
        .arg(project())
        .arg("--database")
        .arg(&url)
        .arg("demo")
        .env_remove("PROTEGE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, url)
}

async fn engine(url: &str) -> Engine {
    Engine::builder()
        .root(project())
        .database(url)
        .fence_key(common::FENCE_KEY)
        .build()
        .await
        .unwrap()
}

fn expected(name: &str) -> serde_json::Value {
    let text = snapshot::expected_output(&project().join("tests/expected"), name);
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn resolve_gives_what_the_command_line_prints() {
    let (_dir, url) = demo_db();
    let engine = engine(&url).await;
    for (format, file) in [
        (Format::Messages, "support-refund.messages.json"),
        (Format::Openai, "support-refund.openai.json"),
        (Format::Anthropic, "support-refund.anthropic.json"),
        // The support persona's `[model] provider` is anthropic.
        (Format::Provider, "support-refund.anthropic.json"),
    ] {
        let out = engine
            .resolve(
                &ResolveInput::reply("support", "<refund-3@example.com>")
                    .format(format)
                    .now(now()),
            )
            .await
            .unwrap();
        assert_eq!(out.body, expected(file), "{format:?}");
        assert_eq!(
            serde_json::to_value(&out.request).unwrap(),
            expected("support-refund.messages.json")
        );
    }
    let out = engine
        .resolve(
            &ResolveInput::scheduled("digest", "daily-digest")
                .format(Format::Openai)
                .now(now()),
        )
        .await
        .unwrap();
    assert_eq!(out.body, expected("digest-daily.openai.json"));
}

#[tokio::test]
async fn steps_are_the_explain_rows() {
    let (_dir, url) = demo_db();
    let engine = engine(&url).await;
    let out = engine
        .resolve(&ResolveInput::reply("support", "<refund-3@example.com>").now(now()))
        .await
        .unwrap();
    let rows: Vec<(usize, &str, usize)> = out
        .steps
        .iter()
        .map(|s| (s.position, s.name.as_str(), s.messages))
        .collect();
    assert_eq!(
        rows,
        [
            (1, "LoadText", 1),
            (2, "LoadFile", 1),
            (3, "LoadFile", 1),
            (4, "LoadRecord", 1),
            (5, "ThreadHistory", 6),
            (6, "LoadText", 1),
            (0, "(trailing user turn)", 1),
        ]
    );
    let messages: usize = out.steps.iter().map(|s| s.messages).sum();
    assert_eq!(messages, out.request.messages.len());
    let chars: usize = out.steps.iter().map(|s| s.chars).sum();
    assert_eq!(
        chars,
        out.request
            .messages
            .iter()
            .map(message_chars)
            .sum::<usize>()
    );
}

#[tokio::test]
async fn tokens_are_counted_with_the_models_tokenizer_when_asked() {
    let (_dir, url) = demo_db();
    let engine = engine(&url).await;
    let input = ResolveInput::scheduled("digest", "daily-digest").now(now());
    let plain = engine.resolve(&input).await.unwrap();
    // Nothing asked for tokens: nothing is counted.
    assert_eq!(plain.tokenizer, Tokenizer::O200kBase);
    assert!(plain.steps.iter().all(|s| s.tokens.is_none()));
    let cases = [
        (input.clone(), Tokenizer::O200kBase, [28, 44, 57, 64]),
        (
            input.clone().model("gpt-4"),
            Tokenizer::Cl100kBase,
            [28, 44, 60, 64],
        ),
        (
            input.model("claude-haiku-4-5"),
            Tokenizer::Estimate,
            [31, 43, 45, 49],
        ),
    ];
    for (input, tokenizer, want) in cases {
        let out = engine.resolve(&input.explain(true)).await.unwrap();
        assert_eq!(out.tokenizer, tokenizer);
        let tokens: Vec<Option<usize>> = out.steps.iter().map(|s| s.tokens).collect();
        assert_eq!(tokens, want.map(Some), "{tokenizer:?}");
        let total: usize = out
            .request
            .messages
            .iter()
            .map(|m| tokenizer.count_message(m))
            .sum();
        assert_eq!(total, want.iter().sum::<usize>());
    }
}

#[tokio::test]
async fn mistakes_have_their_kind_and_sentence() {
    let (_dir, url) = demo_db();
    let engine = engine(&url).await;
    let cases: Vec<(ResolveInput, EngineErrorKind, &str)> = vec![
        (
            ResolveInput::reply("nobody", "<refund-3@example.com>"),
            EngineErrorKind::NotFound,
            "unknown persona `nobody`; known personas: `billing`, `digest`, `support`",
        ),
        (
            ResolveInput::reply("support", "<nope@example.com>"),
            EngineErrorKind::NotFound,
            "unknown message `<nope@example.com>`: no message with this Message-ID in the database",
        ),
        // A Message-ID without its angle brackets, or one with brackets stored without
        // them: the stored form as a hint.
        (
            ResolveInput::reply("support", "refund-3@example.com"),
            EngineErrorKind::NotFound,
            "unknown message `refund-3@example.com`: no message with this Message-ID in the \
             database; did you mean `<refund-3@example.com>`?",
        ),
        (
            ResolveInput::reply("support", "nope@example.com"),
            EngineErrorKind::NotFound,
            "unknown message `nope@example.com`: no message with this Message-ID in the database",
        ),
        (
            ResolveInput::reply("support", "<>"),
            EngineErrorKind::NotFound,
            "unknown message `<>`: no message with this Message-ID in the database",
        ),
        (
            ResolveInput::scheduled("support", "weekly"),
            EngineErrorKind::NotFound,
            "unknown responsibility `weekly`: persona `support` has no responsibilities",
        ),
        (
            ResolveInput {
                responsibility: Some("daily-digest".into()),
                ..ResolveInput::reply("digest", "<refund-3@example.com>")
            },
            EngineErrorKind::BadRequest,
            "give exactly one of `message_id` (a reply run) and `responsibility` (a scheduled run)",
        ),
        (
            ResolveInput::reply("support", "<refund-3@example.com>").model(""),
            EngineErrorKind::BadRequest,
            "the model name is empty; pass a model such as `gpt-4o` or leave it out",
        ),
        (
            ResolveInput::reply("support", "<refund-2@acme.test>"),
            EngineErrorKind::InvalidInput,
            "message `<refund-2@acme.test>` was sent by the persona; a reply run answers an inbound message",
        ),
    ];
    for (input, kind, message) in cases {
        let err = engine.resolve(&input).await.unwrap_err();
        assert_eq!(
            (err.kind(), err.to_string().as_str()),
            (kind, message),
            "{input:?}"
        );
    }
}

#[tokio::test]
async fn provider_format_needs_a_provider() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/plain.toml"),
        "[model]\nname = \"gpt-4o\"\n\n[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\ninstructions = \"Go.\"\n\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{{ responsibility.instructions }}\"\n",
    )
    .unwrap();
    let engine = Engine::builder()
        .root(root.path())
        .database("sqlite::memory:")
        .build()
        .await
        .unwrap();
    let err = engine
        .resolve(&ResolveInput::scheduled("plain", "r").format(Format::Provider))
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string().as_str()),
        (
            EngineErrorKind::InvalidInput,
            "persona `plain` names no provider: set `provider` in its `[model]` table or ask for `openai`, `openai-responses` or `anthropic`"
        )
    );
    let out = engine
        .resolve(&ResolveInput::scheduled("plain", "r").format(Format::Openai))
        .await
        .unwrap();
    assert_eq!(
        out.body,
        serde_json::json!({
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Go."}],
            "prompt_cache_key": "9d5e48c21ed4754b",
        })
    );
}

#[tokio::test]
async fn a_watching_engine_picks_up_an_edit() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    let file = root.path().join("personas/p.toml");
    let persona = |text: &str| {
        format!(
            "[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\ninstructions = \"\"\n\n[[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"{text}\"\n"
        )
    };
    std::fs::write(&file, persona("before")).unwrap();
    let engine = Engine::builder()
        .root(root.path())
        .database("sqlite::memory:")
        .watch(true)
        .build()
        .await
        .unwrap();
    let mut events = engine.events().expect("a watching engine has events");
    let text = |out: protege::Resolution| out.request.messages[0].content.text();
    let input = ResolveInput::scheduled("p", "r");
    assert_eq!(text(engine.resolve(&input).await.unwrap()), "before");
    std::fs::write(&file, persona("after")).unwrap();
    let reloaded = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            match events.recv().await.unwrap() {
                protege::config::Event::Reloaded { persona, .. } => break persona,
                _ => continue,
            }
        }
    })
    .await
    .expect("no reload event within 30 s");
    assert_eq!(reloaded, "p");
    assert_eq!(text(engine.resolve(&input).await.unwrap()), "after");
}

/// The problems of invalid persona files are an error for `?` in an `anyhow` function, and
/// `anyhow` prints each of them once, one per line.
#[tokio::test]
async fn the_engines_diagnostics_work_with_anyhow() {
    async fn load(root: &std::path::Path) -> anyhow::Result<Engine> {
        let engine = Engine::builder()
            .root(root)
            .database("sqlite::memory:")
            .build()
            .await?;
        if !engine.diagnostics().is_empty() {
            return Err(engine.diagnostics().clone().into());
        }
        Ok(engine)
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/a.toml"),
        "[[message_resolvers]]\nuse = \"LoadTxt\"\n",
    )
    .unwrap();
    std::fs::write(root.path().join("personas/b.toml"), "name = 1\n").unwrap();
    let err = load(root.path()).await.unwrap_err();
    let a = root.path().join("personas/a.toml");
    let b = root.path().join("personas/b.toml");
    assert_eq!(
        format!("{err:#}"),
        format!(
            "{}:2:7: error: unknown resolver `LoadTxt`, did you mean `LoadText`?\n\
             {}:1:8: error: `name` must be a string, found an integer",
            a.display(),
            b.display()
        )
    );
    std::fs::remove_file(&a).unwrap();
    std::fs::remove_file(&b).unwrap();
    assert!(load(root.path()).await.unwrap().personas().is_empty());
}

#[tokio::test]
async fn a_run_time_template_error_names_the_persona_its_file_and_the_resolver() {
    let (_dir, url) = demo_db();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(
        root.path().join("personas/lookup.toml"),
        "[[responsibilities]]\nname = \"r\"\nschedule = \"0 8 * * *\"\n\n\
         [[responsibility_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Customers:\"\n\n\
         [[responsibility_resolvers]]\nuse = \"LoadRecord\"\ntable = \"customers\"\n\
         template = \"{{ record.name }}\\n{{ record.nickname }}\"\n",
    )
    .unwrap();
    let engine = Engine::builder()
        .root(root.path())
        .database(&url)
        .build()
        .await
        .unwrap();
    let err = engine
        .resolve(&ResolveInput::scheduled("lookup", "r"))
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string().as_str()),
        (
            EngineErrorKind::InvalidInput,
            "persona `lookup` (`personas/lookup.toml`): resolver 2 `LoadRecord` failed: \
             template `LoadRecord.template` line 2: `record.nickname` is undefined"
        )
    );
    // The engine's own error is there for a caller that needs the finer kind.
    let core = err.core_error().expect("the engine error behind it");
    let failed = core.resolver_cause().expect("the resolver's error");
    assert_eq!(
        (core.kind(), failed.kind(), failed.template_line()),
        (ErrorKind::Resolver, ErrorKind::Template, Some(2))
    );
    assert!(err.config_error().is_none());
    // Printed as a chain, the sentence appears once.
    assert_eq!(
        format!("{:#}", anyhow::Error::new(err.clone())),
        err.to_string()
    );
}

#[tokio::test]
async fn store_summary_is_the_library_call_behind_db_summary() {
    let (_dir, url) = demo_db();
    let engine = engine(&url).await;
    let stored = engine
        .store_summary("<track-2@acme.test>", "Parcel with the carrier.")
        .await
        .unwrap();
    assert_eq!(
        (
            stored.id,
            stored.thread_id,
            stored.through_message_id.as_str()
        ),
        (1, 2, "<track-2@acme.test>")
    );
    let err = engine.store_summary("<nope@x>", "text").await.unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string().as_str()),
        (
            EngineErrorKind::NotFound,
            "unknown message `<nope@x>`: no message with this Message-ID in the database"
        )
    );
    let err = engine
        .store_summary("track-2@acme.test", "text")
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string().as_str()),
        (
            EngineErrorKind::NotFound,
            "unknown message `track-2@acme.test`: no message with this Message-ID in the \
             database; did you mean `<track-2@acme.test>`?"
        )
    );
    let huge = "x".repeat(protege::SUMMARY_MAX_BYTES + 1);
    let err = engine
        .store_summary("<track-2@acme.test>", &huge)
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string().as_str()),
        (
            EngineErrorKind::InvalidInput,
            "the summary through `<track-2@acme.test>` is 1048577 bytes, over the limit of 1048576"
        )
    );
}

/// The characters (Unicode scalar values) of a message's text, each attachment part
/// counted by the length of its base64 data.
fn message_chars(m: &protege::Message) -> usize {
    match &m.content {
        protege::Content::Text(text) => text.chars().count(),
        protege::Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                protege::Part::Text { text } => text.chars().count(),
                protege::Part::Image { data, .. } | protege::Part::Document { data, .. } => {
                    data.len()
                }
            })
            .sum(),
    }
}

#[tokio::test]
async fn new_message_ids_are_unpredictable_and_in_the_personas_domain() {
    let (_dir, url) = demo_db();
    let engine = engine(&url).await;
    let support = engine.persona("support").unwrap();
    let ids: std::collections::HashSet<String> = (0..10_000)
        .map(|_| Engine::new_message_id(&support))
        .collect();
    assert_eq!(ids.len(), 10_000);
    for id in ids.iter().take(100) {
        let digits = id
            .strip_prefix('<')
            .and_then(|id| id.strip_suffix("@acme.test>"))
            .unwrap_or_else(|| panic!("{id}"));
        assert_eq!(digits.len(), 32, "{id}");
        assert!(
            digits
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{id}"
        );
    }
    // Each of the 128 bits varies: no fixed part an attacker could rely on.
    let bits = ids
        .iter()
        .map(|id| u128::from_str_radix(&id[1..33], 16).unwrap())
        .fold((0u128, u128::MAX), |(any, all), n| (any | n, all & n));
    assert_eq!(bits, (u128::MAX, 0));
}

/// An engine printed with `{:?}` (a log line, a panic message) shows its database URLs
/// without their passwords and never the fence key, connected or not.
#[tokio::test]
async fn debug_output_holds_no_password_and_no_fence_key() {
    let (_dir, sqlite) = demo_db();
    // A password added to the test server's URL (one without a password: a server that
    // trusts the connection ignores it).
    let postgres = std::env::var("PROTEGE_TEST_POSTGRES_URL")
        .ok()
        .and_then(|url| {
            let (user, host) = url.strip_prefix("postgres://")?.split_once('@')?;
            (!user.contains(':')).then(|| {
                (
                    format!("postgres://{user}:hunter22@{host}"),
                    format!("{user}:***@"),
                )
            })
        });
    let primary = postgres
        .as_ref()
        .map_or(sqlite.clone(), |(url, _)| url.clone());
    let builder = Engine::builder()
        .root(project())
        .database(&primary)
        .read_database("postgres://reader:hunter22@127.0.0.1:1/replica")
        .fence_key("the-fence-key-itself");
    let printed = format!("{builder:?}");
    assert!(
        printed.contains("reader:***@127.0.0.1:1/replica"),
        "{printed}"
    );
    let engine = builder.build().await.unwrap();
    // Connected, with the fence key read: a fenced resolve uses both.
    engine.ping().await.unwrap();
    for printed in [format!("{engine:?}"), format!("{engine:#?}")] {
        assert!(!printed.contains("hunter22"), "{printed}");
        assert!(!printed.contains("the-fence-key-itself"), "{printed}");
        if let Some((_, shown)) = &postgres {
            assert!(printed.contains(shown.as_str()), "{printed}");
        }
    }
}
