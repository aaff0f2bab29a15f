//! Every kind of mistake in a persona file gives exactly its expected diagnostics.
//!
//! Each `tests/fixtures/err_*.toml` has its expected rendering in the insta snapshot of the
//! same name (`err_*.snap`). After a deliberate change, `cargo insta review` (or
//! `INSTA_UPDATE=always`) rewrites the snapshots.

use std::path::{Path, PathBuf};

use protege_config::{Persona, PersonaSet, Registry, render};
use protege_core::{Context, Message, Resolver, Result, Role, message};

/// A custom resolver, to check that its options get the same positions as built-ins.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Signature {
    text: String,
}

impl Resolver for Signature {
    type Output = Message;
    async fn resolve(&self, _: &Context) -> Result<Message> {
        Ok(message(Role::System, self.text.clone()))
    }
}

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<Signature>("Signature");
    registry
}

fn fixtures(prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("tests/fixtures")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with(prefix) && name.ends_with(".toml")
        })
        .collect();
    files.sort();
    files
}

/// Asserts that `actual` is the snapshot `name` of `tests/fixtures` (`NAME.snap`).
fn assert_fixture_snapshot(name: &str, actual: &str) {
    insta::with_settings!({
        snapshot_path => "fixtures",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, actual);
    });
}

#[test]
fn every_error_fixture_matches_its_snapshot() {
    let registry = registry();
    let files = fixtures("err_");
    assert!(files.len() >= 30, "only {} error fixtures", files.len());
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        let rendered = match Persona::parse(path, &source, &registry) {
            Ok(_) => format!("{} loaded without errors", path.display()),
            Err(diagnostics) => render(&diagnostics),
        };
        let name = path.file_stem().unwrap().to_str().unwrap();
        assert_fixture_snapshot(name, &rendered);
    }
}

#[test]
fn duplicate_names_across_files_name_both_files() {
    let (set, diagnostics) =
        PersonaSet::load_with(Path::new("tests/fixtures/dup"), registry()).unwrap();
    assert_eq!(set.names(), ["support"]);
    assert_eq!(
        set.get("support").unwrap().path,
        Path::new("tests/fixtures/dup/a.toml")
    );
    assert_fixture_snapshot("dup", &render(&diagnostics));
}

/// Diagnostics are an error: `?` turns them into a `Box<dyn Error>` whose text is one
/// headline per problem, and no problem is printed twice.
#[test]
fn diagnostics_work_with_the_question_mark_operator() {
    fn parse(source: &str) -> std::result::Result<Persona, Box<dyn std::error::Error>> {
        Ok(Persona::parse(
            Path::new("personas/support.toml"),
            source,
            &registry(),
        )?)
    }
    fn load(dir: &Path) -> std::result::Result<PersonaSet, Box<dyn std::error::Error>> {
        let (set, diagnostics) = PersonaSet::load_with(dir, registry())?;
        if !diagnostics.is_empty() {
            return Err(diagnostics.into());
        }
        Ok(set)
    }
    let source = "name = \"support\"\ninstructons = \"typo\"\n\n[[message_resolvers]]\nuse = \"ThreadHistroy\"\n";
    let err = parse(source).unwrap_err();
    assert_eq!(
        err.to_string(),
        "personas/support.toml:2:1: error: unknown key `instructons`, did you mean `instructions`?\n\
         personas/support.toml:5:7: error: unknown resolver `ThreadHistroy`, did you mean `ThreadHistory`?"
    );
    assert!(err.source().is_none());
    let err = load(Path::new("tests/fixtures/dup")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tests/fixtures/dup/b.toml:2:8: error: duplicate persona name `support`: also defined in `tests/fixtures/dup/a.toml`"
    );
    assert_eq!(load(Path::new("tests/fixtures/ok")).unwrap().len(), 9);
}

