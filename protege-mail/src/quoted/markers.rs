//! Steps 2 and 3: the lines that mark quoted text whatever the thread holds, found by
//! plain string scanning (no regular expressions): attribution lines, reply and forward
//! header blocks, separator lines, a trailing run of `>` lines, signatures and mobile
//! taglines. The words of each language are in `lang.rs`.

use super::lang::{
    ATTRIBUTIONS, Attribution, CJK_TAGLINES, FORWARD_OPENERS, HEADER_KEYS, Role, SEPARATORS,
    TAGLINE_OPENERS, TAGLINES,
};
use super::lines::{Line, is_blank, is_cjk, is_quoted, is_quoted_in, strip_quote_markers};

/// The most lines an attribution is split over ("On …, Ann" / "<ann@example.com>" /
/// "wrote:").
const MAX_ATTRIBUTION_LINES: usize = 5;

/// The longest attribution, in bytes once its lines are joined.
const MAX_ATTRIBUTION_BYTES: usize = 1200;

/// Where the quoted part of a body begins (indexes into the kept lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// At the start of this line: a separator line, a rule line above a header block, or
    /// a header block.
    Line(usize),
    /// An attribution on lines `.0..=.1` (more than one when it is split).
    Attribution(usize, usize),
    /// Inside this line, at this byte offset of the body: the author's text comes first
    /// on the line ("reply On Wed, Apr 4, 2012 at 3:59 PM, bob@example.com wrote:").
    Within(usize, usize),
}

impl Cut {
    /// The last line of the marker.
    pub(super) fn last_line(self) -> usize {
        match self {
            Cut::Line(i) | Cut::Attribution(_, i) | Cut::Within(i, _) => i,
        }
    }
}

/// The lines of a body that open no marker of step 2 whatever the lines around them,
/// found once per line text: step 2 looks for the first marker again after each removal,
/// over lines it has read already.
pub(super) struct Plain {
    /// The start of each line of the body, in order.
    starts: Vec<usize>,
    /// Per line: the end of its text when it was judged, and whether it opens no marker.
    verdicts: Vec<Option<(usize, bool)>>,
}

impl Plain {
    /// Nothing judged yet, for the body's `lines` as split.
    pub(super) fn new(lines: &[Line]) -> Self {
        Self {
            starts: lines.iter().map(|l| l.start).collect(),
            verdicts: vec![None; lines.len()],
        }
    }

    /// Whether `line` (neither quoted nor blank) opens no marker.
    fn get(&mut self, body: &str, line: Line) -> bool {
        let Ok(k) = self.starts.binary_search(&line.start) else {
            return opens_no_marker(line.text(body));
        };
        match self.verdicts[k] {
            Some((end, plain)) if end == line.end => plain,
            _ => {
                let plain = opens_no_marker(line.text(body));
                self.verdicts[k] = Some((line.end, plain));
                plain
            }
        }
    }
}

/// Whether a line (neither quoted nor blank) opens no marker of step 2, whatever the
/// lines after it: it is no separator or rule, has no header name, opens no attribution
/// (alone, or as the first line of a split one, see [`attribution_at`]) and holds none.
fn opens_no_marker(text: &str) -> bool {
    let trimmed = text.trim();
    let may_open_attribution = is_attribution(trimmed)
        || (!trimmed.ends_with(['.', '!', '?', ':'])
            && (trimmed.starts_with('-')
                || opens_with_opener(trimmed)
                || has_numeric_date_or_time(trimmed)
                || trimmed.contains('@')));
    !is_separator(trimmed)
        && !is_rule(trimmed)
        && header_key(text).is_none()
        && !may_open_attribution
        && attribution_within(text).is_none()
}

/// Step 2's first marker, scanning down: a separator line, a rule line above a header
/// block, a header block, or an attribution line; quoted lines are not markers.
pub(super) fn first_marker(body: &str, lines: &[Line], plain: &mut Plain) -> Option<Cut> {
    for (i, line) in lines.iter().enumerate() {
        let text = line.text(body);
        if is_quoted(text) || is_blank(text) || plain.get(body, *line) {
            continue;
        }
        let trimmed = text.trim();
        if is_separator(trimmed)
            || (is_rule(trimmed) && rule_above_header(body, lines, i))
            || header_block_at(body, lines, i)
        {
            return Some(Cut::Line(i));
        }
        if let Some(last) = attribution_at(body, lines, i, false) {
            return Some(Cut::Attribution(i, last));
        }
        if let Some(at) = attribution_within(text) {
            return Some(Cut::Within(i, line.start + at));
        }
    }
    None
}

