//! `protege schema`: the JSON Schema of a persona file, generated from the tables the TOML
//! reader checks against, and the schema of the fixture format. Every shipped persona and
//! fixture passes its schema; each kind of mistake the readers report is also a mistake to
//! the schema, at the same place.

use std::path::{Path, PathBuf};
use std::process::Command;

use protege::config::{Persona, Registry, render};
use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds the package")
        .to_owned()
}

fn protege(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_protege"))
        .args(args)
        .current_dir(workspace())
        .output()
        .expect("protege runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn validator(schema: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(schema).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema is a valid 2020-12 schema")
}

/// The instance paths the schema reports for `instance`, sorted, each once.
fn schema_errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    let mut paths: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.instance_path().to_string())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// A persona file's TOML as the JSON an editor validates.
fn as_json(source: &str) -> Value {
    toml::from_str(source).expect("the file is TOML")
}

#[test]
fn the_committed_persona_schema_is_what_protege_schema_prints() {
    let (code, stdout, stderr) = protege(&["schema"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let committed = workspace().join("schemas/persona.schema.json");
    if std::env::var_os("PROTEGE_BLESS").is_some() {
        std::fs::write(&committed, &stdout).expect("schema written");
    }
    let expected = std::fs::read_to_string(&committed).expect("schemas/persona.schema.json");
    assert_eq!(
        stdout, expected,
        "`protege schema` changed: run `PROTEGE_BLESS=1 cargo test -p protege-cli --test schema` and review the diff"
    );
    // A valid schema of the draft it names, and what an editor shows for a key.
    let schema: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        schema["properties"]["model"]["properties"]["cache"],
        serde_json::json!({
            "enum": ["auto", "off"],
            "description": "`auto` marks prompt-cache breakpoints in Anthropic bodies, `off` marks none",
            "default": "auto"
        })
    );
    validator(&stdout);
}

#[test]
fn every_shipped_persona_passes_the_schema_and_points_at_it() {
    let validator = validator(&Registry::new().json_schema().to_string());
    let mut files: Vec<PathBuf> = ["personas", "examples/cost"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(workspace().join(dir)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "{files:?}");
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            schema_errors(&validator, &as_json(&source)),
            Vec::<String>::new(),
            "{}",
            file.display()
        );
        // taplo (Even Better TOML) reads the schema from the file's first line.
        let first = source.lines().next().unwrap_or_default();
        let schema = file.parent().unwrap().join(
            first
                .strip_prefix("#:schema ")
                .unwrap_or_else(|| panic!("{} starts with `#:schema`", file.display())),
        );
        assert_eq!(
            std::fs::canonicalize(schema).unwrap(),
            workspace().join("schemas/persona.schema.json")
        );
    }
}

/// One kind of mistake: a persona file, the reader's first diagnostic (without the
/// source excerpt), and the instance paths the schema reports.
struct Mistake {
    toml: &'static str,
    reader: &'static str,
    schema: &'static [&'static str],
}

const CHAIN: &str = "\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"Hello.\"\n";

