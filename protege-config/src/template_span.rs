//! Mapping a line inside a template back to the TOML source it was written in.

use std::ops::Range;

/// The source span of line `line` (1-based) of the string value at `span`, as decoded by
/// TOML (escapes, the newline trimmed after an opening `"""`, line-ending backslashes).
/// Falls back to the whole value when the line cannot be found.
pub(crate) fn line_span(source: &str, span: Range<usize>, line: usize) -> Range<usize> {
    let Some((body, basic)) = string_body(source, span.clone()) else {
        return span;
    };
    let (start, end) = (body.start, body.end);
    let bytes = source.as_bytes();
    let mut current = 1;
    let mut line_start = start;
    let mut i = start;
    while i < end && current < line {
        match bytes[i] {
            b'\\' if basic && i + 1 < end => {
                let next = bytes[i + 1];
                if next == b'n' {
                    current += 1;
                    i += 2;
                    line_start = i;
                } else if matches!(next, b' ' | b'\t' | b'\r' | b'\n') {
                    // A line-ending backslash: the newline and following whitespace vanish.
                    i += 1;
                    while i < end && matches!(bytes[i], b' ' | b'\t' | b'\r' | b'\n') {
                        i += 1;
                    }
                } else {
                    i += 2;
                }
            }
            b'\n' => {
                current += 1;
                i += 1;
                line_start = i;
            }
            _ => i += 1,
        }
    }
    if current < line {
        return span;
    }
    let mut s = line_start;
    while s < end && matches!(bytes[s], b' ' | b'\t') {
        s += 1;
    }
    let mut e = source[s..end].find('\n').map_or(end, |n| s + n);
    while e > s && matches!(bytes[e - 1], b' ' | b'\t' | b'\r') {
        e -= 1;
    }
    s..e
}

/// The span of the characters of the TOML string literal written at `span` of `source`
/// (between its delimiters, without the newline trimmed after an opening `"""` or `'''`),
/// and whether it is a basic string (with escapes); `None` when it is not a string literal.
pub(crate) fn string_body(source: &str, span: Range<usize>) -> Option<(Range<usize>, bool)> {
    let raw = source.get(span.clone())?;
    let (delim, basic) = if raw.starts_with("\"\"\"") {
        (3, true)
    } else if raw.starts_with("'''") {
        (3, false)
    } else if raw.starts_with('"') {
        (1, true)
    } else if raw.starts_with('\'') {
        (1, false)
    } else {
        return None;
    };
    if raw.len() < 2 * delim {
        return None;
    }
    let mut start = span.start + delim;
    let end = span.end - delim;
    if delim == 3 {
        if source[start..end].starts_with("\r\n") {
            start += 2;
        } else if source[start..end].starts_with('\n') {
            start += 1;
        }
    }
    Some((start..end, basic))
}

#[cfg(test)]
mod tests {
    use super::line_span;

    fn at(source: &str, needle: &str, line: usize) -> String {
        let start = source.find(needle).unwrap();
        let span = line_span(source, start..start + needle.len(), line);
        source[span].to_owned()
    }

    #[test]
    fn single_line_basic_string() {
        let src = "template = \"{{ x }\"\n";
        assert_eq!(at(src, "\"{{ x }\"", 1), "{{ x }");
    }

    #[test]
    fn multi_line_string_skips_the_first_newline() {
        let src = "t = \"\"\"\nfirst\n  {{ bad\n\"\"\"\n";
        assert_eq!(at(src, "\"\"\"\nfirst\n  {{ bad\n\"\"\"", 2), "{{ bad");
    }

    #[test]
    fn escaped_newlines_count_as_lines() {
        let src = "t = \"a\\n{% if %}\"\n";
        assert_eq!(at(src, "\"a\\n{% if %}\"", 2), "{% if %}");
    }
}
