//! A load compiles each distinct template once and shares it between personas; what a
//! template's check depends on besides its text (the persona's `[vars]`, the chain's trigger,
//! the resolver) still gives each persona its own verdict.

use protege_config::{Persona, PersonaSet, Registry, render};

const TEAM: &str = r#"
[vars]
team = "Billing"

[[message_resolvers]]
use = "LoadText"
template = "Team {{ persona.vars.team }}: {{ message.subject }}"
"#;

const NO_VARS: &str = r#"
[[message_resolvers]]
use = "LoadText"
template = "Team {{ persona.vars.team }}: {{ message.subject }}"
"#;

const SCHEDULED: &str = r#"
[vars]
team = "Billing"

[[responsibility_resolvers]]
use = "LoadText"
template = "Team {{ persona.vars.team }}: {{ message.subject }}"
"#;

#[test]
fn a_shared_template_is_checked_for_each_persona_as_if_alone() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("a.toml", TEAM),
        ("b.toml", NO_VARS),
        ("c.toml", SCHEDULED),
        ("d.toml", TEAM),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let (set, diagnostics) = PersonaSet::load(dir.path()).unwrap();
    assert_eq!(set.names(), ["a", "d"]);

    // Each file alone gives the same problems as in the load.
    let mut alone = Vec::new();
    for (name, text) in files {
        if let Err(d) = Persona::parse(&dir.path().join(name), text, &Registry::new()) {
            alone.extend(d);
        }
    }
    assert_eq!(render(&diagnostics), render(&alone));
    let d = dir.path().display();
    assert_eq!(
        render(&diagnostics),
        format!(
            "{d}/b.toml:4:34: error: `persona.vars` has no key `team`: the persona has no `[vars]`
  |
4 | template = \"Team {{{{ persona.vars.team }}}}: {{{{ message.subject }}}}\"
  |                                  ^^^^

{d}/c.toml:7:46: error: `message` never exists in a responsibility chain (it is the inbound message of a reply run); test it with `{{% if message %}}`
  |
7 | template = \"Team {{{{ persona.vars.team }}}}: {{{{ message.subject }}}}\"
  |                                              ^^^^^^^"
        )
    );
}

/// A folder large enough to be read and parsed on several threads loads as its files do
/// one by one in name order: the same personas, the same problems in file order, and a
/// duplicate name lost by the file that sorts last, whichever thread parsed each.
#[test]
fn a_large_folder_loads_as_its_files_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = |i: usize| match i {
        10 | 250 => "name = \"dup\"\ninstructions = \"Either.\"\n".to_owned(),
        i if i % 50 == 7 => format!("name = \"p{i}\"\ninstructons = \"typo\"\n"),
        i => format!("name = \"p{i}\"\n{TEAM}"),
    };
    for i in 0..300 {
        std::fs::write(dir.path().join(format!("f{i:03}.toml")), text(i)).unwrap();
    }
    let (set, diagnostics) = PersonaSet::load(dir.path()).unwrap();
    assert_eq!(set.len(), 300 - 6 - 1);
    assert_eq!(set.get("dup").unwrap().path, dir.path().join("f010.toml"));
    assert!(set.get("p7").is_none() && set.get("p299").is_some());
    let d = dir.path().display();
    let mut expected: Vec<String> = [7, 57, 107, 157, 207]
        .iter()
        .map(|i| format!("{d}/f{i:03}.toml:2:1: error: unknown key `instructons`, did you mean `instructions`?"))
        .collect();
    expected.push(format!(
        "{d}/f250.toml:1:8: error: duplicate persona name `dup`: also defined in `{d}/f010.toml`"
    ));
    expected.push(format!(
        "{d}/f257.toml:2:1: error: unknown key `instructons`, did you mean `instructions`?"
    ));
    assert_eq!(diagnostics.to_string(), expected.join("\n"));
}
