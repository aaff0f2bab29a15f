//! Chains: declaration order, concurrency, first error, templates, LoadText and LoadFile.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use protege_core::{
    AppConfig, Attachment, Chain, Context, Direction, DynChain, Email, Error, LoadFile, LoadText,
    MailMessage, Message, PersonaInfo, Resolver, Responsibility, Result, Role, StaticChain,
    Trigger, message,
};

fn persona() -> PersonaInfo {
    let mut p = PersonaInfo::new("support");
    p.instructions = "You are Acme's support agent.".into();
    p.vars.insert("company".into(), "Acme".into());
    p.vars.insert("team".into(), "Support Team!".into());
    p
}

fn inbound() -> MailMessage {
    MailMessage {
        id: 7,
        thread_id: 3,
        email: Email {
            message_id: "<m1@example.com>".into(),
            direction: Direction::Inbound,
            from: "Alice <alice@example.com>".into(),
            to: vec![
                "Support <support@acme.test>".into(),
                "sales@acme.test".into(),
            ],
            cc: vec![],
            subject: "Refund".into(),
            sent_at: Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap(),
            text_body: Some("  Hi, I want a refund.\n".into()),
            html_body: None,
            html_text: None,
            in_reply_to: None,
            attachments: vec![Attachment {
                attachment_id: "att-1".into(),
                filename: "invoice.pdf".into(),
                content_type: "application/pdf".into(),
                byte_size: 48213,
                data: None,
            }],
            reply_headers: Default::default(),
        },
    }
}

fn reply_ctx(root: &std::path::Path) -> Context {
    Context::builder(
        persona(),
        AppConfig::new(root),
        Trigger::Message(Arc::new(inbound())),
    )
    .now(Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap())
    .build()
}

fn scheduled_ctx(root: &std::path::Path) -> Context {
    Context::builder(
        persona(),
        AppConfig::new(root),
        Trigger::Responsibility(Responsibility {
            name: "daily-digest".into(),
            schedule: "0 8 * * *".into(),
            instructions: "Summarise.".into(),
            ..Responsibility::default()
        }),
    )
    .now(Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap())
    .correlation_id("run-42")
    .build()
}

fn json(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap()
}

/// Sleeps for a while, then contributes its label; counts how many run at once.
struct Slow {
    label: &'static str,
    delay_ms: u64,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
}

impl Resolver for Slow {
    type Output = Message;
    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(message(Role::System, self.label))
    }
}