const MISTAKES: &[Mistake] = &[
    Mistake {
        toml: "instructons = \"x\"",
        reader: "p.toml:1:1: error: unknown key `instructons`, did you mean `instructions`?",
        schema: &[""],
    },
    Mistake {
        toml: "name = 5",
        reader: "p.toml:1:8: error: `name` must be a string, found an integer",
        schema: &["/name"],
    },
    Mistake {
        toml: "name = \"  \"",
        reader: "p.toml:1:8: error: `name` must not be empty",
        schema: &["/name"],
    },
    Mistake {
        toml: "addresses = [\"support\"]",
        reader: "p.toml:1:14: error: `support` is not an email address",
        schema: &["/addresses/0"],
    },
    Mistake {
        toml: "vars = 3",
        reader: "p.toml:1:8: error: `vars` must be a table, found an integer",
        schema: &["/vars"],
    },
    Mistake {
        toml: "[model]\nprovider = \"opneai\"",
        reader: "p.toml:2:12: error: unknown provider `opneai`, did you mean `openai`?",
        schema: &["/model/provider"],
    },
    Mistake {
        toml: "[model]\nmax_tokens = 0",
        reader: "p.toml:2:14: error: `max_tokens` must be between 1 and 4294967295, found `0`",
        schema: &["/model/max_tokens"],
    },
    Mistake {
        toml: "[model]\ncache = \"always\"",
        reader: "p.toml:2:9: error: unknown cache mode `always`, expected `auto` or `off`",
        schema: &["/model/cache"],
    },
    Mistake {
        toml: "[model]\ncache_ttl = \"2h\"",
        reader: "p.toml:2:13: error: unknown cache_ttl `2h`, did you mean `1h`?",
        schema: &["/model/cache_ttl"],
    },
    Mistake {
        toml: "[model]\nprices = { input = -3.0 }",
        reader: "p.toml:2:20: error: `prices.input` must be a finite price of at least 0 (USD per million tokens), found `-3.0`",
        schema: &["/model/prices/input"],
    },
    Mistake {
        toml: "[model]\nprices = { output = \"15\" }",
        reader: "p.toml:2:21: error: `prices.output` must be a number (USD per million tokens), found a string",
        schema: &["/model/prices/output"],
    },
    Mistake {
        toml: "[model]\nprices = { inptu = 3 }",
        reader: "p.toml:2:12: error: unknown key `inptu` in `[model] prices`, did you mean `input`?",
        schema: &["/model/prices"],
    },
    Mistake {
        toml: "[model]\ntemperature = 0.2",
        reader: "p.toml:2:1: error: unknown key `temperature` in `[model]`",
        schema: &["/model"],
    },
    Mistake {
        toml: "[limits]\nmax_rounds = 0",
        reader: "p.toml:2:14: error: `max_rounds` must be a positive integer, found `0`",
        schema: &["/limits/max_rounds"],
    },
    Mistake {
        toml: "[limits]\nmax_round = 8",
        reader: "p.toml:2:1: error: unknown key `max_round` in `[limits]`, did you mean `max_rounds`?",
        schema: &["/limits"],
    },
    Mistake {
        toml: "[mail]\nquoted = \"stirp\"",
        reader: "p.toml:2:10: error: unknown `quoted` mode `stirp`, did you mean `strip`?",
        schema: &["/mail/quoted"],
    },
    Mistake {
        toml: "[mail]\nfence = \"yes\"",
        reader: "p.toml:2:9: error: `fence` must be a boolean, found a string",
        schema: &["/mail/fence"],
    },
    Mistake {
        toml: "[mail]\ntrusted_authserv_ids = [\"mx acme\"]",
        reader: "p.toml:2:25: error: `trusted_authserv_ids[0]` `mx acme` is not an authserv-id (a host name such as `mx.acme.test`)",
        schema: &["/mail/trusted_authserv_ids/0"],
    },
    Mistake {
        toml: "[[tools]]\nname = \"get invoice\"\ndescription = \"x\"\ninput_schema = { type = \"object\" }",
        reader: "p.toml:2:8: error: invalid tool name `get invoice`: use 1 to 64 ASCII letters, digits, `_` or `-`",
        schema: &["/tools/0/name"],
    },
    Mistake {
        toml: "[[tools]]\nname = \"get_invoice\"\ninput_schema = { type = \"object\" }",
        reader: "p.toml:1:1: error: a tool needs the key `description`",
        schema: &["/tools/0"],
    },
    Mistake {
        toml: "[[tools]]\nname = \"get_invoice\"\ndescription = \"x\"\ninput_schema = { type = \"string\" }",
        reader: "p.toml:4:16: error: `input_schema` must declare `type = \"object\"`",
        schema: &["/tools/0/input_schema/type"],
    },
    Mistake {
        toml: "[model]\nbase_url = \"http://api.anthropic.com\"",
        reader: "p.toml:2:12: error: `base_url` must be `https://`: TLS is required unless the host is a loopback address (`localhost`, `127.0.0.0/8`, `[::1]`), and `api.anthropic.com` is not one",
        schema: &["/model/base_url"],
    },
    Mistake {
        toml: "[model]\nbase_url = \"ftp://api.acme.test\"",
        reader: "p.toml:2:12: error: invalid `base_url`: expected `https://host[:port][/path]` or `http://host[:port][/path]`",
        schema: &["/model/base_url"],
    },
    Mistake {
        toml: "[agent]\nafter_person = \"answr\"",
        reader: "p.toml:2:16: error: unknown `after_person` value `answr`, did you mean `answer`?",
        schema: &["/agent/after_person"],
    },
    Mistake {
        toml: "[agent]\nmax_age = \"1w\"",
        reader: "p.toml:2:11: error: `max_age` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `1w`",
        schema: &["/agent/max_age"],
    },
    Mistake {
        toml: "[[tools]]\nbuiltin = \"read_attachment\"\n\n[agent]\nreply_tools = [\"read_attachment\", \"read_attachment\"]",
        reader: "p.toml:5:35: error: `reply_tools` names `read_attachment` twice",
        schema: &["/agent/reply_tools"],
    },
    Mistake {
        toml: "[[tools]]\nname = \"t\"\ndescription = \"x\"\ninput_schema = { type = \"object\" }\nhttp = { url = \"ftp://t.internal\" }",
        reader: "p.toml:5:16: error: invalid `http.url`: expected `https://host[:port][/path]` or `http://host[:port][/path]`",
        schema: &["/tools/0/http/url"],
    },
    Mistake {
        toml: "[[tools]]\nmcp = { url = \"https://kb.internal/mcp\" }\nbuiltin = \"read_attachment\"",
        reader: "p.toml:3:11: error: a tool has at most one of `http`, `mcp` and `builtin`, and this one has `mcp` and `builtin`",
        schema: &["/tools/0"],
    },
    Mistake {
        toml: "[[tools]]\nname = \"kb\"\nmcp = { url = \"https://kb.internal/mcp\" }",
        reader: "p.toml:2:8: error: `name` does not go with `mcp`: the server names its tools",
        schema: &["/tools/0/name"],
    },
    Mistake {
        toml: "[[tools]]\nmcp = { allow = [\"search_*\"] }",
        reader: "p.toml:2:7: error: `mcp` needs `url` (a streamable HTTP server) or `command` (a program spoken to over its standard input and output)",
        schema: &["/tools/0/mcp"],
    },
    Mistake {
        toml: "[[tools]]\nmcp = { url = \"https://kb.internal/mcp\", command = [\"kb-mcp\"] }",
        reader: "p.toml:2:52: error: `mcp` takes one of `url` and `command`, not both",
        schema: &["/tools/0/mcp"],
    },
    Mistake {
        toml: "[[tools]]\nmcp = { command = [] }",
        reader: "p.toml:2:19: error: `command` must start with a program, as in `[\"kb-mcp\", \"--stdio\"]`",
        schema: &["/tools/0/mcp/command"],
    },
    Mistake {
        toml: "[[tools]]\nmcp = { url = \"https://kb.internal/mcp\", allow = [\"search articles\"] }",
        reader: "p.toml:2:51: error: invalid pattern `search articles` in `allow`: use ASCII letters, digits, `_`, `-` and `*`, which stands for any run of them",
        schema: &["/tools/0/mcp/allow/0"],
    },
    Mistake {
        toml: "[[tools]]\nbuiltin = \"read_attachments\"",
        reader: "p.toml:2:11: error: unknown `builtin` value `read_attachments`, did you mean `read_attachment`?",
        schema: &["/tools/0/builtin"],
    },
    Mistake {
        toml: "[[tools]]\nbuiltin = \"read_attachment\"\ninput_schema = { type = \"object\" }",
        reader: "p.toml:3:16: error: `input_schema` does not go with `builtin`: a built-in tool has its own schema",
        schema: &["/tools/0/input_schema"],
    },
    Mistake {
        toml: "[[tools]]\nname = \"t\"\ndescription = \"x\"\ninput_schema = { type = \"object\" }\napproval = true",
        reader: "p.toml:5:12: error: `approval` needs `http`, `mcp` or `builtin`: protege waits for a person only before a call it makes itself",
        schema: &["/tools/0"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"\nschedule = \"0 8 * * *\"\ntools = \"read_attachment\"",
        reader: "p.toml:4:9: error: `tools` must be an array, found a string",
        schema: &["/responsibilities/0/tools"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"\nschedule = \"every day\"",
        reader: "p.toml:3:12: error: invalid schedule `every day`: expected 5 fields (minute hour day-of-month month day-of-week), found 2",
        schema: &["/responsibilities/0/schedule"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"",
        reader: "p.toml:1:1: error: a responsibility needs the key `schedule`",
        schema: &["/responsibilities/0"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"\nschedule = \"0 8 * * *\"\ntimezone = \"Europe Paris\"",
        reader: "p.toml:4:12: error: unknown time zone `Europe Paris`, did you mean `Europe/Paris`?",
        schema: &["/responsibilities/0/timezone"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"\nschedule = \"0 8 * * *\"\nto = [\"the team\"]",
        reader: "p.toml:4:7: error: `the team` is not an email address",
        schema: &["/responsibilities/0/to/0"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"\nschedule = \"0 8 * * *\"\nsubject = \"Open\\nthreads\"",
        reader: "p.toml:4:11: error: `subject` must be one line: no control characters (line breaks, tabs, NUL …)",
        schema: &["/responsibilities/0/subject"],
    },
    Mistake {
        toml: "[[responsibilities]]\nname = \"daily\"\nschedule = \"0 8 * * *\"\ncatch_up = \"some\"",
        reader: "p.toml:4:12: error: unknown `catch_up` value `some`, expected `latest`, `all` or `none`",
        schema: &["/responsibilities/0/catch_up"],
    },
    Mistake {
        toml: "[agent]\nmax_catch_up = 0",
        reader: "p.toml:2:16: error: `max_catch_up` must be a positive integer, found `0`",
        schema: &["/agent/max_catch_up"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"OpenThreads\"\nwithin = \"1w\"",
        reader: "p.toml:3:10: error: `within` must be a duration: a positive integer and a unit `s`, `m`, `h` or `d`, such as `\"90s\"` or `\"2d\"`; found `1w`",
        schema: &["/message_resolvers/0/within"],
    },
    Mistake {
        toml: "message_resolvers = \"LoadText\"",
        reader: "p.toml:1:21: error: `message_resolvers` must be an array, found a string",
        schema: &["/message_resolvers"],
    },
    Mistake {
        toml: "[[message_resolvers]]\ntemplate = \"x\"",
        reader: "p.toml:1:1: error: resolver entry needs `use`, one of `LoadText`, `LoadFile`, `LoadRecord`, `ThreadHistory`, `ThreadSummary`, `CorrespondentHistory`, `OpenThreads`",
        schema: &["/message_resolvers/0"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"ThreadHistroy\"",
        reader: "p.toml:2:7: error: unknown resolver `ThreadHistroy`, did you mean `ThreadHistory`?",
        schema: &["/message_resolvers/0/use"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"ThreadHistory\"\nlimt = 5",
        reader: "p.toml:3:1: error: unknown option `limt` for `ThreadHistory`, did you mean `limit`?",
        schema: &["/message_resolvers/0"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"LoadFile\"",
        reader: "p.toml:1:1: error: `LoadFile` needs the option `path`",
        schema: &["/message_resolvers/0"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"x\"\nrole = \"robot\"",
        reader: "p.toml:4:8: error: unknown role `robot`, expected one of `system`, `user`, `assistant`, `tool`",
        schema: &["/message_resolvers/0/role"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"ThreadHistory\"\nwindow = \"sliding-ish\"",
        reader: "p.toml:3:10: error: unknown window `sliding-ish`, expected `sliding` or `stable`",
        schema: &["/message_resolvers/0/window"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"ThreadHistory\"\nlimit = -1",
        reader: "p.toml:3:9: error: `limit` must be a non-negative integer or `false`, found `-1`",
        schema: &["/message_resolvers/0/limit"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"LoadRecord\"\ntable = \"cust omers\"",
        reader: "p.toml:3:9: error: invalid table name `cust omers`: use ASCII letters, digits and `_`, not starting with a digit",
        schema: &["/message_resolvers/0/table"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"LoadRecord\"\ntable = \"customers\"\nwhere = { email = [\"a\"] }",
        reader: "p.toml:4:19: error: `where.email` must be a string, integer, float or boolean, found an array",
        schema: &["/message_resolvers/0/where/email"],
    },
    Mistake {
        toml: "[[message_resolvers]]\nuse = \"LoadRecord\"\ntable = \"customers\"\norder_by = \"since descending\"",
        reader: "p.toml:4:12: error: invalid `order_by` entry `since descending`: expected `column`, `column asc` or `column desc`",
        schema: &["/message_resolvers/0/order_by"],
    },
    Mistake {
        toml: "[inbox]\nimap = \"pop3://mail.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"",
        reader: "p.toml:2:8: error: invalid `imap` URL: expected `imaps://host[:port][/FOLDER]` (TLS from the first byte) or `imap://host[:port][/FOLDER]` (STARTTLS)",
        schema: &["/inbox/imap"],
    },
    Mistake {
        toml: "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\nafter = \"delete\"",
        reader: "p.toml:5:9: error: unknown `after` value `delete`, expected `seen` or `move:FOLDER`",
        schema: &["/inbox/after"],
    },
    Mistake {
        toml: "[inbox]\nimap = \"imaps://imap.acme.test\"\nuser = \"u\"\npassword_env = \"PW\"\nsince = \"2026/11/30\"",
        reader: "p.toml:5:9: error: `since` must be a day written `YYYY-MM-DD`, such as `\"2026-01-31\"`; found `2026/11/30`",
        schema: &["/inbox/since"],
    },
    Mistake {
        toml: "[inbox]\nimap = \"imaps://imap.acme.test\"\npassword_env = \"PW\"",
        reader: "p.toml:1:1: error: `[inbox]` needs `user`",
        schema: &["/inbox"],
    },
];

#[test]
fn each_kind_of_mistake_the_reader_reports_is_one_to_the_schema() {
    let registry = Registry::new();
    let validator = validator(&registry.json_schema().to_string());
    let mut failures = Vec::new();
    for (i, mistake) in MISTAKES.iter().enumerate() {
        // The chain makes the rest of each file valid; a mistake in a chain comes first.
        let source = if mistake.toml.contains("message_resolvers") {
            mistake.toml.to_owned()
        } else {
            format!("{}\n{CHAIN}", mistake.toml)
        };
        let reader = match Persona::parse(Path::new("p.toml"), &source, &registry) {
            Ok(_) => "(accepted)".to_owned(),
            Err(diagnostics) => render(&diagnostics)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        };
        let schema = schema_errors(&validator, &as_json(&source));
        if reader != mistake.reader || schema != mistake.schema {
            failures.push(format!(
                "mistake {i} ({:?}):\n  reader {reader:?}\n  schema {schema:?}",
                mistake.toml
            ));
        }
        // The same file without the mistake's line would pass both: the base is valid.
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let base = format!("name = \"p\"\n{CHAIN}");
    assert!(Persona::parse(Path::new("p.toml"), &base, &registry).is_ok());
    assert_eq!(
        schema_errors(&validator, &as_json(&base)),
        Vec::<String>::new()
    );
}

#[test]
fn an_agent_persona_with_every_kind_of_tool_passes_the_schema() {
    let source = r#"
[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
api_key_env = "ANTHROPIC_API_KEY"
base_url = "http://127.0.0.1:8080/stand-in"
timeout = "120s"

[agent]
reply_tools = ["lookup_order", "read_attachment", "search_articles"]
answer_cc = false
after_person = "answer"
max_age = "7d"
tokens_per_day = 2_000_000

[[tools]]
name = "lookup_order"
description = "Order status by order number"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }
http = { url = "https://orders.internal/tools/lookup_order", secret_env = "ORDERS_TOOL_SECRET", timeout = "10s" }
approval = true

[[tools]]
name = "notify_team"
description = "Run by the application"
input_schema = { type = "object" }

[[tools]]
mcp = { url = "https://kb.internal/mcp", allow = ["search_*"], token_env = "KB_MCP_TOKEN" }

[[tools]]
mcp = { command = ["kb-mcp", "--stdio"] }
approval = true

[[tools]]
builtin = "read_attachment"
description = "Read an invoice the customer attached."

[[responsibilities]]
name = "digest"
schedule = "0 8 * * *"
tools = ["search_articles"]
"#;
    let registry = Registry::new();
    let source = format!("{source}\n{CHAIN}");
    if let Err(d) = Persona::parse(Path::new("p.toml"), &source, &registry) {
        panic!("{}", render(&d));
    }
    let validator = validator(&registry.json_schema().to_string());
    assert_eq!(
        schema_errors(&validator, &as_json(&source)),
        Vec::<String>::new()
    );
}

#[test]
fn a_registered_resolver_is_in_the_schema_with_open_options() {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct OpenOrders {
        limit: u32,
    }
    impl protege::Resolver for OpenOrders {
        type Output = protege::Message;
        async fn resolve(&self, _: &protege::Context) -> protege::Result<protege::Message> {
            Ok(protege::message(protege::Role::System, "orders"))
        }
    }
    let mut registry = Registry::new();
    registry.register::<OpenOrders>("OpenOrders");
    let schema = registry.json_schema();
    let validator = validator(&schema.to_string());
    let entry = |text: &str| as_json(&format!("[[message_resolvers]]\n{text}"));
    assert_eq!(
        schema_errors(&validator, &entry("use = \"OpenOrders\"\nlimit = 5")),
        Vec::<String>::new()
    );
    // Only the application's own type knows its options; the built-ins stay closed.
    assert_eq!(
        schema_errors(
            &validator,
            &entry("use = \"LoadText\"\ntemplate = \"x\"\nlimit = 5")
        ),
        vec!["/message_resolvers/0"]
    );
    assert_eq!(
        schema_errors(&validator, &entry("use = \"OpenOrder\"")),
        vec!["/message_resolvers/0/use"]
    );
}

// --- the fixture format -------------------------------------------------------------------

#[test]
fn protege_schema_fixture_prints_the_fixture_schema() {
    let (code, stdout, stderr) = protege(&["schema", "--fixture"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(stdout, protege::db::FIXTURE_SCHEMA);
    let schema: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(schema["title"], "protege fixture");
}

#[test]
fn every_shipped_fixture_passes_the_fixture_schema() {
    let validator = validator(protege::db::FIXTURE_SCHEMA);
    let mut files: Vec<PathBuf> = ["examples/data", "protege-core/tests/fixtures"]
        .iter()
        .filter_map(|dir| std::fs::read_dir(workspace().join(dir)).ok())
        .flatten()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Only fixtures: files that `db import` reads.
        if protege::db::parse_fixture(&text).is_err() {
            continue;
        }
        let instance: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
        assert_eq!(
            schema_errors(&validator, &instance),
            Vec::<String>::new(),
            "{}",
            file.display()
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} fixtures among {files:?}");
}

/// One kind of mistake in a fixture: a change to a valid one, the error of `db import`,
/// and the instance paths the schema reports.
struct FixtureMistake {
    change: fn(&mut Value),
    import: &'static str,
    schema: &'static [&'static str],
}

fn first_message(v: &mut Value) -> &mut Value {
    &mut v["threads"][0]["messages"][0]
}

const FIXTURE_MISTAKES: &[FixtureMistake] = &[
    FixtureMistake {
        change: |v| {
            v["thread"] = Value::Null;
        },
        import: "(root): expected an object with the field `threads`",
        schema: &[""],
    },
    FixtureMistake {
        change: |v| {
            v["threads"][0]["messages"] = serde_json::json!([]);
        },
        import: "threads[0].messages: a thread needs at least one message",
        schema: &["/threads/0/messages"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v).as_object_mut().unwrap().remove("sent_at");
        },
        import: "threads[0].messages[0].sent_at: missing required field",
        schema: &["/threads/0/messages/0"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["sender"] = "x".into();
        },
        import: "threads[0].messages[0].sender: unknown field `sender`, expected one of `message_id`, `direction`, `from`, `to`, `cc`, `subject`, `sent_at`, `text_body`, `html_body`, `in_reply_to`, `attachments`, `tool_uses`",
        schema: &["/threads/0/messages/0"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["direction"] = "incoming".into();
        },
        import: "threads[0].messages[0].direction: unknown direction `incoming`, expected `inbound` or `outbound`",
        schema: &["/threads/0/messages/0/direction"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["to"] = "support@acme.test".into();
        },
        import: "threads[0].messages[0].to: expected an array of strings, found a string",
        schema: &["/threads/0/messages/0/to"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["message_id"] = "<a b@example.com>".into();
        },
        import: "threads[0].messages[0].message_id: invalid message id `<a b@example.com>`: a Message-ID has no white space",
        schema: &["/threads/0/messages/0/message_id"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["sent_at"] = "last tuesday".into();
        },
        import: "threads[0].messages[0].sent_at: invalid RFC 3339 timestamp `last tuesday`",
        schema: &["/threads/0/messages/0/sent_at"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["attachments"] = serde_json::json!([{
                "id": "a-1", "filename": "x.pdf", "content_type": "application/pdf",
                "byte_size": -1
            }]);
        },
        import: "threads[0].messages[0].attachments[0].byte_size: expected an integer from 0 to 9223372036854775807, found `-1`",
        schema: &["/threads/0/messages/0/attachments/0/byte_size"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["attachments"] = serde_json::json!([{
                "id": "a-1", "filename": "x.pdf", "content_type": "application/pdf",
                "byte_size": 3, "data_base64": "not*base64"
            }]);
        },
        import: "threads[0].messages[0].attachments[0].data_base64: invalid base64: unexpected character `*` at offset 3",
        schema: &["/threads/0/messages/0/attachments/0/data_base64"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["tool_uses"] = serde_json::json!([{
                "run_id": "r-1", "turn_index": 0, "position": 0, "tool_call_id": "call 1",
                "name": "lookup", "input": {}
            }]);
        },
        import: "threads[0].messages[0].tool_uses[0].tool_call_id: invalid tool call id `call 1`: expected 1 to 64 characters from `a-z`, `A-Z`, `0-9`, `_` and `-`",
        schema: &["/threads/0/messages/0/tool_uses/0/tool_call_id"],
    },
    FixtureMistake {
        change: |v| {
            first_message(v)["tool_uses"] = serde_json::json!([{
                "run_id": "r-1", "turn_index": 0, "position": 0, "tool_call_id": "call_1",
                "name": "lookup", "input": "order A-1"
            }]);
        },
        import: "threads[0].messages[0].tool_uses[0].input: expected a JSON object, found a string",
        schema: &["/threads/0/messages/0/tool_uses/0/input"],
    },
];

#[test]
fn each_kind_of_mistake_in_a_fixture_is_one_to_the_schema() {
    let validator = validator(protege::db::FIXTURE_SCHEMA);
    let base: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("examples/data/demo.json")).unwrap(),
    )
    .unwrap();
    assert!(protege::db::parse_fixture(&base.to_string()).is_ok());
    let mut failures = Vec::new();
    for (i, mistake) in FIXTURE_MISTAKES.iter().enumerate() {
        let mut fixture = base.clone();
        (mistake.change)(&mut fixture);
        let import = match protege::db::parse_fixture(&fixture.to_string()) {
            Ok(_) => "(accepted)".to_owned(),
            Err(e) => e.to_string(),
        };
        let schema = schema_errors(&validator, &fixture);
        if import != mistake.import || schema != mistake.schema {
            failures.push(format!(
                "mistake {i}:\n  import {import:?}\n  schema {schema:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
