// Long on purpose: each case shows the same persona three ways side by side, which splitting
// would scatter.
//! One persona written three ways — a TOML file, `resolvers!`, and chains built by hand
//! from the core builders — gives byte-identical request JSON on the same data, for a
//! reply run and for a scheduled run.
//!
//! The shared fixture: an in-memory SQLite database holding one email thread (with tool
//! uses) and an extra `accounts` table, and an app root holding the prompt files.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use protege::config::{Persona, Registry};
use protege::db::{self, sea_orm::DatabaseConnection};
use protege::{
    AppConfig, Chain, Context, CorrespondentHistory, DynChain, LoadFile, LoadRecord, LoadText,
    MailMessage, PersonaInfo, Quoted, Responsibility, Role, StaticChain, Template, ThreadHistory,
    ThreadSummary, ToolDef, Trigger, Window,
};
use protege::{OrderBy, WhereValue};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};

/// The `accounts` table as a SeaORM entity, for the Rust loader closure.
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
        /// The number of seats.
        pub(crate) seats: i64,
    }

    /// No relations.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub(crate) enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

const PERSONA: &str = r#"
name = "Support Team"
instructions = "Be brief."
addresses = ["support@acme.test"]

[vars]
company = "Acme"

[[tools]]
name = "lookup_order"
description = "Find an order by number"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[message_resolvers]]
use = "LoadText"
template = "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}"

[[message_resolvers]]
use = "LoadFile"
path = "prompts/agent.md"

[[message_resolvers]]
use = "LoadFile"
path = "prompts/{{ persona.name | slugify }}.md"
role = "user"

[[message_resolvers]]
use = "LoadRecord"
table = "accounts"
where = { email = "{{ message.from }}" }
template = "Customer: {{ record.name }} (plan: {{ record.plan }}, seats: {{ record.seats }})"

[[message_resolvers]]
use = "CorrespondentHistory"
messages = 2
quoted = "strip"

[[message_resolvers]]
use = "ThreadSummary"
template = "Earlier: {{ summary }}"
role = "user"

[[message_resolvers]]
use = "ThreadHistory"
limit = 2
window = "stable"
step = 3
after_summary = true
result_limit = 12

[[message_resolvers]]
use = "LoadText"
template = "Reply to {{ message.from }} about \"{{ message.subject }}\"."
role = "user"

[[responsibilities]]
name = "daily-digest"
schedule = "0 8 * * *"
instructions = "Summarise yesterday's open threads."

[[responsibility_resolvers]]
use = "LoadText"
template = "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}"

[[responsibility_resolvers]]
use = "LoadRecord"
table = "accounts"
order_by = ["plan", "id desc"]
limit = 2

[[responsibility_resolvers]]
use = "ThreadHistory"

[[responsibility_resolvers]]
use = "LoadText"
template = "{{ responsibility.instructions }} ({{ now }})"
role = "user"
"#;

const FIXTURE: &str = r#"{"threads":[{"subject":"Gift wrap","messages":[
  {"message_id":"<g0@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Gift wrap","sent_at":"2025-12-01T08:00:00Z",
   "text_body":"Can you gift-wrap order A-0?"},
  {"message_id":"<g1@example.com>","direction":"outbound","from":"Acme Support <support@acme.test>",
   "to":["Alice <alice@example.com>"],"subject":"Re: Gift wrap","sent_at":"2025-12-01T09:00:00Z",
   "text_body":"Yes, for free.\n\nOn Mon, 1 Dec 2025 at 08:00, Alice <alice@example.com> wrote:\n> Can you gift-wrap order A-0?"}
]},{"subject":"Refund for order A-1","messages":[
  {"message_id":"<m0@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Order A-1","sent_at":"2026-01-03T08:00:00Z",
   "text_body":"Where is order A-1?"},
  {"message_id":"<m1@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"cc":["bob@example.com"],"subject":"Refund for order A-1",
   "sent_at":"2026-01-04T09:00:00Z","text_body":"It arrived broken.",
   "attachments":[{"id":"att-1","filename":"photo.jpg","content_type":"image/jpeg","byte_size":2048}],
   "tool_uses":[
     {"run_id":"run-1","turn_index":0,"position":0,"tool_call_id":"call_1","name":"lookup_order",
      "input":{"order":"A-1"},"result":"{\"status\":\"delivered\",\"carrier\":\"DHL\"}"},
     {"run_id":"run-1","turn_index":1,"position":0,"tool_call_id":"call_2","name":"lookup_order",
      "input":{"order":"A-2"}}]},
  {"message_id":"<m2@example.com>","direction":"outbound","from":"Acme Support <support@acme.test>",
   "to":["Alice <alice@example.com>"],"subject":"Re: Refund for order A-1",
   "sent_at":"2026-01-04T09:05:00Z","html_body":"<p>Sorry to hear that.</p><p>We will refund you.</p>"},
  {"message_id":"<m3@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Re: Refund for order A-1",
   "sent_at":"2026-01-05T10:00:00Z","text_body":"Thanks! When will it arrive?","in_reply_to":"<m2@example.com>"}
]}]}"#;

