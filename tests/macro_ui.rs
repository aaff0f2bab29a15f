//! Compile-time behaviour of `resolvers!`: what it accepts, and the errors it reports at
//! the user's tokens (`tests/ui/fail/*.stderr`, one mistake per file).
//!
//! `tests/ui/pass/builtin_options.rs` is rendered from the shared table of built-ins
//! (`protege-schema`): every option and positional argument of every built-in, written as
//! the example the README's table shows, so each example compiles. Set `PROTEGE_BLESS=1` to rewrite it after a change
//! to the table.

use std::path::PathBuf;

use protege_schema::BUILTINS;

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}

/// The pass case of the table's examples: one chain per built-in, one item per option.
fn builtin_options_case() -> String {
    let mut out = String::from(
        "//! Every option of every built-in, as the shared table (`protege-schema`) writes its\n\
         //! example; rendered by `tests/macro_ui.rs`.\n\
         use protege::{Chain, Context};\n\
         \n\
         /// A record of `load_accounts`.\n\
         #[derive(serde::Serialize)]\n\
         struct Account {\n    name: String,\n}\n\
         \n\
         async fn load_accounts(_ctx: Context) -> Result<Vec<Account>, String> {\n    \
         Ok(vec![Account { name: \"Alice\".into() }])\n}\n\
         \n\
         fn main() {\n",
    );
    for builtin in BUILTINS {
        out.push_str("    let chain = protege::resolvers! {\n");
        if let Some(positional) = builtin.positional {
            out.push_str(&format!(
                "        use {}({});\n",
                builtin.name, positional.rust
            ));
        }
        for option in builtin.options {
            out.push_str(&format!("        {}\n", builtin.rust_item(option)));
        }
        out.push_str("    };\n");
        out.push_str(&format!(
            "    assert_eq!(chain.names(), [{:?}; {}]);\n",
            builtin.name,
            builtin.options.len() + usize::from(builtin.positional.is_some())
        ));
    }
    out.push_str("}\n");
    out
}

#[test]
fn the_builtin_options_case_is_the_shared_tables_rendering() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ui/pass/builtin_options.rs");
    let expected = builtin_options_case();
    if std::env::var_os("PROTEGE_BLESS").is_some() {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        actual,
        expected,
        "run with PROTEGE_BLESS=1 to rewrite {}",
        path.display()
    );
}
