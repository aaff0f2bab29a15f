//! Step 1: text a prior message of the thread already holds. Prior bodies are indexed
//! as hashes of word shingles (runs of [`SHINGLE`] words) after dropping `>` markers, so
//! line wrapping and whitespace do not matter; a body is checked in one pass over its
//! words, whatever the size of the thread.
//!
//! The index keeps every prior body's words and shingles in order, where each shingle
//! first occurred, and where each longer line first occurred. Reading a body, a window
//! that continues the previous one in the same prior body is known without a look-up,
//! and a line the thread already holds whole (a quote that was not re-wrapped) takes its
//! words and shingles from there instead of hashing them again: the common case, a
//! reply quoting the thread below it, costs a comparison per word.

use super::Stripped;
use super::lines::{Line, is_cjk, is_quoted, strip_quote_markers};

/// Words per shingle: a word of the body counts as already seen when a run of this many
/// words around it appears in a prior body.
const SHINGLE: usize = 4;

/// The fewest lines with text that make a block removable (unless it has
/// [`MIN_BLOCK_CHARS`]).
const MIN_BLOCK_LINES: usize = 3;

/// The fewest characters (quote markers and the whitespace around each line excluded)
/// that make a block removable (unless it has [`MIN_BLOCK_LINES`]).
const MIN_BLOCK_CHARS: usize = 80;

/// The longest chain that goes on in another prior body when the one it followed
/// stops: a chain is checked back this far at most, so reading stays linear.
const MAX_RESTITCH: usize = 32;

/// The shortest line (in bytes, quote markers dropped) looked up whole in the index of
/// lines: shorter ones are cheaper to read word by word.
const MIN_LINE_BYTES: usize = 24;

/// The most keys [`PriorBodies::with_capacity`] makes room for at once, per table.
const MAX_PRESIZED_KEYS: usize = 1 << 15;

/// In the shingles of a body, where no shingle starts: at its last words. No shingle
/// hashes to it.
const END: u64 = 0;

/// Prior bodies of the same thread, indexed once and added to as the thread is walked:
/// the caller strips message `k` against messages `0..k` (their original bodies, not
/// their stripped text), then adds message `k`'s original body.
#[derive(Default)]
pub struct PriorBodies {
    /// The bodies added, in order.
    bodies: Vec<Body>,
    /// Where each shingle first occurred: its body and the index of its first word,
    /// packed ([`place`]).
    first: Table,
    /// Where each line of at least [`MIN_LINE_BYTES`] first occurred: an index into
    /// `line_spans`.
    lines: Table,
    /// Per line in `lines`: its body, the index of its first word and its number of
    /// words.
    line_spans: Vec<(u32, u32, u32)>,
}

/// One body added: its words and the shingle that starts at each of them ([`END`] for
/// its last words).
struct Body {
    words: Vec<u64>,
    shingles: Vec<u64>,
}

/// A body's index and a word's index in it, packed.
fn place(body: usize, word: usize) -> u64 {
    ((body as u64) << 32) | word as u64
}

impl std::fmt::Debug for PriorBodies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorBodies")
            .field("shingles", &self.first.len)
            .finish()
    }
}

