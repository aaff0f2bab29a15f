//! The documentation a user reads keeps up with the code. The guide (`docs/src/`), the
//! README and the architecture map are read as Markdown, and:
//!
//! - the template variables table of the reference and the one of the crate docs are the
//!   same, and they list every variable and attribute a template may use, with an example
//!   each; the reference's table of built-in options is the shared table's rendering;
//! - every ```` ```toml ```` block is a persona the real loader loads without a problem; a
//!   ```` ```toml,error ```` block is one it refuses, with the diagnostics of the ```` ```text ````
//!   block that follows it when that block names them;
//! - every ```` ```json ```` block parses; every `cargo` command names an example, bench,
//!   test or package that exists (the `protege` commands and the HTTP requests are checked
//!   against the command line's grammar and the service's routes by `protege-cli`'s
//!   `guide` tests);
//! - every relative link leads to a file, and its `#anchor` to a heading of that file; the
//!   guide's links stay inside the guide, which is all mdBook serves;
//! - the README stays short, and the README's agent persona is the guide's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use protege::config::{Persona, Registry};
use protege_schema::names::{MAIL, MESSAGE, PERSONA, RESPONSIBILITY, THREAD, VARIABLES};

#[path = "support/markdown.rs"]
mod markdown;

use markdown::{Block, Doc, words};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap()
}

fn documents() -> Vec<Doc> {
    markdown::documents(&root())
}

