//! A persona written entirely in Rust: its data as a `PersonaInfo`, its chain with the
//! `resolvers!` macro (checked at compile time), and the request it produces for one
//! inbound email, printed as canonical JSON.
//!
//! Run with `cargo run --example rust_persona`.

use std::path::Path;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use protege::{
    AppConfig, Chain, Context, Direction, MailMessage, Message, PersonaInfo, Resolver, Result,
    Role, ToolDef, Trigger, build_request, message, resolvers, user_turn,
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

fn inbound() -> MailMessage {
    MailMessage {
        id: 1,
        thread_id: 1,
        message_id: "<m1@example.com>".into(),
        direction: Direction::Inbound,
        from: "Alice <alice@example.com>".into(),
        to: vec!["support@acme.test".into()],
        cc: vec![],
        subject: "Refund for order A-1".into(),
        sent_at: Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap(),
        text_body: Some("Hi, the parcel arrived damaged. Can I get a refund?".into()),
        html_body: None,
        in_reply_to: None,
        attachments: vec![],
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Relative paths resolve against the app root: here, this example's folder.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");

    let chain = resolvers! {
        use LoadText(template = "You are {{ persona.name }} at {{ persona.vars.company }}. {{ persona.instructions }}");
        use LoadFile("prompts/{{ persona.name | slugify }}.md");
        use OpenOrders();
        use LoadText(|ctx: &Context| Ok(format!("Today is {}.", ctx.now().format("%A, %-d %B %Y"))));
        use LoadText("{% if message %}Reply to {{ message.from }} in the thread \"{{ message.subject }}\".{% endif %}", role = user);
    };

    let persona = persona();
    let tools = persona.tools.clone();
    let inbound = Arc::new(inbound());
    let ctx = Context::builder(
        persona,
        AppConfig::new(root),
        Trigger::Message(inbound.clone()),
    )
    .now(Utc.with_ymd_and_hms(2026, 1, 5, 10, 5, 0).unwrap())
    .build();

    let request = build_request(Some(user_turn(&inbound)), tools, chain.resolve(&ctx).await?)?;
    eprintln!("chain: {chain:?}");
    println!("{}", serde_json::to_string_pretty(&request)?);
    Ok(())
}