const ACCOUNTS: [&str; 2] = [
    "CREATE TABLE accounts (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL, \
     name TEXT NOT NULL, plan TEXT NOT NULL, seats INTEGER NOT NULL)",
    "INSERT INTO accounts (email, name, plan, seats) VALUES \
     ('alice@example.com', 'Alice Liddell', 'pro', 5), \
     ('bob@example.com', 'Bob Stone', 'free', 1), \
     ('carol@example.com', 'Carol Jones', 'pro', 12)",
];

/// The app root with the prompt files, and the filled database.
async fn fixture() -> (tempfile::TempDir, DatabaseConnection) {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("prompts")).unwrap();
    std::fs::write(root.path().join("prompts/agent.md"), "Answer in English.\n").unwrap();
    std::fs::write(
        root.path().join("prompts/support-team.md"),
        "Refunds take 5 days.",
    )
    .unwrap();
    let db = db::open("sqlite::memory:").await.unwrap();
    db::import_fixture_str(&db, FIXTURE).await.unwrap();
    for statement in ACCOUNTS {
        db.execute_unprepared(statement).await.unwrap();
    }
    (root, db)
}

/// The persona's data written in Rust: what the TOML file says outside its chains.
fn persona() -> PersonaInfo {
    let mut persona = PersonaInfo::new("Support Team");
    persona.instructions = "Be brief.".into();
    persona.addresses = vec!["support@acme.test".into()];
    persona.vars.insert("company".into(), "Acme".into());
    persona.tools = vec![ToolDef {
        name: "lookup_order".into(),
        description: "Find an order by number".into(),
        input_schema: serde_json::json!({
            "type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]
        }),
    }];
    persona.responsibilities = vec![digest()];
    persona
}

fn digest() -> Responsibility {
    Responsibility {
        name: "daily-digest".into(),
        schedule: "0 8 * * *".into(),
        instructions: "Summarise yesterday's open threads.".into(),
        ..Responsibility::default()
    }
}

/// The sender's accounts, read through SeaORM: the Rust form of TOML's
/// `where = { email = "{{ message.from }}" }`.
async fn accounts_of_sender(ctx: Context) -> Result<Vec<account::Model>, String> {
    let (Some(db), Some(mail)) = (ctx.db(), ctx.message()) else {
        return Ok(Vec::new());
    };
    account::Entity::find()
        .filter(account::Column::Email.eq(protege::bare_address(&mail.from)))
        .order_by_asc(account::Column::Id)
        .all(db)
        .await
        .map_err(|e| e.to_string())
}

/// One run: the persona's data, the app root, the database and the trigger.
fn context(
    persona: impl Into<Arc<PersonaInfo>>,
    root: &tempfile::TempDir,
    db: &DatabaseConnection,
    trigger: Trigger,
) -> Context {
    Context::builder(persona, AppConfig::new(root.path()), trigger)
        .now(Utc.with_ymd_and_hms(2026, 1, 6, 8, 0, 0).unwrap())
        .db(db.clone())
        .build()
}

/// The request of a run as canonical JSON; reply runs end with the inbound message.
async fn request_json(chain: &impl Chain, ctx: &Context) -> String {
    serde_json::to_string(&chain.request(ctx).await.unwrap()).unwrap()
}

