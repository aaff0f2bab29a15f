//! The chunk sizes a connection declares, read from the bytes as they arrive: a chunked body
//! whose chunk is larger than any route takes is answered 413 at once. hyper reads the
//! chunk-size line but tells the service nothing of it, so without this a client that
//! declares a chunk of 2^64−1 bytes and sends nothing more holds the request until its
//! deadline.
//!
//! The reader follows HTTP/1.1 framing (RFC 9112) only as far as it needs to find each
//! chunk-size line: a request head up to its blank line, a `Content-Length` body skipped, a
//! chunked body's sizes read and its data and trailers skipped. Whatever it does not
//! understand (a head too long, a line it cannot read) turns it off for the rest of the
//! connection: hyper answers those itself.

/// The longest request head or chunk-size line followed; longer ones turn the reader off.
const MAX_LINE_BYTES: usize = 128 * 1024;

/// What the reader expects next.
#[derive(Debug)]
enum State {
    /// A request head, up to its blank line (the bytes so far).
    Head(Vec<u8>),
    /// So many bytes of a `Content-Length` body.
    Body(u64),
    /// A chunk-size line (the bytes so far).
    Size(Vec<u8>),
    /// So many bytes of chunk data and the CRLF after it.
    Data(u64),
    /// The trailer section after the last chunk, up to its blank line (the bytes so far).
    Trailer(Vec<u8>),
    /// Not followed any more.
    Off,
}

/// Follows one connection's request bytes.
#[derive(Debug)]
pub(super) struct Chunks {
    state: State,
    limit: u64,
}

impl Chunks {
    /// A reader that trips on a chunk larger than `limit` bytes.
    pub(super) fn new(limit: u64) -> Self {
        Self {
            state: State::Head(Vec::new()),
            limit,
        }
    }

    /// Reads `bytes`, the next ones the client sent; the size of the first chunk over the
    /// limit, when one is declared in them.
    pub(super) fn read(&mut self, mut bytes: &[u8]) -> Option<u64> {
        while !bytes.is_empty() {
            let is_size = matches!(self.state, State::Size(_));
            let is_trailer = matches!(self.state, State::Trailer(_));
            match &mut self.state {
                State::Off => return None,
                State::Body(left) | State::Data(left) => {
                    let n = (*left).min(bytes.len() as u64);
                    *left -= n;
                    bytes = &bytes[n as usize..];
                    if *left == 0 {
                        self.state = match self.state {
                            State::Body(_) => State::Head(Vec::new()),
                            _ => State::Size(Vec::new()),
                        };
                    }
                }
                State::Head(line) | State::Size(line) | State::Trailer(line) => {
                    let end = if is_size {
                        find(line, bytes, b"\n")
                    } else if is_trailer && empty_line_first(line, bytes) {
                        // An empty trailer section is its CRLF alone.
                        Some(2 - line.len())
                    } else {
                        find(line, bytes, b"\r\n\r\n")
                    };
                    let Some(at) = end else {
                        line.extend_from_slice(bytes);
                        if line.len() > MAX_LINE_BYTES {
                            self.state = State::Off;
                        }
                        return None;
                    };
                    line.extend_from_slice(&bytes[..at]);
                    bytes = &bytes[at..];
                    let whole = std::mem::take(line);
                    self.state = if is_size {
                        match chunk_size(&whole) {
                            Some(size) if size > self.limit => return Some(size),
                            Some(0) => State::Trailer(Vec::new()),
                            Some(size) => State::Data(size.saturating_add(2)),
                            None => State::Off,
                        }
                    } else if is_trailer {
                        State::Head(Vec::new())
                    } else {
                        after_head(&whole)
                    };
                }
            }
        }
        None
    }
}

/// Whether the section `line` has begun, continued by `bytes`, opens with an empty line
/// (CRLF): `line` holds nothing yet, or the CR alone.
fn empty_line_first(line: &[u8], bytes: &[u8]) -> bool {
    match line {
        [] => bytes.starts_with(b"\r\n"),
        [b'\r'] => bytes.starts_with(b"\n"),
        _ => false,
    }
}

