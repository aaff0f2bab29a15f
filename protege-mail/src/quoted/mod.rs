//! Quoted text stripped from mail bodies (`quoted = "strip"`): a body shows only what
//! its author wrote. Three steps, repeated until nothing changes:
//!
//! 1. A block of at least 3 lines or 80 characters that appears in a prior message of
//!    the thread (compared after dropping `>` markers, whitespace and line wrapping) is
//!    removed, with the attribution line directly above it. Language independent.
//! 2. An attribution line ("On … wrote:", "Le … a écrit :", "Am … schrieb …:", in the
//!    languages of `lang.rs`, also split over several lines), a reply or forward header
//!    block (`From:`/`Sent:`/`To:`/`Subject:` and translations, Outlook's
//!    `________________________________` rule above one) or a separator line
//!    (`-----Original Message-----`, "Begin forwarded message:", …) is removed with
//!    everything after it, `>`-marked or not; so is a trailing run of `>`-quoted lines.
//! 3. A signature (from a line that is exactly `-- ` or `--`) and a mobile tagline
//!    ("Sent from my iPhone", …) are removed with what follows them.
//!
//! Where the design leaves a choice, what a reader of the mail would expect:
//!
//! - Markers count on lines that are not quoted: a quoted attribution or signature
//!   belongs to the quote around it, so an inline answer below it stays.
//! - An answered quote: when the lines below an attribution are `>`-quoted and the
//!   author's own unquoted text follows them (answers between the quoted lines, or
//!   below them), the attribution and every `>`-quoted line below it are removed and
//!   the author's lines stay; only text after an unmarked quote (Outlook's, never
//!   followed by the author's own) is removed with "everything after". This applies
//!   first in each round, so that step 1 does not take the attribution away from the
//!   quote it introduces, and also to an attribution on the body's first line. A piece
//!   that the sender's client wrapped without repeating `>`, directly between quoted
//!   lines, belongs to the quote: a piece of a link, or the last few words of a long
//!   line that stops mid-sentence (Outlook's wrapping of a quote it re-quotes). Such a
//!   piece between two blocks that step 1 removes goes with them.
//! - An attribution has the shape of one, so that a sentence ending in "wrote:" stays:
//!   the language's opener and a date ("On <a digit, weekday or month> … wrote:"), or
//!   an address in brackets ("Ann <ann@example.com> wrote:"). "sent:" ends one only
//!   with both ("On 3 Mar 2020, Ann <ann@example.com> sent:"). A split one may hold a
//!   blank line before its bracketed address and a `>` that closes the address's `<`
//!   (Polymail: "On … John Smith" / "" / "<" / "mailto:…<john@example.com>" /
//!   "> wrote:").
//! - Signatures also include a mailing list's footer (a rule of underscores and at most
//!   six lines with a link at the end of the body, as Mailman appends) and a closing
//!   name after a dash ("-Abhishek Kona", not a list's last item); sign-offs such as
//!   "Regards," stay.
//! - A header block names at least two things, one a date or a subject ("From: Paris" /
//!   "To: London" stays).
//! - A step-1 block is one piece of a prior body: every run of four words in it is
//!   known, and each continues the one before it in the same prior body (runs known
//!   from different bodies, such as the lines of two patches' diffstats, are not one
//!   block). It does not mix quoted and unquoted lines; blocks under four words are
//!   never found. Lines without words after a removed block go with it, as blank
//!   lines directly after a removed quote do.
//! - Step 1 removes nothing from the diff regions of a patch (from `diff --git`,
//!   `Index:` or `--- `/`+++ `, or from the `---` of `git format-patch` above a patch's
//!   notes and diffstat, to the signature or the end): a new version of a patch that
//!   re-posts an earlier version's hunks, or a patch that repeats its lines of its
//!   series' diffstat, is new content. A quoted patch (`>` lines) is a quote like any
//!   other.
//! - A step-1 block does not run from above step 2's first marker into it: an author's
//!   sign-off ("Regards,\nAlfonso") directly above a quoted header that an earlier
//!   message also has below the same sign-off is the author's, and the header goes with
//!   step 2 anyway.
//! - A quote below an attribution may mark its lines as Emacs's Supercite does
//!   (`Martin> text`): when its first line has such a prefix, the lines with it are the
//!   quote an answer below it answers.
//! - A pasted Python session (`>>> a = 1` below the author's text, in a body where no
//!   line opens with a compact second level `>> `) is the author's: its `>>>` lines are
//!   no quotes, and step 1 removes neither them nor the output below them (to the next
//!   blank line), even when an earlier message shows the same session.
//! - Only trailing whitespace is trimmed; a body with nothing to remove is returned
//!   as it is, borrowed.

