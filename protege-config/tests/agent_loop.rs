//! The keys the agent reads from a persona file (DESIGN §17): how `[model]` reaches the
//! provider, which mail `[agent]` answers and how often, what runs each `[[tools]]` entry,
//! the tools of reply and scheduled runs, and the environment variables the file names.
//! Each value is read with its default, and each mistake is reported at its place.

use std::path::Path;
use std::time::Duration;

use protege_config::{Persona, PersonaSet, Registry};
use protege_core::{
    AfterPerson, Approval, BuiltinTool, HttpTool, McpServer, McpTool, ModelConfig, OpenaiApi,
    PersonaAgent, PersonaTool, Provider, READ_ATTACHMENT_DESCRIPTION, ReplyMode, Responsibility,
    ToolDef, ToolRunner, Unauthenticated,
};
use serde_json::json;

/// A reply chain, so that the rest of each file is valid.
const CHAIN: &str = "\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Hello.\"\n";

/// A tool the application runs, declared with its name, description and schema.
const LOOKUP: &str = "[[tools]]\nname = \"lookup_order\"\ndescription = \"Order status\"\ninput_schema = { type = \"object\" }\n";

fn text(source: &str) -> String {
    format!("{source}\n{CHAIN}")
}

fn parse(source: &str) -> Result<Persona, protege_config::Diagnostics> {
    Persona::parse(Path::new("p.toml"), &text(source), &Registry::new())
}

/// The persona of `source`, which must load.
fn load(source: &str) -> Persona {
    match parse(source) {
        Ok(p) => p,
        Err(d) => panic!("{source}\n{d}"),
    }
}

fn model(source: &str) -> ModelConfig {
    load(source).info.model.clone().expect("a [model] table")
}

fn agent(source: &str) -> PersonaAgent {
    load(source).info.agent.clone().expect("an [agent] table")
}

/// The headlines of the problems of `source`, which must not load.
fn errors(source: &str) -> Vec<String> {
    match parse(source) {
        Ok(_) => panic!("loaded: {source}"),
        Err(d) => d.iter().map(|d| d.headline()).collect(),
    }
}

/// The one problem of `source`.
fn error(source: &str) -> String {
    let mut errors = errors(source);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    errors.remove(0)
}

fn http(url: &str, secret_env: Option<&str>, timeout: u64) -> ToolRunner {
    ToolRunner::Http(HttpTool {
        url: url.to_owned(),
        secret_env: secret_env.map(str::to_owned),
        timeout: Duration::from_secs(timeout),
    })
}

// --- [model] -----------------------------------------------------------------------------

#[test]
fn the_provider_gives_the_key_variable_the_url_and_the_timeout() {
    let anthropic = model("[model]\nprovider = \"anthropic\"");
    assert_eq!(
        (
            anthropic.api_key_env(),
            anthropic.base_url(),
            anthropic.timeout()
        ),
        (
            Some("ANTHROPIC_API_KEY"),
            Some("https://api.anthropic.com"),
            Duration::from_secs(120)
        )
    );
    let openai = model("[model]\nprovider = \"openai\"");
    assert_eq!(
        (openai.api_key_env(), openai.base_url()),
        (Some("OPENAI_API_KEY"), Some("https://api.openai.com"))
    );
    // Without a provider there is nothing to default to.
    let none = model("[model]\nname = \"m\"");
    assert_eq!((none.api_key_env(), none.base_url()), (None, None));
    assert_eq!(
        protege_core::DEFAULT_MODEL_TIMEOUT,
        Duration::from_secs(120)
    );
}

#[test]
fn every_model_key_of_the_agent_is_read() {
    let m = model(
        "[model]\nprovider = \"openai\"\napi_key_env = \"SUPPORT_OPENAI_KEY\"\nbase_url = \"https://gateway.acme.test/openai\"\ntimeout = \"90s\"",
    );
    assert_eq!(
        m,
        ModelConfig {
            provider: Some(Provider::Openai),
            api_key_env: Some("SUPPORT_OPENAI_KEY".into()),
            base_url: Some("https://gateway.acme.test/openai".into()),
            timeout: Some(Duration::from_secs(90)),
            ..ModelConfig::default()
        }
    );
    assert_eq!(
        (m.api_key_env(), m.base_url(), m.timeout()),
        (
            Some("SUPPORT_OPENAI_KEY"),
            Some("https://gateway.acme.test/openai"),
            Duration::from_secs(90)
        )
    );
}