impl PriorBodies {
    /// An empty index: nothing is removed by step 1 until a body is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index with room for bodies of about `bytes` bytes in all (a history's
    /// window, known before it is walked), so that it does not grow, and copy itself,
    /// while they are added. The same index as [`new`](Self::new) otherwise.
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            // About a word, and a shingle, per six bytes of text; a long window's index
            // still grows from there (its shingles repeat, and a table far larger than
            // its keys costs more to clear than growing costs).
            first: Table::with_capacity((bytes / 6).min(MAX_PRESIZED_KEYS)),
            lines: Table::with_capacity((bytes / MIN_LINE_BYTES).min(MAX_PRESIZED_KEYS)),
            ..Self::default()
        }
    }

    /// Adds one message's original body (its text as stored, quotes included).
    pub fn add(&mut self, body: &str) {
        let lines = super::lines::split(body);
        let scan = self.scan(body, &lines);
        self.append(scan);
    }

    /// Strips the thread's next message against the bodies added so far, then adds its
    /// original body: [`strip_quoted`](crate::strip_quoted) and [`add`](Self::add) in
    /// one call, which reads the body's words once instead of twice.
    pub fn strip_next<'a>(&mut self, body: &'a str) -> Stripped<'a> {
        let (stripped, scan) = super::strip_with(body, self);
        match scan {
            Some(scan) => self.append(scan),
            None => self.add(body),
        }
        stripped
    }

    /// Whether nothing has been added yet (or only bodies shorter than a shingle).
    pub fn is_empty(&self) -> bool {
        self.first.len == 0
    }

    /// Reads the words of `lines` and what the index knows of them.
    pub(super) fn scan(&self, body: &str, lines: &[Line]) -> Scan {
        self.scan_with(body, lines, None)
    }

    /// [`scan`](Self::scan) of the lines kept of a body read already in `read` (its
    /// lines `read.0`): a line kept whole takes its words from there.
    pub(super) fn rescan(&self, body: &str, lines: &[Line], read: (&[Line], &Scan)) -> Scan {
        self.scan_with(body, lines, Some(read))
    }

    fn scan_with(&self, body: &str, lines: &[Line], read: Option<(&[Line], &Scan)>) -> Scan {
        let mut scan = Scan {
            words: Vec::with_capacity(body.len() / 5 + 1),
            spans: Vec::with_capacity(lines.len()),
            shingles: Vec::new(),
            hits: Vec::new(),
            restarts: Vec::new(),
            line_keys: Vec::new(),
        };
        // Per line read already (in the index or in `read`): the shingles from its first
        // word on, where it was read.
        let mut copied = Vec::with_capacity(lines.len());
        let mut j = 0;
        for line in lines {
            let start = scan.words.len();
            let mut from = None;
            if let Some((old_lines, old)) = read {
                while j < old_lines.len() && old_lines[j].start < line.start {
                    j += 1;
                }
                if j < old_lines.len() && old_lines[j] == *line {
                    let (a, b) = old.spans[j];
                    scan.words.extend_from_slice(&old.words[a..b]);
                    scan.spans.push((start, scan.words.len()));
                    copied.push(Some(&old.shingles[a..]));
                    continue;
                }
            }
            let text = strip_quote_markers(line.text(body));
            if text.len() >= MIN_LINE_BYTES {
                let key = line_key(text);
                if let Some(found) = self.lines.get(key) {
                    let (b, at, count) = self.line_spans[found as usize];
                    let (b, at, count) = (&self.bodies[b as usize], at as usize, count as usize);
                    scan.words.extend_from_slice(&b.words[at..at + count]);
                    from = Some(&b.shingles[at..]);
                } else {
                    words_of(text, &mut scan.words);
                }
                if read.is_none() && scan.words.len() > start {
                    scan.line_keys.push((key, start, scan.words.len() - start));
                }
            } else {
                words_of(text, &mut scan.words);
            }
            scan.spans.push((start, scan.words.len()));
            copied.push(from);
        }
        scan.shingles = shingles_of(&scan.words, &scan.spans, &copied);
        (scan.hits, scan.restarts) = self.track(&scan.shingles);
        scan
    }

    /// Per window of `shingles`, as prefix sums (length: windows + 1): the known ones,
    /// and the restarts: known windows that do not continue the chain of the windows
    /// before them in one prior body. A chain follows one prior body at consecutive
    /// places from where its first window first occurred; when it cannot go on there,
    /// it goes on in the body where the next window first occurred if the chain so far
    /// (up to [`MAX_RESTITCH`] windows) stands right before it there, and restarts
    /// otherwise.
    fn track(&self, shingles: &[u64]) -> (Vec<u32>, Vec<u32>) {
        let windows = shingles.len().saturating_sub(SHINGLE - 1);
        let mut hits = vec![0u32; windows + 1];
        let mut restarts = vec![0u32; windows + 1];
        let (mut known, mut restarted) = (0u32, 0u32);
        // The previous window's place (body, first word), when it was known, and the
        // windows of the chain that ends with it.
        let mut at: Option<(usize, usize)> = None;
        let mut chain = 0usize;
        for (i, &s) in shingles[..windows].iter().enumerate() {
            if let Some((b, w)) = at
                && self.bodies[b].shingles.get(w + 1) == Some(&s)
            {
                at = Some((b, w + 1));
                chain += 1;
                known += 1;
            } else if let Some(f) = self.first.get(s) {
                let (b, w) = ((f >> 32) as usize, (f & 0xffff_ffff) as usize);
                let before = &self.bodies[b].shingles[..w];
                let same_piece = chain > 0
                    && chain <= MAX_RESTITCH
                    && before.len() >= chain
                    && before[w - chain..] == shingles[i - chain..i];
                if same_piece {
                    chain += 1;
                } else {
                    chain = 1;
                    restarted += 1;
                }
                at = Some((b, w));
                known += 1;
            } else {
                at = None;
                chain = 0;
            }
            hits[i + 1] = known;
            restarts[i + 1] = restarted;
        }
        (hits, restarts)
    }

    /// Adds the body read in `scan` (its words, shingles and lines).
    fn append(&mut self, scan: Scan) {
        let b = self.bodies.len();
        let windows = scan.hits.len().saturating_sub(1);
        for (i, &s) in scan.shingles[..windows].iter().enumerate() {
            if scan.hits[i + 1] == scan.hits[i] {
                self.first.insert(s, place(b, i));
            }
        }
        for &(key, start, count) in &scan.line_keys {
            let next = self.line_spans.len() as u64;
            if self.lines.insert(key, next) {
                self.line_spans.push((b as u32, start as u32, count as u32));
            }
        }
        self.bodies.push(Body {
            words: scan.words,
            shingles: scan.shingles,
        });
    }
}