/// Whether the attribution ending at line `last` introduces a quote that its author
/// answers: the next line with text is `>`-quoted, and after the quoted lines (blank
/// lines among them) comes a line with text that is not quoted (see [`in_quote`]).
pub(super) fn quote_is_answered(body: &str, lines: &[Line], last: usize, prompts: bool) -> bool {
    let marking = Marking::below(body, lines, last);
    let mut seen_quote = false;
    for k in last + 1..lines.len() {
        if marking.quotes(body, lines, k, prompts) {
            seen_quote = true;
        } else if !is_blank(lines[k].text(body)) {
            return seen_quote;
        }
    }
    false
}

/// How the quote below an attribution marks its lines: with `>` (see [`in_quote`]), or
/// with the prefix of Emacs's Supercite, the quoted author's name before `>`
/// (`Martin> Are there any plans…`), when its first line has one.
#[derive(Debug, Clone, Copy)]
pub(super) enum Marking<'a> {
    Angle,
    Prefix(&'a str),
}

impl<'a> Marking<'a> {
    /// The marking of the quote below the attribution that ends at line `last`.
    pub(super) fn below(body: &'a str, lines: &[Line], last: usize) -> Self {
        lines[last + 1..]
            .iter()
            .map(|l| l.text(body))
            .find(|t| !is_blank(t))
            .and_then(supercite_prefix)
            .map_or(Marking::Angle, Marking::Prefix)
    }

    /// Whether line `k` belongs to the quote.
    pub(super) fn quotes(self, body: &str, lines: &[Line], k: usize, prompts: bool) -> bool {
        match self {
            Marking::Angle => in_quote(body, lines, k, prompts),
            Marking::Prefix(prefix) => {
                let text = lines[k].text(body);
                text.strip_prefix(prefix)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
                    || is_quoted_in(text, prompts)
            }
        }
    }
}

/// The longest name of a Supercite prefix.
const MAX_SUPERCITE_NAME: usize = 16;

/// The Supercite prefix of a line (`Martin>` of `Martin> text`): a name of ASCII
/// letters, digits, `.`, `_` or `-` opening with a letter, then `>`, then a space or the
/// end of the line. Only a line directly below an attribution is asked: elsewhere such a
/// line may be a program's prompt (`IDL> print, a`).
fn supercite_prefix(text: &str) -> Option<&str> {
    let end = text.find('>')?;
    let name = &text[..end];
    let rest = &text[end + 1..];
    let named = (1..=MAX_SUPERCITE_NAME).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    (named && (rest.is_empty() || rest.starts_with(' '))).then(|| &text[..=end])
}

/// Whether line `k` belongs to a `>` quote: it is quoted, or it is a piece that the
/// sender's client wrapped without repeating the `>` marker, directly between two quoted
/// lines: a piece of a link (it opens with a link, "(http://…", or, one word long, it
/// continues a link or a parenthesis left open on the quoted line above: "> View ticket
/// (http://example.com/action" / "_nonce=3dd518)" / ">"), or the tail of a long line
/// (see [`is_wrapped_tail`]). A line of Python's prompt is no quote when `prompts` (see
/// [`has_python_prompts`](super::lines::has_python_prompts)).
pub(super) fn in_quote(body: &str, lines: &[Line], k: usize, prompts: bool) -> bool {
    let text = lines[k].text(body);
    if is_quoted_in(text, prompts) {
        return true;
    }
    if is_quoted(text) {
        return false;
    }
    let (Some(above), Some(below)) = (k.checked_sub(1), lines.get(k + 1)) else {
        return false;
    };
    let above = lines[above].text(body);
    if !is_quoted_in(above, prompts) || !is_quoted_in(below.text(body), prompts) {
        return false;
    }
    let text = text.trim();
    let opens_with_link = ["http://", "https://", "(http", "<http"]
        .iter()
        .any(|p| text.starts_with(p));
    let wrapped_tail = is_wrapped_tail(above, text);
    let above = strip_quote_markers(above);
    let left_open = above
        .split_whitespace()
        .next_back()
        .is_some_and(|w| w.contains("://"))
        || above.matches('(').count() > above.matches(')').count();
    opens_with_link
        || (!text.is_empty() && !text.contains(char::is_whitespace) && left_open)
        || wrapped_tail
}

