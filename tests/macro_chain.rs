//! Behaviour of chains built by `resolvers!`: the same request JSON as the same chain
//! built by hand at run time, declaration order under concurrency, the first error in
//! declaration order, and `ThreadHistory` and `LoadRecord` reading a SQLite database.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use protege::{AppConfig, Direction, Responsibility};
use protege::{
    Chain, Context, DynChain, Email, Error, LoadFile, LoadText, MailMessage, Message, PersonaInfo,
    Resolver, Result, Role, ThreadHistory, ToolDef, Trigger, message,
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
        email: Email {
            message_id: "<m7@example.com>".into(),
            direction: Direction::Inbound,
            from: "Alice <alice@example.com>".into(),
            to: vec!["support@acme.test".into()],
            cc: vec![],
            subject: "Refund for order A-1".into(),
            sent_at: Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap(),
            text_body: Some("Hi, I would like a refund.".into()),
            html_body: None,
            html_text: None,
            in_reply_to: None,
            attachments: vec![],
            reply_headers: Default::default(),
        },
    }
}

fn persona() -> PersonaInfo {
    let mut persona = PersonaInfo::new("Support Team");
    persona.instructions = "Be brief.".into();
    persona.vars.insert("company".into(), "Acme".into());
    persona.tools = tools();
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
    serde_json::to_string(&chain.request(ctx).await.unwrap()).unwrap()
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
        ..Responsibility::default()
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
    let request = chain.request(&ctx).await.unwrap();
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"messages":[{"role":"user","content":"Summarise yesterday's open threads."}],"tools":[{"name":"lookup_order","description":"Find an order by number","input_schema":{"type":"object","properties":{"order":{"type":"string"}}}}]}"#
    );
}

/// The `accounts` table of the database tests, as a SeaORM entity.
mod account {
    use sea_orm::entity::prelude::*;

    /// A row of `accounts`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "accounts")]
    pub(crate) struct Model {
        /// The auto-increment id.
        #[sea_orm(primary_key)]
        pub(crate) id: i64,
        /// The customer's address.
        pub(crate) email: String,
        /// The customer's name.
        pub(crate) name: String,
        /// The plan.
        pub(crate) plan: String,
    }

    /// No relations.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub(crate) enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A thread of three messages (the last one is the reply run's), the first with two tool
/// rounds, and an `accounts` table.
const THREAD: &str = r#"{"threads":[{"subject":"Order A-1","messages":[
  {"message_id":"<t1@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Order A-1","sent_at":"2026-01-04T09:00:00Z",
   "text_body":"Where is order A-1?",
   "tool_uses":[
     {"run_id":"run-1","turn_index":0,"position":0,"tool_call_id":"call_1","name":"lookup_order",
      "input":{"order":"A-1"},"result":"shipped on Monday"}]},
  {"message_id":"<t2@example.com>","direction":"outbound","from":"Acme Support <support@acme.test>",
   "to":["Alice <alice@example.com>"],"subject":"Re: Order A-1","sent_at":"2026-01-04T09:05:00Z",
   "text_body":"It shipped on Monday."},
  {"message_id":"<t3@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Re: Order A-1","sent_at":"2026-01-05T10:00:00Z",
   "text_body":"Thanks!"}
]}]}"#;

/// An in-memory database holding [`THREAD`] and three accounts, and a reply-run context
/// for `<t3@example.com>` over it.
async fn db_setup() -> (
    tempfile::TempDir,
    protege::db::sea_orm::DatabaseConnection,
    Context,
) {
    use sea_orm::ConnectionTrait;
    let root = tempfile::tempdir().unwrap();
    let db = protege::db::open("sqlite::memory:").await.unwrap();
    protege::db::import_fixture_str(&db, THREAD).await.unwrap();
    for statement in [
        "CREATE TABLE accounts (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL, \
         name TEXT NOT NULL, plan TEXT NOT NULL)",
        "INSERT INTO accounts (email, name, plan) VALUES \
         ('alice@example.com', 'Alice Liddell', 'pro'), \
         ('bob@example.com', 'Bob Stone', 'free'), \
         ('carol@example.com', 'Carol Jones', 'pro')",
    ] {
        db.execute_unprepared(statement).await.unwrap();
    }
    let current = protege::db::load_message(&db, "<t3@example.com>")
        .await
        .unwrap()
        .unwrap();
    let ctx = Context::builder(
        persona(),
        AppConfig::new(root.path()),
        Trigger::Message(Arc::new(current)),
    )
    .now(Utc.with_ymd_and_hms(2026, 1, 5, 10, 30, 0).unwrap())
    .db(db.clone())
    .build();
    (root, db, ctx)
}

