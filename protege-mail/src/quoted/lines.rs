//! A body as the lines that are still kept: each a byte range into the original text,
//! so what stays is never copied or reflowed until the result is assembled.

use std::borrow::Cow;

/// One line of the body: `start..end` is its text (without `\n` or a `\r` before it),
/// `end..next` its line break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Line {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) next: usize,
}

impl Line {
    /// The line's text, without its line break.
    pub(super) fn text(self, body: &str) -> &str {
        &body[self.start..self.end]
    }

    /// The line's break: `\n`, `\r\n`, or nothing for a last line without one.
    pub(super) fn line_break(self, body: &str) -> &str {
        let bytes = &body.as_bytes()[self.start..self.next];
        let len = match bytes {
            [.., b'\r', b'\n'] => 2,
            [.., b'\n'] => 1,
            _ => 0,
        };
        &body[self.next - len..self.next]
    }

    /// Whether the line ends where its text ends in the body (its end was not moved
    /// inside it, before an attribution that starts within the line).
    fn is_whole(self, body: &str) -> bool {
        self.end + self.line_break(body).len() == self.next
    }
}

/// The lines of `body`, split at `\n` (a `\r` before it belongs to the line break).
pub(super) fn split(body: &str) -> Vec<Line> {
    let mut lines = Vec::with_capacity(body.len() / 40 + 1);
    let mut start = 0;
    // One vectorised pass over the body for its line breaks, rather than a search
    // started again for every line.
    for i in memchr::memchr_iter(b'\n', body.as_bytes()) {
        let end = if i > start && body.as_bytes()[i - 1] == b'\r' {
            i - 1
        } else {
            i
        };
        lines.push(Line {
            start,
            end,
            next: i + 1,
        });
        start = i + 1;
    }
    if start < body.len() {
        lines.push(Line {
            start,
            end: body.len(),
            next: body.len(),
        });
    }
    lines
}

/// The kept lines as text: the original bytes of each line and its line break, the text
/// ending at the last line that is not blank. Borrowed when the kept lines are a
/// prefix of the body with nothing removed between them.
pub(super) fn assemble<'a>(body: &'a str, lines: &[Line]) -> Cow<'a, str> {
    let Some(last) = lines.iter().rposition(|l| !is_blank(l.text(body))) else {
        return Cow::Borrowed("");
    };
    let lines = &lines[..=last];
    if lines
        .windows(2)
        .all(|w| w[0].next == w[1].start && w[0].is_whole(body))
    {
        return Cow::Borrowed(body[lines[0].start..lines[last].end].trim_end());
    }
    let mut out = String::with_capacity(lines.iter().map(|l| l.next - l.start).sum());
    for (i, line) in lines.iter().enumerate() {
        if i == last {
            out.push_str(line.text(body).trim_end());
        } else {
            out.push_str(line.text(body));
            out.push_str(line.line_break(body));
        }
    }
    Cow::Owned(out)
}

/// Whether a line holds only whitespace.
pub(super) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// Whether a line is quoted: its first character other than whitespace is `>`.
pub(super) fn is_quoted(text: &str) -> bool {
    match text.bytes().find(|b| !b.is_ascii_whitespace()) {
        Some(b'>') => true,
        Some(b) if b >= 0x80 => text.trim_start().starts_with('>'),
        _ => false,
    }
}

/// Whether a line opens with Python's interactive prompt: `>>>` alone or before a space.
pub(super) fn is_prompt(text: &str) -> bool {
    text.trim_end() == ">>>" || text.starts_with(">>> ")
}

/// Whether the `>>>` lines of `body` are Python's interactive prompts (an author pasting
/// a session: `>>> a = array(...)`, its output, `>>>`) rather than quotes three levels
/// deep: a prompt line comes below an unquoted line (blank lines between) or first, and
/// no line opens with two markers alone (`>> text`, as a compact quote's second level
/// would).
pub(super) fn has_python_prompts(body: &str, lines: &[Line]) -> bool {
    // Most bodies hold no prompt at all: one vectorised search instead of a look at
    // every line.
    if memchr::memmem::find(body.as_bytes(), b">>>").is_none() {
        return false;
    }
    let mut below_unquoted = true;
    let mut prompt = false;
    for line in lines {
        let text = line.text(body);
        if text.starts_with(">>") && !text.starts_with(">>>") {
            return false;
        }
        if is_blank(text) {
            continue;
        }
        if is_prompt(text) {
            prompt |= below_unquoted;
        } else {
            below_unquoted = !is_quoted(text);
        }
    }
    prompt
}

/// Whether a line is quoted, when the body's `>>>` lines are Python's prompts or not
/// (`prompts`, see [`has_python_prompts`]).
pub(super) fn is_quoted_in(text: &str, prompts: bool) -> bool {
    is_quoted(text) && !(prompts && is_prompt(text))
}

/// The line without its quote markers (`>`, `> > >`, `>>`) and leading whitespace.
pub(super) fn strip_quote_markers(text: &str) -> &str {
    let skip = text
        .bytes()
        .position(|b| b != b'>' && !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    let rest = &text[skip..];
    // Whitespace beyond ASCII (a no-break space after `>`) is rare: the slow path.
    if rest.starts_with(|c: char| c.is_whitespace()) {
        rest.trim_start_matches(|c: char| c == '>' || c.is_whitespace())
    } else {
        rest
    }
}

/// Han ideographs, kana, Hangul and their punctuation and full-width forms: scripts that
/// do not separate words with spaces.
pub(super) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FA1F)
}