/// The shortest quoted line (with its markers) whose tail a client wraps onto a line of
/// its own: wrapping happens near 72 to 80 columns, and often at an earlier level of
/// quoting, before the later levels added their markers.
const MIN_WRAPPED_CHARS: usize = 40;

/// The most words of a wrapped piece: a few words that did not fit on the line above.
const MAX_TAIL_WORDS: usize = 3;

/// The most words of a wrapped piece that opens in lower case or with a bracket, as the
/// rest of a sentence does ("(first use in this function)").
const MAX_CONTINUED_WORDS: usize = 6;

/// Whether `text`, an unquoted line directly between two quoted lines, is the end of the
/// quoted line `above` that a client wrapped onto a line of its own when it quoted an
/// Outlook reply ("> … so when I compile this code, I" / "get this:" / ">"): the line
/// above is long, and `text` a wrapped piece of it (see [`is_wrapped_piece`]).
fn is_wrapped_tail(above: &str, text: &str) -> bool {
    let above = above.trim_end();
    above.chars().count() >= MIN_WRAPPED_CHARS && is_wrapped_piece(strip_quote_markers(above), text)
}

/// Whether `text` (trimmed) can be the rest of the quoted line `above` (its markers
/// dropped): a few words, at most three, or six when they open in lower case or with a
/// bracket, after a line that stops mid-sentence (not after `.`, `?`, `!` or `:`, where
/// an answer would follow). An answer written between quoted lines is left alone by the
/// blank line around it, by the end of the question above it, or by its length.
pub(super) fn is_wrapped_piece(above: &str, text: &str) -> bool {
    let words = text.split_whitespace().count();
    let continues = text.starts_with(|c: char| c.is_lowercase() || c == '(');
    words > 0
        && (words <= MAX_TAIL_WORDS || (continues && words <= MAX_CONTINUED_WORDS))
        && !above.trim_end().ends_with(['.', '?', '!', ':'])
}

/// The first line of a trailing run of quoted lines (blank lines and the pieces of a
/// wrapped link inside the run belong to it, see [`in_quote`]), if the last line that
/// is not blank is quoted (Python's prompts are not, when `prompts`).
pub(super) fn trailing_quote_run(body: &str, lines: &[Line], prompts: bool) -> Option<usize> {
    let last = lines.iter().rposition(|l| !is_blank(l.text(body)))?;
    if !is_quoted_in(lines[last].text(body), prompts) {
        return None;
    }
    let mut start = last;
    for k in (0..last).rev() {
        if in_quote(body, lines, k, prompts) {
            start = k;
        } else if !is_blank(lines[k].text(body)) {
            break;
        }
    }
    Some(start)
}

/// Step 3: the first line that is exactly `--` or `-- ` (a signature follows, §14: to the
/// end, however long a company's disclaimer runs), or a mobile tagline.
pub(super) fn signature_start(body: &str, lines: &[Line]) -> Option<usize> {
    lines.iter().position(|l| {
        let text = l.text(body);
        text == "--" || text == "-- " || (!is_quoted(text) && is_tagline(text.trim()))
    })
}

/// The most lines of text below the rule of a mailing list's footer.
const MAX_FOOTER_LINES: usize = 6;

/// Step 3: the footer a mailing list appends to every message, at the end of the body: a
/// line of at least 20 underscores (Mailman draws 47) and at most
/// [`MAX_FOOTER_LINES`] lines of text below it, none quoted, one of them a link
/// (Mailman's "<list> mailing list" / its address / its `listinfo` page). Returns the
/// rule's line.
pub(super) fn list_footer_start(body: &str, lines: &[Line]) -> Option<usize> {
    let mut texts = 0;
    for k in (0..lines.len()).rev() {
        let text = lines[k].text(body).trim();
        if text.is_empty() {
            continue;
        }
        if text.len() >= 20 && text.bytes().all(|b| b == b'_') {
            // The link is looked for only below a rule.
            let link = || lines[k + 1..].iter().any(|l| l.text(body).contains("://"));
            return (texts > 0 && link()).then_some(k);
        }
        texts += 1;
        if texts > MAX_FOOTER_LINES || is_quoted(text) {
            return None;
        }
    }
    None
}

