//! The TOML reader accepts exactly the options of the shared table of built-ins
//! (`protege-schema`), the table the `resolvers!` macro checks against too (its side of the
//! same test is in `protege-macros`): every option's example loads, and no other name is an
//! option of any built-in. The options `resolvers!` has and TOML does not are closures.

use std::collections::BTreeSet;

use protege_config::{Persona, Registry};
use protege_schema::{BUILTINS, Kind};

/// The messages of the problems of a persona holding one reply-chain entry.
fn problems(entry: &str) -> Vec<String> {
    let source = format!("[[message_resolvers]]\n{entry}");
    match Persona::parse("personas/p.toml".as_ref(), &source, &Registry::new()) {
        Ok(_) => Vec::new(),
        Err(diagnostics) => diagnostics.iter().map(|d| d.message().to_owned()).collect(),
    }
}

#[test]
fn every_option_of_the_shared_table_loads() {
    for builtin in BUILTINS {
        for option in builtin.options {
            let Some(entry) = builtin.toml_entry(option) else {
                assert_eq!(
                    option.kind,
                    Kind::Closure,
                    "{}.{}",
                    builtin.name,
                    option.name
                );
                continue;
            };
            assert_eq!(problems(&entry), Vec::<String>::new(), "{entry}");
        }
    }
}

#[test]
fn the_reader_accepts_exactly_the_options_of_the_shared_table() {
    let candidates: BTreeSet<&str> = BUILTINS
        .iter()
        .flat_map(|b| b.rust_names())
        .chain(["limt", "colour"])
        .collect();
    for builtin in BUILTINS {
        let accepted: BTreeSet<&str> = candidates
            .iter()
            .copied()
            .filter(|name| {
                let entry = format!("use = \"{}\"\n{name} = 1\n", builtin.name);
                let unknown = format!("unknown option `{name}` for `{}`", builtin.name);
                !problems(&entry).iter().any(|p| p.starts_with(&unknown))
            })
            .collect();
        let expected: BTreeSet<&str> = builtin.toml_names().collect();
        assert_eq!(accepted, expected, "{}", builtin.name);
        // What the macro has besides: closures only.
        let rust_only: Vec<Kind> = builtin
            .options
            .iter()
            .filter(|o| !expected.contains(o.name))
            .map(|o| o.kind)
            .collect();
        assert!(
            rust_only.iter().all(|k| *k == Kind::Closure),
            "{}",
            builtin.name
        );
    }
}

#[test]
fn aliases_of_the_shared_table_are_registered() {
    let registry = Registry::new();
    for builtin in BUILTINS {
        for alias in builtin.aliases {
            assert!(registry.contains(alias), "{alias}");
        }
    }
    let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    assert_eq!(registry.names(), names);
}