const TOOLS: &str = r#""tools":[{"name":"lookup_order","description":"Find an order by number","input_schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}}]"#;

/// The reply to `<m3@example.com>`: the limit of 2 drops the thread's first message,
/// the first tool result is cut at 12 characters, the unanswered call gets the stand-in.
fn expected_reply() -> String {
    [
        r#"{"messages":["#,
        r#"{"role":"system","content":"You are Support Team at Acme. Be brief."},"#,
        r#"{"role":"system","content":"Answer in English.\n"},"#,
        r#"{"role":"user","content":"Refunds take 5 days."},"#,
        r#"{"role":"system","content":"Customer: Alice Liddell (plan: pro, seats: 5)"},"#,
        r#"{"role":"system","content":"Earlier thread with this correspondent: Gift wrap\n\nFrom: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 1 Dec 2025 08:00:00 +0000\nSubject: Gift wrap\n\nCan you gift-wrap order A-0?\n\nFrom: Acme Support <support@acme.test>\nTo: Alice <alice@example.com>\nCc:\nDate: Mon, 1 Dec 2025 09:00:00 +0000\nSubject: Re: Gift wrap\n\nYes, for free."},"#,
        // The stable window (limit 2, step 3) of 3 prior messages keeps all 3.
        r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Sat, 3 Jan 2026 08:00:00 +0000\nSubject: Order A-1\n\nWhere is order A-1?"},"#,
        r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc: bob@example.com\nDate: Sun, 4 Jan 2026 09:00:00 +0000\nSubject: Refund for order A-1\n\nIt arrived broken.\n\nAttachments:\n- photo.jpg (image/jpeg, 2048 bytes, id: att-1)"},"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_1","name":"lookup_order","input":{"order":"A-1"}}]},"#,
        r#"{"role":"tool","tool_call_id":"call_1","content":"{\"status\":\"d\n[truncated: 26 more characters]"},"#,
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_2","name":"lookup_order","input":{"order":"A-2"}}]},"#,
        r#"{"role":"tool","tool_call_id":"call_2","content":"{\"error\":\"no result recorded\"}"},"#,
        r#"{"role":"assistant","content":"From: Acme Support <support@acme.test>\nTo: Alice <alice@example.com>\nCc:\nDate: Sun, 4 Jan 2026 09:05:00 +0000\nSubject: Re: Refund for order A-1\n\nSorry to hear that.\n\nWe will refund you."},"#,
        r#"{"role":"user","content":"Reply to alice@example.com about \"Re: Refund for order A-1\"."},"#,
        r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Re: Refund for order A-1\n\nThanks! When will it arrive?"}],"#,
        TOOLS,
        "}",
    ]
    .concat()
}

/// The daily digest: no message, so no history and no trailing user turn; the accounts
/// as pretty JSON in table order, ordered by plan then newest first, two of them.
fn expected_digest() -> String {
    [
        r#"{"messages":["#,
        r#"{"role":"system","content":"You are Support Team at Acme. Be brief."},"#,
        r#"{"role":"system","content":"{\n  \"id\": 2,\n  \"email\": \"bob@example.com\",\n  \"name\": \"Bob Stone\",\n  \"plan\": \"free\",\n  \"seats\": 1\n}\n\n{\n  \"id\": 3,\n  \"email\": \"carol@example.com\",\n  \"name\": \"Carol Jones\",\n  \"plan\": \"pro\",\n  \"seats\": 12\n}"},"#,
        r#"{"role":"user","content":"Summarise yesterday's open threads. (2026-01-06T08:00:00Z)"}],"#,
        TOOLS,
        "}",
    ]
    .concat()
}

