//! The names a template uses, checked when the persona loads: each problem found by
//! `protege_schema::names::check_tree` is reported at the name inside the TOML string.

use std::ops::Range;

use protege_schema::names::{Problem, Scope, check_tree};

use crate::diagnostic::did_you_mean;
use crate::reader::{Sink, Value};
use crate::template_span::{line_span, string_body};

/// The problems of the names in `tree`, the syntax tree of `text`, in `scope`.
pub(crate) fn problems(
    tree: &minijinja::machinery::ast::Stmt<'_>,
    text: &str,
    scope: &Scope<'_>,
) -> Vec<Problem> {
    check_tree(tree, text, scope, suggest)
}

fn suggest(name: &str, candidates: &[&str]) -> Option<String> {
    did_you_mean(name, candidates.iter().copied()).map(str::to_owned)
}

/// Reports `problems` found in `text` (the decoded TOML string `value`); true when there
/// is none.
pub(crate) fn report(
    sink: &mut Sink<'_>,
    text: &str,
    value: &Value<'_>,
    problems: Vec<Problem>,
) -> bool {
    if problems.is_empty() {
        return true;
    }
    let map = decoded_offsets(sink.source, value.span()).filter(|m| m.len() == text.len() + 1);
    for problem in problems {
        let span = match &map {
            Some(map) => map[problem.range.start]..map[problem.range.end],
            None => line_span(sink.source, value.span(), problem.line),
        };
        sink.error(span, problem.message);
    }
    false
}

/// For each byte of the string value written at `span` of `source`, as TOML decodes it, the
/// offset in `source` it comes from, plus one last entry for the end of the value.
/// `None` when the value is not a string literal or holds an escape not understood here.
fn decoded_offsets(source: &str, span: Range<usize>) -> Option<Vec<usize>> {
    let (body, basic) = string_body(source, span)?;
    let (mut i, end) = (body.start, body.end);
    let bytes = source.as_bytes();
    let mut map = Vec::with_capacity(end - i + 1);
    while i < end {
        if basic && bytes[i] == b'\\' && i + 1 < end {
            let hex = |digits: usize| {
                let code = source.get(i + 2..i + 2 + digits)?;
                char::from_u32(u32::from_str_radix(code, 16).ok()?)
            };
            let (decoded, written) = match bytes[i + 1] {
                // Each of these decodes to one ASCII byte.
                b'b' | b't' | b'n' | b'f' | b'r' | b'e' | b'"' | b'\\' => ('\n', 2),
                b'x' => (hex(2)?, 4),
                b'u' => (hex(4)?, 6),
                b'U' => (hex(8)?, 10),
                b' ' | b'\t' | b'\r' | b'\n' => {
                    // A line-ending backslash: it and the whitespace after it vanish.
                    i += 1;
                    while i < end && matches!(bytes[i], b' ' | b'\t' | b'\r' | b'\n') {
                        i += 1;
                    }
                    continue;
                }
                _ => return None,
            };
            map.extend(std::iter::repeat_n(i, decoded.len_utf8()));
            i += written;
        } else {
            let c = source[i..].chars().next()?;
            map.extend(i..i + c.len_utf8());
            i += c.len_utf8();
        }
    }
    map.push(end);
    Some(map)
}

#[cfg(test)]
mod tests {
    use super::decoded_offsets;

    #[test]
    fn plain_and_escaped_characters() {
        // `a`, `\n`, `\u00e9` (two bytes decoded), `b`, then the end.
        let src = "t = \"a\\n\\u00e9b\"\n";
        assert_eq!(decoded_offsets(src, 4..16).unwrap(), [5, 6, 8, 8, 14, 15]);
    }

    #[test]
    fn multi_line_strings_drop_the_first_newline_and_line_ending_backslashes() {
        let src = "t = \"\"\"\nab\\\n   c\"\"\"\n";
        let start = src.find("\"\"\"").unwrap();
        let end = src.rfind("\"\"\"").unwrap() + 3;
        let map = decoded_offsets(src, start..end).unwrap();
        assert_eq!(
            map.iter().map(|&i| &src[i..i + 1]).collect::<String>(),
            "abc\""
        );
    }
}