#[test]
fn openai_s_api_chooses_the_responses_format_and_is_written_only_when_set() {
    let responses = model("[model]\nprovider = \"openai\"\napi = \"responses\"\nname = \"gpt-5\"");
    let chat = model("[model]\nprovider = \"openai\"\napi = \"chat\"");
    let default = model("[model]\nprovider = \"openai\"");
    assert_eq!(
        [&responses, &chat, &default].map(|m| (m.api, m.uses_responses())),
        [
            (Some(OpenaiApi::Responses), true),
            (Some(OpenaiApi::Chat), false),
            (None, false)
        ]
    );
    let value = serde_json::to_value(&responses).unwrap();
    assert_eq!(
        value,
        json!({"provider": "openai", "api": "responses", "name": "gpt-5", "max_tokens": null, "cache": "auto"})
    );
    assert_eq!(
        serde_json::from_value::<ModelConfig>(value).unwrap(),
        responses
    );
    assert_eq!(serde_json::to_value(&default).unwrap()["api"], json!(null));
    // Every mistake at its place (the file's line 2 is `provider`, line 3 `api`).
    assert_eq!(
        [
            error("[model]\nprovider = \"openai\"\napi = \"respones\""),
            error("[model]\nprovider = \"openai\"\napi = 2"),
            error("[model]\nprovider = \"anthropic\"\napi = \"chat\""),
            error("[model]\nname = \"gpt-5\"\napi = \"responses\""),
            error("[model]\nprovider = \"mistral\"\napi = \"responses\""),
        ],
        [
            "p.toml:3:7: error: unknown api `respones`, did you mean `responses`?",
            "p.toml:3:7: error: `api` must be a string, found an integer",
            "p.toml:3:7: error: `api` chooses between OpenAI's APIs; `provider = \"anthropic\"` has only the Messages API: remove `api` or set `provider = \"openai\"`",
            "p.toml:3:7: error: `api` chooses between OpenAI's APIs and needs `provider = \"openai\"` in the same table",
            "p.toml:2:12: error: unknown provider `mistral`, expected `openai` or `anthropic`",
        ]
    );
}

#[test]
fn the_model_keeps_its_json_and_writes_the_new_keys_only_when_set() {
    let m = model("[model]\nprovider = \"anthropic\"\nname = \"claude-sonnet-4-5\"");
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({"provider": "anthropic", "name": "claude-sonnet-4-5", "max_tokens": null, "cache": "auto"})
    );
    let m = model(
        "[model]\nprovider = \"anthropic\"\napi_key_env = \"K\"\nbase_url = \"http://127.0.0.1:8080\"\ntimeout = \"2m\"",
    );
    let value = serde_json::to_value(&m).unwrap();
    assert_eq!(
        (&value["api_key_env"], &value["base_url"], &value["timeout"]),
        (&json!("K"), &json!("http://127.0.0.1:8080"), &json!("120s"))
    );
    assert_eq!(serde_json::from_value::<ModelConfig>(value).unwrap(), m);
    // A body written before these keys reads as before.
    let old: ModelConfig =
        serde_json::from_value(json!({"provider": "openai", "name": "m", "max_tokens": 5}))
            .unwrap();
    assert_eq!(
        (old.timeout, old.base_url()),
        (None, Some("https://api.openai.com"))
    );
}

#[test]
fn the_provider_url_is_https_unless_the_host_is_this_machine() {
    for url in [
        "http://localhost:8080",
        "http://127.0.0.1:9999/v1",
        "http://127.8.9.10",
        "http://[::1]:4000/stand-in",
        "https://api.anthropic.com",
        "https://[2001:db8::7]:8443/anthropic?region=eu",
    ] {
        assert_eq!(
            model(&format!("[model]\nbase_url = \"{url}\"")).base_url(),
            Some(url),
            "{url}"
        );
    }
    assert_eq!(
        error("[model]\nbase_url = \"http://api.anthropic.com\""),
        "p.toml:2:12: error: `base_url` must be `https://`: TLS is required unless the host is a loopback address (`localhost`, `127.0.0.0/8`, `[::1]`), and `api.anthropic.com` is not one"
    );
    assert_eq!(
        error("[model]\nbase_url = \"http://10.0.0.7:8080\""),
        "p.toml:2:12: error: `base_url` must be `https://`: TLS is required unless the host is a loopback address (`localhost`, `127.0.0.0/8`, `[::1]`), and `10.0.0.7` is not one"
    );
}

#[test]
fn model_values_are_checked() {
    assert_eq!(
        error("[model]\nbase_url = \"ftp://api.acme.test\""),
        "p.toml:2:12: error: invalid `base_url`: expected `https://host[:port][/path]` or `http://host[:port][/path]`"
    );
    // The URL is not repeated: it may hold the key.
    assert_eq!(
        error("[model]\nbase_url = \"https://sk-ant-123@api.anthropic.com\""),
        "p.toml:2:12: error: invalid `base_url`: a login or secret goes in `api_key_env`, not in the URL"
    );
    assert_eq!(
        error("[model]\nbase_url = \"https://api.anthropic.com/v1#top\""),
        "p.toml:2:12: error: invalid `base_url`: a URL here has no fragment (`#…`)"
    );
    assert_eq!(
        error("[model]\nbase_url = \"https://\""),
        "p.toml:2:12: error: invalid `base_url`: the host is missing"
    );
    assert_eq!(
        error("[model]\nbase_url = 443"),
        "p.toml:2:12: error: `base_url` must be a string, found an integer"
    );
    assert_eq!(
        error("[model]\napi_key_env = \"sk-ant-api03-secret\""),
        "p.toml:2:15: error: `api_key_env` must be the name of an environment variable (ASCII letters, digits and `_`, not starting with a digit), not its value"
    );
    assert_eq!(
        error("[model]\ntimeout = 120"),
        "p.toml:2:11: error: `timeout` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found an integer"
    );
    assert_eq!(
        error("[model]\napi_key = \"K\""),
        "p.toml:2:1: error: unknown key `api_key` in `[model]`"
    );
}

// --- [agent] -----------------------------------------------------------------------------

