//! Behaviour of chains built by `resolvers!`: the same request JSON as the same chain
//! built by hand at run time, declaration order under concurrency, and the first error
//! in declaration order.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use protege::{AppConfig, Direction, Responsibility};
use protege::{
    Chain, Context, DynChain, Error, LoadFile, LoadText, MailMessage, Message, PersonaInfo,
    Resolver, Result, Role, ToolDef, Trigger, build_request, message, user_turn,
};
use tokio::sync::Barrier;

/// A resolver of the user's, used as a value: signs with the persona's name.
struct Signature;

impl Resolver for Signature {
    type Output = Message;

    async fn resolve(&self, ctx: &Context) -> Result<Message> {
        Ok(message(
            Role::System,
            format!("Sign as {} support.", ctx.persona().name),
        ))
    }
}

/// A resolver of the user's built with `new` and builder options.
struct Repeat {
    text: String,
    times: usize,
    role: Role,
}

impl Repeat {
    fn new(text: &str, times: usize) -> Self {
        Self {
            text: text.to_owned(),
            times,
            role: Role::System,
        }
    }

    fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }
}

impl Resolver for Repeat {
    type Output = Vec<Message>;

    async fn resolve(&self, _ctx: &Context) -> Result<Vec<Message>> {
        Ok((0..self.times)
            .map(|i| message(self.role, format!("{} ({})", self.text, i + 1)))
            .collect())
    }
}

/// Waits until every gate of its barrier is reached, then contributes its text: a chain
/// whose resolvers ran one after the other would never finish.
struct Gate {
    barrier: Arc<Barrier>,
    text: &'static str,
    delay_ms: u64,
}

impl Gate {
    fn new(barrier: &Arc<Barrier>, text: &'static str, delay_ms: u64) -> Self {
        Self {
            barrier: Arc::clone(barrier),
            text,
            delay_ms,
        }
    }
}

impl Resolver for Gate {
    type Output = Message;

    async fn resolve(&self, _ctx: &Context) -> Result<Message> {
        self.barrier.wait().await;
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Ok(message(Role::System, self.text))
    }
}

/// Fails with its text after a delay.
struct Fail {
    text: &'static str,
    delay_ms: u64,
}

impl Fail {
    fn new(text: &'static str, delay_ms: u64) -> Self {
        Self { text, delay_ms }
    }
}

impl Resolver for Fail {
    type Output = ();

    async fn resolve(&self, _ctx: &Context) -> Result<()> {
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Err(Error::custom(self.text))
    }
}

fn inbound() -> MailMessage {
    MailMessage {
        id: 7,
        thread_id: 3,
        message_id: "<m7@example.com>".into(),
        direction: Direction::Inbound,
        from: "Alice <alice@example.com>".into(),
        to: vec!["support@acme.test".into()],
        cc: vec![],
        subject: "Refund for order A-1".into(),
        sent_at: Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap(),
        text_body: Some("Hi, I would like a refund.".into()),
        html_body: None,
        in_reply_to: None,
        attachments: vec![],
    }
}

fn persona() -> PersonaInfo {
    let mut persona = PersonaInfo::new("Support Team");
    persona.instructions = "Be brief.".into();
    persona.vars.insert("company".into(), "Acme".into());
    persona
}

/// An app root holding the prompt files, and a reply-run context over it.
fn setup() -> (tempfile::TempDir, Context) {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("prompts")).unwrap();
    std::fs::write(root.path().join("prompts/agent.md"), "Answer in English.\n").unwrap();
    std::fs::write(
        root.path().join("prompts/support-team.md"),
        "Refunds take 5 days.",
    )
    .unwrap();
    std::fs::write(root.path().join("prompts/blank.md"), " \n\t\n").unwrap();
    let ctx = Context::builder(
        persona(),
        AppConfig::new(root.path()),
        Trigger::Message(Arc::new(inbound())),
    )
    .now(Utc.with_ymd_and_hms(2026, 1, 5, 10, 30, 0).unwrap())
    .correlation_id("run-1")
    .build();
    (root, ctx)
}