mod lang;
mod lines;
mod markers;
mod prior;

use std::borrow::Cow;

use lines::Line;
use markers::Cut;
pub use prior::PriorBodies;

/// The version of the strip rules. Each message's stripped text is stored with the version
/// that made it (`message_strips.rules`); a read ignores a row of another version and
/// strips again. Raise it with every change to what [`strip_quoted`] or the HTML converter
/// returns, together with a migration that strips the stored mail again.
pub const STRIP_RULES: i32 = 2;

/// What stripping left of one body, and how much it removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped<'a> {
    /// The author's own text: the body with its quoted parts, signature and tagline
    /// removed and trailing whitespace trimmed; the body itself (borrowed) when nothing
    /// was removed or everything would have been.
    pub text: Cow<'a, str>,
    /// The characters (not bytes) removed: the body's length minus the text's.
    pub removed: usize,
}

/// Strips the quoted text from `body`, a message of a thread whose earlier messages are
/// in `prior` (see [`PriorBodies`] for the walk, and [`PriorBodies::strip_next`] for a
/// walk in one call per message). The lines that stay are not changed:
/// no reflowing, only trailing blank lines trimmed. A body that would become empty keeps
/// its original text, with `removed` 0.
///
/// ```
/// use protege_mail::{PriorBodies, strip_quoted};
///
/// let first = "Can you resend the invoice for March?\nThe PDF was empty.\nThanks, Ann";
/// let reply = "Sent again, sorry about that.\n\nOn Tue, 3 Mar 2020 at 10:00, Ann \
///     <ann@example.com> wrote:\n> Can you resend the invoice for March?\n> The PDF was empty.\n\
///     > Thanks, Ann\n";
/// let mut prior = PriorBodies::new();
/// assert_eq!(strip_quoted(first, &prior).text, first);
/// prior.add(first);
/// let stripped = strip_quoted(reply, &prior);
/// assert_eq!(stripped.text, "Sent again, sorry about that.");
/// assert_eq!(stripped.removed, reply.chars().count() - 29);
/// ```
pub fn strip_quoted<'a>(body: &'a str, prior: &PriorBodies) -> Stripped<'a> {
    strip_with(body, prior).0
}