/// Every fenced block of the README, the architecture map and the guide.
fn all_blocks() -> Vec<Block> {
    documents().iter().flat_map(markdown::blocks).collect()
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
fn the_reference_and_crate_docs_list_the_same_template_variables() {
    let guide = variables_table(&read("docs/src/reference.md"), "");
    let rustdoc = variables_table(&read("src/lib.rs"), "//! ");
    assert_eq!(guide, rustdoc);
}

#[test]
fn every_template_variable_is_documented_with_an_example() {
    let rows = variables_table(&read("docs/src/reference.md"), "");
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
fn the_reference_lists_the_builtin_options_of_the_shared_table() {
    let reference = read("docs/src/reference.md");
    let table = protege_schema::markdown_table();
    assert!(
        reference.contains(&table),
        "the reference's table of built-in options differs from the shared table; it is:\n{table}"
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

/// `persona` loaded from a persona folder of its own, as `support.toml`.
fn load_support(persona: &str) -> protege::config::PersonaSet {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("personas")).unwrap();
    std::fs::write(root.path().join("personas/support.toml"), persona).unwrap();
    let (set, diagnostics) =
        protege::config::PersonaSet::load(root.path().join("personas")).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    set
}

#[test]
fn the_readme_persona_that_runs_the_agent_loads_with_its_keys() {
    let persona = block_after(&read("README.md"), "## A persona that answers mail", "toml");
    assert!(
        persona.lines().count() <= 32,
        "the README's agent persona is short"
    );
    assert_eq!(
        persona,
        block_after(&read("docs/src/runs.md"), "## Running the agent", "toml"),
        "the README's agent persona is the guide's"
    );
    let set = load_support(&persona);
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
fn the_guide_s_mailbox_persona_loads_with_its_keys() {
    let persona = block_after(
        &read("docs/src/mailboxes.md"),
        "## Mailboxes (IMAP)",
        "toml",
    );
    let set = load_support(&persona);
    let inbox = set.get("support").unwrap().info().inbox.clone().unwrap();
    assert_eq!(inbox.key(), "support@acme.test@imap.acme.test:993/INBOX");
    assert_eq!(
        inbox.after,
        protege::InboxAfter::Move("Processed".to_owned())
    );
    assert_eq!(inbox.sent.as_deref(), Some("Sent"));
}

/// The info strings a block may carry, and what each is checked for.
const KINDS: &[(&str, &str)] = &[
    ("toml", "a persona file the loader loads without a problem"),
    ("toml,error", "a persona file the loader refuses"),
    (
        "sh",
        "commands: `protege`, `cargo` and `curl` lines are checked",
    ),
    ("json", "JSON that parses"),
    ("http", "a request to a route of the service, its body JSON"),
    (
        "text",
        "output; its `$ protege` lines are checked as commands",
    ),
    (
        "rust",
        "Rust as the crate docs and examples write it (compiled there)",
    ),
    (
        "python",
        "the tool signature check, as `examples/agent_loop.py` runs it",
    ),
];

#[test]
fn every_block_says_what_it_holds() {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for block in all_blocks() {
        let kind = KINDS
            .iter()
            .find(|(k, _)| *k == block.info)
            .unwrap_or_else(|| {
                panic!(
                    "{}: a block marked ```{}; the kinds are {:?}",
                    block.at, block.info, KINDS
                )
            });
        *counts.entry(kind.0).or_default() += 1;
    }
    println!("{counts:?}");
    for (kind, floor) in [
        ("toml", 13),
        ("toml,error", 1),
        ("sh", 18),
        ("json", 2),
        ("http", 1),
        ("text", 20),
    ] {
        assert!(
            counts.get(kind).copied().unwrap_or(0) >= floor,
            "fewer than {floor} ```{kind} blocks: {counts:?}"
        );
    }
}

/// The file name a persona block is loaded under: the `personas/NAME.toml` its diagnostics
/// name in the block after it, else `personas/example.toml`.
fn persona_path(expected: Option<&str>) -> PathBuf {
    expected
        .and_then(|text| text.lines().next())
        .and_then(|line| line.split(':').next())
        .filter(|p| p.starts_with("personas/"))
        .unwrap_or("personas/example.toml")
        .into()
}

#[test]
fn every_persona_block_loads_and_every_error_block_is_refused_as_shown() {
    let registry = Registry::new();
    let (mut loaded, mut refused) = (0, 0);
    for doc in documents() {
        let blocks = markdown::blocks(&doc);
        for (i, block) in blocks.iter().enumerate() {
            // The diagnostics a refused block shows: the `personas/...` lines of the
            // ```text block right after it.
            let shown: Option<String> = blocks
                .get(i + 1)
                .filter(|next| next.info == "text")
                .map(|next| {
                    next.text
                        .lines()
                        .filter(|l| l.starts_with("personas/"))
                        .map(|l| format!("{l}\n"))
                        .collect::<String>()
                })
                .filter(|s| !s.is_empty());
            match block.info.as_str() {
                "toml" => {
                    let path = persona_path(None);
                    if let Err(diagnostics) = Persona::parse(&path, &block.text, &registry) {
                        panic!("{}: the persona does not load:\n{diagnostics}", block.at);
                    }
                    loaded += 1;
                }
                "toml,error" => {
                    let path = persona_path(shown.as_deref());
                    let Err(diagnostics) = Persona::parse(&path, &block.text, &registry) else {
                        panic!("{}: a ```toml,error block that loads", block.at);
                    };
                    if let Some(shown) = &shown {
                        assert_eq!(&format!("{diagnostics}\n"), shown, "{}", block.at);
                    }
                    refused += 1;
                }
                _ => {}
            }
        }
    }
    println!("{loaded} checked");
    assert!(loaded >= 13, "{loaded} personas loaded");
    assert!(refused >= 1, "{refused} personas refused");
}

#[test]
fn every_json_block_parses() {
    let mut parsed = 0;
    for block in all_blocks().iter().filter(|b| b.info == "json") {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&block.text) {
            panic!("{}: {e}", block.at);
        }
        parsed += 1;
    }
    println!("{parsed} checked");
    assert!(parsed >= 2, "{parsed} JSON blocks");
}

/// The value of `flag` among `words`.
fn flag<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let at = words.iter().position(|w| w == flag)?;
    words.get(at + 1).map(String::as_str)
}

/// Whether the package at `dir` (`.` for the root crate) has `kind/NAME.rs` or
/// `kind/NAME/main.rs`.
fn has_target(dir: &Path, kind: &str, name: &str) -> bool {
    dir.join(kind).join(format!("{name}.rs")).is_file()
        || dir.join(kind).join(name).join("main.rs").is_file()
        || (kind == "examples"
            && dir
                .join("protege-cli/examples")
                .join(format!("{name}.rs"))
                .is_file())
}

#[test]
fn every_cargo_command_names_what_exists() {
    let members = read("Cargo.toml");
    let mut checked = 0;
    for block in all_blocks()
        .iter()
        .filter(|b| b.info == "sh" || b.info == "text")
    {
        for (line, _) in markdown::command_lines(block) {
            let words = words(&line);
            if words.first().map(String::as_str) != Some("cargo") {
                continue;
            }
            let dir = match flag(&words, "-p") {
                Some(package) => {
                    assert!(
                        package == "protege" || members.contains(&format!("\"{package}\"")),
                        "{}: `{line}` names the package `{package}`, which is no member",
                        block.at
                    );
                    if package == "protege" {
                        root()
                    } else {
                        root().join(package)
                    }
                }
                None => root(),
            };
            for (flag_name, kind) in [
                ("--example", "examples"),
                ("--bench", "benches"),
                ("--test", "tests"),
            ] {
                if let Some(name) = flag(&words, flag_name) {
                    assert!(
                        has_target(&dir, kind, name),
                        "{}: `{line}`: no {kind}/{name}.rs in {}",
                        block.at,
                        dir.display()
                    );
                }
            }
            let sub = words.get(1).map(String::as_str).unwrap_or_default();
            assert!(
                [
                    "run", "test", "bench", "build", "install", "fmt", "clippy", "doc", "insta",
                    "tree"
                ]
                .contains(&sub),
                "{}: `{line}`: an unknown cargo command",
                block.at
            );
            if sub == "install" {
                let path = flag(&words, "--path").unwrap();
                assert!(
                    root().join(path).join("src/main.rs").is_file(),
                    "{}: `{line}`",
                    block.at
                );
            }
            checked += 1;
        }
    }
    println!("{checked} checked");
    assert!(checked >= 19, "{checked} cargo commands");
}

#[test]
fn every_link_leads_to_a_file_and_a_heading() {
    let docs = documents();
    let anchors: BTreeMap<&str, Vec<String>> = docs
        .iter()
        .map(|d| (d.path.as_str(), markdown::anchors(&d.text)))
        .collect();
    let mut checked = 0;
    for doc in &docs {
        for (line, target) in markdown::links(&doc.text) {
            let at = format!("{}:{line}", doc.path);
            if target.starts_with("https://") || target.starts_with("http://") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                doc.path.clone()
            } else {
                markdown::resolve_link(&doc.path, file)
                    .unwrap_or_else(|| panic!("{at}: `{target}` leaves the project"))
            };
            assert!(
                root().join(&path).exists(),
                "{at}: `{target}` names `{path}`, which does not exist"
            );
            if doc.path.starts_with("docs/src/") {
                assert!(
                    path.starts_with("docs/src/"),
                    "{at}: `{target}` leaves the guide, which mdBook cannot serve; name the file as code"
                );
            }
            if let Some(anchor) = anchor {
                let headings = anchors.get(path.as_str()).unwrap_or_else(|| {
                    panic!("{at}: `{target}`: an anchor in a file that is not Markdown")
                });
                assert!(
                    headings.iter().any(|h| h == anchor),
                    "{at}: `{target}`: `{path}` has no heading `#{anchor}`"
                );
            }
            checked += 1;
        }
    }
    println!("{checked} checked");
    assert!(checked >= 80, "{checked} links");
}

#[test]
fn the_summary_names_every_chapter_once() {
    let summary = read("docs/src/SUMMARY.md");
    let named: Vec<String> = markdown::links(&summary)
        .into_iter()
        .map(|(_, target)| target)
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .collect();
    files.sort();
    let mut sorted = named.clone();
    sorted.sort();
    assert_eq!(sorted, files);
    assert_eq!(named.len(), 13, "{named:?}");
}

#[test]
fn the_readme_and_the_architecture_map_stay_short() {
    let readme = read("README.md").lines().count();
    let architecture = read("ARCHITECTURE.md").lines().count();
    assert!(readme <= 200, "the README has {readme} lines");
    assert!(
        architecture <= 250,
        "ARCHITECTURE.md has {architecture} lines"
    );
}

#[test]
fn the_words_of_a_shell_line() {
    assert_eq!(
        words(r#"PROTEGE_SERVE_TOKEN=s3cret protege serve --listen 127.0.0.1:8080  # a comment"#),
        [
            "PROTEGE_SERVE_TOKEN=s3cret",
            "protege",
            "serve",
            "--listen",
            "127.0.0.1:8080"
        ]
    );
    assert_eq!(
        words(r#"protege resolve --message '<m 1@x>' --explain=json 2>&1 >/dev/null | jq -c ."#),
        [
            "protege",
            "resolve",
            "--message",
            "<m 1@x>",
            "--explain=json"
        ]
    );
    assert_eq!(
        words("protege completions bash > file"),
        ["protege", "completions", "bash"]
    );
}