/// The words of lines and what the index knows of them (see [`PriorBodies::scan`]).
pub(super) struct Scan {
    /// The words of the lines, in order.
    words: Vec<u64>,
    /// Per line: the range of its words in `words`.
    spans: Vec<(usize, usize)>,
    /// The shingle that starts at each word ([`END`] for the last words).
    shingles: Vec<u64>,
    /// The known windows among the first `i` (prefix sums).
    hits: Vec<u32>,
    /// The restarted chains among the first `i` windows (prefix sums, see
    /// [`PriorBodies::track`]).
    restarts: Vec<u32>,
    /// The lines of at least [`MIN_LINE_BYTES`] with words: their key, first word and
    /// number of words.
    line_keys: Vec<(u64, usize, usize)>,
}

/// The shingle that starts at each word of `words` ([`END`] where fewer than
/// [`SHINGLE`] words are left). A line read already (`copied`) takes the shingles inside
/// it from where it was read.
fn shingles_of(words: &[u64], spans: &[(usize, usize)], copied: &[Option<&[u64]>]) -> Vec<u64> {
    let n = words.len();
    let mut out = Vec::with_capacity(n);
    let windows = n.saturating_sub(SHINGLE - 1);
    // The lines' words follow each other: the shingles are pushed in order.
    for (&(start, end), &from) in spans.iter().zip(copied) {
        let mut i = start;
        if let Some(source) = from {
            let inside = (end - start).saturating_sub(SHINGLE - 1);
            out.extend_from_slice(&source[..inside]);
            i += inside;
        }
        let last = end.min(windows);
        if last > i {
            out.extend(words[i..last + SHINGLE - 1].windows(SHINGLE).map(shingle));
        }
        out.resize(end, END);
    }
    out
}

