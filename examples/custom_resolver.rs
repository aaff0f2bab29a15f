//! A resolver of your own, declared once and used from a TOML persona and from Rust:
//! `OpenOrders` reads the sender's open orders from the application's `orders` table.
//! Registered by name in a `Registry`, it is one more `use = "OpenOrders"` entry of a
//! persona file, whose other keys serde deserialises into the type (a misspelt or mistyped
//! option is a `path:line:col` error when the persona loads, like the built-ins'). Deriving
//! `protege::Options` next to `Deserialize` lets `resolvers!` set the same options by the
//! same names, `use OpenOrders { statuses = [...] };` (a misspelt or mistyped option is a
//! compile error there). Prints the request of a reply run as protege's canonical JSON,
//! after checking that the chain written in Rust gives the same request.
//!
//! Run with `cargo run --example custom_resolver`.

use std::path::Path;

use protege::config::Registry;
use protege::db::sea_orm::ConnectionTrait;
use protege::db::sea_orm::sea_query::{Alias, Expr, ExprTrait, Order, Query};
use protege::{
    AppConfig, Chain, Context, Engine, Message, ResolveInput, Resolver, Result, Role, Trigger,
    message, resolvers,
};
use serde::Deserialize;

/// The sender's orders whose status is one of `statuses`, as one system message. Its
/// options are serde's: the TOML keys, and the names `resolvers!` takes in braces.
#[derive(Debug, Deserialize, protege::Options)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenOrders {
    /// The statuses that count as open.
    statuses: Vec<String>,
    /// The line above the list (default `Open orders:`).
    #[serde(default = "default_heading")]
    heading: String,
}

fn default_heading() -> String {
    "Open orders:".to_owned()
}

impl Resolver for OpenOrders {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        // Nothing to contribute in a scheduled run or without a database.
        let (Some(db), Some(inbound)) = (ctx.db(), ctx.message()) else {
            return Ok(None);
        };
        let query = Query::select()
            .columns([Alias::new("number"), Alias::new("status")])
            .from(Alias::new("orders"))
            .and_where(Expr::col(Alias::new("email")).eq(inbound.from_address()))
            .and_where(Expr::col(Alias::new("status")).is_in(self.statuses.iter().cloned()))
            .order_by(Alias::new("number"), Order::Asc)
            .to_owned();
        let mut lines = vec![self.heading.clone()];
        for row in db.query_all(&query).await? {
            let number: String = row.try_get("", "number")?;
            let status: String = row.try_get("", "status")?;
            lines.push(format!("- {number}: {status}"));
        }
        Ok((lines.len() > 1).then(|| message(Role::System, lines.join("\n"))))
    }
}

/// The persona file: two built-ins around the custom resolver.
pub(crate) const PERSONA: &str = r#"
instructions = "You answer questions about orders, briefly."
addresses = ["shop@acme.test"]

[[message_resolvers]]
use = "LoadText"
template = "{{ persona.instructions }}"

[[message_resolvers]]
use = "OpenOrders"
statuses = ["packing", "shipped"]

[[message_resolvers]]
use = "LoadText"
template = "Reply to {{ message.from_display }}."
"#;

/// The mail: one inbound message.
pub(crate) const MAIL: &str = r#"{"threads":[{"subject":"Where is my order?","messages":[
  {"message_id":"<q1@example.com>","direction":"inbound","from":"Alice <alice@example.com>",
   "to":["shop@acme.test"],"subject":"Where is my order?","sent_at":"2026-01-05T09:00:00Z",
   "text_body":"Hi, when will my orders arrive?"}]}]}"#;

/// The application's own table, next to protege's.
pub(crate) const ORDERS: &str = "
CREATE TABLE orders (number TEXT PRIMARY KEY, email TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO orders (number, email, status) VALUES
  ('A-1', 'alice@example.com', 'shipped'),
  ('A-3', 'alice@example.com', 'delivered'),
  ('A-7', 'alice@example.com', 'packing'),
  ('B-2', 'bob@example.com', 'packing');
";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A throw-away app root holding the persona folder and the database.
    let dir = tempfile::tempdir()?;
    println!("{}", run(dir.path()).await?);
    Ok(())
}

/// Writes the persona into `root/personas`, builds the engine with the custom resolver
/// registered, and returns the request of a reply run as pretty JSON.
pub(crate) async fn run(root: &Path) -> anyhow::Result<String> {
    std::fs::create_dir_all(root.join("personas"))?;
    std::fs::write(root.join("personas/shop.toml"), PERSONA)?;

    let mut registry = Registry::new();
    registry.register::<OpenOrders>("OpenOrders");
    let engine = Engine::builder()
        .root(root)
        .database(format!("sqlite://{}", root.join("shop.db").display()))
        .registry(registry)
        .build()
        .await?;
    // An invalid persona file would be listed here, with `path:line:col` and a suggestion.
    if let Some(problem) = engine.diagnostics().first() {
        anyhow::bail!("{}", problem.headline());
    }

    let db = engine.db().await?;
    protege::db::import_fixture_str(db, MAIL).await?;
    db.execute_unprepared(ORDERS).await?;

    let now = "2026-01-05T09:05:00Z".parse()?;
    let input = ResolveInput::reply("shop", "<q1@example.com>").now(now);
    let out = engine.resolve(&input).await?;

    // The same chain in Rust: the persona file's entries, key for key, checked at compile
    // time; `heading` keeps its serde default here too.
    let chain = resolvers! {
        use LoadText(template = "{{ persona.instructions }}");
        use OpenOrders { statuses = ["packing", "shipped"] };
        use LoadText(template = "Reply to {{ message.from_display }}.");
    };
    let persona = engine
        .persona("shop")
        .ok_or_else(|| anyhow::anyhow!("no persona `shop`"))?;
    let inbound = protege::db::load_message(db, "<q1@example.com>")
        .await?
        .ok_or_else(|| anyhow::anyhow!("no message `<q1@example.com>`"))?;
    let ctx = Context::builder(
        persona.info.clone(),
        AppConfig::new(root),
        Trigger::Message(inbound.into()),
    )
    .now(now)
    .db(db.clone())
    .build();
    anyhow::ensure!(
        chain.request(&ctx).await? == out.request,
        "the chain written in Rust gives another request than the persona file"
    );
    Ok(serde_json::to_string_pretty(&out.body)?)
}
