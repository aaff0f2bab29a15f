//! Diagnostics: a problem at a spot in a persona file, rendered like cargo and rustc do.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The most characters of a source line a diagnostic quotes.
const QUOTE_MAX: usize = 160;

/// Characters of context kept before the column when a long line is cut.
const QUOTE_BEFORE: usize = 40;

/// One problem in a persona file: where it is and what is wrong.
///
/// `Display` renders `path:line:col: error: message`, then the source line and a caret
/// line under the offending text. The quote is at most 160 characters around the column
/// (`…` marks a cut) and shows control characters as `\u{..}` escapes, so a hostile or
/// broken line can neither flood nor rewrite the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    path: PathBuf,
    line: usize,
    column: usize,
    message: String,
    /// The quoted part of the source line, escaped.
    quote: String,
    /// What goes before the carets: spaces, and tabs where the quote has tabs.
    lead: String,
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
        let source_line = source[line_start..line_end].trim_end_matches('\r');
        let end = floor_char_boundary(source, span.end.clamp(start, line_end));
        let caret_chars = source[start..end].chars().count();
        let (quote, lead, caret_len) = quote(source_line, column - 1, caret_chars);
        Self {
            path: path.to_owned(),
            line,
            column,
            message: escape_controls(&message.into()),
            quote,
            lead,
            caret_len,
        }
    }

    /// A problem with the file as a whole (it cannot be read), shown at line 1, column 1.
    pub fn whole_file(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            line: 1,
            column: 1,
            message: escape_controls(&message.into()),
            quote: String::new(),
            lead: String::new(),
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
        write!(
            f,
            "\n{pad} |\n{number} | {}\n{pad} | {}{}",
            self.quote,
            self.lead,
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

/// Every problem found in one or more persona files, in order: what
/// [`Persona::parse`](crate::Persona::parse) fails with, what
/// [`PersonaSet::load`](crate::PersonaSet::load) returns for the files that did not load.
///
/// It derefs to a slice of [`Diagnostic`]s. As an error it works with `?` in a function
/// returning `anyhow::Result` or `Box<dyn Error>`: `Display` prints one headline
/// (`path:line:col: error: message`) per problem, one per line; [`render`] adds the quoted
/// source lines, as `check` prints them.
///
/// ```
/// use protege::config::{Persona, Registry};
/// fn load(source: &str) -> Result<Persona, Box<dyn std::error::Error>> {
///     Ok(Persona::parse("personas/p.toml".as_ref(), source, &Registry::new())?)
/// }
/// let err = load("instructons = \"hi\"\n[[message_resolvers]]\nuse = \"ThreadHistroy\"\n")
///     .unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "personas/p.toml:1:1: error: unknown key `instructons`, did you mean `instructions`?\n\
///      personas/p.toml:3:7: error: unknown resolver `ThreadHistroy`, did you mean `ThreadHistory`?"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    /// The diagnostics as a vector.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.0
    }
}

impl std::ops::Deref for Diagnostics {
    type Target = [Diagnostic];

    fn deref(&self) -> &[Diagnostic] {
        &self.0
    }
}

impl From<Vec<Diagnostic>> for Diagnostics {
    fn from(diagnostics: Vec<Diagnostic>) -> Self {
        Self(diagnostics)
    }
}