#[tokio::test]
async fn toml_macro_and_hand_built_chains_give_identical_requests() {
    let (root, db) = fixture().await;
    let from_toml = Persona::parse("personas/support.toml".as_ref(), PERSONA, &Registry::new())
        .expect("valid persona");
    let info = Arc::new(persona());

    // Written with the macro: the sender's account through a SeaORM loader closure.
    let macro_reply = protege::resolvers! {
        use LoadText(template = "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}");
        use LoadFile("prompts/agent.md");
        use LoadFile(path = "prompts/{{ persona.name | slugify }}.md", role = user);
        use LoadRecord(
            accounts_of_sender,
            template = "Customer: {{ record.name }} (plan: {{ record.plan }}, seats: {{ record.seats }})",
        );
        use CorrespondentHistory(messages = 2, quoted = strip);
        use ThreadSummary(template = "Earlier: {{ summary }}", role = user);
        use ThreadHistory(limit = 2, window = stable, step = 3, after_summary = true, result_limit = 12);
        use LoadText("Reply to {{ message.from }} about \"{{ message.subject }}\".", role = user);
    };
    let macro_digest = protege::resolvers! {
        use LoadText("You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}");
        use LoadRecord(table = "accounts", order_by = ["plan", "id desc"], limit = 2);
        use ThreadHistory;
        use LoadText(template = "{{ responsibility.instructions }} ({{ now }})", role = user);
    };

    // Built by hand: the declarative `where` as the TOML file has it.
    let hand_reply = DynChain::new()
        .with(LoadText::template(
            "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}",
        ))
        .with(LoadFile::new("prompts/agent.md"))
        .with(LoadFile::new("prompts/{{ persona.name | slugify }}.md").role(Role::User))
        .with(
            LoadRecord::table("accounts")
                .filter(
                    "email",
                    WhereValue::Template(Template::compile("email", "{{ message.from }}").unwrap()),
                )
                .template_str(
                    "Customer: {{ record.name }} (plan: {{ record.plan }}, seats: {{ record.seats }})",
                ),
        )
        .with(CorrespondentHistory::new().messages(2).quoted(Quoted::Strip))
        .with(
            ThreadSummary::new()
                .template_str("Earlier: {{ summary }}")
                .role(Role::User),
        )
        .with(
            ThreadHistory::new()
                .limit(2)
                .window(Window::Stable)
                .step(3)
                .after_summary(true)
                .result_limit(12),
        )
        .with(
            LoadText::template("Reply to {{ message.from }} about \"{{ message.subject }}\".")
                .role(Role::User),
        );
    let hand_digest = StaticChain::new((
        LoadText::template(
            "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}",
        ),
        LoadRecord::table("accounts")
            .order_by(OrderBy {
                column: "plan".into(),
                desc: false,
            })
            .order_by(OrderBy {
                column: "id".into(),
                desc: true,
            })
            .limit(2),
        ThreadHistory::new(),
        LoadText::template("{{ responsibility.instructions }} ({{ now }})").role(Role::User),
    ));

    // A reply run.
    let inbound = Arc::new(
        db::load_message(&db, "<m3@example.com>")
            .await
            .unwrap()
            .expect("imported"),
    );
    let reply =
        |persona: Arc<PersonaInfo>| context(persona, &root, &db, Trigger::Message(inbound.clone()));
    let toml_json = request_json(&from_toml.message_chain, &reply(from_toml.info.clone())).await;
    let macro_json = request_json(&macro_reply, &reply(info.clone())).await;
    let hand_json = request_json(&hand_reply, &reply(info.clone())).await;
    assert_eq!(macro_json, toml_json);
    assert_eq!(hand_json, toml_json);
    assert_eq!(toml_json, expected_reply());

    // A scheduled run.
    let scheduled =
        |persona: Arc<PersonaInfo>| context(persona, &root, &db, Trigger::Responsibility(digest()));
    let toml_json = request_json(
        &from_toml.responsibility_chain,
        &scheduled(from_toml.info.clone()),
    )
    .await;
    let macro_json = request_json(&macro_digest, &scheduled(info.clone())).await;
    let hand_json = request_json(&hand_digest, &scheduled(info.clone())).await;
    assert_eq!(macro_json, toml_json);
    assert_eq!(hand_json, toml_json);
    assert_eq!(toml_json, expected_digest());

    // The three chains declare the same resolvers.
    let names = [
        "LoadText",
        "LoadFile",
        "LoadFile",
        "LoadRecord",
        "CorrespondentHistory",
        "ThreadSummary",
        "ThreadHistory",
        "LoadText",
    ];
    assert_eq!(from_toml.message_chain.names(), names);
    assert_eq!(macro_reply.names(), names);
    assert_eq!(hand_reply.names(), names);
    let names = ["LoadText", "LoadRecord", "ThreadHistory", "LoadText"];
    assert_eq!(from_toml.responsibility_chain.names(), names);
    assert_eq!(macro_digest.names(), names);
    assert_eq!(hand_digest.names(), names);
}