/// The blocks of `lines` that appear in a prior body, as inclusive index ranges into
/// `lines` (read in `scan`). A block is a run of lines whose words, taken together, form
/// one chain of known shingles (each shingle of the run is known and follows the one
/// before it in the same prior body, so the run appears as one piece in one prior body,
/// whatever its wrapping); lines without words may sit
/// inside a run, and a run does not mix quoted and unquoted lines (a line directly
/// between two quoted lines counts as quoted: its words must continue the quote anyway) (a quote and the
/// answer below it are never one piece, even when the answer opens with words the
/// thread has seen). A block holds at least [`MIN_BLOCK_LINES`] lines with words or
/// [`MIN_BLOCK_CHARS`] characters, and no line of a diff region (`diff`, see
/// [`diff_lines`]); no block holds both the line `boundary` and the line above it.
pub(super) fn known_blocks(
    body: &str,
    lines: &[Line],
    scan: &Scan,
    diff: &[bool],
    boundary: Option<usize>,
) -> Vec<(usize, usize)> {
    if scan.words.len() < SHINGLE {
        return Vec::new();
    }
    let chain = Chain {
        hits: &scan.hits,
        restarts: &scan.restarts,
        words: scan.words.len(),
    };
    let mut blocks = Vec::new();
    let mut run: Option<Run> = None;
    for (i, &(start, end)) in scan.spans.iter().enumerate() {
        if boundary == Some(i)
            && let Some(done) = run.take()
        {
            done.push_to(&mut blocks);
        }
        if start == end {
            continue; // no words: neither breaks nor extends a run
        }
        if diff[i] {
            // A patch is new content even where it repeats an earlier version's hunks.
            if let Some(done) = run.take() {
                done.push_to(&mut blocks);
            }
            continue;
        }
        let text = lines[i].text(body);
        // A line directly between two quoted lines is a piece that the sender's client
        // wrapped without its `>` when its words continue the quote in the prior body.
        let quoted = is_quoted(text)
            || (i > 0
                && is_quoted(lines[i - 1].text(body))
                && lines.get(i + 1).is_some_and(|l| is_quoted(l.text(body))));
        // Characters only count while a run has too few lines to be a block anyway.
        let chars = |lines: usize| {
            if lines < MIN_BLOCK_LINES {
                strip_quote_markers(text).trim_end().chars().count()
            } else {
                0
            }
        };
        if let Some(open) = run.as_mut()
            && open.quoted == quoted
            && chain.covers(open.words, end)
        {
            open.last = i;
            open.chars += chars(open.lines);
            open.lines += 1;
            continue;
        }
        if let Some(done) = run.take() {
            done.push_to(&mut blocks);
        }
        if chain.covers(start, end) {
            run = Some(Run {
                first: i,
                last: i,
                words: start,
                quoted,
                lines: 1,
                chars: chars(0),
            });
        }
    }
    if let Some(open) = run {
        open.push_to(&mut blocks);
    }
    blocks
}

/// Per line: whether it is in a diff region of a patch, where step 1 removes nothing:
/// from an unquoted line that starts a patch of a file (`diff --git …`, `Index: …`, or
/// `--- …` directly above `+++ …`), or from the line `---` that `git format-patch` puts
/// above a patch's notes and diffstat when such a start or a diffstat's summary
/// (` 2 files changed, …`) follows it, to the signature line (`-- ` or `--`) or the end
/// of the body. A patch that re-posts a hunk or the diffstat of an earlier version (or
/// of its series' cover letter) is new content, not a quote.
pub(super) fn diff_lines(body: &str, lines: &[Line]) -> Vec<bool> {
    let is_signature = |text: &str| text == "-- " || text == "--";
    let starts_file = |i: usize, text: &str| {
        text.starts_with("diff --git ")
            || text.starts_with("Index: ")
            || (text.starts_with("--- ")
                && lines
                    .get(i + 1)
                    .is_some_and(|next| next.text(body).starts_with("+++ ")))
    };
    // Per line: whether a file's patch or a diffstat's summary follows it before the
    // next signature line (read from the end, so the body is read twice in all).
    let mut patch_below = vec![false; lines.len()];
    let mut below = false;
    for (i, line) in lines.iter().enumerate().rev() {
        patch_below[i] = below;
        let text = line.text(body);
        if is_signature(text) {
            below = false;
        } else if starts_file(i, text) || is_diffstat_summary(text) {
            below = true;
        }
    }
    let mut flags = vec![false; lines.len()];
    let mut inside = false;
    for (i, line) in lines.iter().enumerate() {
        let text = line.text(body);
        if inside {
            inside = !is_signature(text);
        } else {
            inside = starts_file(i, text) || (text == "---" && patch_below[i]);
        }
        flags[i] = inside;
    }
    flags
}