#[test]
fn every_agent_key_of_the_loop_is_read() {
    let source = format!(
        "{LOOKUP}\n[agent]\nanswer_automated = true\nanswer_cc = false\nafter_person = \"answer\"\nmax_age = \"2d\"\nmax_replies_per_thread_per_day = 2\nmax_replies_per_correspondent_per_day = 4\nmax_replies_per_day = 50\ntokens_per_day = 2_000_000\nprovider_attempts = 7\nmax_attempts = 1\ngive_up_after = \"6h\"\npause = \"30m\"\nreply_tools = [\"lookup_order\"]"
    );
    assert_eq!(
        agent(&source),
        PersonaAgent {
            answer_automated: true,
            answer_cc: false,
            after_person: AfterPerson::Answer,
            max_age: Duration::from_secs(2 * 86_400),
            max_replies_per_thread_per_day: 2,
            max_replies_per_correspondent_per_day: 4,
            max_replies_per_day: 50,
            tokens_per_day: Some(2_000_000),
            provider_attempts: 7,
            max_attempts: 1,
            give_up_after: Duration::from_secs(6 * 3600),
            pause: Duration::from_secs(1800),
            reply_tools: Some(vec!["lookup_order".into()]),
            ..PersonaAgent::default()
        }
    );
    let a = agent(&source);
    assert!(a.offers_reply_tool("lookup_order"));
    assert!(!a.offers_reply_tool("issue_refund"));
    // Without `reply_tools`, every tool; with an empty list, none.
    assert!(agent("[agent]").offers_reply_tool("anything"));
    let none = agent("[agent]\nreply_tools = []");
    assert_eq!(none.reply_tools, Some(Vec::new()));
    assert!(!none.offers_reply_tool("lookup_order"));
}

#[test]
fn the_defaults_of_the_loop_are_the_design_s() {
    use protege_core::*;
    assert_eq!(DEFAULT_MAX_AGE, Duration::from_secs(7 * 86_400));
    assert_eq!(DEFAULT_MAX_REPLIES_PER_THREAD_PER_DAY, 5);
    assert_eq!(DEFAULT_MAX_REPLIES_PER_CORRESPONDENT_PER_DAY, 10);
    assert_eq!(DEFAULT_MAX_REPLIES_PER_DAY, 1000);
    assert_eq!(DEFAULT_PROVIDER_ATTEMPTS, 5);
    assert_eq!(DEFAULT_MAX_ATTEMPTS, 3);
    assert_eq!(DEFAULT_JOB_GIVE_UP_AFTER, Duration::from_secs(24 * 3600));
    assert_eq!(DEFAULT_PAUSE, Duration::from_secs(600));
    assert_eq!(DEFAULT_TOOL_TIMEOUT, Duration::from_secs(30));
    let a = PersonaAgent::default();
    assert_eq!(
        (
            a.answer_automated,
            a.answer_cc,
            a.after_person,
            a.tokens_per_day
        ),
        (false, true, AfterPerson::Skip, None)
    );
}

#[test]
fn agent_loop_values_are_checked() {
    assert_eq!(
        error("[agent]\nafter_person = \"answr\""),
        "p.toml:2:16: error: unknown `after_person` value `answr`, did you mean `answer`?"
    );
    assert_eq!(
        error("[agent]\nafter_person = \"wait\""),
        "p.toml:2:16: error: unknown `after_person` value `wait`, expected `skip` or `answer`"
    );
    assert_eq!(
        error("[agent]\nanswer_cc = \"no\""),
        "p.toml:2:13: error: `answer_cc` must be a boolean, found a string"
    );
    assert_eq!(
        error("[agent]\nanswer_automated = 0"),
        "p.toml:2:20: error: `answer_automated` must be a boolean, found an integer"
    );
    assert_eq!(
        error("[agent]\nmax_age = \"1w\""),
        "p.toml:2:11: error: `max_age` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `1w`"
    );
    assert_eq!(
        error("[agent]\ngive_up_after = \"400d\""),
        "p.toml:2:17: error: `give_up_after` must be at most 365 days, found `400d`"
    );
    assert_eq!(
        error("[agent]\npause = \"0s\""),
        "p.toml:2:9: error: `pause` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `0s`"
    );
    assert_eq!(
        error("[agent]\nmax_replies_per_thread_per_day = 0"),
        "p.toml:2:34: error: `max_replies_per_thread_per_day` must be a positive integer, found `0`"
    );
    assert_eq!(
        error("[agent]\nmax_replies_per_correspondent_per_day = -1"),
        "p.toml:2:41: error: `max_replies_per_correspondent_per_day` must be a positive integer, found `-1`"
    );
    assert_eq!(
        error("[agent]\nmax_replies_per_day = \"1000\""),
        "p.toml:2:23: error: `max_replies_per_day` must be a positive integer, found a string"
    );
    assert_eq!(
        error("[agent]\ntokens_per_day = 0"),
        "p.toml:2:18: error: `tokens_per_day` must be a positive integer, found `0`"
    );
    assert_eq!(
        error("[agent]\nprovider_attempts = 0"),
        "p.toml:2:21: error: `provider_attempts` must be a positive integer, found `0`"
    );
    assert_eq!(
        error("[agent]\nmax_attempts = 1.5"),
        "p.toml:2:16: error: `max_attempts` must be a positive integer, found a float"
    );
    assert_eq!(
        error("[agent]\nmax_replies_per_thread = 5"),
        "p.toml:2:1: error: unknown key `max_replies_per_thread` in `[agent]`, did you mean `max_replies_per_day`?"
    );
}

// --- tool names in [agent] and [[responsibilities]] ----------------------------------------