/// [`strip_quoted`], and the body as step 1 read it when the index was not empty (for
/// [`PriorBodies::strip_next`], which adds it).
fn strip_with<'a>(body: &'a str, prior: &PriorBodies) -> (Stripped<'a>, Option<prior::Scan>) {
    let unchanged = Stripped {
        text: Cow::Borrowed(body),
        removed: 0,
    };
    let mut lines = lines::split(body);
    let mut changed_any = false;
    // The whole body read before anything is removed: what step 1 looks at while the
    // lines are still the body's own.
    let scan = (!prior.is_empty()).then(|| prior.scan(body, &lines));
    let body_lines = if scan.is_some() {
        lines.clone()
    } else {
        Vec::new()
    };
    let mut plain = markers::Plain::new(&lines);
    // A pasted Python session's `>>>` lines are the author's, not a quote.
    let prompts = lines::has_python_prompts(body, &lines);
    let mut whole = true;
    // Step 1 only finds new blocks after it removed some (a cut only shortens runs).
    let mut look_for_blocks = !prior.is_empty();
    loop {
        // A signature goes first (step 3), whole: step 1 would otherwise take its `-- `
        // line away with a block that earlier messages share (a patch series' `-- ` /
        // `2.43.0`), and leave the rest of it behind.
        let mut changed = cut_at_signature(body, &mut lines);
        if changed {
            whole = false;
        }
        // An answered quote goes next, so that step 1 does not take its attribution
        // away from the quoted lines below it.
        let mut marker = markers::first_marker(body, &lines, &mut plain);
        if let Some(cut) = marker
            && is_answered(body, &lines, cut, prompts)
        {
            remove_answered_quote(body, &mut lines, cut, prompts);
            changed = true;
            whole = false;
            marker = None;
        }
        if look_for_blocks {
            let read = scan.as_ref().map(|scan| (whole, &body_lines[..], scan));
            let boundary = marker.map(|cut| match cut {
                Cut::Line(i) | Cut::Attribution(i, _) | Cut::Within(i, _) => i,
            });
            look_for_blocks = remove_known_blocks(body, &mut lines, prior, read, boundary, prompts);
            if look_for_blocks {
                changed = true;
                marker = None;
            }
        }
        if marker.is_none() && changed {
            marker = markers::first_marker(body, &lines, &mut plain);
            // An answered quote found only now is removed as one in the next round,
            // not cut with everything below it.
            if marker.is_some_and(|cut| is_answered(body, &lines, cut, prompts)) {
                marker = None;
            }
        }
        changed |= cut_at_markers(body, &mut lines, marker, prompts);
        if !changed {
            break;
        }
        whole = false;
        changed_any = true;
    }
    if !changed_any {
        return (unchanged, scan);
    }
    let text = lines::assemble(body, &lines);
    if text.trim().is_empty() {
        return (unchanged, scan);
    }
    let removed = body.chars().count() - text.chars().count();
    (Stripped { text, removed }, scan)
}

/// Whether `cut` is an attribution whose quote its author answers below it.
fn is_answered(body: &str, lines: &[Line], cut: Cut, prompts: bool) -> bool {
    match cut {
        Cut::Attribution(_, last) | Cut::Within(last, _) => {
            markers::quote_is_answered(body, lines, last, prompts)
        }
        Cut::Line(_) => false,
    }
}

/// Step 1: removes every block found in `prior`, from the attribution above it (if
/// any) to the lines without words after it. `read`: the body's lines as step 1 read
/// them before anything was removed, and whether `lines` are still all of them.
/// `boundary`: the first line of step 2's first marker, where no block starts above and
/// ends below (the author's sign-off above a quote's header is not one piece with it,
/// even when an earlier message has both). `prompts`: the body's `>>>` lines are a
/// pasted Python session, new content as a patch is, with the output below each prompt
/// (to the next blank line). Returns whether anything was removed.
fn remove_known_blocks(
    body: &str,
    lines: &mut Vec<Line>,
    prior: &PriorBodies,
    read: Option<(bool, &[Line], &prior::Scan)>,
    boundary: Option<usize>,
    prompts: bool,
) -> bool {
    let mut diff = prior::diff_lines(body, lines);
    if prompts {
        // A prompt and the output below it, to the next blank line.
        let mut session = false;
        for (flag, line) in diff.iter_mut().zip(lines.iter()) {
            let text = line.text(body);
            session = lines::is_prompt(text) || (session && !lines::is_blank(text));
            *flag |= session;
        }
    }
    let blocks = match read {
        Some((true, _, scan)) => prior::known_blocks(body, lines, scan, &diff, boundary),
        Some((false, old_lines, scan)) => {
            let scan = prior.rescan(body, lines, (old_lines, scan));
            prior::known_blocks(body, lines, &scan, &diff, boundary)
        }
        None => prior::known_blocks(body, lines, &prior.scan(body, lines), &diff, boundary),
    };
    if blocks.is_empty() {
        return false;
    }
    let mut remove = vec![false; lines.len()];
    for (first, last) in blocks {
        let start = markers::attribution_above(body, lines, first);
        let mut end = last + 1;
        while end < lines.len()
            && !diff[end]
            && lines::strip_quote_markers(lines[end].text(body))
                .trim()
                .is_empty()
        {
            end += 1;
        }
        remove[start..end].iter_mut().for_each(|r| *r = true);
    }
    // A quote wrapped without its `>` markers leaves its pieces between two removed
    // quoted lines: they go with them, however short the line above.
    for k in 1..lines.len().saturating_sub(1) {
        let (above, text, below) = (
            lines[k - 1].text(body),
            lines[k].text(body),
            lines[k + 1].text(body),
        );
        if !remove[k]
            && remove[k - 1]
            && remove[k + 1]
            && lines::is_quoted(above)
            && lines::is_quoted(below)
            && !lines::is_quoted(text)
            && markers::is_wrapped_piece(lines::strip_quote_markers(above), text.trim())
        {
            remove[k] = true;
        }
    }
    let mut flags = remove.into_iter();
    lines.retain(|_| !flags.next().unwrap_or(false));
    true
}