/// Step 3: a closing name after a dash, the short signature "-Abhishek Kona": the last
/// line with text opens with one `-` directly followed by one to three capitalised
/// words (letters, and `.`, `'` or `-` inside them), and the line with text above it is
/// no list item (does not open with `-`, `*` or `•`), so that a list's last item stays.
pub(super) fn dash_signature(body: &str, lines: &[Line]) -> Option<usize> {
    let mut texts = lines
        .iter()
        .enumerate()
        .rev()
        .map(|(k, l)| (k, l.text(body).trim()))
        .filter(|(_, t)| !t.is_empty());
    let (last, text) = texts.next()?;
    let name = text.strip_prefix('-')?;
    let words = name.split(' ').count();
    let capitalised = name.split(' ').all(|w| {
        w.starts_with(char::is_uppercase)
            && w.chars()
                .all(|c| c.is_alphabetic() || matches!(c, '.' | '\'' | '-'))
    });
    let list_above = texts
        .next()
        .is_some_and(|(_, t)| t.starts_with(['-', '*', '•']));
    ((1..=3).contains(&words) && capitalised && !list_above).then_some(last)
}

/// Where step 1 starts removing a block found at `first`: at the attribution line (or
/// the lines of a split one, or a separator line) directly above it, lines without
/// words between them included; `first` itself when there is none.
pub(super) fn attribution_above(body: &str, lines: &[Line], first: usize) -> usize {
    let mut j = first;
    while j > 0
        && strip_quote_markers(lines[j - 1].text(body))
            .trim()
            .is_empty()
    {
        j -= 1;
    }
    let Some(above) = j.checked_sub(1) else {
        return first;
    };
    if is_separator(strip_quote_markers(lines[above].text(body)).trim()) {
        return above;
    }
    let lowest = above.saturating_sub(MAX_ATTRIBUTION_LINES - 1);
    (lowest..=above)
        .find(|&s| attribution_at(body, lines, s, true) == Some(above))
        .unwrap_or(first)
}

/// The last line of an attribution that starts at line `i`, alone or split over up to
/// [`MAX_ATTRIBUTION_LINES`] lines. A split one opens with an opener, dashes, a numeric
/// date or an address; the lines after its first are neither blank (but for one blank
/// line before the bracketed address of one that opens with a date, as Polymail writes
/// it), nor quoted (unless `quoted`; a `>` that closes the address's `<` is no quote
/// marker), nor open with an opener, and none but the last ends a sentence. When the
/// first line opens with an address only, a next line that is an attribution by itself
/// is that attribution's start. With `quoted`, `>` markers are dropped first (step 1
/// looks inside quotes).
pub(super) fn attribution_at(body: &str, lines: &[Line], i: usize, quoted: bool) -> Option<usize> {
    let text_of = |k: usize| {
        let text = lines[k].text(body);
        if quoted {
            strip_quote_markers(text).trim()
        } else {
            text.trim()
        }
    };
    let first = text_of(i);
    if is_attribution(first) {
        return Some(i);
    }
    // A line that ends a sentence is no split attribution's first line (see below).
    if first.ends_with(['.', '!', '?', ':']) {
        return None;
    }
    // A numeric date or time anywhere: a weekday may open the line ("pe 20. lokakuuta 2017
    // klo 17.50 John Coe").
    let dated =
        first.starts_with('-') || opens_with_opener(first) || has_numeric_date_or_time(first);
    if !dated && !first.contains('@') {
        return None;
    }
    let mut joined = first.to_owned();
    for k in i + 1..lines.len().min(i + MAX_ATTRIBUTION_LINES) {
        let next = text_of(k);
        // Polymail puts a blank line between the name and the bracketed address.
        if next.is_empty() && dated && k + 1 < lines.len() && text_of(k + 1).starts_with('<') {
            continue;
        }
        // A `>` that closes the address's `<` is no quote marker ("<" / "ann@…" / "> wrote:").
        let closes_bracket =
            next.starts_with('>') && joined.matches('<').count() > joined.matches('>').count();
        if next.is_empty()
            || (!quoted && is_quoted(next) && !closes_bracket)
            || joined.ends_with(['.', '!', '?', ':'])
            || opens_with_opener(next)
            || (!dated && is_attribution(next))
        {
            return None;
        }
        joined.push(' ');
        joined.push_str(next);
        if joined.len() > MAX_ATTRIBUTION_BYTES {
            return None;
        }
        if is_attribution(&joined) {
            return Some(k);
        }
    }
    None
}