struct Fails(&'static str);

impl Resolver for Fails {
    type Output = ();
    async fn resolve(&self, _ctx: &Context) -> Result<()> {
        Err(Error::custom(self.0))
    }
}

struct Many;

impl Resolver for Many {
    type Output = Vec<Message>;
    async fn resolve(&self, _ctx: &Context) -> Result<Vec<Message>> {
        Ok(vec![
            message(Role::User, "one"),
            message(Role::Assistant, "two"),
        ])
    }
}

#[tokio::test]
async fn output_in_declaration_order_while_running_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let slow = |label, delay_ms| Slow {
        label,
        delay_ms,
        running: running.clone(),
        peak: peak.clone(),
    };
    let chain = StaticChain::new((slow("first", 60), Many, slow("last", 5)));
    let out = chain.resolve(&reply_ctx(dir.path())).await.unwrap();
    assert_eq!(
        json(&out),
        r#"[{"role":"system","content":"first"},{"role":"user","content":"one"},{"role":"assistant","content":"two"},{"role":"system","content":"last"}]"#
    );
    assert_eq!(peak.load(Ordering::SeqCst), 2);

    peak.store(0, Ordering::SeqCst);
    let dynamic = DynChain::new()
        .with(slow("first", 60))
        .with(Many)
        .with(slow("last", 5));
    assert_eq!(format!("{dynamic:?}"), r#"["Slow", "Many", "Slow"]"#);
    let out2 = dynamic.resolve(&reply_ctx(dir.path())).await.unwrap();
    assert_eq!(json(&out2), json(&out));
    assert_eq!(peak.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn first_error_in_declaration_order_names_resolver_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let chain = StaticChain::new((Many, Fails("boom"), Fails("later")));
    let err = chain.resolve(&reply_ctx(dir.path())).await.unwrap_err();
    assert_eq!(err.to_string(), "resolver 2 `Fails` failed: boom");
    assert_eq!(err.resolver_cause().unwrap().to_string(), "boom");
    let dynamic = DynChain::new()
        .with(Many)
        .with(Fails("boom"))
        .with(Fails("later"));
    let err = dynamic.resolve(&reply_ctx(dir.path())).await.unwrap_err();
    assert_eq!(err.to_string(), "resolver 2 `Fails` failed: boom");
    assert_eq!(format!("{chain:?}"), r#"["Many", "Fails", "Fails"]"#);
}

#[tokio::test]
async fn load_text_renders_trims_and_skips_blank() {
    let dir = tempfile::tempdir().unwrap();
    let chain = DynChain::new()
        .with(LoadText::template(
            "  You are {{ persona.name }} at {{ persona.vars.company }} ({{ persona.vars.team | slugify }}).\n",
        ))
        .with(LoadText::template("{% if message %}{{ message.from }} / {{ message.from_display }} / {{ message.to | join(', ') }} / {{ message.sent_at }} / {{ message.body }}{% endif %}").role(Role::User))
        .with(LoadText::template("{% if responsibility %}never{% endif %}   "))
        .with(LoadText::from_fn(|ctx| Ok(format!("now={}", ctx.now()))).role(Role::Assistant));
    let out = chain.resolve(&reply_ctx(dir.path())).await.unwrap();
    assert_eq!(
        json(&out),
        r#"[{"role":"system","content":"You are support at Acme (support-team)."},{"role":"user","content":"alice@example.com / Alice <alice@example.com> / support@acme.test, sales@acme.test / 2026-01-05T10:00:00Z / Hi, I want a refund."},{"role":"assistant","content":"now=2026-07-01 12:00:00 UTC"}]"#
    );
}

#[tokio::test]
async fn scheduled_runs_see_responsibility_correlation_id_and_now() {
    let dir = tempfile::tempdir().unwrap();
    let chain = DynChain::new().with(LoadText::template(
        "{{ responsibility.name }} {{ responsibility.schedule }} {{ responsibility.instructions }} {{ correlation_id }} {{ now }}{% if message %} message{% endif %}",
    ));
    let out = chain.resolve(&scheduled_ctx(dir.path())).await.unwrap();
    assert_eq!(
        json(&out),
        r#"[{"role":"system","content":"daily-digest 0 8 * * * Summarise. run-42 2026-07-01T12:00:00Z"}]"#
    );
}

#[tokio::test]
async fn undefined_values_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "Hello {{ persona.vars.missing }}",
            "resolver 1 `LoadText` failed: template `LoadText` line 1: `persona.vars.missing` is undefined",
        ),
        (
            "line one\n{{ message.subject }}",
            "resolver 1 `LoadText` failed: template `LoadText` line 2: `message` is undefined",
        ),
        (
            "{% for x in nothing %}{{ x }}{% endfor %}",
            "resolver 1 `LoadText` failed: template `LoadText` line 1: `nothing` is undefined",
        ),
        (
            "{{ correlation_id }}",
            "resolver 1 `LoadText` failed: template `LoadText` line 1: `correlation_id` is undefined",
        ),
    ];
    let ctx = Context::builder(
        persona(),
        AppConfig::new(dir.path()),
        Trigger::Responsibility(Responsibility {
            name: "r".into(),
            schedule: "0 8 * * *".into(),
            instructions: "x".into(),
            ..Responsibility::default()
        }),
    )
    .build();
    for (template, expected) in cases {
        let chain = DynChain::new().with(LoadText::template(template));
        let err = chain.resolve(&ctx).await.unwrap_err();
        assert_eq!(err.to_string(), expected, "template {template:?}");
    }
}

#[test]
fn template_syntax_errors_name_template_and_line() {
    let err = LoadText::try_template("fine\n{{ persona.name ").unwrap_err();
    assert_eq!(
        err.to_string(),
        "template `LoadText` line 2: syntax error: unexpected end of input, expected end of variable block"
    );
    assert_eq!(err.template_line(), Some(2));
}

#[tokio::test]
async fn load_file_reads_verbatim_and_skips_blank_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(
        dir.path().join("prompts/agent.md"),
        "# Agent\r\n\n  indented\tand tabs\n\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("prompts/blank.md"), " \n\t\n").unwrap();
    std::fs::write(dir.path().join("prompts/support-team.md"), "team\n").unwrap();
    let chain = StaticChain::new((
        LoadFile::new("prompts/agent.md"),
        LoadFile::new("prompts/blank.md"),
        LoadFile::new("prompts/{{ persona.vars.team | slugify }}.md").role(Role::User),
        LoadFile::new("./prompts/../prompts/{{ persona.name }}-team.md"),
    ));
    let out = chain.resolve(&reply_ctx(dir.path())).await.unwrap();
    assert_eq!(
        json(&out),
        r#"[{"role":"system","content":"\# Agent\r\n\n  indented\tand tabs\n\n"},{"role":"user","content":"team\n"},{"role":"system","content":"team\n"}]"#
            .replace("\\#", "#")
    );
}

