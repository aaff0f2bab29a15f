//! Step 1: text a prior message of the thread already holds. Prior bodies are indexed
//! as hashes of word shingles (runs of [`SHINGLE`] words) after dropping `>` markers, so
//! line wrapping and whitespace do not matter; a body is checked in one pass over its
//! words, whatever the size of the thread.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use super::lines::{Line, is_cjk, strip_quote_markers};

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
            words_of(line, &mut words);
        }
        self.shingles.extend(words.windows(SHINGLE).map(shingle));
    }

    /// Whether nothing has been added yet (or only bodies shorter than a shingle).
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }
}

/// The blocks of `lines` that appear in a prior body, as inclusive index ranges into
/// `lines`: runs of lines whose words are all covered by known shingles (lines without
/// words may sit inside a run), starting and ending with a line with words, holding at
/// least [`MIN_BLOCK_LINES`] such lines or [`MIN_BLOCK_CHARS`] characters.
pub(super) fn known_blocks(body: &str, lines: &[Line], prior: &PriorBodies) -> Vec<(usize, usize)> {
    let mut words = Vec::new();
    // Per line: the range of its words in `words`, and its characters.
    let mut spans = Vec::with_capacity(lines.len());
    for line in lines {
        let start = words.len();
        let text = strip_quote_markers(line.text(body)).trim_end();
        words_of(text, &mut words);
        spans.push((start, words.len(), text.chars().count()));
    }
    if words.len() < SHINGLE {
        return Vec::new();
    }
    // covered[i] > 0 when word i sits in a known shingle (a difference array first).
    let mut covered = vec![0i32; words.len() + 1];
    for (i, window) in words.windows(SHINGLE).enumerate() {
        if prior.shingles.contains(&shingle(window)) {
            covered[i] += 1;
            covered[i + SHINGLE] -= 1;
        }
    }
    let mut running = 0;
    for c in covered.iter_mut() {
        running += *c;
        *c = running;
    }
    let mut blocks = Vec::new();
    // The open run: first and last line with words, their count and characters.
    let mut run: Option<(usize, usize, usize, usize)> = None;
    for (i, &(start, end, chars)) in spans.iter().enumerate() {
        if start == end {
            continue; // no words: neither breaks nor extends a run
        }
        if covered[start..end].iter().all(|&c| c > 0) {
            run = Some(match run {
                Some((first, _, n, total)) => (first, i, n + 1, total + chars),
                None => (i, i, 1, chars),
            });
        } else if let Some(done) = run.take() {
            push_block(&mut blocks, done);
        }
    }
    if let Some(done) = run {
        push_block(&mut blocks, done);
    }
    blocks
}

fn push_block(
    blocks: &mut Vec<(usize, usize)>,
    (first, last, lines, chars): (usize, usize, usize, usize),
) {
    if lines >= MIN_BLOCK_LINES || chars >= MIN_BLOCK_CHARS {
        blocks.push((first, last));
    }
}

/// Appends the hashes of the words of `text` (quote markers already dropped): runs of
/// characters between whitespace, except that each Chinese, Japanese or Korean character
/// is a word of its own (those scripts do not separate words, and a re-wrapped quote
/// breaks their lines anywhere).
fn words_of(text: &str, out: &mut Vec<u64>) {
    let text = strip_quote_markers(text);
    let mut hash = FNV_OFFSET;
    let mut in_word = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if in_word {
                out.push(finish(hash));
                hash = FNV_OFFSET;
                in_word = false;
            }
        } else if is_cjk(c) {
            if in_word {
                out.push(finish(hash));
                in_word = false;
            }
            out.push(finish(feed(FNV_OFFSET, c)));
            hash = FNV_OFFSET;
        } else {
            hash = feed(hash, c);
            in_word = true;
        }
    }
    if in_word {
        out.push(finish(hash));
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn feed(mut hash: u64, c: char) -> u64 {
    let mut buf = [0u8; 4];
    for &b in c.encode_utf8(&mut buf).as_bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The splitmix64 finaliser: spreads FNV's bits so shingle hashes can be combined and
/// stored without hashing again.
fn finish(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn shingle(words: &[u64]) -> u64 {
    finish(words.iter().fold(0u64, |acc, &w| {
        acc.rotate_left(17).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ w
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