/// Step 2, an attribution whose quote its author answers below it (inline or
/// bottom-posted): the attribution and every `>`-quoted line below it (with the pieces
/// of a wrapped link among them, or every line with the Supercite prefix of the quote's
/// first line) are removed, with the blank lines directly after a removed line, down to
/// the next attribution; the author's unquoted lines stay.
fn remove_answered_quote(body: &str, lines: &mut Vec<Line>, cut: Cut, prompts: bool) {
    let marking = markers::Marking::below(body, lines, cut.last_line());
    let mut remove = vec![false; lines.len()];
    match cut {
        Cut::Within(i, at) => lines[i].end = at,
        Cut::Attribution(first, last) => remove[first..=last].iter_mut().for_each(|r| *r = true),
        Cut::Line(_) => return,
    }
    let mut after_removed = true;
    for k in cut.last_line() + 1..lines.len() {
        if marking.quotes(body, lines, k, prompts) {
            remove[k] = true;
            after_removed = true;
        } else if lines::is_blank(lines[k].text(body)) {
            remove[k] = after_removed;
        } else if markers::attribution_at(body, lines, k, false).is_some() {
            // Another attribution: its quote is its own (one reply to two messages),
            // removed as one in the next round.
            break;
        } else {
            after_removed = false;
        }
    }
    let mut flags = remove.into_iter();
    lines.retain(|_| !flags.next().unwrap_or(false));
}

/// Step 2: cuts at the first marker (`marker`, found on `lines` as they are), then
/// removes a trailing run of quoted lines. Returns whether anything was removed.
fn cut_at_markers(body: &str, lines: &mut Vec<Line>, marker: Option<Cut>, prompts: bool) -> bool {
    let mut changed = false;
    match marker {
        Some(Cut::Line(i) | Cut::Attribution(i, _)) => {
            lines.truncate(i);
            changed = true;
        }
        Some(Cut::Within(i, at)) => {
            lines.truncate(i + 1);
            lines[i].end = at;
            changed = true;
        }
        None => {}
    }
    if let Some(start) = markers::trailing_quote_run(body, lines, prompts) {
        lines.truncate(start);
        changed = true;
    }
    changed
}

/// Step 3: cuts at a signature, a mobile tagline or a mailing list's footer, then at a
/// closing "-Name". Returns whether anything was removed.
fn cut_at_signature(body: &str, lines: &mut Vec<Line>) -> bool {
    let start = markers::signature_start(body, lines);
    let footer = markers::list_footer_start(body, lines);
    let mut changed = false;
    if let Some(i) = start.into_iter().chain(footer).min() {
        lines.truncate(i);
        changed = true;
    }
    if let Some(i) = markers::dash_signature(body, lines) {
        lines.truncate(i);
        changed = true;
    }
    changed
}