/// The bytes that can open a word of `words`: its first byte, and with `fold` the other
/// case of an ASCII letter (for words compared ignoring ASCII case). Empty words mark
/// nothing.
const fn mark_first_bytes(set: &mut [bool; 256], words: &[&str], fold: bool) {
    let mut k = 0;
    while k < words.len() {
        if let Some(&b) = words[k].as_bytes().first() {
            set[b as usize] = true;
            if fold && b.is_ascii_alphabetic() {
                set[(b ^ 0x20) as usize] = true;
            }
        }
        k += 1;
    }
}

/// The first bytes of the attribution openers of every language: a line that opens
/// with another byte opens with no opener, whatever the rest.
const OPENER_FIRST_BYTES: [bool; 256] = {
    let mut set = [false; 256];
    let mut k = 0;
    while k < ATTRIBUTIONS.len() {
        mark_first_bytes(&mut set, ATTRIBUTIONS[k].openers, false);
        k += 1;
    }
    set
};

/// The first bytes of the header names, in both cases.
const HEADER_FIRST_BYTES: [bool; 256] = {
    let mut set = [false; 256];
    let mut k = 0;
    while k < HEADER_KEYS.len() {
        mark_first_bytes(&mut set, &[HEADER_KEYS[k].0], true);
        k += 1;
    }
    set
};

/// The first bytes of the taglines and of their openers (in both cases), and of the
/// Chinese and Japanese ones that open with a phrase.
const TAGLINE_FIRST_BYTES: [bool; 256] = {
    let mut set = [false; 256];
    mark_first_bytes(&mut set, TAGLINES, true);
    let mut k = 0;
    while k < TAGLINE_OPENERS.len() {
        mark_first_bytes(&mut set, &[TAGLINE_OPENERS[k].0], true);
        k += 1;
    }
    let mut k = 0;
    while k < CJK_TAGLINES.len() {
        mark_first_bytes(&mut set, &[CJK_TAGLINES[k].0], false);
        k += 1;
    }
    set
};

/// Whether `text` opens with a byte of `set`.
fn opens_with_byte_of(text: &str, set: &[bool; 256]) -> bool {
    text.as_bytes().first().is_some_and(|&b| set[b as usize])
}

fn opens_with_opener(text: &str) -> bool {
    if !opens_with_byte_of(text, &OPENER_FIRST_BYTES) {
        return false;
    }
    ATTRIBUTIONS
        .iter()
        .any(|a| a.openers.iter().any(|o| starts_with_word(text, o)))
}

/// Whether `text` (one line, or split lines joined with spaces) is an attribution: it
/// ends with a colon after one of a language's verbs ("wrote:", "a écrit :", "skrev:"),
/// or holds one of the verbs that sit inside ("Am … schrieb Ann:"), and it has the shape
/// of one (see [`has_shape`]). A line wrapped in dashes on both sides needs no colon and
/// no shape ("---- Ann wrote ----").
fn is_attribution(text: &str) -> bool {
    if text.len() > MAX_ATTRIBUTION_BYTES || text.len() < 6 {
        return false;
    }
    // A client that drops the colon ("On Wed, 14 Nov 2018 08:14:43 -0200 John Doe
    // <john@doe.com> wrote"): the opener, a date and an address in brackets before the verb.
    if ATTRIBUTIONS.iter().any(|rule| {
        rule.end_verbs
            .iter()
            .any(|v| ends_with_word(text.trim_end(), v))
            && has_opener_and_date(text, rule)
            && has_bracketed_address(text)
    }) {
        return true;
    }
    // Each shape below ends with a colon, a `>` (an address) or dashes.
    if !text.trim_end().ends_with([':', '：', '>', '-']) {
        return false;
    }
    let inner = text.trim_start_matches('-');
    let wrapped =
        text.len() - inner.len() >= 2 && inner.len() - inner.trim_end_matches('-').len() >= 2;
    let inner = inner.trim_end_matches('-').trim();
    let (text, colon) = match inner.strip_suffix([':', '：']) {
        Some(rest) => (rest.trim_end(), true),
        None => (inner, false),
    };
    if is_dated_address(text, colon) {
        return true;
    }
    if !colon && !wrapped {
        return false;
    }
    ATTRIBUTIONS.iter().any(|rule| {
        let at_end = rule.end_verbs.iter().any(|v| ends_with_word(text, v));
        let inside = colon && rule.inner_verbs.iter().any(|v| contains_word(text, v));
        let by_address = colon
            && rule.address_verbs.iter().any(|v| ends_with_word(text, v))
            && has_opener_and_date(text, rule)
            && has_bracketed_address(text);
        (at_end && wrapped) || ((at_end || inside) && has_shape(text, rule)) || by_address
    })
}