/// The Rust-side data of the persona is the TOML file's, field for field.
#[test]
fn the_rust_persona_data_matches_the_toml_file() {
    let from_toml = Persona::parse("personas/support.toml".as_ref(), PERSONA, &Registry::new())
        .expect("valid persona");
    assert_eq!(format!("{:?}", from_toml.info), format!("{:?}", persona()));
}

/// A reply run's chain contributes nothing for a sender without an account, on every
/// form alike (the loader returns no rows, the `where` matches none).
#[tokio::test]
async fn a_sender_without_an_account_gets_no_customer_line_in_any_form() {
    let (root, db) = fixture().await;
    let mut stranger: MailMessage = db::load_message(&db, "<m3@example.com>")
        .await
        .unwrap()
        .unwrap();
    stranger.from = "Dave <dave@example.com>".into();
    let ctx = context(persona(), &root, &db, Trigger::Message(Arc::new(stranger)));
    let from_toml = Persona::parse("personas/support.toml".as_ref(), PERSONA, &Registry::new())
        .expect("valid persona");
    let by_macro = protege::resolvers! {
        use LoadRecord(|ctx| async move { accounts_of_sender(ctx).await }, template = "{{ record.name }}");
    };
    assert_eq!(
        serde_json::to_string(&by_macro.resolve(&ctx).await.unwrap()).unwrap(),
        "[]"
    );
    let steps = from_toml.message_chain.run(&ctx).await.unwrap();
    assert_eq!(
        (steps[3].position, steps[3].name, steps[3].messages.len()),
        (4, "LoadRecord", 0)
    );
}

/// A resolver of the application's own, declared once: serde reads its options from a TOML
/// entry, and `resolvers!` sets the same options by the same names (`protege::Options`),
/// with the same defaults for the options left out.
#[derive(Debug, serde::Deserialize, protege::Options)]
#[serde(deny_unknown_fields)]
struct PlanMembers {
    /// The plan whose accounts are listed.
    plan: String,
    /// The line above the list.
    #[serde(default = "default_members_heading")]
    heading: String,
    /// Only accounts with at least this many seats.
    #[serde(rename = "min_seats", alias = "at_least")]
    min: Option<i64>,
    /// Who speaks the message (default `system`).
    #[serde(default)]
    role: Option<Role>,
}

fn default_members_heading() -> String {
    "Members:".to_owned()
}

impl protege::Resolver for PlanMembers {
    type Output = Option<protege::Message>;

    async fn resolve(&self, ctx: &Context) -> protege::Result<Option<protege::Message>> {
        let Some(db) = ctx.db() else {
            return Ok(None);
        };
        let mut query =
            account::Entity::find().filter(account::Column::Plan.eq(self.plan.as_str()));
        if let Some(min) = self.min {
            query = query.filter(account::Column::Seats.gte(min));
        }
        let rows = query.order_by_asc(account::Column::Id).all(db).await?;
        let lines = rows
            .iter()
            .map(|a| format!("- {} ({} seats)", a.name, a.seats));
        let text = std::iter::once(self.heading.clone())
            .chain(lines)
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Some(protege::message(
            self.role.unwrap_or(Role::System),
            text,
        )))
    }
}

const MEMBERS_PERSONA: &str = r#"
name = "Support Team"

[[message_resolvers]]
use = "PlanMembers"
plan = "pro"

[[message_resolvers]]
use = "LoadText"
template = "Between the two lists."

[[message_resolvers]]
use = "PlanMembers"
plan = "pro"
heading = "Large pro accounts:"
at_least = 10
role = "user"
"#;

