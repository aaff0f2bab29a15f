//! A TOML persona and the same chain written in Rust give byte-identical requests.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use protege_config::{Persona, Registry};
use protege_core::{
    AppConfig, Chain, Context, Direction, Email, LoadFile, LoadText, MailMessage, Request, Role,
    StaticChain, ToolDef, Trigger, build_request, user_turn,
};

const PERSONA: &str = r#"
name = "support"
instructions = "You are Acme's support agent."
[vars]
team = "Support Team!"

[[tools]]
name = "lookup_order"
description = "Find an order by number"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[message_resolvers]]
use = "LoadText"
template = "{{ persona.instructions }}"

[[message_resolvers]]
use = "LoadFile"
path = "prompts/{{ persona.vars.team | slugify }}.md"

[[message_resolvers]]
use = "LoadFileResolver"
path = "prompts/blank.md"

[[message_resolvers]]
use = "LoadText"
template = """
Reply to {{ message.from }} about "{{ message.subject }}".
"""
role = "user"
"#;

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
            subject: "Refund".into(),
            sent_at: Utc.with_ymd_and_hms(2026, 1, 5, 10, 0, 0).unwrap(),
            text_body: Some("Hi, where is my refund?".into()),
            html_body: None,
            html_text: None,
            in_reply_to: None,
            attachments: vec![],
            reply_headers: Default::default(),
        },
    }
}

async fn request(chain: &impl Chain, ctx: &Context, tools: Vec<ToolDef>) -> Request {
    let mail = ctx.message().unwrap();
    build_request(
        Some(user_turn(mail, ctx.mail_limits())),
        tools,
        chain.resolve(ctx).await.unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn toml_and_rust_chains_give_identical_requests() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("prompts")).unwrap();
    std::fs::write(root.path().join("prompts/support-team.md"), "Be brief.\n").unwrap();
    std::fs::write(root.path().join("prompts/blank.md"), "  \n").unwrap();

    let persona = Persona::parse("personas/support.toml".as_ref(), PERSONA, &Registry::new())
        .expect("valid persona");
    let ctx = Context::builder(
        persona.info.clone(),
        Arc::new(AppConfig::new(root.path())),
        Trigger::Message(Arc::new(inbound())),
    )
    .build();

    let by_hand = StaticChain::new((
        LoadText::template("{{ persona.instructions }}"),
        LoadFile::new("prompts/{{ persona.vars.team | slugify }}.md"),
        LoadFile::new("prompts/blank.md"),
        LoadText::template("Reply to {{ message.from }} about \"{{ message.subject }}\".\n")
            .role(Role::User),
    ));
    let tools = vec![ToolDef {
        name: "lookup_order".into(),
        description: "Find an order by number".into(),
        input_schema: serde_json::json!({
            "type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]
        }),
    }];

    let from_toml = serde_json::to_string(
        &request(&persona.message_chain, &ctx, persona.info.tools.clone()).await,
    )
    .unwrap();
    let from_rust = serde_json::to_string(&request(&by_hand, &ctx, tools).await).unwrap();
    assert_eq!(from_toml, from_rust);
    assert_eq!(persona.message_chain.names(), by_hand.names());
    assert_eq!(
        from_toml,
        concat!(
            r#"{"messages":[{"role":"system","content":"You are Acme's support agent."},"#,
            r#"{"role":"system","content":"Be brief.\n"},"#,
            r#"{"role":"user","content":"Reply to alice@example.com about \"Refund\"."},"#,
            r#"{"role":"user","content":"From: Alice <alice@example.com>\nTo: support@acme.test\nCc:\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nSubject: Refund\n\nHi, where is my refund?"}],"#,
            r#""tools":[{"name":"lookup_order","description":"Find an order by number","input_schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}}]}"#
        )
    );
}