/// Gmail's attribution in some languages, with no verb: a date, a name and an address
/// in angle brackets, then a colon ("2014-10-17 11:28 GMT+03:00 Ann <ann@example.com>:",
/// "пн, 3 мар. 2020 г. в 10:00, Анна <ann@example.com>:"); without the colon when the
/// line opens with the date ("2011/4/7 Ann <ann@example.com>").
fn is_dated_address(text: &str, colon: bool) -> bool {
    let Some(inside) = text.strip_suffix('>') else {
        return false;
    };
    let Some(open) = inside.rfind('<') else {
        return false;
    };
    let address = inside[open + 1..].trim();
    let before = &text[..open];
    address.contains('@')
        && !address.contains(char::is_whitespace)
        && (colon || before.starts_with(|c: char| c.is_ascii_digit()))
        && has_numeric_date_or_time(before)
}

/// A time (`10:00`) or a numeric date (`2011/4/7`, `17-10-2014`, `03.03.2020`).
fn has_numeric_date_or_time(text: &str) -> bool {
    text.as_bytes().windows(3).any(|w| {
        w[0].is_ascii_digit() && matches!(w[1], b':' | b'/' | b'-' | b'.') && w[2].is_ascii_digit()
    })
}

/// The shape of an attribution, so that a sentence ending in "wrote:" is not taken for
/// one: the language's opener and a date (a digit; in English also a weekday or month
/// name), or, for a language without an opener, a digit; or an address in brackets
/// ("Ann <ann@example.com> wrote:").
fn has_shape(text: &str, rule: &Attribution) -> bool {
    let digit = text.bytes().any(|b| b.is_ascii_digit());
    has_opener_and_date(text, rule)
        || (rule.openers.is_empty() && digit)
        || has_bracketed_address(text)
}

/// The language's opener and a date: a digit, or a weekday or month name followed by a
/// comma further on, as a client writes the date ("On Monday, 9 March…", "On Monday, Kim
/// wrote:"), so that a sentence such as "On Monday my manager wrote:" is the author's.
fn has_opener_and_date(text: &str, rule: &Attribution) -> bool {
    rule.openers.iter().any(|o| starts_with_word(text, o))
        && (text.bytes().any(|b| b.is_ascii_digit())
            || (has_date_word(text, rule.date_words) && text.contains(',')))
}

/// An English attribution that starts inside a line after the author's words: " On "
/// (or "--- On ") with a digit and an address after it, the line ending with "wrote:".
/// Returns the byte offset in the line where the author's words end.
fn attribution_within(text: &str) -> Option<usize> {
    let text = text.trim_end();
    if !text.ends_with("wrote:") {
        return None;
    }
    let mut from = text.chars().next().map_or(1, char::len_utf8);
    while let Some(found) = text.get(from..).and_then(|rest| rest.find("On ")) {
        let at = from + found;
        let before = &text[..at];
        let candidate = &text[at..];
        if before.ends_with([' ', '-'])
            && candidate.contains('@')
            && candidate.bytes().any(|b| b.is_ascii_digit())
            && is_attribution(candidate)
        {
            let kept = before.trim_end_matches([' ', '-']);
            return (!kept.trim().is_empty()).then_some(kept.len());
        }
        from = at + 3;
    }
    None
}

