//! The documentation's Markdown as the docs tests read it: the files (the README, the
//! architecture map, the changelog, the security policy and every chapter of the guide
//! under `docs/src/`, with mdBook's `{{#include}}` expanded), their fenced code blocks with
//! their info strings, their headings as the anchors mdBook and GitHub give them, and their
//! links. Shared by `tests/docs.rs` and the command line's check of the guide's commands.

use std::path::Path;

/// One Markdown file of the documentation.
#[derive(Debug)]
pub(crate) struct Doc {
    /// The path from the project's root, `/`-separated: `docs/src/runs.md`.
    pub(crate) path: String,
    /// The text, with mdBook's `{{#include FILE}}` lines replaced by the file's text.
    pub(crate) text: String,
}

/// A fenced code block.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// The file and the line of the opening fence: `docs/src/runs.md:12`.
    pub(crate) at: String,
    /// The info string: `toml`, `toml,error`, `sh`, `text`, ...
    pub(crate) info: String,
    /// The lines between the fences, without the opening fence's indentation.
    pub(crate) text: String,
}

/// The documentation's Markdown files under `root`: the four at the root, then the guide's
/// chapters in name order.
pub(crate) fn documents(root: &Path) -> Vec<Doc> {
    let mut paths: Vec<String> = [
        "README.md",
        "ARCHITECTURE.md",
        "CHANGELOG.md",
        "SECURITY.md",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    let mut chapters: Vec<String> = std::fs::read_dir(root.join("docs/src"))
        .expect("the guide's folder")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/src/{n}"))
        .collect();
    chapters.sort();
    paths.extend(chapters);
    paths
        .into_iter()
        .map(|path| {
            let text = expand(root, &root.join(&path));
            Doc { path, text }
        })
        .collect()
}

/// The text of `file` with each `{{#include PATH}}` line replaced by PATH's text (relative
/// to `file`'s folder, as mdBook reads it).
fn expand(root: &Path, file: &Path) -> String {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.strip_prefix(root).unwrap().display()));
    text.lines()
        .map(|line| match include_target(line) {
            Some(target) => expand(root, &file.parent().unwrap().join(target)),
            None => format!("{line}\n"),
        })
        .collect()
}

/// The PATH of a line `{{#include PATH}}`.
pub(crate) fn include_target(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix("{{#include ")?
        .strip_suffix("}}")
        .map(str::trim)
}

/// The fenced code blocks of `doc`, in order.
pub(crate) fn blocks(doc: &Doc) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String, Vec<String>)> = None;
    for (i, line) in doc.text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((i + 1, indent, info.trim().to_owned(), Vec::new()));
                }
            }
            Some((start, indent_of_fence, info, lines)) => {
                if trimmed.trim_end() == "```" {
                    out.push(Block {
                        at: format!("{}:{start}", doc.path),
                        info: info.clone(),
                        text: lines.iter().map(|l| format!("{l}\n")).collect(),
                    });
                    open = None;
                } else {
                    let cut = line.len() - line.trim_start().len();
                    lines.push(line[cut.min(*indent_of_fence)..].to_owned());
                }
            }
        }
    }
    assert!(open.is_none(), "{}: a code block is never closed", doc.path);
    out
}

/// The lines of `text` outside fenced code blocks, with their numbers (from 1).
pub(crate) fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The anchor mdBook and GitHub give a heading: its text without code marks and link
/// targets, lower-cased, letters, digits, `-` and `_` kept, white space turned into `-`.
pub(crate) fn slug(heading: &str) -> String {
    let text = strip_links(heading).replace('`', "");
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// `[text](target)` written as `text`.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The anchors of the headings of `text`, a second heading of the same anchor numbered
/// `-1`, a third `-2`, as mdBook and GitHub number them.
pub(crate) fn anchors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, line) in prose(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(line[hashes..].trim());
            let mut anchor = base.clone();
            let mut n = 0;
            while out.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            out.push(anchor);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of `text`'s prose (code spans left
/// out), with their line numbers.
pub(crate) fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(text) {
        // Code spans hold text such as `[tool call NAME](...)` that is no link.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n, after[..end].to_owned()));
            rest = &after[end + 1..];
        }
    }
    out
}

/// `target` (a relative link of the file `from`, without its anchor) as a path from the
/// project's root, `.` and `..` resolved: `None` when it climbs above the root.
pub(crate) fn resolve_link(from: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The words of a shell line, quotes removed, up to the first pipe, redirection, `;` or
/// comment.
pub(crate) fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut chars = line.chars().peekable();
    let mut in_word = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '"' {
                        break;
                    }
                    word.push(q);
                }
            }
            '#' if !in_word => break,
            '|' | '>' | '<' | ';' | '&' if !in_word || word.is_empty() => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                // `2>&1` and `2>file` end the command too.
                if c == '2' && !in_word && chars.peek() == Some(&'>') {
                    break;
                }
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The command lines of a block: in a ```` ```sh ```` block every line, a line ending in `\`
/// joined with the next; in a ```` ```text ```` block the lines after a `$ ` prompt. Each
/// with the line that follows it in the block, where a command's output begins.
pub(crate) fn command_lines(block: &Block) -> Vec<(String, Option<String>)> {
    let lines: Vec<&str> = block.text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let command = match block.info.as_str() {
            "sh" => Some(line),
            "text" => line.strip_prefix("$ "),
            _ => None,
        };
        i += 1;
        let Some(command) = command else { continue };
        let mut joined = command.trim_end().to_owned();
        while joined.ends_with('\\') && i < lines.len() {
            joined.pop();
            joined.push(' ');
            joined.push_str(lines[i].trim());
            i += 1;
        }
        out.push((joined, lines.get(i).map(|l| l.to_string())));
    }
    out
}