#[test]
fn good_personas_load_cleanly() {
    let (set, diagnostics) =
        PersonaSet::load_with(Path::new("tests/fixtures/ok"), registry()).unwrap();
    assert_eq!(render(&diagnostics), "");
    assert_eq!(
        set.names(),
        [
            "billing",
            "chain-order",
            "history-render-basic",
            "history-tool-rounds-order",
            "history-truncation-limit-10",
            "loadfile-templated-slugify",
            "loadrecord-where-from",
            "responsibility-run",
            "trailing-parts-image-pdf",
        ]
    );
    let p = set.get("responsibility-run").unwrap();
    assert_eq!(
        format!("{:?} {:?}", p.message_chain, p.responsibility_chain),
        r#"["LoadText", "ThreadHistory"] ["LoadText", "LoadText", "LoadText", "ThreadHistory", "LoadFile", "LoadRecord"]"#
    );
    assert_eq!(
        serde_json::to_string(&p.info.responsibilities).unwrap(),
        r#"[{"name":"daily-digest","schedule":"0 8 * * *","instructions":"Summarise yesterday's open threads."},{"name":"weekly-review","schedule":"30 9 * * 1","instructions":"Review the week."}]"#
    );
    let tools = set.get("history-tool-rounds-order").unwrap();
    assert_eq!(
        serde_json::to_string(&tools.info.tools).unwrap(),
        r#"[{"name":"get_order","description":"Look up an order by number","input_schema":{"type":"object","properties":{"order":{"type":"string","description":"Order number, e.g. A-7"}},"required":["order"]}},{"name":"get_tracking","description":"Tracking number of a shipped order","input_schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"],"additionalProperties":false}}]"#
    );
    let chain = set.get("chain-order").unwrap();
    assert_eq!(
        format!("{:?}", chain.message_chain),
        r#"["LoadText", "LoadFile", "LoadRecord", "ThreadHistory", "LoadText", "LoadFile", "LoadText"]"#
    );
    assert_eq!(
        serde_json::to_string(&chain.info.vars).unwrap(),
        r#"{"company":"Acme","team":"Support Team!","language":"English"}"#
    );
    assert_eq!(
        format!("{:?}", chain.info.model),
        r#"Some(ModelConfig { provider: Some(Anthropic), api: None, name: Some("claude-sonnet-4-5"), max_tokens: Some(1024), cache: Auto, cache_ttl: FiveMinutes, prices: None, api_key_env: None, base_url: None, timeout: None })"#
    );
}

#[test]
fn long_names_are_aliases_and_the_name_defaults_to_the_file_stem() {
    let source = "[[message_resolvers]]\nuse = \"ThreadHistoryResolver\"\nlimit = false\n\n[[message_resolvers]]\nuse = \"Signature\"\ntext = \"Acme\"\n";
    let p = Persona::parse(Path::new("personas/sales.toml"), source, &registry()).unwrap();
    assert_eq!(p.name(), "sales");
    assert_eq!(
        format!("{:?}", p.message_chain),
        r#"["ThreadHistory", "Signature"]"#
    );
}

#[test]
fn the_mail_table_names_trusted_authserv_ids() {
    let source = "addresses = [\"support@acme.test\"]\n\n[mail]\ntrusted_authserv_ids = [\"mx.acme.test\", \" MX2.acme.test \"]\n\n[[message_resolvers]]\nuse = \"LoadText\"\ntemplate = \"x\"\n";
    let p = Persona::parse(Path::new("personas/support.toml"), source, &registry()).unwrap();
    assert_eq!(
        p.info.mail.trusted_authserv_ids,
        ["mx.acme.test", "MX2.acme.test"]
    );
}

#[test]
fn the_addresses_of_an_invalid_file_are_read_as_far_as_they_can_be() {
    let source = "name = \"billing\"\naddresses = [\"billing@acme.test\", 7, \"not an address\", \" invoices@acme.test \"]\nbogus = 1\n[model\n";
    assert_eq!(
        protege_config::addresses_in(source),
        ["billing@acme.test", "invoices@acme.test"]
    );
    assert_eq!(
        protege_config::addresses_in("addresses = \"billing@acme.test\""),
        Vec::<String>::new()
    );
}

/// A line of 100,000 dotted keys (more than the 80 parts TOML parsers take) is reported
/// at its own line and column, with a quote cut to 160 characters.
#[test]
fn a_line_of_too_many_dotted_keys_is_reported_at_its_line() {
    let key = vec!["a"; 100_000].join(".");
    let source = format!("name = \"support\"\n\n[vars]\n  {key} = 1\n");
    let err = Persona::parse(Path::new("personas/support.toml"), &source, &registry()).unwrap_err();
    assert_eq!(
        render(&err),
        format!(
            "personas/support.toml:4:3: error: invalid TOML: a dotted key of 100000 parts; at most 80 are allowed\n  |\n4 |   {}…\n  |   {}",
            &key[..156],
            "^".repeat(156)
        )
    );
    let key = vec!["b"; 81].join(".");
    let source = format!("name = \"support\"\n[{key}]\n");
    let err = Persona::parse(Path::new("personas/support.toml"), &source, &registry()).unwrap_err();
    assert_eq!(
        render(&err),
        format!(
            "personas/support.toml:2:1: error: invalid TOML: a dotted key of 81 parts; at most 80 are allowed\n  |\n2 | [{}…\n  | {}",
            &key[..157],
            "^".repeat(158)
        )
    );
}
