//! The documentation a user reads keeps up with the code: the template variables table of
//! the README and the one of the crate docs are the same, and they list every variable and
//! attribute a template may use, with an example each; the README's table of built-in
//! options is the shared table's rendering.

use std::path::PathBuf;

use protege_schema::names::{MAIL, MESSAGE, PERSONA, RESPONSIBILITY, THREAD, VARIABLES};

fn read(file: &str) -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
}

/// The rows of the table whose header row is `| variable | what | example |`.
fn variables_table(text: &str, prefix: &str) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect();
    let start = lines
        .iter()
        .position(|l| *l == "| variable | what | example |")
        .expect("a template variables table");
    lines[start + 2..]
        .iter()
        .take_while(|l| l.starts_with("| "))
        .map(|l| l.to_string())
        .collect()
}

/// The names of a row's first cell: `message.to`, `message.cc` gives both.
fn names(row: &str) -> Vec<String> {
    let cell = row.split(" | ").next().unwrap().trim_start_matches("| ");
    cell.split(", ")
        .map(|n| n.trim_matches('`').to_owned())
        .collect()
}

#[test]
fn readme_and_crate_docs_list_the_same_template_variables() {
    let readme = variables_table(&read("README.md"), "");
    let rustdoc = variables_table(&read("src/lib.rs"), "//! ");
    assert_eq!(readme, rustdoc);
}

#[test]
fn every_template_variable_is_documented_with_an_example() {
    let rows = variables_table(&read("README.md"), "");
    let documented: Vec<String> = rows.iter().flat_map(|r| names(r)).collect();
    let mut expected: Vec<String> = Vec::new();
    for variable in VARIABLES {
        let attributes: &[&str] = match *variable {
            "persona" => PERSONA,
            "message" => MESSAGE,
            "responsibility" => RESPONSIBILITY,
            "mail" => MAIL,
            "thread" => THREAD,
            _ => &[],
        };
        if attributes.is_empty() {
            expected.push(variable.to_string());
        }
        expected.extend(attributes.iter().map(|a| format!("{variable}.{a}")));
    }
    assert_eq!(documented, expected);
    for row in &rows {
        let example = row.rsplit(" | ").next().unwrap();
        for name in names(row) {
            assert!(
                example.contains(&format!("{{{{ {name}"))
                    || example.contains(&format!("{{% if {name}")),
                "the example of `{name}` does not use it: {row}"
            );
        }
    }
}

#[test]
fn the_readme_lists_the_builtin_options_of_the_shared_table() {
    let readme = read("README.md");
    let table = protege_schema::markdown_table();
    assert!(
        readme.contains(&table),
        "the README's table of built-in options differs from the shared table; it is:\n{table}"
    );
}

/// The text of the first fenced block of `lang` after the heading line `heading`.
fn block_after(text: &str, heading: &str, lang: &str) -> String {
    let start = text.find(heading).expect("the heading");
    let open = format!("```{lang}\n");
    let from = start + text[start..].find(&open).expect("a block") + open.len();
    let len = text[from..].find("```").expect("the block's end");
    text[from..from + len].to_owned()
}

#[test]
fn the_readme_persona_that_runs_the_agent_loads_with_its_keys() {
    let persona = block_after(&read("README.md"), "## Running the agent", "toml");
    assert!(
        persona.lines().count() <= 32,
        "the README's agent persona is short"
    );
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(root.path().join("personas/support.toml"), &persona).unwrap();
    let (set, diagnostics) =
        protege::config::PersonaSet::load(root.path().join("personas")).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let support = set.get("support").unwrap();
    let info = support.info();
    let agent = info.agent.as_ref().unwrap();
    assert_eq!(
        (agent.max_replies_per_thread_per_day, agent.tokens_per_day),
        (5, Some(2_000_000))
    );
    assert_eq!(info.tool_runners.len(), 1);
    assert_eq!(
        info.model.as_ref().unwrap().api_key_env(),
        Some("ANTHROPIC_API_KEY")
    );
}

#[test]
fn the_readme_mailbox_persona_loads_with_its_keys() {
    let persona = block_after(&read("README.md"), "## Mailboxes (IMAP)", "toml");
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(root.path().join("personas/support.toml"), &persona).unwrap();
    let (set, diagnostics) =
        protege::config::PersonaSet::load(root.path().join("personas")).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let inbox = set.get("support").unwrap().info().inbox.clone().unwrap();
    assert_eq!(inbox.key(), "support@acme.test@imap.acme.test:993/INBOX");
    assert_eq!(
        inbox.after,
        protege::InboxAfter::Move("Processed".to_owned())
    );
    assert_eq!(inbox.sent.as_deref(), Some("Sent"));
}