/// A separator line: a known phrase between dashes (`-----Original Message-----`,
/// `---------- Forwarded message ---------`), or Apple Mail's "Begin forwarded message:".
fn is_separator(text: &str) -> bool {
    let inner = text.trim_start_matches('-');
    if text.len() - inner.len() >= 2 {
        let phrase = inner.trim_end_matches('-').trim();
        return SEPARATORS.iter().any(|s| phrase.eq_ignore_ascii_case(s));
    }
    if text.len() > 64 {
        return false;
    }
    let phrase = text.trim_end_matches([':', '：', ' ']);
    FORWARD_OPENERS
        .iter()
        .any(|s| phrase.eq_ignore_ascii_case(s))
}

/// A line made only of `-`, `_`, `=` or `*`, at least four of them (Outlook's
/// `________________________________`, a webmail's `====`); it counts only above a header
/// block.
fn is_rule(text: &str) -> bool {
    text.len() >= 4 && text.bytes().all(|b| matches!(b, b'-' | b'_' | b'=' | b'*'))
}

/// Whether a header block starts within the three lines after the rule line at `i`
/// (blank lines between them allowed).
fn rule_above_header(body: &str, lines: &[Line], i: usize) -> bool {
    (i + 1..lines.len().min(i + 4))
        .take_while(|&k| k == i + 1 || is_blank(lines[k - 1].text(body)))
        .any(|k| header_block_at(body, lines, k))
}

/// Whether a reply or forward header block starts at line `i`: consecutive header lines
/// (`From:`, `Sent:`, `To:`, `Subject:` and their translations, bold `*From:*` too; a
/// wrapped value may continue on up to two lines) naming at least two different things,
/// one of them a date or a subject, so that "From: Paris" / "To: London" stays.
fn header_block_at(body: &str, lines: &[Line], i: usize) -> bool {
    let Some(role) = header_key(lines[i].text(body)) else {
        return false;
    };
    let mut roles = vec![role];
    let digit = |text: &str| text.bytes().any(|b| b.is_ascii_digit());
    let mut dated = role == Role::Date && digit(lines[i].text(body));
    let mut continuation = 0;
    for line in lines.iter().skip(i + 1).take(16) {
        let text = line.text(body);
        if is_blank(text) || is_quoted(text) {
            break;
        }
        match header_key(text) {
            Some(role) => {
                continuation = 0;
                dated |= role == Role::Date && digit(text);
                if !roles.contains(&role) {
                    roles.push(role);
                }
            }
            None if continuation < 2 => continuation += 1,
            None => break,
        }
    }
    // Clients write three header lines or more, or a dated one: two lines of prose that
    // open with `From:` and `Subject:` are the author's.
    roles.len() >= 2
        && roles
            .iter()
            .any(|r| matches!(r, Role::Date | Role::Subject))
        && (roles.len() >= 3 || dated)
}

/// What a header line names, if it is one: a known name before a colon, with optional
/// bold stars around it and a space before the colon ("De :").
fn header_key(text: &str) -> Option<Role> {
    let text = text.trim_start().trim_start_matches('*');
    if !opens_with_byte_of(text, &HEADER_FIRST_BYTES) {
        return None;
    }
    // Within the first 24 characters: the first 24 bytes when they are ASCII.
    let head = &text.as_bytes()[..text.len().min(24)];
    let colon = if head.is_ascii() {
        head.iter().position(|&b| b == b':')?
    } else {
        text.char_indices()
            .take(24)
            .find(|&(_, c)| c == ':' || c == '：')?
            .0
    };
    let key = text[..colon].trim_end().trim_end_matches('*').trim_end();
    HEADER_KEYS
        .iter()
        .find(|(name, _)| key.eq_ignore_ascii_case(name))
        .map(|&(_, role)| role)
}