#[test]
fn reply_tools_name_tools_of_the_persona() {
    let source = |names: &str| format!("{LOOKUP}\n[agent]\nreply_tools = {names}");
    assert_eq!(
        error(&source("[\"lookup_ordr\"]")),
        "p.toml:7:16: error: unknown tool `lookup_ordr` in `reply_tools`, did you mean `lookup_order`?"
    );
    assert_eq!(
        error(&source("[\"lookup_order\", \"issue_refund\"]")),
        "p.toml:7:32: error: unknown tool `issue_refund` in `reply_tools`: no `[[tools]]` entry declares it"
    );
    assert_eq!(
        error(&source("[\"lookup_order\", \"lookup_order\"]")),
        "p.toml:7:32: error: `reply_tools` names `lookup_order` twice"
    );
    assert_eq!(
        error(&source("[\"lookup order\"]")),
        "p.toml:7:16: error: invalid tool name `lookup order` in `reply_tools`: use 1 to 64 ASCII letters, digits, `_` or `-`"
    );
    assert_eq!(
        error(&source("\"lookup_order\"")),
        "p.toml:7:15: error: `reply_tools` must be an array, found a string"
    );
    assert_eq!(
        error(&source("[1]")),
        "p.toml:7:16: error: `reply_tools[0]` must be a string, found an integer"
    );
    // No tool at all.
    assert_eq!(
        error("[agent]\nreply_tools = [\"lookup_order\"]"),
        "p.toml:2:16: error: unknown tool `lookup_order` in `reply_tools`: no `[[tools]]` entry declares it"
    );
}

#[test]
fn builtin_tools_count_and_mcp_names_are_matched_by_allow() {
    let source = "[[tools]]\nbuiltin = \"read_attachment\"\n\n[[tools]]\nmcp = { url = \"https://kb.internal/mcp\", allow = [\"search_*\", \"get_article\"] }\n\n[agent]\nreply_tools = [\"read_attachment\", \"search_articles\", \"get_article\"]";
    assert_eq!(
        agent(source).reply_tools,
        Some(vec![
            "read_attachment".into(),
            "search_articles".into(),
            "get_article".into()
        ])
    );
    assert_eq!(
        error(&source.replace(
            "\"search_articles\", \"get_article\"]",
            "\"delete_article\"]"
        )),
        "p.toml:8:35: error: unknown tool `delete_article` in `reply_tools`: no `[[tools]]` entry declares it and no `allow` of an `mcp` entry matches it"
    );
    // `allow` left out: every name an MCP server may list.
    let open = "[[tools]]\nmcp = { command = [\"kb-mcp\"] }\n\n[agent]\nreply_tools = [\"anything-at-all\"]";
    assert_eq!(
        agent(open).reply_tools,
        Some(vec!["anything-at-all".into()])
    );
}

#[test]
fn a_mistake_in_tools_does_not_make_their_names_unknown() {
    // The entry is reported once; `reply_tools` naming it is not a second problem.
    assert_eq!(
        error(
            "[[tools]]\nname = \"lookup_order\"\ndescription = \"x\"\n\n[agent]\nreply_tools = [\"lookup_order\"]"
        ),
        "p.toml:1:1: error: a tool needs the key `input_schema`"
    );
    assert_eq!(
        error("tools = 3\n\n[agent]\nreply_tools = [\"lookup_order\"]"),
        "p.toml:1:9: error: `tools` must be an array, found an integer"
    );
    assert_eq!(
        error(
            "[[tools]]\nmcp = { url = \"https://kb.internal/mcp\", allow = [\"search articles\"] }\n\n[agent]\nreply_tools = [\"search_articles\"]"
        ),
        "p.toml:2:51: error: invalid pattern `search articles` in `allow`: use ASCII letters, digits, `_`, `-` and `*`, which stands for any run of them"
    );
}

#[test]
fn responsibilities_name_the_tools_of_their_runs() {
    let source = format!(
        "{LOOKUP}\n[[responsibilities]]\nname = \"digest\"\nschedule = \"0 8 * * *\"\ntools = [\"lookup_order\"]\n\n[[responsibilities]]\nname = \"weekly\"\nschedule = \"0 9 * * 1\""
    );
    let p = load(&source);
    assert_eq!(
        p.info.responsibilities,
        vec![
            Responsibility {
                name: "digest".into(),
                schedule: "0 8 * * *".into(),
                tools: vec!["lookup_order".into()],
                ..Responsibility::default()
            },
            Responsibility {
                name: "weekly".into(),
                schedule: "0 9 * * 1".into(),
                ..Responsibility::default()
            },
        ]
    );
    // Serialised as before when it names none.
    assert_eq!(
        serde_json::to_value(&p.info.responsibilities).unwrap(),
        json!([
            {"name": "digest", "schedule": "0 8 * * *", "instructions": "", "tools": ["lookup_order"]},
            {"name": "weekly", "schedule": "0 9 * * 1", "instructions": ""}
        ])
    );
    assert_eq!(
        error(&format!(
            "{LOOKUP}\n[[responsibilities]]\nname = \"digest\"\nschedule = \"0 8 * * *\"\ntools = [\"lookup_orders\"]"
        )),
        "p.toml:9:10: error: unknown tool `lookup_orders` in `tools`, did you mean `lookup_order`?"
    );
}

// --- [[tools]] and what runs them -----------------------------------------------------------

#[test]
fn a_tool_without_a_runner_is_the_application_s() {
    let p = load(LOOKUP);
    assert_eq!(
        p.info.tools,
        vec![ToolDef {
            name: "lookup_order".into(),
            description: "Order status".into(),
            input_schema: json!({"type": "object"}),
        }]
    );
    assert_eq!(p.info.tool_runners, Vec::new());
    assert_eq!(p.info.tool_runner("lookup_order"), None);
}

