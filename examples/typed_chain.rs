//! A typed chain: a persona written entirely in Rust — its data as a `PersonaInfo`, its
//! chain with the `resolvers!` macro (checked at compile time: a misspelt option or template
//! variable does not build) — and `chain.request(&ctx)`, which runs the chain, appends the
//! inbound email as the user turn, adds the persona's tools and checks the tool-call
//! pairing. Prints the request as protege's canonical JSON.
//!
//! The mail and the application's `customers` table live in an in-memory SQLite
//! database filled from an inline fixture: `LoadRecord` reads the sender's customer
//! record through SeaORM (`protege::db::sea_orm`, no SeaORM dependency of your own),
//! `ThreadHistory` replays the earlier messages of the thread and the tool call made while
//! answering the first one.
//!
//! Run with `cargo run --example typed_chain`.

use std::path::Path;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use protege::db::sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
};
use protege::{
    AppConfig, Chain, Context, Message, PersonaInfo, Resolver, Result, Role, ToolDef, Trigger,
    message, resolvers,
};

/// A resolver of the application's own: the customer's open orders (here from memory;
/// a real one would read `ctx.db()`).
struct OpenOrders {
    orders: Vec<(&'static str, &'static str, &'static str)>,
}

impl OpenOrders {
    fn new() -> Self {
        Self {
            orders: vec![
                ("alice@example.com", "A-1", "shipped"),
                ("alice@example.com", "A-7", "packing"),
                ("bob@example.com", "B-2", "delivered"),
            ],
        }
    }
}

impl Resolver for OpenOrders {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        let Some(inbound) = ctx.message() else {
            return Ok(None);
        };
        let from = protege::bare_address(&inbound.from);
        let lines: Vec<String> = self
            .orders
            .iter()
            .filter(|(email, _, _)| *email == from)
            .map(|(_, order, status)| format!("- {order}: {status}"))
            .collect();
        if lines.is_empty() {
            return Ok(None);
        }
        Ok(Some(message(
            Role::System,
            format!("Open orders of {from}:\n{}", lines.join("\n")),
        )))
    }
}

fn persona() -> PersonaInfo {
    let mut persona = PersonaInfo::new("Acme Support");
    persona.instructions = "Answer briefly and politely.".into();
    persona.addresses = vec!["support@acme.test".into()];
    persona.vars.insert("company".into(), "Acme".into());
    persona.tools = vec![ToolDef {
        name: "lookup_order".into(),
        description: "Find an order by number".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {"order": {"type": "string"}},
            "required": ["order"]
        }),
    }];
    persona
}

/// The customers table the persona reads with `LoadRecord`, as a SeaORM entity.
mod customer {
    // The entity derives name `sea_orm::...`: the re-export in scope under that name is
    // enough, no SeaORM dependency of your own.
    use protege::db::sea_orm;
    use sea_orm::entity::prelude::*;

    /// A row of `customers`.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Serialize)]
    #[sea_orm(table_name = "customers")]
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

/// The mail: one thread of three messages; the last one is the email being answered. The
/// first reply run looked the order up with a tool, which the history replays.
const MAIL: &str = r#"{"threads":[{"subject":"Refund for order A-1","messages":[
  {"message_id":"<m1@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Refund for order A-1","sent_at":"2026-01-05T09:00:00Z",
   "text_body":"Hi, the parcel for order A-1 arrived damaged. Can I get a refund?",
   "tool_uses":[{"run_id":"run-1","turn_index":0,"position":0,"tool_call_id":"call_1",
     "name":"lookup_order","input":{"order":"A-1"},"result":"{\"status\":\"delivered\"}"}]},
  {"message_id":"<m2@example.com>","direction":"outbound","from":"Acme Support <support@acme.test>",
   "to":["Alice <alice@example.com>"],"subject":"Re: Refund for order A-1",
   "sent_at":"2026-01-05T09:10:00Z","text_body":"Sorry about that! Could you send a photo of the damage?"},
  {"message_id":"<m3@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["support@acme.test"],"subject":"Re: Refund for order A-1","sent_at":"2026-01-05T10:00:00Z",
   "text_body":"Here it is.","in_reply_to":"<m2@example.com>",
   "attachments":[{"id":"att-1","filename":"damage.jpg","content_type":"image/jpeg","byte_size":48213}]}
]}]}"#;

/// The application's own table, next to protege's.
const CUSTOMERS: [&str; 2] = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL, \
     name TEXT NOT NULL, plan TEXT NOT NULL)",
    "INSERT INTO customers (email, name, plan) VALUES \
     ('alice@example.com', 'Alice Martin', 'pro'), ('bob@example.com', 'Bob Okafor', 'free')",
];

/// An in-memory SQLite database with protege's schema, the mail and the customers.
async fn database() -> anyhow::Result<DatabaseConnection> {
    let db = protege::db::open("sqlite::memory:").await?;
    protege::db::import_fixture_str(&db, MAIL).await?;
    for statement in CUSTOMERS {
        db.execute_unprepared(statement).await?;
    }
    Ok(db)
}

/// The sender's customer record, read through SeaORM (the loader of `LoadRecord`).
async fn sender(ctx: Context) -> std::result::Result<Option<customer::Model>, DbErr> {
    let (Some(db), Some(mail)) = (ctx.db(), ctx.message()) else {
        return Ok(None);
    };
    customer::Entity::find()
        .filter(customer::Column::Email.eq(protege::bare_address(&mail.from)))
        .one(db)
        .await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    println!("{}", run().await?);
    Ok(())
}

/// Builds the chain and the context, and returns the request as pretty JSON.
pub(crate) async fn run() -> anyhow::Result<String> {
    // Relative paths resolve against the app root: here, this example's folder.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");

    let chain = resolvers! {
        use LoadText(template = "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}");
        use LoadFile("prompts/{{ persona.name | slugify }}.md");
        use LoadRecord(sender, template = "Customer: {{ record.name }} (plan: {{ record.plan }})");
        use OpenOrders();
        use LoadText(|ctx: &Context| Ok(format!("Today is {}.", ctx.now().format("%A, %-d %B %Y"))));
        use ThreadHistory(limit = 10, result_limit = 2000);
        use LoadText("{% if message %}Reply to {{ message.from }} in the thread \"{{ message.subject }}\".{% endif %}", role = user);
    };
    // A chain's `Debug` lists its resolvers by name.
    eprintln!("chain: {chain:?}");

    let db = database().await?;
    let inbound = protege::db::load_message(&db, "<m3@example.com>")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the fixture has no message `<m3@example.com>`"))?;

    let ctx = Context::builder(
        persona(),
        AppConfig::new(root),
        Trigger::Message(Arc::new(inbound)),
    )
    .now(Utc.with_ymd_and_hms(2026, 1, 5, 10, 5, 0).unwrap())
    .db(db)
    .build();

    // Runs the chain, appends the inbound message as the user turn, adds the persona's
    // tools and checks the tool-call pairing.
    let request = chain.request(&ctx).await?;
    Ok(serde_json::to_string_pretty(&request)?)
}