impl From<Diagnostics> for Vec<Diagnostic> {
    fn from(diagnostics: Diagnostics) -> Self {
        diagnostics.0
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<I: IntoIterator<Item = Diagnostic>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl Extend<Diagnostic> for Diagnostics {
    fn extend<I: IntoIterator<Item = Diagnostic>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&d.headline())?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// How a character is shown in a quote: itself, or `\u{..}` for a control character
/// (TAB excepted, it is indentation) or a bidirectional formatting character.
fn shown(c: char) -> Option<String> {
    let bidi =
        matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    ((c.is_control() && c != '\t') || bidi).then(|| c.escape_unicode().to_string())
}

/// `text` with control characters escaped.
fn escape_controls(text: &str) -> String {
    if !text.chars().any(|c| shown(c).is_some()) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| shown(c).unwrap_or_else(|| c.to_string()))
        .collect()
}

/// The quote of `line` around the character `column` (0-based) with `caret_chars`
/// characters marked: the escaped text (at most [`QUOTE_MAX`] characters, `…` where cut),
/// the lead of the caret line, and the number of carets (at least one).
fn quote(line: &str, column: usize, caret_chars: usize) -> (String, String, usize) {
    let pieces: Vec<(char, Option<String>)> = line.chars().map(|c| (c, shown(c))).collect();
    let width = |i: usize| pieces[i].1.as_ref().map_or(1, |e| e.len());
    let n = pieces.len();
    let column = column.min(n);
    let total: usize = (0..n).map(width).sum();
    let (lo, hi) = if total <= QUOTE_MAX {
        (0, n)
    } else {
        // Room for a `…` at each end.
        let budget = QUOTE_MAX - 2;
        let (mut lo, mut hi, mut used) = (column, column, 0);
        while lo > 0 && used + width(lo - 1) <= QUOTE_BEFORE {
            lo -= 1;
            used += width(lo);
        }
        while hi < n && used + width(hi) <= budget {
            used += width(hi);
            hi += 1;
        }
        while lo > 0 && used + width(lo - 1) <= budget {
            lo -= 1;
            used += width(lo);
        }
        (lo, hi)
    };
    let mut quote = String::new();
    let mut lead = String::new();
    if lo > 0 {
        quote.push('…');
        lead.push(' ');
    }
    for (i, (c, escaped)) in pieces.iter().enumerate().take(hi).skip(lo) {
        match escaped {
            Some(e) => quote.push_str(e),
            None => quote.push(*c),
        }
        if i < column {
            match c {
                '\t' => lead.push('\t'),
                _ => lead.extend(std::iter::repeat_n(' ', width(i))),
            }
        }
    }
    if hi < n {
        quote.push('…');
    }
    let caret_end = (column + caret_chars).min(hi);
    let carets = (column..caret_end).map(width).sum::<usize>().max(1);
    (quote, lead, carets)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A message from another library as a clause of ours: lowercase first letter (unless
/// the word is an acronym), no trailing newline or period.
pub(crate) fn lowercase_first(text: &str) -> String {
    let text = text.trim_end_matches('\n').trim_end_matches('.');
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if !chars.as_str().starts_with(|c: char| c.is_ascii_uppercase()) => {
            c.to_lowercase().collect::<String>() + chars.as_str()
        }
        _ => text.to_owned(),
    }
}

/// The one "did you mean" rule of protege (`protege-schema`), shared with the macro.
pub(crate) use protege_schema::{did_you_mean, suggestion};

/// The error for `text`, not one of `choices`, given for a setting named `what`: the
/// closest choice when one is near (`unknown cache mode `aut`, did you mean `auto`?`),
/// else the choices spelt out in `expected` (`unknown cache mode `x`, expected `auto` or
/// `off``).
pub(crate) fn unknown_choice(what: &str, text: &str, choices: &[&str], expected: &str) -> String {
    let hint = suggestion(text, choices.iter().copied());
    if hint.is_empty() {
        format!("unknown {what} `{text}`, expected {expected}")
    } else {
        format!("unknown {what} `{text}`{hint}")
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

    /// The source line as the rendering quotes it (third line).
    fn quoted(d: &Diagnostic) -> String {
        let text = d.to_string();
        let line = text.lines().nth(2).unwrap();
        line.split_once(" | ").unwrap().1.to_owned()
    }

    #[test]
    fn a_long_line_is_quoted_around_the_column() {
        let line = format!("{}BAD{}", "a".repeat(5000), "b".repeat(4997));
        assert_eq!(line.chars().count(), 10_000);
        let src = format!("x = 1\n{line}\n");
        let start = 6 + 5000;
        let d = Diagnostic::new(Path::new("p.toml"), &src, start..start + 3, "bad");
        let expected_quote = format!("…{}BAD{}…", "a".repeat(40), "b".repeat(115));
        assert_eq!(expected_quote.chars().count(), 160);
        assert_eq!(
            d.to_string(),
            format!(
                "p.toml:2:5001: error: bad\n  |\n2 | {expected_quote}\n  | {}^^^",
                " ".repeat(41)
            )
        );
        assert_eq!(quoted(&d).chars().count(), 160);
    }

    #[test]
    fn a_long_line_is_quoted_from_its_start_or_up_to_its_end() {
        let line = "c".repeat(10_000);
        let d = Diagnostic::new(Path::new("p.toml"), &line, 0..10_000, "bad");
        assert_eq!(
            d.to_string(),
            format!(
                "p.toml:1:1: error: bad\n  |\n1 | {}…\n  | {}",
                "c".repeat(158),
                "^".repeat(158)
            )
        );
        let d = Diagnostic::new(Path::new("p.toml"), &line, 9_999..10_000, "bad");
        assert_eq!(
            d.to_string(),
            format!(
                "p.toml:1:10000: error: bad\n  |\n1 | …{}\n  | {}^",
                "c".repeat(158),
                " ".repeat(158)
            )
        );
    }

    #[test]
    fn control_characters_are_escaped_and_the_caret_follows() {
        let src = "k = \"a\u{1b}[2Jb\u{7}\u{202e}\"\tz = 1\n";
        let z = src.find('z').unwrap();
        let d = Diagnostic::new(Path::new("p.toml"), src, z..z + 1, "bad \u{1b}key\r");
        assert_eq!(
            d.to_string(),
            format!(
                "p.toml:1:16: error: bad \\u{{1b}}key\\u{{d}}\n  |\n1 | k = \"a\\u{{1b}}[2Jb\\u{{7}}\\u{{202e}}\"\tz = 1\n  | {}\t^",
                " ".repeat(30)
            )
        );
        let d = Diagnostic::new(Path::new("p.toml"), src, 5..7, "bad");
        assert!(d.to_string().ends_with("\n  |      ^^^^^^^"), "{d}");
    }
}
