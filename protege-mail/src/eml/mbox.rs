//! Splitting mbox files, streaming: one pass finds where each message lies and
//! keeps only its header lines; a message's bytes are read again when it is stored.
//!
//! A separator is a line `From ` + sender + an asctime-style date (`Mon Feb  9 09:00:00
//! 2026`, optionally with a time zone) that is the first line of the file or follows an
//! empty line; that empty line belongs to the separator. A body line such as
//! `From what I see, ...` never splits a message. `>From ` lines are unescaped the mboxrd
//! way: one leading `>` is removed from a line `>+From `, which also reads mboxo files.

use std::io::{self, BufRead};

/// The most header bytes kept per message in the first pass (the rest is ignored there).
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Where one message of an mbox lies, with its (unescaped) header lines.
#[derive(Debug)]
pub struct MboxEntry {
    /// The byte offset of the message's first line (after its separator line).
    pub offset: u64,
    /// Its length in bytes, without the empty line before the next separator.
    pub len: u64,
    /// The header lines, up to the first empty line (at most 1 MiB).
    pub header: Vec<u8>,
}

/// Whether `line` (with or without its line end) is an mbox separator line:
/// `From ` + sender + asctime-style date.
pub fn is_separator(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"From ") else {
        return false;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return false;
    };
    let tokens: Vec<&str> = rest.split_ascii_whitespace().take(16).collect();
    // tokens[0] is the sender; the date follows it (a quoted sender may hold spaces).
    (1..tokens.len()).any(|i| is_asctime(&tokens[i..]))
}

/// `Www Mmm d hh:mm[:ss] [zone] yyyy [zone]`.
fn is_asctime(t: &[&str]) -> bool {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let digits = |s: &str, min: usize, max: usize| {
        (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    let time = |s: &str| {
        let parts: Vec<&str> = s.split(':').collect();
        (2..=3).contains(&parts.len()) && parts.iter().all(|p| digits(p, 2, 2))
    };
    t.len() >= 5
        && DAYS.iter().any(|d| t[0].eq_ignore_ascii_case(d))
        && MONTHS.iter().any(|m| t[1].eq_ignore_ascii_case(m))
        && digits(t[2], 1, 2)
        && time(t[3])
        && t[4..t.len().min(6)].iter().any(|s| digits(s, 4, 4))
}

/// Whether `line` is empty (a lone line end).
fn is_empty_line(line: &[u8]) -> bool {
    line == b"\n" || line == b"\r\n"
}

/// The number of `>` to remove from the start of `line`: one for `>+From `.
fn escape_len(line: &[u8]) -> usize {
    let quotes = line.iter().take_while(|&&b| b == b'>').count();
    usize::from(quotes > 0 && line[quotes..].starts_with(b"From "))
}

/// `raw` with `>From ` lines unescaped (`raw` itself when it has none).
pub fn unescape(raw: Vec<u8>) -> Vec<u8> {
    if !raw.split(|&b| b == b'\n').any(|line| escape_len(line) > 0) {
        return raw;
    }
    let mut out = Vec::with_capacity(raw.len());
    for line in raw.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(&line[escape_len(line)..]);
    }
    out
}

/// Reads an mbox (whose first line is a separator) to its end, calling `found` with each
/// message in file order.
pub fn scan<R: BufRead>(mut reader: R, mut found: impl FnMut(MboxEntry)) -> io::Result<()> {
    let mut line = Vec::with_capacity(256);
    let mut pos: u64 = 0;
    // The message being read: its entry, whether its header is complete.
    let mut current: Option<(MboxEntry, bool)> = None;
    // The length of the previous line when it was empty, else `None`; `Some(0)` at the
    // start of the file.
    let mut prev_empty: Option<u64> = Some(0);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)? as u64;
        if n == 0 {
            break;
        }
        let start = pos;
        pos += n;
        if let Some(empty) = prev_empty
            && is_separator(&line)
        {
            if let Some((mut entry, _)) = current.take() {
                entry.len = start - empty - entry.offset;
                found(entry);
            }
            current = Some((
                MboxEntry {
                    offset: pos,
                    len: 0,
                    header: Vec::new(),
                },
                false,
            ));
            prev_empty = None;
            continue;
        }
        prev_empty = is_empty_line(&line).then_some(n);
        if let Some((entry, done)) = &mut current
            && !*done
        {
            if is_empty_line(&line) || entry.header.len() + line.len() > MAX_HEADER_BYTES {
                *done = true;
            } else {
                entry.header.extend_from_slice(&line[escape_len(&line)..]);
            }
        }
    }
    if let Some((mut entry, _)) = current {
        // The empty line that ends the last message is the file's, not the message's.
        entry.len = pos - prev_empty.unwrap_or(0) - entry.offset;
        found(entry);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_need_a_sender_and_an_asctime_date() {
        assert!(is_separator(
            b"From alice@example.com Mon Feb  9 09:00:00 2026\n"
        ));
        assert!(is_separator(
            b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011\r\n"
        ));
        assert!(is_separator(b"From a@b Tue Feb 10 08:00 +0000 2026"));
        assert!(is_separator(b"From a@b Tue Feb 10 08:00:00 2026 +0000"));
        assert!(!is_separator(b"From what I see, the lid is red.\n"));
        assert!(!is_separator(b"From: alice@example.com\n"));
        assert!(!is_separator(b"From Mon Feb  9 09:00:00\n"));
        assert!(!is_separator(b">From a@b Mon Feb  9 09:00:00 2026\n"));
    }

    #[test]
    fn unescapes_one_quote_of_from_lines() {
        assert_eq!(
            unescape(b">From a\n>>From b\n> From c\n>Fromage\nFrom d\n".to_vec()),
            b"From a\n>From b\n> From c\n>Fromage\nFrom d\n".to_vec()
        );
        assert_eq!(
            unescape(b"a\n> From c\n>Fromage\n".to_vec()),
            b"a\n> From c\n>Fromage\n".to_vec()
        );
    }

    #[test]
    fn splits_only_at_separators_after_an_empty_line() {
        let text = b"From a@b Mon Feb  9 09:00:00 2026\nSubject: one\n\nbody\nFrom x@y Mon Feb  9 09:00:00 2026\n\nFrom what I see\n\nFrom c@d Mon Feb  9 10:00:00 2026\nSubject: two\n\nend\n\n";
        let mut got = Vec::new();
        scan(&text[..], |e| got.push(e)).unwrap();
        let pieces: Vec<(&[u8], &[u8])> = got
            .iter()
            .map(|e| {
                let (o, l) = (e.offset as usize, e.len as usize);
                (&text[o..o + l], e.header.as_slice())
            })
            .collect();
        assert_eq!(
            pieces,
            vec![
                (
                    &b"Subject: one\n\nbody\nFrom x@y Mon Feb  9 09:00:00 2026\n\nFrom what I see\n"[..],
                    &b"Subject: one\n"[..]
                ),
                (&b"Subject: two\n\nend\n"[..], &b"Subject: two\n"[..]),
            ]
        );
    }
}
