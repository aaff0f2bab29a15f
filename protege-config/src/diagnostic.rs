//! Diagnostics: a problem at a spot in a persona file, rendered like cargo and rustc do.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in a persona file: where it is and what is wrong.
///
/// `Display` renders `path:line:col: error: message`, then the source line and a caret
/// line under the offending text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    path: PathBuf,
    line: usize,
    column: usize,
    message: String,
    source_line: String,
    caret_len: usize,
}

impl Diagnostic {
    /// A problem at byte `span` of `source`, read from `path`.
    pub fn new(path: &Path, source: &str, span: Range<usize>, message: impl Into<String>) -> Self {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..]
            .find('\n')
            .map_or(source.len(), |i| start + i);
        let line = source[..start].matches('\n').count() + 1;
        let column = source[line_start..start].chars().count() + 1;
        let source_line = source[line_start..line_end]
            .trim_end_matches('\r')
            .to_owned();
        let end = floor_char_boundary(source, span.end.clamp(start, line_end));
        let caret_len = source[start..end].chars().count().max(1);
        Self {
            path: path.to_owned(),
            line,
            column,
            message: message.into(),
            source_line,
            caret_len,
        }
    }

    /// A problem with the file as a whole (it cannot be read), shown at line 1, column 1.
    pub fn whole_file(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: message.into(),
            source_line: String::new(),
            caret_len: 0,
        }
    }

    /// The file the problem is in, as given to the loader.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The 1-based line.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The 1-based column, in characters.
    pub fn column(&self) -> usize {
        self.column
    }

    /// What is wrong: one lowercase sentence, names in backticks.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The first line of the rendering: `path:line:col: error: message`.
    pub fn headline(&self) -> String {
        format!(
            "{}:{}:{}: error: {}",
            self.path.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.headline())?;
        if self.caret_len == 0 {
            return Ok(());
        }
        let number = self.line.to_string();
        let pad = " ".repeat(number.len());
        let lead: String = self
            .source_line
            .chars()
            .take(self.column - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(
            f,
            "\n{pad} |\n{number} | {}\n{pad} | {lead}{}",
            self.source_line,
            "^".repeat(self.caret_len)
        )
    }
}

/// Renders several diagnostics, separated by blank lines, as `check` prints them.
pub fn render(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&d.to_string());
    }
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The closest of `candidates` to `name`, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = strsim::damerau_levenshtein(&lower, &c.to_lowercase());
        let limit = (c.chars().count() / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `, did you mean `x`?` or nothing.
pub(crate) fn suggestion<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(name, candidates) {
        Some(c) => format!(", did you mean `{c}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_line_and_caret() {
        let src = "name = \"x\"\nlimt = 10\n";
        let d = Diagnostic::new(Path::new("p/a.toml"), src, 11..15, "unknown option `limt`");
        assert_eq!(
            d.to_string(),
            "p/a.toml:2:1: error: unknown option `limt`\n  |\n2 | limt = 10\n  | ^^^^"
        );
    }

    #[test]
    fn suggests_close_names_only() {
        let names = ["LoadText", "LoadFile", "LoadRecord", "ThreadHistory"];
        assert_eq!(did_you_mean("ThreadHistroy", names), Some("ThreadHistory"));
        assert_eq!(did_you_mean("loadtext", names), Some("LoadText"));
        assert_eq!(did_you_mean("Banana", names), None);
    }
}