#[test]
fn an_http_tool_is_declared_and_run_by_protege() {
    let source = "[[tools]]\nname = \"lookup_order\"\ndescription = \"Order status\"\ninput_schema = { type = \"object\" }\nhttp = { url = \"https://orders.internal/tools/lookup_order\", secret_env = \"ORDERS_TOOL_SECRET\", timeout = \"10s\" }\n\n[[tools]]\nname = \"issue_refund\"\ndescription = \"Refund\"\ninput_schema = { type = \"object\" }\nhttp = { url = \"http://billing.internal:8080/refund\" }\napproval = true";
    let p = load(source);
    assert_eq!(
        p.info
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["lookup_order", "issue_refund"]
    );
    assert_eq!(
        p.info.tool_runners,
        vec![
            PersonaTool {
                name: Some("lookup_order".into()),
                runner: http(
                    "https://orders.internal/tools/lookup_order",
                    Some("ORDERS_TOOL_SECRET"),
                    10
                ),
                approval: false,
            },
            // Plain HTTP to an internal service is allowed; the default timeout is 30 s.
            PersonaTool {
                name: Some("issue_refund".into()),
                runner: http("http://billing.internal:8080/refund", None, 30),
                approval: true,
            },
        ]
    );
    assert_eq!(
        p.info.tool_runner("issue_refund"),
        Some(&p.info.tool_runners[1])
    );
}

#[test]
fn http_tools_are_checked() {
    let tool = |http: &str| format!("{LOOKUP}http = {http}");
    assert_eq!(
        error(&tool("{ url = \"ftp://orders.internal/lookup\" }")),
        "p.toml:5:16: error: invalid `http.url`: expected `https://host[:port][/path]` or `http://host[:port][/path]`"
    );
    assert_eq!(
        error(&tool(
            "{ url = \"https://tool:s3cret@orders.internal/lookup\" }"
        )),
        "p.toml:5:16: error: invalid `http.url`: a login or secret goes in `http.secret_env`, not in the URL"
    );
    assert_eq!(
        error(&tool("{ secret_env = \"ORDERS_TOOL_SECRET\" }")),
        "p.toml:5:8: error: `http` needs the key `url`"
    );
    assert_eq!(
        error(&tool(
            "{ url = \"https://orders.internal\", secret = \"x\" }"
        )),
        "p.toml:5:43: error: unknown key `secret` in `http`"
    );
    assert_eq!(
        error(&tool(
            "{ url = \"https://orders.internal\", secret_env = \"s3cr3t!\" }"
        )),
        "p.toml:5:56: error: `secret_env` must be the name of an environment variable (ASCII letters, digits and `_`, not starting with a digit), not its value"
    );
    assert_eq!(
        error(&tool(
            "{ url = \"https://orders.internal\", timeout = \"10\" }"
        )),
        "p.toml:5:53: error: `timeout` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `10`"
    );
    assert_eq!(
        error(&tool("\"https://orders.internal\"")),
        "p.toml:5:8: error: `http` must be a table, found a string"
    );
    // An http tool declares its tool as any other.
    assert_eq!(
        error(
            "[[tools]]\nname = \"lookup_order\"\ninput_schema = { type = \"object\" }\nhttp = { url = \"https://orders.internal\" }"
        ),
        "p.toml:1:1: error: a tool needs the key `description`"
    );
}

#[test]
fn a_tool_has_at_most_one_runner() {
    assert_eq!(
        error(&format!(
            "{LOOKUP}http = {{ url = \"https://orders.internal\" }}\nbuiltin = \"read_attachment\""
        )),
        "p.toml:6:11: error: a tool has at most one of `http`, `mcp` and `builtin`, and this one has `http` and `builtin`"
    );
    assert_eq!(
        error(
            "[[tools]]\nmcp = { url = \"https://kb.internal/mcp\" }\nbuiltin = \"read_attachment\""
        ),
        "p.toml:3:11: error: a tool has at most one of `http`, `mcp` and `builtin`, and this one has `mcp` and `builtin`"
    );
}

#[test]
fn approval_needs_a_runner() {
    assert_eq!(
        error(&format!("{LOOKUP}approval = true")),
        "p.toml:5:12: error: `approval` needs `http`, `mcp` or `builtin`: protege waits for a person only before a call it makes itself"
    );
    assert_eq!(
        error("[[tools]]\nbuiltin = \"read_attachment\"\napproval = \"yes\""),
        "p.toml:3:12: error: `approval` must be a boolean, found a string"
    );
}

#[test]
fn an_mcp_entry_declares_no_tool_and_reaches_one_server() {
    let p = load(
        "[[tools]]\nmcp = { url = \"https://kb.internal/mcp\", allow = [\"search_*\"], token_env = \"KB_MCP_TOKEN\" }\napproval = true\n\n[[tools]]\nmcp = { command = [\"kb-mcp\", \"--stdio\"], timeout = \"5s\" }",
    );
    assert_eq!(p.info.tools, Vec::new());
    let kb = McpTool {
        server: McpServer::Url("https://kb.internal/mcp".into()),
        allow: vec!["search_*".into()],
        token_env: Some("KB_MCP_TOKEN".into()),
        timeout: Duration::from_secs(30),
    };
    let stdio = McpTool {
        server: McpServer::Command(vec!["kb-mcp".into(), "--stdio".into()]),
        allow: vec!["*".into()],
        token_env: None,
        timeout: Duration::from_secs(5),
    };
    assert_eq!(
        p.info.tool_runners,
        vec![
            PersonaTool {
                name: None,
                runner: ToolRunner::Mcp(kb.clone()),
                approval: true,
            },
            PersonaTool {
                name: None,
                runner: ToolRunner::Mcp(stdio),
                approval: false,
            },
        ]
    );
    assert!(kb.allows("search_articles") && kb.allows("search_"));
    assert!(!kb.allows("get_article") && !kb.allows("research_x"));
    // A name goes to the first server that allows it.
    assert_eq!(
        p.info.tool_runner("search_articles"),
        Some(&p.info.tool_runners[0])
    );
    assert_eq!(
        p.info.tool_runner("get_article"),
        Some(&p.info.tool_runners[1])
    );
}

