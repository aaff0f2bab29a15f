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
