//! Every option of every built-in, as the shared table (`protege-schema`) writes its
//! example; rendered by `tests/macro_ui.rs`.
use protege::{Chain, Context};

/// A record of `load_accounts`.
#[derive(serde::Serialize)]
struct Account {
    name: String,
}

async fn load_accounts(_ctx: Context) -> Result<Vec<Account>, String> {
    Ok(vec![Account { name: "Alice".into() }])
}

fn main() {
    let chain = protege::resolvers! {
        use LoadText(|ctx: &Context| Ok(ctx.persona().name.clone()));
        use LoadText(template = "You are {{ persona.name }}.");
        use LoadText(template = "You are {{ persona.name }}.", role = user);
    };
    assert_eq!(chain.names(), ["LoadText"; 3]);
    let chain = protege::resolvers! {
        use LoadFile("prompts/agent.md");
        use LoadFile(path = "prompts/{{ persona.name | slugify }}.md");
        use LoadFile(path = "prompts/{{ persona.name | slugify }}.md", role = user);
    };
    assert_eq!(chain.names(), ["LoadFile"; 3]);
    let chain = protege::resolvers! {
        use LoadRecord(load_accounts);
        use LoadRecord(table = "accounts");
        use LoadRecord(table = "accounts", where = { email = "{{ message.from }}", seats = 5 });
        use LoadRecord(table = "accounts", order_by = ["plan", "id desc"]);
        use LoadRecord(table = "accounts", limit = 5);
        use LoadRecord(table = "accounts", template = "{{ record.name }} ({{ record.plan }})");
        use LoadRecord(load_accounts, render_with = |record: &Account| record.name.clone());
        use LoadRecord(table = "accounts", role = user);
    };
    assert_eq!(chain.names(), ["LoadRecord"; 8]);
    let chain = protege::resolvers! {
        use ThreadHistory(limit = 10);
        use ThreadHistory(window = stable);
        use ThreadHistory(window = stable, step = 5);
        use ThreadHistory(after_summary = true);
        use ThreadHistory(include_tool_calls = false);
        use ThreadHistory(result_limit = 2000);
        use ThreadHistory(max_tokens = 2000);
        use ThreadHistory(quoted = strip);
    };
    assert_eq!(chain.names(), ["ThreadHistory"; 8]);
    let chain = protege::resolvers! {
        use ThreadSummary(template = "Earlier: {{ summary }}");
        use ThreadSummary(role = user);
    };
    assert_eq!(chain.names(), ["ThreadSummary"; 2]);
    let chain = protege::resolvers! {
        use CorrespondentHistory(threads = 5);
        use CorrespondentHistory(messages = 2);
        use CorrespondentHistory(template = "Earlier: {{ thread.subject }}");
        use CorrespondentHistory(role = user);
        use CorrespondentHistory(quoted = strip);
    };
    assert_eq!(chain.names(), ["CorrespondentHistory"; 5]);
    let chain = protege::resolvers! {
        use OpenThreads(within = "3d");
        use OpenThreads(limit = 10);
        use OpenThreads(template = "- {{ thread.subject }} ({{ thread.from }})");
        use OpenThreads(role = user);
    };
    assert_eq!(chain.names(), ["OpenThreads"; 4]);
}