fn tools() -> Vec<ToolDef> {
    vec![ToolDef {
        name: "lookup_order".into(),
        description: "Find an order by number".into(),
        input_schema: serde_json::json!({"type": "object", "properties": {"order": {"type": "string"}}}),
    }]
}

async fn request_json(chain: &impl Chain, ctx: &Context) -> String {
    let messages = chain.resolve(ctx).await.unwrap();
    let user = ctx.message().map(user_turn);
    serde_json::to_string(&build_request(user, tools(), messages).unwrap()).unwrap()
}

const EXPECTED: &str = concat!(
    r#"{"messages":["#,
    r#"{"role":"system","content":"You are Support Team at Acme. Be brief."},"#,
    r#"{"role":"system","content":"Answer in English.\n"},"#,
    r#"{"role":"user","content":"Refunds take 5 days."},"#,
    r#"{"role":"assistant","content":"Run run-1 for alice@example.com at 2026-01-05T10:30:00Z"},"#,
    r#"{"role":"system","content":"Sign as Support Team support."},"#,
    r#"{"role":"user","content":"Thanks (1)"},"#,
    r#"{"role":"user","content":"Thanks (2)"},"#,
    r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Refund for order A-1\n\nHi, I would like a refund."}"#,
    r#"],"tools":[{"name":"lookup_order","description":"Find an order by number","input_schema":{"type":"object","properties":{"order":{"type":"string"}}}}]}"#,
);

fn footer(ctx: &Context) -> Result<String> {
    let from = ctx.message().map(|m| protege::bare_address(&m.from));
    Ok(format!(
        "Run {} for {} at {}",
        ctx.correlation_id().unwrap_or("-"),
        from.unwrap_or_default(),
        protege::rfc3339_z(&ctx.now())
    ))
}

#[tokio::test]
async fn macro_chain_and_hand_built_chain_give_the_same_request() {
    let (_root, ctx) = setup();
    let chain = protege::resolvers! {
        use LoadText(template = "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}");
        use LoadFile("prompts/agent.md", role = system);
        use LoadFile(path = "prompts/{{ persona.name | slugify }}.md", role = user);
        use LoadFile("prompts/blank.md");
        use LoadText(footer, role = assistant);
        use LoadText("{% if responsibility %}Scheduled: {{ responsibility.name }}{% endif %}");
        use Signature;
        use Repeat("Thanks", 2, role = user);
    };
    let by_hand = DynChain::new()
        .with(LoadText::template(
            "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}",
        ))
        .with(LoadFile::new("prompts/agent.md").role(Role::System))
        .with(LoadFile::new("prompts/{{ persona.name | slugify }}.md").role(Role::User))
        .with(LoadFile::new("prompts/blank.md"))
        .with(LoadText::from_fn(footer).role(Role::Assistant))
        .with(LoadText::template(
            "{% if responsibility %}Scheduled: {{ responsibility.name }}{% endif %}",
        ))
        .with(Signature)
        .with(Repeat::new("Thanks", 2).role(Role::User));

    let from_macro = request_json(&chain, &ctx).await;
    assert_eq!(from_macro, request_json(&by_hand, &ctx).await);
    assert_eq!(from_macro, EXPECTED);
    assert_eq!(chain.names(), by_hand.names());
    assert_eq!(
        format!("{chain:?}"),
        r#"["LoadText", "LoadFile", "LoadFile", "LoadFile", "LoadText", "LoadText", "Signature", "Repeat"]"#
    );
}