/// A mobile tagline ("Sent from my iPhone", "Von meinem iPhone gesendet",
/// "iPhoneから送信"), a link after it allowed ("Get Outlook for iOS<https://aka.ms/…>").
fn is_tagline(text: &str) -> bool {
    if text.len() > 120 {
        return false;
    }
    let text = match text.find('<') {
        Some(at) if text.ends_with('>') => text[..at].trim_end(),
        _ => text,
    };
    let text = text.strip_suffix('.').unwrap_or(text);
    // Every tagline opens with a byte of the set but those that open with anything and
    // end with a phrase.
    if !opens_with_byte_of(text, &TAGLINE_FIRST_BYTES)
        && !CJK_TAGLINES
            .iter()
            .any(|&(open, close)| open.is_empty() && text.ends_with(close))
    {
        return false;
    }
    if TAGLINES.iter().any(|t| text.eq_ignore_ascii_case(t)) {
        return true;
    }
    let opened = TAGLINE_OPENERS.iter().any(|&(opener, closer)| {
        let Some(rest) = strip_prefix_ignore_ascii_case(text, opener) else {
            return false;
        };
        let rest = rest.trim();
        let words = rest.split_whitespace().count();
        rest.len() < text.len()
            && (1..=4).contains(&words)
            && !rest.contains([',', ';', ':', '!', '?', '(', ')'])
            && (closer.is_empty() || rest.ends_with(closer) && words >= 2)
    });
    opened
        || CJK_TAGLINES.iter().any(|&(open, close)| {
            text.chars().count() <= 24 && text.starts_with(open) && text.ends_with(close)
        })
}

fn strip_prefix_ignore_ascii_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    let rest = &text[prefix.len()..];
    (head.eq_ignore_ascii_case(prefix) && rest.starts_with(' ')).then_some(rest)
}

/// `text` opens with `word` and then whitespace.
fn starts_with_word(text: &str, word: &str) -> bool {
    // The first byte decides for most lines, without comparing the rest.
    if text.as_bytes().first() != word.as_bytes().first() {
        return false;
    }
    text.strip_prefix(word)
        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
}

/// `text` ends with `verb`, not in the middle of a word (scripts without spaces need no
/// boundary).
fn ends_with_word(text: &str, verb: &str) -> bool {
    let Some(before) = text.strip_suffix(verb) else {
        return false;
    };
    let needs_boundary = verb
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() && !is_cjk(c));
    !needs_boundary
        || before
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
}

/// `text` holds `verb` as a word of its own.
fn contains_word(text: &str, verb: &str) -> bool {
    text.split_whitespace().any(|w| w == verb)
}

fn has_date_word(text: &str, words: &[&str]) -> bool {
    !words.is_empty()
        && text
            .split(|c: char| !c.is_alphabetic())
            .any(|w| words.contains(&w))
}

/// An address in brackets or parentheses, as attribution lines write them:
/// `<ann@example.com>`, `(ann@example.com)`, `defunkt<reply@reply.github.com>`.
fn has_bracketed_address(text: &str) -> bool {
    text.split_whitespace().any(|w| {
        let w = w.trim_end_matches([':', '：', ',']);
        w.contains('@')
            && (w.starts_with(['<', '(', '[', '"'])
                || w.ends_with(['>', ')', ']', '"'])
                || w.contains('<'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribution_shapes() {
        assert!(is_attribution(
            "On Tue, Mar 3, 2020 at 10:00 AM Ann <ann@example.com> wrote:"
        ));
        assert!(is_attribution("On Monday, Ann wrote:"));
        assert!(is_attribution("---- Ann Smith wrote ----"));
        assert!(!is_attribution("On the other hand, the author wrote:"));
        assert!(!is_attribution("In 2019 the author wrote:"));
        assert!(is_attribution(
            "Am 03.03.2020 um 10:00 schrieb Max Mustermann:"
        ));
        assert!(is_attribution(
            "Ann <ann@example.com> 于2020年3月3日周二 上午10:00写道："
        ));
        // "sent:" only with an address in brackets.
        assert!(is_attribution(
            "On 11-Apr-2011, at 6:54 PM, Roman Tkachenko <romant@example.com> sent:"
        ));
        assert!(!is_attribution("On 3 May we sent:"));
        assert!(!is_attribution("Ann <ann@example.com> sent:"));
    }

    #[test]
    fn taglines() {
        assert!(is_tagline("Sent from my iPhone"));
        assert!(is_tagline("Sent from my Verizon Wireless BlackBerry"));
        assert!(is_tagline("Von meinem iPhone gesendet"));
        assert!(is_tagline("Get Outlook for iOS<https://aka.ms/o0ukef>"));
        assert!(!is_tagline(
            "Sent from my desk, is much easier then my mobile phone."
        ));
        assert!(!is_tagline("Von meinem Büro aus"));
    }
}
