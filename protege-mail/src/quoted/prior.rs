//! Step 1: text a prior message of the thread already holds. Prior bodies are indexed
//! as hashes of word shingles (runs of [`SHINGLE`] words) after dropping `>` markers, so
//! line wrapping and whitespace do not matter; a body is checked in one pass over its
//! words, whatever the size of the thread.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

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

/// Prior bodies of the same thread, indexed once and added to as the thread is walked:
/// the caller strips message `k` against messages `0..k` (their original bodies, not
/// their stripped text), then adds message `k`'s original body.
#[derive(Default)]
pub struct PriorBodies {
    shingles: HashSet<u64, BuildHasherDefault<PassThrough>>,
}

impl std::fmt::Debug for PriorBodies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriorBodies")
            .field("shingles", &self.shingles.len())
            .finish()
    }
}

impl PriorBodies {
    /// An empty index: nothing is removed by step 1 until a body is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one message's original body (its text as stored, quotes included).
    pub fn add(&mut self, body: &str) {
        let mut words = Vec::new();
        for line in body.split('\n') {
            words_of(strip_quote_markers(line), &mut words);
        }
        self.add_words(&words);
    }

    /// Strips the thread's next message against the bodies added so far, then adds its
    /// original body: [`strip_quoted`](crate::strip_quoted) and [`add`](Self::add) in
    /// one call, which reads the body's words once instead of twice.
    pub fn strip_next<'a>(&mut self, body: &'a str) -> Stripped<'a> {
        let (stripped, words) = super::strip_with(body, self);
        match words {
            Some(words) => self.add_words(&words),
            None => self.add(body),
        }
        stripped
    }

    /// Adds the words of a body, in order.
    fn add_words(&mut self, words: &[u64]) {
        self.shingles.extend(words.windows(SHINGLE).map(shingle));
    }

    /// Whether nothing has been added yet (or only bodies shorter than a shingle).
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }
}

/// The blocks of `lines` that appear in a prior body, as inclusive index ranges into
/// `lines`. A block is a run of lines whose words, taken together, form one chain of
/// known shingles (each shingle of the run is known, so the run appears as one piece in
/// a prior body, whatever its wrapping); lines without words may sit inside a run, and a
/// run does not mix quoted and unquoted lines (a quote and the answer below it are
/// never one piece, even when the answer opens with words the thread has seen). A block
/// holds at least [`MIN_BLOCK_LINES`] lines with words or [`MIN_BLOCK_CHARS`]
/// characters.
///
/// `words` is a buffer: it ends holding the words of `lines`, in order.
pub(super) fn known_blocks(
    body: &str,
    lines: &[Line],
    prior: &PriorBodies,
    words: &mut Vec<u64>,
) -> Vec<(usize, usize)> {
    words.clear();
    // Per line: the range of its words in `words`.
    let mut spans = Vec::with_capacity(lines.len());
    for line in lines {
        let start = words.len();
        words_of(strip_quote_markers(line.text(body)), words);
        spans.push((start, words.len()));
    }
    if words.len() < SHINGLE {
        return Vec::new();
    }
    // hits[i]: the known shingles among the first i (prefix sums).
    let mut hits = Vec::with_capacity(words.len() + 2 - SHINGLE);
    hits.push(0u32);
    let mut count = 0;
    for window in words.windows(SHINGLE) {
        count += u32::from(prior.shingles.contains(&shingle(window)));
        hits.push(count);
    }
    let chain = Chain {
        hits: &hits,
        words: words.len(),
    };
    let mut blocks = Vec::new();
    let mut run: Option<Run> = None;
    for (i, &(start, end)) in spans.iter().enumerate() {
        if start == end {
            continue; // no words: neither breaks nor extends a run
        }
        let text = lines[i].text(body);
        let quoted = is_quoted(text);
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

/// The words of the lines of a body, in order, quote markers dropped (what
/// [`PriorBodies::add`] indexes).
pub(super) fn body_words(body: &str, lines: &[Line]) -> Vec<u64> {
    let mut words = Vec::with_capacity(body.len() / 6);
    for line in lines {
        words_of(strip_quote_markers(line.text(body)), &mut words);
    }
    words
}

/// The known shingles of a body, to ask whether a range of its words is one chain.
struct Chain<'a> {
    hits: &'a [u32],
    words: usize,
}

impl Chain<'_> {
    /// Whether words `from..to` appear as one piece in a prior body: every shingle
    /// inside the range is known or, for a range shorter than a shingle, a known
    /// shingle holds it.
    fn covers(&self, from: usize, to: usize) -> bool {
        let known = |a: usize, b: usize| self.hits[b] - self.hits[a];
        if to - from >= SHINGLE {
            let windows = to - from - SHINGLE + 1;
            known(from, from + windows) as usize == windows
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
/// breaks their lines anywhere). An ASCII line is split at its whitespace bytes; in
/// another, characters beyond ASCII are decoded to ask whether they are whitespace or
/// CJK.
fn words_of(text: &str, out: &mut Vec<u64>) {
    let bytes = text.as_bytes();
    if text.is_ascii() {
        let words = bytes
            .split(u8::is_ascii_whitespace)
            .filter(|w| !w.is_empty());
        out.extend(words.map(hash_bytes));
        return;
    }
    let mut word_start = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (len, space, cjk) = if b < 0x80 {
            (1, b.is_ascii_whitespace(), false)
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            (c.len_utf8(), c.is_whitespace(), is_cjk(c))
        };
        if space || cjk {
            if let Some(start) = word_start.take() {
                out.push(hash_bytes(&bytes[start..i]));
            }
            if cjk {
                out.push(hash_bytes(&bytes[i..i + len]));
            }
        } else if word_start.is_none() {
            word_start = Some(i);
        }
        i += len;
    }
    if let Some(start) = word_start {
        out.push(hash_bytes(&bytes[start..]));
    }
}

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// A word's hash: its bytes eight at a time (shingles spread the bits, see [`shingle`]).
fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut hash = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut buf = [0u8; 8];
        buf.copy_from_slice(chunk);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(buf)).wrapping_mul(MULTIPLIER);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut buf = [0u8; 8];
        buf[..rest.len()].copy_from_slice(rest);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(buf)).wrapping_mul(MULTIPLIER);
    }
    hash
}

/// The splitmix64 finaliser: spreads the bits so hashes can be combined and stored
/// without hashing again.
fn finish(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn shingle(words: &[u64]) -> u64 {
    finish(words.iter().fold(0u64, |acc, &w| {
        acc.rotate_left(17).wrapping_mul(MULTIPLIER) ^ w
    }))
}

/// A hasher for keys that are already well-mixed hashes: it passes them through.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