/// Whether `text` is the last line of a diffstat: ` 1 file changed, 2 insertions(+)`,
/// ` 4 files changed, 3 insertions(+), 4 deletions(-)`.
fn is_diffstat_summary(text: &str) -> bool {
    let Some(rest) = text.strip_prefix(' ') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && (rest[digits..].starts_with(" file changed")
            || rest[digits..].starts_with(" files changed"))
}

/// The known shingles of a body and where chains restart, to ask whether a range of its
/// words is one chain.
struct Chain<'a> {
    hits: &'a [u32],
    restarts: &'a [u32],
    words: usize,
}

impl Chain<'_> {
    /// Whether words `from..to` appear as one piece in a prior body: every shingle
    /// inside the range is known and continues the one before it in the same prior
    /// body (no chain restarts after the first), or, for a range shorter than a
    /// shingle, a known shingle holds it.
    fn covers(&self, from: usize, to: usize) -> bool {
        let known = |a: usize, b: usize| self.hits[b] - self.hits[a];
        if to - from >= SHINGLE {
            let windows = to - from - SHINGLE + 1;
            known(from, from + windows) as usize == windows
                && self.restarts[from + windows] == self.restarts[from + 1]
        } else {
            let lowest = to.saturating_sub(SHINGLE);
            let highest = from.min(self.words - SHINGLE);
            lowest <= highest && known(lowest, highest + 1) > 0
        }
    }
}

/// A run of lines being read: its first and last line, its first word, whether its
/// lines are quoted, and its lines with words and characters.
struct Run {
    first: usize,
    last: usize,
    words: usize,
    quoted: bool,
    lines: usize,
    chars: usize,
}

impl Run {
    fn push_to(self, blocks: &mut Vec<(usize, usize)>) {
        if self.lines >= MIN_BLOCK_LINES || self.chars >= MIN_BLOCK_CHARS {
            blocks.push((self.first, self.last));
        }
    }
}

/// Appends the hashes of the words of `text` (quote markers already dropped): runs of
/// characters between whitespace, except that each Chinese, Japanese or Korean character
/// is a word of its own (those scripts do not separate words, and a re-wrapped quote
/// breaks their lines anywhere). ASCII bytes are read eight at a time where they can be;
/// characters beyond ASCII are decoded to ask whether they are whitespace or CJK.
fn words_of(text: &str, out: &mut Vec<u64>) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        let b = bytes[i];
        if b < 0x80 {
            if b.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            // A word of at most seven ASCII bytes that whitespace or the end of the line
            // ends (the common word): found and hashed from eight bytes read at once.
            let chunk = load_spaced(bytes, i);
            let stops = special_bytes(chunk);
            if stops != 0 {
                let len = stops.trailing_zeros() as usize / 8;
                if i + len >= n || bytes[i + len].is_ascii_whitespace() {
                    out.push(fold_mul(
                        K0 ^ len as u64 ^ (chunk & ((1u64 << (8 * len)) - 1)),
                        K1,
                    ));
                    i += len;
                    continue;
                }
            }
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            if c.is_whitespace() {
                i += c.len_utf8();
                continue;
            }
            if is_cjk(c) {
                out.push(hash_word(bytes, i, i + c.len_utf8()));
                i += c.len_utf8();
                continue;
            }
        }
        // A longer word, or one with bytes beyond ASCII or controls: read to its end,
        // eight bytes at a time where they are plain ASCII.
        let start = i;
        while i < n {
            let b = bytes[i];
            if b < 0x80 {
                if b.is_ascii_whitespace() {
                    break;
                }
                if i + 8 <= n && special_bytes(load_spaced(bytes, i)) == 0 {
                    i += 8;
                } else {
                    i += 1;
                }
            } else {
                let c = text[i..].chars().next().unwrap_or(' ');
                if c.is_whitespace() || is_cjk(c) {
                    break;
                }
                i += c.len_utf8();
            }
        }
        out.push(hash_word(bytes, start, i));
    }
}