/// The accounts on the sender's plan, through SeaORM.
async fn same_plan_as_sender(ctx: Context) -> std::result::Result<Vec<account::Model>, String> {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
    let (Some(db), Some(mail)) = (ctx.db(), ctx.message()) else {
        return Err("this loader needs a database and a message".into());
    };
    let sender = account::Entity::find()
        .filter(account::Column::Email.eq(protege::bare_address(&mail.from)))
        .one(db)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the sender has no account")?;
    account::Entity::find()
        .filter(account::Column::Plan.eq(sender.plan))
        .order_by_desc(account::Column::Id)
        .all(db)
        .await
        .map_err(|e| e.to_string())
}

/// A plain `Serialize` record, not a SeaORM model.
#[derive(serde::Serialize)]
struct Order {
    number: &'static str,
    status: &'static str,
    total: f64,
}

fn json_of(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap()
}

#[tokio::test]
async fn thread_history_options_from_the_macro_read_the_database() {
    let (_root, _db, ctx) = db_setup().await;
    let all = protege::resolvers! {
        use ThreadHistory;
    };
    assert_eq!(
        json_of(&all.resolve(&ctx).await.unwrap()),
        concat!(
            r#"[{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Sun, 4 Jan 2026 09:00:00 +0000\nSubject: Order A-1\n\nWhere is order A-1?"},"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_1","name":"lookup_order","input":{"order":"A-1"}}]},"#,
            r#"{"role":"tool","tool_call_id":"call_1","content":"shipped on Monday"},"#,
            r#"{"role":"assistant","content":"From: Acme Support <support@acme.test>\nTo: Alice <alice@example.com>\nCc:\nDate: Sun, 4 Jan 2026 09:05:00 +0000\nSubject: Re: Order A-1\n\nIt shipped on Monday."}]"#,
        )
    );
    let chain = protege::resolvers! {
        use ThreadHistory(limit = None, include_tool_calls = true, result_limit = 7);
        use ThreadHistory(limit = 1);
        use ThreadHistory(limit = 0);
        use ThreadHistoryResolver(include_tool_calls = false, max_tokens = 1000);
    };
    let by_hand = DynChain::new()
        .with(ThreadHistory::new().limit(None).result_limit(7))
        .with(ThreadHistory::new().limit(1))
        .with(ThreadHistory::new().limit(0))
        .with(
            ThreadHistory::new()
                .include_tool_calls(false)
                .max_tokens(1000),
        );
    let summary = |steps: Vec<protege::Step<'_>>| {
        steps
            .into_iter()
            .map(|s| {
                let roles: Vec<String> =
                    s.messages.iter().map(|m| format!("{:?}", m.role)).collect();
                let tool = s.messages.iter().find(|m| m.role == Role::Tool);
                format!(
                    "{} [{}] {}",
                    s.position,
                    roles.join(" "),
                    tool.map(|m| m.content.text()).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
    };
    let expected = [
        "1 [User Assistant Tool Assistant] shipped\n[truncated: 10 more characters]",
        "2 [Assistant] ",
        "3 [] ",
        "4 [User Assistant] ",
    ];
    assert_eq!(summary(chain.run(&ctx).await.unwrap()), expected);
    assert_eq!(summary(by_hand.run(&ctx).await.unwrap()), expected);
}

#[tokio::test]
async fn load_record_forms_from_the_macro_read_the_database() {
    let (_root, _db, ctx) = db_setup().await;
    let chain = protege::resolvers! {
        use LoadRecord(same_plan_as_sender, template = "{{ record.name }} <{{ record.email }}> ({{ record.plan }})");
        use LoadRecord(
            |ctx| async move { same_plan_as_sender(ctx).await },
            render_with = |a: &account::Model| format!("  #{} {}  ", a.id, a.name),
            role = user,
        );
        use LoadRecord(|_ctx| async move {
            Ok::<_, String>(vec![Order { number: "A-1", status: "shipped", total: 19.5 }])
        });
        use LoadRecord(|_ctx| async move { Ok::<_, String>(Vec::<Order>::new()) });
        use LoadRecord(table = "accounts", order_by = ["plan desc", "id"], limit = 2, template = "{{ record.id }}: {{ record.name }}", role = assistant);
        use LoadRecord(table = "accounts", order_by = "id desc", limit = 1);
    };
    assert_eq!(
        json_of(&chain.resolve(&ctx).await.unwrap()),
        concat!(
            r#"[{"role":"system","content":"Carol Jones <carol@example.com> (pro)\n\nAlice Liddell <alice@example.com> (pro)"},"#,
            r##"{"role":"user","content":"#3 Carol Jones\n\n#1 Alice Liddell"},"##,
            r#"{"role":"system","content":"{\n  \"number\": \"A-1\",\n  \"status\": \"shipped\",\n  \"total\": 19.5\n}"},"#,
            r#"{"role":"assistant","content":"1: Alice Liddell\n\n3: Carol Jones"},"#,
            r#"{"role":"system","content":"{\n  \"id\": 3,\n  \"email\": \"carol@example.com\",\n  \"name\": \"Carol Jones\",\n  \"plan\": \"pro\"\n}"}]"#,
        )
    );
    assert_eq!(chain.names(), ["LoadRecord"; 6]);
}

#[tokio::test]
async fn load_record_failures_name_the_resolver_and_its_position() {
    let (root, _db, ctx) = db_setup().await;
    let chain = protege::resolvers! {
        use LoadText("fine");
        use LoadRecord(same_plan_as_sender, template = "{{ record.name }}");
    };
    // A scheduled run has no message: this loader refuses it.
    let scheduled = Context::builder(
        persona(),
        AppConfig::new(root.path()),
        Trigger::Responsibility(Responsibility {
            name: "digest".into(),
            schedule: "0 8 * * *".into(),
            instructions: String::new(),
            ..Responsibility::default()
        }),
    )
    .db(ctx.db().unwrap().clone())
    .build();
    assert_eq!(
        chain.resolve(&scheduled).await.unwrap_err().to_string(),
        "resolver 2 `LoadRecord` failed: LoadRecord loader failed: this loader needs a database and a message"
    );

    let missing = protege::resolvers! {
        use LoadRecord(table = "acounts", template = "{{ record.name }}");
    };
    assert_eq!(
        missing.resolve(&ctx).await.unwrap_err().to_string(),
        "resolver 1 `LoadRecord` failed: cannot read table `acounts`: \
         error returned from database: (code: 1) no such table: acounts"
    );

    let undefined = protege::resolvers! {
        use LoadRecord(table = "accounts", template = "{{ record.nmae }}");
    };
    assert_eq!(
        undefined.resolve(&ctx).await.unwrap_err().to_string(),
        "resolver 1 `LoadRecord` failed: template `LoadRecord.template` line 1: `record.nmae` is undefined"
    );
}

#[tokio::test]
async fn correspondent_history_from_the_macro_reads_the_senders_earlier_threads() {
    let (root, db, _) = db_setup().await;
    let earlier = r#"{"threads": [{"subject": "Order A-0", "messages": [
        {"message_id": "<old-1@example.com>", "direction": "inbound",
         "from": "Alice <alice@example.com>", "to": ["support@acme.test"],
         "subject": "Order A-0", "sent_at": "2025-12-01T09:00:00Z",
         "text_body": "Did order A-0 ship?"},
        {"message_id": "<old-2@acme.test>", "direction": "outbound",
         "from": "Acme Support <support@acme.test>", "to": ["Alice <alice@example.com>"],
         "subject": "Re: Order A-0", "sent_at": "2025-12-01T10:00:00Z",
         "text_body": "Yes, on Friday.\n\nOn Mon, 1 Dec 2025 at 09:00, Alice <alice@example.com> wrote:\n> Did order A-0 ship?"}
    ]}]}"#;
    protege::db::import_fixture_str(&db, earlier).await.unwrap();
    let current = protege::db::load_message(&db, "<t3@example.com>")
        .await
        .unwrap()
        .unwrap();
    let mut p = persona();
    p.addresses = vec!["support@acme.test".into()];
    let ctx = Context::builder(
        p,
        AppConfig::new(root.path()),
        Trigger::Message(Arc::new(current)),
    )
    .db(db.clone())
    .build();
    let chain = protege::resolvers! {
        use CorrespondentHistory;
        use CorrespondentHistory(messages = 1, template = "{{ thread.subject }}: {% for m in thread.messages %}{{ m }}{% endfor %}", quoted = strip, role = user);
    };
    let by_hand = DynChain::new()
        .with(protege::CorrespondentHistory::new())
        .with(
            protege::CorrespondentHistory::new()
                .messages(1)
                .template_str(
                    "{{ thread.subject }}: {% for m in thread.messages %}{{ m }}{% endfor %}",
                )
                .quoted(protege::Quoted::Strip)
                .role(Role::User),
        );
    let expected = concat!(
        r#"[{"role":"system","content":"Earlier thread with this correspondent: Order A-0\n\nFrom: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 1 Dec 2025 09:00:00 +0000\nSubject: Order A-0\n\nDid order A-0 ship?\n\nFrom: Acme Support <support@acme.test>\nTo: Alice <alice@example.com>\nCc:\nDate: Mon, 1 Dec 2025 10:00:00 +0000\nSubject: Re: Order A-0\n\nYes, on Friday.\n\nOn Mon, 1 Dec 2025 at 09:00, Alice <alice@example.com> wrote:\n> Did order A-0 ship?"},"#,
        r#"{"role":"user","content":"Order A-0: From: Acme Support <support@acme.test>\nTo: Alice <alice@example.com>\nCc:\nDate: Mon, 1 Dec 2025 10:00:00 +0000\nSubject: Re: Order A-0\n\nYes, on Friday."}]"#,
    );
    assert_eq!(json_of(&chain.resolve(&ctx).await.unwrap()), expected);
    assert_eq!(json_of(&by_hand.resolve(&ctx).await.unwrap()), expected);
}