#[test]
fn mcp_entries_are_checked() {
    assert_eq!(
        errors(
            "[[tools]]\nname = \"kb\"\ndescription = \"Knowledge base\"\ninput_schema = { type = \"object\" }\nmcp = { url = \"https://kb.internal/mcp\" }"
        ),
        [
            "p.toml:2:8: error: `name` does not go with `mcp`: the server names its tools",
            "p.toml:3:15: error: `description` does not go with `mcp`: the server describes its tools",
            "p.toml:4:16: error: `input_schema` does not go with `mcp`: the server gives the schema of each tool",
        ]
    );
    let mcp = |table: &str| error(&format!("[[tools]]\nmcp = {table}"));
    assert_eq!(
        mcp("{ allow = [\"search_*\"] }"),
        "p.toml:2:7: error: `mcp` needs `url` (a streamable HTTP server) or `command` (a program spoken to over its standard input and output)"
    );
    assert_eq!(
        mcp("{ url = \"https://kb.internal/mcp\", command = [\"kb-mcp\"] }"),
        "p.toml:2:52: error: `mcp` takes one of `url` and `command`, not both"
    );
    assert_eq!(
        mcp("{ url = \"ftp://kb.internal\" }"),
        "p.toml:2:15: error: invalid `mcp.url`: expected `https://host[:port][/path]` or `http://host[:port][/path]`"
    );
    assert_eq!(
        mcp("{ command = [] }"),
        "p.toml:2:19: error: `command` must start with a program, as in `[\"kb-mcp\", \"--stdio\"]`"
    );
    assert_eq!(
        mcp("{ command = \"kb-mcp --stdio\" }"),
        "p.toml:2:19: error: `command` must be an array, found a string"
    );
    assert_eq!(
        mcp("{ command = [\"kb-mcp\", 1] }"),
        "p.toml:2:30: error: `command[1]` must be a string, found an integer"
    );
    assert_eq!(
        mcp("{ command = [\"kb-mcp\"], token_env = \"KB_MCP_TOKEN\" }"),
        "p.toml:2:43: error: `token_env` goes with `url`: a `command` server is sent no bearer token"
    );
    assert_eq!(
        mcp("{ url = \"https://kb.internal/mcp\", allow = [] }"),
        "p.toml:2:50: error: `allow` must have at least one pattern; leave it out to offer every tool"
    );
    assert_eq!(
        mcp("{ url = \"https://kb.internal/mcp\", alow = [\"*\"] }"),
        "p.toml:2:42: error: unknown key `alow` in `mcp`, did you mean `allow`?"
    );
    assert_eq!(
        mcp("{ uri = \"https://kb.internal/mcp\" }"),
        "p.toml:2:9: error: unknown key `uri` in `mcp`, did you mean `url`?"
    );
}

#[test]
fn read_attachment_is_a_builtin_with_its_own_definition() {
    let p = load("[[tools]]\nbuiltin = \"read_attachment\"");
    let def = BuiltinTool::ReadAttachment.tool_def();
    assert_eq!(
        def,
        ToolDef {
            name: "read_attachment".into(),
            description: READ_ATTACHMENT_DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "attachment_id": {
                        "type": "string",
                        "description": "The id of the attachment, as the attachments list of a message shows it."
                    }
                },
                "required": ["attachment_id"]
            }),
        }
    );
    assert_eq!(p.info.tools, vec![def.clone()]);
    assert_eq!(
        p.info.tool_runners,
        vec![PersonaTool {
            name: Some("read_attachment".into()),
            runner: ToolRunner::Builtin(BuiltinTool::ReadAttachment),
            approval: false,
        }]
    );
    // `description` replaces the built-in's own; nothing else changes.
    let p = load(
        "[[tools]]\nbuiltin = \"read_attachment\"\ndescription = \"Read an invoice the customer attached.\"",
    );
    assert_eq!(
        p.info.tools,
        vec![ToolDef {
            description: "Read an invoice the customer attached.".into(),
            ..def
        }]
    );
}

