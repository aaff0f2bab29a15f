//! The persona parser never panics, whatever the text, and every problem it reports
//! starts with `path:line:col`. 256 cases per property by default; set `PROPTEST_CASES`
//! for more.

use std::path::Path;

use proptest::prelude::*;
use protege_config::{Persona, Registry};

const PATH: &str = "personas/fuzz.toml";

/// A persona touching every part of the schema, so mutations reach every check.
const RICH: &str = r#"name = "support"
instructions = """You are Acme's support agent."""
addresses = ["support@acme.test"]

[vars]
company = "Acme"
nested = { a = [1, 2.5, true], b = 1979-05-27T07:32:00Z }

[model]
provider = "anthropic"
name = "claude-sonnet-4-5"
max_tokens = 1024

[limits]
template_fuel = 100_000
template_output_bytes = 65_536

[[tools]]
name = "lookup_order"
description = "Find an order by number"
input_schema = { type = "object", properties = { order = { type = "string" } }, required = ["order"] }

[[message_resolvers]]
use = "LoadText"
template = "{{ persona.instructions }} {% if message %}{{ message.from }}{% endif %}"

[[message_resolvers]]
use = "LoadFile"
path = "prompts/{{ persona.name | slugify }}.md"
role = "user"

[[message_resolvers]]
use = "LoadRecord"
table = "accounts"
where = { email = "{{ message.from }}", active = true }
order_by = ["name desc", "id"]
limit = 3
template = "Customer: {{ record.name }}"

[[message_resolvers]]
use = "ThreadHistory"
limit = 10
include_tool_calls = false
result_limit = 100
max_tokens = 2000

[[responsibilities]]
name = "daily-digest"
schedule = "0 8 * * *"
instructions = "Summarise yesterday's open threads."

[[responsibility_resolvers]]
use = "LoadText"
template = "{{ responsibility.instructions }}"
"#;

/// Valid and invalid personas to mutate: the one above and every fixture.
fn seeds() -> Vec<String> {
    let mut seeds = vec![RICH.to_owned()];
    for dir in ["tests/fixtures", "tests/fixtures/ok"] {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        seeds.extend(paths.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    }
    seeds
}

/// One edit of a text: positions are taken modulo its length in characters.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, char),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Truncate(usize),
}

/// Pieces that matter to TOML and to templates, plus arbitrary characters.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "\"",
            "'",
            "'''",
            "\"\"\"",
            "[",
            "]",
            "[[",
            "]]",
            "{",
            "}",
            "=",
            ",",
            ".",
            "#",
            "\n",
            "\r\n",
            "\\",
            "\\u0000",
            "\\u001b",
            "-",
            "0",
            "-1",
            "9999999999999999999999",
            "1.5",
            "true",
            "{{",
            "}}",
            "{%",
            "%}",
            "use",
            "limit",
            "template",
            "limits",
            "name",
            "message_resolvers",
            "LoadText",
            "ThreadHistory",
            "\u{0}",
            "\u{1b}",
            "\u{202e}",
            "é",
            "\t",
        ])
        .prop_map(str::to_owned),
        any::<char>().prop_map(String::from),
        "[ -~]{1,12}",
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1..8usize).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), fragment()).prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), any::<char>()).prop_map(|(at, c)| Edit::Replace(at, c)),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
    match edit {
        Edit::Delete(i, n) => {
            let start = at(*i, chars.len()).min(chars.len());
            let end = (start + n).min(chars.len());
            chars.drain(start..end);
        }
        Edit::Insert(i, s) => {
            let start = at(*i, chars.len());
            chars.splice(start..start, s.chars());
        }
        Edit::Replace(i, c) => {
            if !chars.is_empty() {
                let len = chars.len();
                chars[i % len] = *c;
            }
        }
        Edit::DuplicateLine(i) | Edit::SwapLines(i, _) => {
            let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
            let a = i % lines.len();
            match edit {
                Edit::SwapLines(_, j) => {
                    let b = j % lines.len();
                    lines.swap(a, b);
                }
                _ => {
                    let line = lines[a].clone();
                    lines.insert(a, line);
                }
            }
            return lines.join("\n");
        }
        Edit::Truncate(i) => chars.truncate(at(*i, chars.len())),
    }
    chars.into_iter().collect()
}

/// Parses `source` and checks every diagnostic: the `path:line:col: error: ` prefix with a
/// line and column inside the text, a quote of at most 160 characters, and no control
/// character in the rendering but its own line breaks and the source's tabs.
fn check(source: &str) -> Result<(), TestCaseError> {
    let parsed = Persona::parse(Path::new(PATH), source, &Registry::new());
    let Err(diagnostics) = parsed else {
        return Ok(());
    };
    prop_assert!(!diagnostics.is_empty());
    let lines = source.split('\n').count();
    for d in &diagnostics {
        let rendered = d.to_string();
        let prefix = format!("{PATH}:{}:{}: error: ", d.line(), d.column());
        prop_assert!(rendered.starts_with(&prefix), "{rendered}");
        prop_assert!(d.line() >= 1 && d.line() <= lines, "{rendered}");
        prop_assert!(d.column() >= 1, "{rendered}");
        prop_assert!(!d.message().is_empty(), "{rendered}");
        prop_assert!(
            rendered
                .chars()
                .all(|c| !c.is_control() || c == '\n' || c == '\t'),
            "{rendered:?}"
        );
        if let Some(quote) = rendered.lines().nth(2) {
            let quoted = quote.split_once(" | ").map_or("", |(_, q)| q);
            prop_assert!(quoted.chars().count() <= 160, "{rendered}");
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(source in any::<String>()) {
        check(&source)?;
    }

    #[test]
    fn toml_like_text_never_panics(source in "[ -~\t\n]{0,400}") {
        check(&source)?;
    }

    #[test]
    fn mutated_personas_never_panic(
        seed in prop::sample::select(seeds()),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let mut source = seed;
        for e in &edits {
            source = apply(&source, e);
        }
        check(&source)?;
    }
}