/// Where the end of `pattern` falls in `bytes` (how many of its bytes to take), when the
/// pattern ends there, continuing what `line` holds already.
fn find(line: &[u8], bytes: &[u8], pattern: &[u8]) -> Option<usize> {
    // The end may straddle the two: look at the tail of `line` and `bytes` together.
    let keep = line.len().min(pattern.len() - 1);
    let mut joined = line[line.len() - keep..].to_vec();
    joined.extend_from_slice(bytes);
    joined
        .windows(pattern.len())
        .position(|w| w == pattern)
        .map(|at| at + pattern.len() - keep)
}

/// What follows a request head: its body by `Transfer-Encoding: chunked` or
/// `Content-Length`, else the next head.
fn after_head(head: &[u8]) -> State {
    let Ok(head) = std::str::from_utf8(head) else {
        return State::Off;
    };
    let mut length = None;
    for line in head.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return if value.to_ascii_lowercase().ends_with("chunked") {
                State::Size(Vec::new())
            } else {
                State::Off
            };
        }
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<u64>().ok();
            if length.is_none() {
                return State::Off;
            }
        }
    }
    match length {
        Some(n) if n > 0 => State::Body(n),
        _ => State::Head(Vec::new()),
    }
}

/// The size a chunk-size line declares (hex digits, before any extension), saturating
/// at `u64::MAX`; `None` when the line has no digit.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits: Vec<u8> = line
        .iter()
        .copied()
        .take_while(u8::is_ascii_hexdigit)
        .collect();
    if digits.is_empty() {
        return None;
    }
    Some(digits.iter().fold(0u64, |size, &d| {
        let value = u64::from((d as char).to_digit(16).unwrap_or(0));
        size.saturating_mul(16).saturating_add(value)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 1000;

    /// Feeds `bytes` one split at a time: every way of cutting them must give the same.
    fn tripped(bytes: &[u8]) -> Option<u64> {
        let whole = Chunks::new(LIMIT).read(bytes);
        for cut in 1..bytes.len() {
            let mut reader = Chunks::new(LIMIT);
            let first = reader.read(&bytes[..cut]);
            let split = first.or_else(|| reader.read(&bytes[cut..]));
            assert_eq!(split, whole, "cut at {cut}");
        }
        whole
    }

    const HEAD: &str = "POST /v1/mail HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";

    #[test]
    fn a_chunk_over_the_limit_trips_at_its_size_line() {
        let huge = format!("{HEAD}ffffffffffffffff\r\n");
        assert_eq!(tripped(huge.as_bytes()), Some(u64::MAX));
        let over = format!("{HEAD}3e9;name=value\r\n");
        assert_eq!(tripped(over.as_bytes()), Some(1001));
    }

    #[test]
    fn bodies_within_the_limit_and_the_requests_after_them_are_followed() {
        // A chunked body of two chunks and a trailer, then a Content-Length body, then a
        // chunked one whose second chunk is too large.
        let stream = format!(
            "{HEAD}5\r\nhello\r\n3e8\r\n{}\r\n0\r\nX-Trailer: y\r\n\r\n\
             POST /v1/resolve HTTP/1.1\r\nContent-Length: 4\r\n\r\n0\r\n\
             {HEAD}1\r\na\r\n3e9\r\n",
            "b".repeat(1000)
        );
        assert_eq!(tripped(stream.as_bytes()), Some(1001));
        let fine = format!("{HEAD}5\r\nhello\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
        assert_eq!(tripped(fine.as_bytes()), None);
    }

    #[test]
    fn what_it_cannot_read_turns_it_off() {
        let odd = format!("{HEAD}zz\r\nffffffffff\r\n");
        assert_eq!(tripped(odd.as_bytes()), None);
        let gzip = "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nffffffffffff\r\n";
        assert_eq!(tripped(gzip.as_bytes()), None);
    }
}