#[test]
fn builtin_entries_are_checked() {
    assert_eq!(
        error("[[tools]]\nbuiltin = \"read_attachments\""),
        "p.toml:2:11: error: unknown `builtin` value `read_attachments`, did you mean `read_attachment`?"
    );
    assert_eq!(
        error("[[tools]]\nbuiltin = \"web_search\""),
        "p.toml:2:11: error: unknown `builtin` value `web_search`, expected `read_attachment`"
    );
    assert_eq!(
        errors(
            "[[tools]]\nbuiltin = \"read_attachment\"\nname = \"attachment\"\ninput_schema = { type = \"object\" }"
        ),
        [
            "p.toml:3:8: error: `name` does not go with `builtin`: a built-in tool has its own name",
            "p.toml:4:16: error: `input_schema` does not go with `builtin`: a built-in tool has its own schema",
        ]
    );
    // Two tools of one name stay an error, a built-in's too.
    assert_eq!(
        error(
            "[[tools]]\nname = \"read_attachment\"\ndescription = \"x\"\ninput_schema = { type = \"object\" }\n\n[[tools]]\nbuiltin = \"read_attachment\""
        ),
        "p.toml:7:11: error: duplicate tool `read_attachment`"
    );
    assert_eq!(
        error(&format!("{LOOKUP}\n{LOOKUP}")),
        "p.toml:7:8: error: duplicate tool `lookup_order`"
    );
}

// --- the example of DESIGN §17 ---------------------------------------------------------------

const EXAMPLE: &str = r#"name = "support"
addresses = ["support@acme.test"]

[model]
provider = "anthropic"            # anthropic | openai
name = "claude-sonnet-4-5"
api_key_env = "ANTHROPIC_API_KEY" # default per provider; a secret is never written in a persona
base_url = "https://api.anthropic.com"   # default per provider; tests point it at a local stand-in
timeout = "120s"

[agent]
reply = "send"                    # send | draft (every reply waits for approval) | off
approval = "never"                # never | always | first_contact
unauthenticated = "draft"         # draft | send | skip
reply_all = false
reply_tools = ["lookup_order", "issue_refund"]   # tools of reply runs (default: every tool)
max_replies_per_thread_per_day = 5
tokens_per_day = 2_000_000        # past it, jobs wait for the next day (never skipped)

[[tools]]
name = "lookup_order"
description = "Order status by order number"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }
http = { url = "https://orders.internal/tools/lookup_order", secret_env = "ORDERS_TOOL_SECRET", timeout = "10s" }

[[tools]]
name = "issue_refund"
description = "Refund an order"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }
http = { url = "https://billing.internal/tools/refund", secret_env = "BILLING_TOOL_SECRET" }
approval = true                   # the run waits for a person before the call is made

[[tools]]
mcp = { url = "https://kb.internal/mcp", allow = ["search_*"], token_env = "KB_MCP_TOKEN" }

[[tools]]
builtin = "read_attachment"       # the seed's tool: an attachment of the trigger's thread by id

[[responsibilities]]
name = "daily-digest"
schedule = "0 8 * * *"
tools = ["search_open_threads"]

[outbox]
smtp = "smtp://mail.acme.test:587"
user = "support@acme.test"
password_env = "SMTP_PASSWORD"
"#;

#[test]
fn the_design_example_loads_into_these_values() {
    let p = Persona::parse(Path::new("support.toml"), &text(EXAMPLE), &Registry::new())
        .unwrap_or_else(|d| panic!("{d}"));
    let info = &p.info;
    assert_eq!(
        info.model,
        Some(ModelConfig {
            provider: Some(Provider::Anthropic),
            api: None,
            name: Some("claude-sonnet-4-5".into()),
            max_tokens: None,
            cache: protege_core::CacheMode::Auto,
            cache_ttl: protege_core::CacheTtl::FiveMinutes,
            prices: None,
            api_key_env: Some("ANTHROPIC_API_KEY".into()),
            base_url: Some("https://api.anthropic.com".into()),
            timeout: Some(Duration::from_secs(120)),
        })
    );
    assert_eq!(
        info.agent,
        Some(PersonaAgent {
            reply: ReplyMode::Send,
            approval: Approval::Never,
            unauthenticated: Unauthenticated::Draft,
            reply_all: false,
            reply_tools: Some(vec!["lookup_order".into(), "issue_refund".into()]),
            max_replies_per_thread_per_day: 5,
            tokens_per_day: Some(2_000_000),
            ..PersonaAgent::default()
        })
    );
    let order_schema = json!({"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]});
    assert_eq!(
        info.tools,
        vec![
            ToolDef {
                name: "lookup_order".into(),
                description: "Order status by order number".into(),
                input_schema: order_schema.clone(),
            },
            ToolDef {
                name: "issue_refund".into(),
                description: "Refund an order".into(),
                input_schema: order_schema,
            },
            BuiltinTool::ReadAttachment.tool_def(),
        ]
    );
    assert_eq!(
        info.tool_runners,
        vec![
            PersonaTool {
                name: Some("lookup_order".into()),
                runner: http(
                    "https://orders.internal/tools/lookup_order",
                    Some("ORDERS_TOOL_SECRET"),
                    10
                ),
                approval: false,
            },
            PersonaTool {
                name: Some("issue_refund".into()),
                runner: http(
                    "https://billing.internal/tools/refund",
                    Some("BILLING_TOOL_SECRET"),
                    30
                ),
                approval: true,
            },
            PersonaTool {
                name: None,
                runner: ToolRunner::Mcp(McpTool {
                    server: McpServer::Url("https://kb.internal/mcp".into()),
                    allow: vec!["search_*".into()],
                    token_env: Some("KB_MCP_TOKEN".into()),
                    timeout: Duration::from_secs(30),
                }),
                approval: false,
            },
            PersonaTool {
                name: Some("read_attachment".into()),
                runner: ToolRunner::Builtin(BuiltinTool::ReadAttachment),
                approval: false,
            },
        ]
    );
    assert_eq!(
        info.responsibilities[0].tools,
        vec!["search_open_threads".to_owned()]
    );
}

// --- environment variables ------------------------------------------------------------------

/// The problems of the environment variables `source` names, with `set` the variables that
/// are set (to `"x"`; an `=` sets another value).
fn env_problems(source: &str, set: &[&str]) -> Vec<String> {
    let source = text(source);
    let persona = Persona::parse(Path::new("p.toml"), &source, &Registry::new())
        .unwrap_or_else(|d| panic!("{d}"));
    let set: Vec<(String, String)> = set
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (s.to_string(), "x".to_owned()),
        })
        .collect();
    let lookup = move |name: &str| set.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    persona
        .env_diagnostics(&source, &lookup)
        .iter()
        .map(|d| d.headline())
        .collect()
}