#[tokio::test]
async fn steps_carry_names_positions_and_messages_like_the_hand_built_chain() {
    let (_root, ctx) = setup();
    let chain = protege::resolvers! {
        use LoadFile("prompts/blank.md");
        use Repeat("Hi", 2, role = assistant);
        use Signature;
    };
    let by_hand = DynChain::new()
        .with(LoadFile::new("prompts/blank.md"))
        .with(Repeat::new("Hi", 2).role(Role::Assistant))
        .with(Signature);
    let summary = |steps: Vec<protege::Step<'_>>| {
        steps
            .into_iter()
            .map(|s| {
                let json = serde_json::to_string(&s.messages).unwrap();
                format!("{} {} {}", s.position, s.name, json)
            })
            .collect::<Vec<_>>()
    };
    let expected = [
        "1 LoadFile []",
        r#"2 Repeat [{"role":"assistant","content":"Hi (1)"},{"role":"assistant","content":"Hi (2)"}]"#,
        r#"3 Signature [{"role":"system","content":"Sign as Support Team support."}]"#,
    ];
    assert_eq!(summary(chain.run(&ctx).await.unwrap()), expected);
    assert_eq!(summary(by_hand.run(&ctx).await.unwrap()), expected);
}

#[tokio::test]
async fn resolvers_run_concurrently_and_output_keeps_declaration_order() {
    let (_root, ctx) = setup();
    let barrier = Arc::new(Barrier::new(3));
    // Each gate waits for the other two, so the chain only finishes when all three run at
    // once; the slowest finishes last but comes first.
    let chain = protege::resolvers! {
        use Gate(&barrier, "first", 40);
        use LoadText("second");
        use Gate(&barrier, "third", 0);
        use Gate(&barrier, "fourth", 20);
    };
    let messages = tokio::time::timeout(Duration::from_secs(5), chain.resolve(&ctx))
        .await
        .expect("the resolvers did not run concurrently")
        .unwrap();
    assert_eq!(
        serde_json::to_string(&messages).unwrap(),
        concat!(
            r#"[{"role":"system","content":"first"},{"role":"system","content":"second"},"#,
            r#"{"role":"system","content":"third"},{"role":"system","content":"fourth"}]"#
        )
    );
}

#[tokio::test]
async fn the_first_failure_in_declaration_order_is_the_error() {
    let (_root, ctx) = setup();
    // The third resolver fails first in time; the second one is reported.
    let chain = protege::resolvers! {
        use LoadText("fine");
        use Fail("the slow one broke", 50);
        use Fail("the fast one broke", 0);
    };
    let err = chain.resolve(&ctx).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "resolver 2 `Fail` failed: the slow one broke"
    );
    assert_eq!(
        err.resolver_cause().map(|e| e.to_string()).as_deref(),
        Some("the slow one broke")
    );
}

#[tokio::test]
async fn a_missing_file_names_the_resolver_its_position_and_both_paths() {
    let (root, ctx) = setup();
    let chain = protege::resolvers! {
        use LoadText("You are {{ persona.name }}.");
        use LoadFile("prompts/missing.md", role = user);
    };
    let err = chain.resolve(&ctx).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "resolver 2 `LoadFile` failed: file not found: `prompts/missing.md` (tried `{}`)",
            root.path().join("prompts/missing.md").display()
        )
    );
}

#[tokio::test]
async fn a_responsibility_run_sees_no_message() {
    let root = tempfile::tempdir().unwrap();
    let digest = Responsibility {
        name: "daily-digest".into(),
        schedule: "0 8 * * *".into(),
        instructions: "Summarise yesterday's open threads.".into(),
    };
    let ctx = Context::builder(
        persona(),
        AppConfig::new(root.path()),
        Trigger::Responsibility(digest),
    )
    .now(Utc.with_ymd_and_hms(2026, 1, 6, 8, 0, 0).unwrap())
    .build();
    let chain = protege::resolvers! {
        use LoadText("{% if message %}Reply to {{ message.from }}.{% endif %}");
        use LoadText(template = "{{ responsibility.instructions }}", role = user);
    };
    let messages = chain.resolve(&ctx).await.unwrap();
    let request = build_request(None, vec![], messages).unwrap();
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"messages":[{"role":"user","content":"Summarise yesterday's open threads."}],"tools":[]}"#
    );
}