/// A resolver of the user's that declares where its text came from.
struct CrmNote;

impl Resolver for CrmNote {
    type Output = protege::Resolved;

    async fn resolve(&self, _ctx: &Context) -> Result<protege::Resolved> {
        let mut fields = serde_json::Map::new();
        fields.insert("account".into(), serde_json::json!(12));
        Ok(
            protege::Resolved::new(vec![message(Role::System, "Account 12: gold.")]).with_sources(
                vec![protege::Source::Custom {
                    kind: "crm".into(),
                    fields,
                }],
            ),
        )
    }
}

#[tokio::test]
async fn a_typed_chain_names_the_source_of_every_message() {
    let (_root, ctx) = setup();
    let chain = protege::resolvers! {
        use LoadText("You are {{ persona.name }}.");
        use LoadFile("prompts/agent.md");
        use LoadFile("prompts/blank.md");
        use CrmNote;
        use Repeat("Thanks", 2, role = user);
    };
    let request = chain.request(&ctx).await.unwrap();
    assert_eq!(
        serde_json::to_string(&request.sources).unwrap(),
        concat!(
            r#"[{"kind":"text","resolver":"LoadText"},"#,
            r#"{"kind":"file","path":"prompts/agent.md","sha256":"#,
            r#""6776f03deebb7e7006317e8254a57e1e4094519a916484b77cb7df1a21ce40b4"},"#,
            r#"{"kind":"crm","account":12},"#,
            r#"{"kind":"text","resolver":"Repeat"},"#,
            r#"{"kind":"text","resolver":"Repeat"},"#,
            r#"{"kind":"message","message_id":"<m7@example.com>"}]"#,
        )
    );
    assert_eq!(request.sources.len(), request.messages.len());
    // The same chain built at run time gives the same sources.
    let by_hand = DynChain::new()
        .with(LoadText::template("You are {{ persona.name }}."))
        .with(LoadFile::new("prompts/agent.md"))
        .with(LoadFile::new("prompts/blank.md"))
        .with(CrmNote)
        .with(Repeat::new("Thanks", 2).role(Role::User));
    assert_eq!(
        by_hand.request(&ctx).await.unwrap().sources,
        request.sources
    );
}