#[tokio::test]
async fn a_custom_resolver_declared_once_gives_the_same_request_from_toml_and_the_macro() {
    let (root, db) = fixture().await;
    let mut registry = Registry::new();
    registry.register::<PlanMembers>("PlanMembers");
    let from_toml = Persona::parse("personas/support.toml".as_ref(), MEMBERS_PERSONA, &registry)
        .expect("valid persona");
    // The TOML entries, key for key (`at_least` is an alias of `min_seats`).
    let by_macro = protege::resolvers! {
        use PlanMembers { plan = "pro" };
        use LoadText(template = "Between the two lists.");
        use PlanMembers { plan = "pro", heading = "Large pro accounts:", at_least = 10, role = user };
    };
    assert_eq!(
        <PlanMembers as protege::Options>::NAMES,
        ["plan", "heading", "min_seats", "role"]
    );

    let inbound = Arc::new(
        db::load_message(&db, "<m3@example.com>")
            .await
            .unwrap()
            .expect("imported"),
    );
    let ctx =
        |persona: Arc<PersonaInfo>| context(persona, &root, &db, Trigger::Message(inbound.clone()));
    let toml_json = request_json(&from_toml.message_chain, &ctx(from_toml.info.clone())).await;
    let macro_json = request_json(&by_macro, &ctx(from_toml.info.clone())).await;
    assert_eq!(macro_json, toml_json);
    assert_eq!(
        toml_json,
        [
            r#"{"messages":["#,
            r#"{"role":"system","content":"Members:\n- Alice Liddell (5 seats)\n- Carol Jones (12 seats)"},"#,
            r#"{"role":"system","content":"Between the two lists."},"#,
            r#"{"role":"user","content":"Large pro accounts:\n- Carol Jones (12 seats)"},"#,
            r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Re: Refund for order A-1\n\nThanks! When will it arrive?"}],"#,
            r#""tools":[]}"#,
        ]
        .concat()
    );
    let names = ["PlanMembers", "LoadText", "PlanMembers"];
    assert_eq!(from_toml.message_chain.names(), names);
    assert_eq!(by_macro.names(), names);
}

/// `LoadRecord`'s `where` written in `resolvers!` binds its values as the TOML file's do: a
/// string is a template rendered and bound as text, a number or boolean is bound with its
/// type.
#[tokio::test]
async fn load_record_where_gives_the_same_request_from_toml_and_the_macro() {
    const WHERE_PERSONA: &str = r#"
name = "Support Team"

[[message_resolvers]]
use = "LoadRecord"
table = "accounts"
where = { email = "{{ message.from }}", plan = "pro", seats = 5 }
template = "Customer: {{ record.name }} ({{ record.seats }} seats)"

[[message_resolvers]]
use = "LoadRecord"
table = "accounts"
where = { plan = "{{ persona.name | slugify | length > 3 and 'pro' or 'free' }}", seats = 12.0 }
order_by = "id desc"
"#;
    let (root, db) = fixture().await;
    let from_toml = Persona::parse(
        "personas/support.toml".as_ref(),
        WHERE_PERSONA,
        &Registry::new(),
    )
    .expect("valid persona");
    let by_macro = protege::resolvers! {
        use LoadRecord(
            table = "accounts",
            where = { email = "{{ message.from }}", plan = "pro", seats = 5 },
            template = "Customer: {{ record.name }} ({{ record.seats }} seats)",
        );
        use LoadRecord(
            table = "accounts",
            where = { plan = "{{ persona.name | slugify | length > 3 and 'pro' or 'free' }}", seats = 12.0 },
            order_by = "id desc",
        );
    };
    let inbound = Arc::new(
        db::load_message(&db, "<m3@example.com>")
            .await
            .unwrap()
            .expect("imported"),
    );
    let ctx = context(
        from_toml.info.clone(),
        &root,
        &db,
        Trigger::Message(inbound),
    );
    let toml_json = request_json(&from_toml.message_chain, &ctx).await;
    let macro_json = request_json(&by_macro, &ctx).await;
    assert_eq!(macro_json, toml_json);
    assert_eq!(
        toml_json,
        [
            r#"{"messages":["#,
            r#"{"role":"system","content":"Customer: Alice Liddell (5 seats)"},"#,
            r#"{"role":"system","content":"{\n  \"id\": 3,\n  \"email\": \"carol@example.com\",\n  \"name\": \"Carol Jones\",\n  \"plan\": \"pro\",\n  \"seats\": 12\n}"},"#,
            r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Re: Refund for order A-1\n\nThanks! When will it arrive?"}],"#,
            r#""tools":[]}"#,
        ]
        .concat()
    );
}
