//! Every argument form of the built-in resolvers.
use protege::{Chain, Context, Role};

fn main() {
    let company = String::from("Acme");
    let chain = protege::resolvers! {
        use LoadText("You are {{ persona.name }}.");
        use LoadText(template = "Today is {{ now }}.", role = system);
        use LoadText(r#"{% if message %}Reply to {{ message.from }}.{% endif %}"#, role = user,);
        use LoadText(move |_ctx: &Context| Ok(format!("You work at {company}.")));
        use LoadText(|ctx| Ok(ctx.persona().instructions.clone()), role = Role::Assistant);
        use LoadFile("prompts/agent.md");
        use LoadFile(path = "prompts/{{ persona.name | slugify }}.md", role = assistant);
        use LoadFile(concat!("prompts/", "tool.md"), role = tool);
        use ThreadHistory;
        use ThreadHistory();
        use ThreadHistory(limit = 10, include_tool_calls = false, result_limit = 200, max_tokens = 2000);
        use ThreadHistory(limit = None, max_tokens = None);
        use ThreadHistory(limit = 20, window = stable, step = 5);
        use ThreadHistory(window = "sliding");
        use LoadTextResolver("Aliases work too.");
        use ThreadHistoryResolver(limit = 0);
    };
    assert_eq!(
        chain.names(),
        [
            "LoadText",
            "LoadText",
            "LoadText",
            "LoadText",
            "LoadText",
            "LoadFile",
            "LoadFile",
            "LoadFile",
            "ThreadHistory",
            "ThreadHistory",
            "ThreadHistory",
            "ThreadHistory",
            "ThreadHistory",
            "ThreadHistory",
            "LoadText",
            "ThreadHistory",
        ]
    );
}
