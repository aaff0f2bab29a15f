//! Loading a persona, stage 2 of 4: the TOML syntax. The text is parsed with spans; its
//! syntax errors are diagnostics, each at its line and column, and only the first few of a
//! file that is not TOML at all. The next stage is [`persona`](crate::persona).

use std::ops::Range;

use toml::Spanned;
use toml::de::DeTable;

use crate::diagnostic::lowercase_first;
use crate::reader::Sink;

/// The most syntax errors shown for one file. A file with more is most likely not a
/// persona file (a text or binary file reached through a symbolic link): the rest are
/// counted in one last diagnostic instead of quoting every line of it.
pub(crate) const MAX_SYNTAX_ERRORS: usize = 5;

/// The most parts of a dotted key (`a.b.c` has 3) the TOML parser takes.
const MAX_KEY_PARTS: usize = 80;

/// The document of `sink`'s file, or `None` when it is not valid TOML (its errors are then
/// in `sink`).
pub(crate) fn parse<'s>(sink: &mut Sink<'s>) -> Option<Spanned<DeTable<'s>>> {
    let (doc, errors) = DeTable::parse_recoverable(sink.source);
    if errors.is_empty() {
        return Some(doc);
    }
    report(sink, &errors);
    None
}

/// Records the syntax `errors` of `sink`'s file: the first [`MAX_SYNTAX_ERRORS`], then how
/// many more there are.
fn report(sink: &mut Sink<'_>, errors: &[toml::de::Error]) {
    if !looks_like_toml(sink.source) {
        // A file reached through a link to something else (`/etc/passwd`, a key): none of
        // its lines is quoted.
        sink.diagnostics.push(crate::Diagnostic::whole_file(
            sink.path,
            "not a persona file: no line of it is TOML (`key = value`, `[table]` or a `#` comment), so none is quoted",
        ));
        return;
    }
    for e in errors.iter().take(MAX_SYNTAX_ERRORS) {
        let (span, message) = located(sink.source, e);
        sink.error(span, message);
    }
    if let Some(next) = errors.get(MAX_SYNTAX_ERRORS) {
        let more = errors.len() - MAX_SYNTAX_ERRORS;
        let (span, _) = located(sink.source, next);
        sink.error(
            span,
            format!(
                "invalid TOML: {more} more {} not shown; is this a persona file?",
                if more == 1 { "error" } else { "errors" }
            ),
        );
    }
}

/// Whether any line of `source` has the shape of TOML: a `key =` (bare or quoted key), a
/// `[table]` or `[[array]]` header, or a `#` comment.
fn looks_like_toml(source: &str) -> bool {
    source.lines().any(|line| {
        let line = line.trim_start();
        if line.starts_with('#') || line.starts_with('[') {
            return true;
        }
        let Some((key, _)) = line.split_once('=') else {
            return false;
        };
        let key = key.trim_end();
        !key.is_empty()
            && key.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | '\'' | ' ')
            })
    })
}

/// Where `error` lies and what it says. The parser gives no position for a dotted key of
/// too many parts: it is found in the source.
fn located(source: &str, error: &toml::de::Error) -> (Range<usize>, String) {
    let said = format!("invalid TOML: {}", lowercase_first(error.message()));
    if let Some(span) = error.span() {
        return (span, said);
    }
    match long_dotted_key(source) {
        Some((span, parts)) => (
            span,
            format!(
                "invalid TOML: a dotted key of {parts} parts; at most {MAX_KEY_PARTS} are allowed"
            ),
        ),
        None => (0..0, said),
    }
}

/// The first line holding more than [`MAX_KEY_PARTS`] key parts: the span of its key (from
/// its first character to `=` or the end of the line) and its number of parts. Dots inside
/// quoted keys do not count.
fn long_dotted_key(source: &str) -> Option<(Range<usize>, usize)> {
    let mut start = 0;
    for line in source.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let (mut dots, mut quote, mut end) = (0, None, line.trim_end().len());
        for (i, c) in line.char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '.') => dots += 1,
                (None, '=' | '#') => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        if dots >= MAX_KEY_PARTS {
            let key = line[indent..end].trim_end();
            return Some((start + indent..start + indent + key.len(), dots + 1));
        }
        start += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_dotted_key_is_found_on_its_line() {
        let key = vec!["a"; 100].join(".");
        let source = format!("name = \"x\"\n\n  {key} = 1\n");
        let (span, parts) = long_dotted_key(&source).unwrap();
        assert_eq!((&source[span], parts), (key.as_str(), 100));
        // Dots in quoted keys and in values are not key parts.
        let quoted = format!("\"{key}\" = 1\nv = \"{key}\"\n");
        assert_eq!(long_dotted_key(&quoted), None);
    }
}