#[test]
fn each_variable_the_agent_needs_and_that_is_not_set_is_reported_at_its_key() {
    assert_eq!(
        env_problems(EXAMPLE, &[]),
        [
            "p.toml:7:15: error: `[model] api_key_env` names `ANTHROPIC_API_KEY`, which is not set",
            "p.toml:24:75: error: `http.secret_env` of the tool `lookup_order` names `ORDERS_TOOL_SECRET`, which is not set",
            "p.toml:30:70: error: `http.secret_env` of the tool `issue_refund` names `BILLING_TOOL_SECRET`, which is not set",
            "p.toml:34:76: error: `mcp.token_env` names `KB_MCP_TOKEN`, which is not set",
            "p.toml:47:16: error: `[outbox] password_env` names `SMTP_PASSWORD`, which is not set",
        ]
    );
    let all = [
        "ANTHROPIC_API_KEY",
        "ORDERS_TOOL_SECRET",
        "BILLING_TOOL_SECRET",
        "KB_MCP_TOKEN",
        "SMTP_PASSWORD",
    ];
    assert_eq!(env_problems(EXAMPLE, &all), Vec::<String>::new());
    // An empty value is no secret either.
    let mut empty = all.to_vec();
    empty[0] = "ANTHROPIC_API_KEY=";
    assert_eq!(
        env_problems(EXAMPLE, &empty),
        ["p.toml:7:15: error: `[model] api_key_env` names `ANTHROPIC_API_KEY`, which is empty"]
    );
}

#[test]
fn the_default_key_variable_is_reported_at_the_provider() {
    assert_eq!(
        env_problems(
            "[model]\nprovider = \"openai\"\nname = \"gpt-5\"\n\n[agent]",
            &[]
        ),
        [
            "p.toml:2:12: error: `[model] api_key_env` names `OPENAI_API_KEY` (the default of `provider = \"openai\"`), which is not set"
        ]
    );
    assert_eq!(
        env_problems(
            "[model]\nprovider = \"openai\"\n\n[agent]",
            &["OPENAI_API_KEY"]
        ),
        Vec::<String>::new()
    );
}

#[test]
fn without_an_agent_only_the_outbox_password_is_checked() {
    // No `[agent]`: the key and the tool secrets are the application's business.
    let source = "[model]\nprovider = \"anthropic\"\n\n[[tools]]\nname = \"t\"\ndescription = \"x\"\ninput_schema = { type = \"object\" }\nhttp = { url = \"https://t.internal\", secret_env = \"T_SECRET\" }";
    assert_eq!(env_problems(source, &[]), Vec::<String>::new());
    // An `[outbox]` server is delivered to by protege, with or without an agent.
    assert_eq!(
        env_problems(
            "[outbox]\nsmtp = \"smtp://mail.acme.test\"\nuser = \"support@acme.test\"\npassword_env = \"SMTP_PASSWORD\"",
            &[]
        ),
        ["p.toml:4:16: error: `[outbox] password_env` names `SMTP_PASSWORD`, which is not set"]
    );
    // A login without a server is for an application that delivers the bytes itself.
    assert_eq!(
        env_problems(
            "[outbox]\nuser = \"support@acme.test\"\npassword_env = \"SMTP_PASSWORD\"",
            &[]
        ),
        Vec::<String>::new()
    );
}

#[test]
fn a_set_checks_the_environment_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("support.toml"), text(EXAMPLE)).unwrap();
    // By default nothing is read from the environment.
    let (set, problems) = PersonaSet::load(dir.path()).unwrap();
    assert_eq!(
        (set.names(), problems.len()),
        (vec!["support".to_owned()], 0)
    );
    // Asked, the persona is rejected with one problem per missing variable.
    let (set, problems) = PersonaSet::builder(dir.path())
        .env(|name| (name != "KB_MCP_TOKEN").then(|| "x".to_owned()))
        .load()
        .unwrap();
    assert!(set.is_empty());
    let file = dir.path().join("support.toml");
    assert_eq!(
        problems.iter().map(|d| d.headline()).collect::<Vec<_>>(),
        [format!(
            "{}:34:76: error: `mcp.token_env` names `KB_MCP_TOKEN`, which is not set",
            file.display()
        )]
    );
    let (set, problems) = PersonaSet::builder(dir.path())
        .env(|_| Some("x".to_owned()))
        .load()
        .unwrap();
    assert_eq!((set.len(), problems.len()), (1, 0));
    // `check_env(true)` reads this process's environment, `check_env(false)` nothing.
    let process = PersonaSet::builder(dir.path()).check_env(true);
    assert!(format!("{process:?}").contains("check_env: true"));
    let (set, _) = process.check_env(false).load().unwrap();
    assert_eq!(set.len(), 1);
    assert_eq!(
        protege_config::process_env("PROTEGE_TEST_NEVER_SET_4F1D"),
        None
    );
}