#[tokio::test]
async fn load_file_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("app");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(dir.path().join("outside.md"), "secret").unwrap();
    let ctx = reply_ctx(&root);
    let run = |r: LoadFile| {
        let ctx = ctx.clone();
        async move {
            DynChain::new()
                .with(r)
                .resolve(&ctx)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    assert_eq!(
        run(LoadFile::new("prompts/missing.md")).await,
        format!(
            "resolver 1 `LoadFile` failed: file not found: `prompts/missing.md` (tried `{}`)",
            root.join("prompts/missing.md").display()
        )
    );
    assert_eq!(
        run(LoadFile::new("../{{ persona.name }}.md")).await,
        format!(
            "resolver 1 `LoadFile` failed: path outside root: `../support.md` (rendered from `../{{{{ persona.name }}}}.md`) leaves the app root `{}`",
            root.display()
        )
    );
    assert_eq!(
        run(LoadFile::new("{{ '/etc' }}/passwd")).await,
        format!(
            "resolver 1 `LoadFile` failed: path outside root: `/etc/passwd` (rendered from `{{{{ '/etc' }}}}/passwd`) leaves the app root `{}`",
            root.display()
        )
    );
    // A literal path written by the persona's author is trusted, relative or absolute.
    let trusted = DynChain::new()
        .with(LoadFile::new("../outside.md"))
        .with(LoadFile::new(
            dir.path().join("outside.md").to_str().unwrap(),
        ));
    let out = trusted.resolve(&ctx).await.unwrap();
    assert_eq!(
        json(&out),
        r#"[{"role":"system","content":"secret"},{"role":"system","content":"secret"}]"#
    );
}

#[test]
fn to_llm_text_is_exact() {
    let mut m = inbound();
    assert_eq!(
        m.to_llm_text(),
        "From: Alice <alice@example.com>\nTo: Support <support@acme.test>, sales@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Refund\n\nHi, I want a refund.\n\nAttachments:\n- invoice.pdf (application/pdf, 48213 bytes, id: att-1)"
    );
    m.attachments.clear();
    m.text_body = Some("   ".into());
    m.html_body = Some("<html><head><style>p{}</style><script>x()</script></head><body><p>Hello <b>team</b> &amp; thanks,</p><p>Line one<br>Line two</p><ul><li>first</li><li>second</li></ul></body></html>".into());
    m.cc = vec!["bob@example.com".into()];
    assert_eq!(
        m.to_llm_text(),
        "From: Alice <alice@example.com>\nTo: Support <support@acme.test>, sales@acme.test\nCc: bob@example.com\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Refund\n\nHello team & thanks,\n\nLine one\nLine two\n* first\n* second"
    );
    m.html_body = None;
    m.to.clear();
    assert_eq!(
        m.to_llm_text(),
        "From: Alice <alice@example.com>\nTo:\nCc: bob@example.com\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Refund"
    );
}

/// `message_text_bytes` cuts the trailing user turn and the `message.body` variable: the
/// persona's `[limits]` value over the application's.
#[tokio::test]
async fn message_text_bytes_cuts_the_user_turn_and_message_body() {
    let mut m = inbound();
    m.attachments.clear();
    m.text_body = Some(format!("Hi, {}", "ab".repeat(100_000)));
    let chain = StaticChain::new((LoadText::template("body: {{ message.body }}"),));
    let run = |persona: PersonaInfo, config: AppConfig| {
        let ctx = Context::builder(persona, config, Trigger::Message(Arc::new(m.clone())))
            .now(Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap())
            .build();
        let chain = &chain;
        async move { serde_json::to_value(chain.request(&ctx).await.unwrap()).unwrap() }
    };
    // 139 bytes before the body, which is 200,004 bytes long.
    let header = "From: Alice <alice@example.com>\nTo: Support <support@acme.test>, sales@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Refund\n\n";
    assert_eq!(header.len(), 139);

    let out = run(persona(), AppConfig::new(".").message_text_bytes(150)).await;
    assert_eq!(
        out["messages"],
        serde_json::json!([
            {"role": "system", "content": format!("body: Hi, {}\n[truncated: 199854 more bytes]", "ab".repeat(73))},
            {"role": "user", "content": format!("{header}Hi, abababa\n[truncated: 199993 more bytes]")},
        ])
    );

    let mut limited = persona();
    limited.limits.message_text_bytes = Some(160);
    let out = run(limited, AppConfig::new(".").message_text_bytes(150)).await;
    assert_eq!(
        out["messages"][1]["content"],
        format!("{header}Hi, ababababababababa\n[truncated: 199983 more bytes]")
    );
    // The default, 256 KiB, keeps this message whole.
    let out = run(persona(), AppConfig::new(".")).await;
    assert_eq!(
        out["messages"][1]["content"],
        format!("{header}Hi, {}", "ab".repeat(100_000))
    );
}