/// The high bit of each byte of `chunk` below `0x21` (spaces, controls) or beyond ASCII.
fn special_bytes(chunk: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Below 0x80, adding 0x5f sets the high bit from 0x21 on, without a carry.
    let low = (chunk & !HIGH).wrapping_add(0x5f5f_5f5f_5f5f_5f5f);
    (!low | chunk) & HIGH
}

const K0: u64 = 0x243f_6a88_85a3_08d3;
const K1: u64 = 0x9e37_79b9_7f4a_7c15;
const K2: u64 = 0x1319_8a2e_0370_7344;
const K3: u64 = 0xa409_3822_299f_31d0;

/// The 128-bit product of `a` and `b`, its halves folded: every bit of the result
/// depends on every bit of both.
fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Eight bytes of `bytes` from `at`, of which the first `len` (at most 8) are kept.
fn load(bytes: &[u8], at: usize, len: usize) -> u64 {
    if let Some(chunk) = bytes.get(at..at + 8) {
        let v = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        if len >= 8 {
            v
        } else {
            v & ((1u64 << (8 * len)) - 1)
        }
    } else {
        bytes[at..at + len]
            .iter()
            .rev()
            .fold(0, |v, &b| (v << 8) | u64::from(b))
    }
}

/// Eight bytes of `bytes` from `at`, spaces after its end.
fn load_spaced(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(chunk) => u64::from_le_bytes(chunk.try_into().unwrap_or([b' '; 8])),
        None => {
            let mut buf = [b' '; 8];
            buf[..bytes.len() - at].copy_from_slice(&bytes[at..]);
            u64::from_le_bytes(buf)
        }
    }
}

/// The hash of the word `bytes[start..end]`, eight bytes at a time.
fn hash_word(bytes: &[u8], start: usize, end: usize) -> u64 {
    let mut hash = K0 ^ (end - start) as u64;
    let mut at = start;
    while end - at > 8 {
        hash = fold_mul(hash ^ load(bytes, at, 8), K1);
        at += 8;
    }
    fold_mul(hash ^ load(bytes, at, end - at), K1)
}

/// The hash of a run of [`SHINGLE`] words (never [`END`]).
fn shingle(words: &[u64]) -> u64 {
    fold_mul(
        words[0] ^ words[1].rotate_left(21) ^ K2,
        words[2] ^ words[3].rotate_left(43) ^ K3,
    )
    .max(1)
}

/// The key of a line in the index of lines (never 0).
fn line_key(text: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(K2)
        .hash_one(text.as_bytes())
        .max(1)
}

/// A set of hashes (never 0) with a value each: open addressing, linear probing, at most
/// half full. The hashes are well mixed already, so their low bits pick the slot; a
/// slot holds its key and value side by side, one cache line read per look-up.
#[derive(Default)]
struct Table {
    slots: Vec<(u64, u64)>,
    len: usize,
}

impl Table {
    /// Room for `keys` keys before the table grows (it grows past half full).
    fn with_capacity(keys: usize) -> Table {
        let size = (keys.saturating_mul(2)).next_power_of_two().max(256);
        Table {
            slots: vec![(0, 0); size],
            len: 0,
        }
    }

    fn get(&self, key: u64) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            let (k, v) = self.slots[i];
            if k == key {
                return Some(v);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Inserts `key` with `value`, unless it is there already (its value stays).
    /// Returns whether it was inserted.
    fn insert(&mut self, key: u64, value: u64) -> bool {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            let k = self.slots[i].0;
            if k == key {
                return false;
            }
            if k == 0 {
                self.slots[i] = (key, value);
                self.len += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Twice the slots, from a few hundred (a short window's index stays small).
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(256);
        let slots = std::mem::replace(&mut self.slots, vec![(0, 0); size]);
        let mask = size - 1;
        for (k, v) in slots {
            if k != 0 {
                let mut i = k as usize & mask;
                while self.slots[i].0 != 0 {
                    i = (i + 1) & mask;
                }
                self.slots[i] = (k, v);
            }
        }
    }
}
