//! Token counts calibrated from recorded usage (§13): for a model without a public
//! tokenizer, a least-squares fit of the input tokens a provider billed for the round 0 of
//! each recorded run against the characters and the messages of that round's request.
//!
//! The model is `tokens ≈ per_char × characters + per_message × messages`, without an
//! intercept (the framing a request pays once is spread over its messages), where the
//! characters of a request are the Unicode scalar values of its messages' text, of their
//! tool calls' names and compact JSON inputs, and of each tool definition's compact JSON.
//! Image and document data are not characters: they are counted with the characters / 4
//! estimate, as every tokenizer counts them, and taken off the billed tokens before the fit.

use crate::message::{Content, Message, Part, Request};
use crate::tokens::estimate_tokens;

/// How many recorded runs of a model it takes before its counts are calibrated.
pub const CALIBRATION_MIN_RUNS: usize = 20;

/// Token counts fitted to recorded usage: `per_char × characters + per_message × messages`,
/// where the characters of a request are the Unicode scalar values of its messages' text,
/// of their tool calls' names and compact JSON inputs, and of each tool definition's
/// compact JSON (image and document data are counted with the characters / 4 estimate and
/// taken off the billed tokens before the fit).
///
/// ```
/// use protege::{CalibrationFit, message, Role};
/// let mut fit = CalibrationFit::default();
/// for n in 1..=20 {
///     // Requests of n messages of 31 × n characters, billed 10 × n + 5 × n tokens.
///     fit.add(31 * n, n, 15 * n as u64, 0);
/// }
/// fit.add(310, 2, 100 + 10, 0);
/// let c = fit.calibration().unwrap();
/// assert_eq!(c.runs, 21);
/// assert_eq!(c.count(&[message(Role::User, "x".repeat(310))]), 100 + 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The runs the fit was made from.
    pub runs: usize,
    /// Tokens per character.
    pub per_char: f64,
    /// Tokens per message.
    pub per_message: f64,
}

impl Calibration {
    /// The tokens of `messages`, rounded to the nearest whole token.
    pub fn count(&self, messages: &[Message]) -> usize {
        let mut exact = 0.0;
        let mut binary = 0;
        for m in messages {
            let (chars, data) = message_parts(m);
            exact += self.per_char * chars as f64 + self.per_message;
            binary += data;
        }
        exact.max(0.0).round() as usize + binary
    }

    /// The tokens of a whole request: its messages and its tools, rounded.
    pub fn count_request(&self, request: &Request) -> usize {
        let (chars, data) = request_parts(request);
        let exact = self.per_char * chars as f64 + self.per_message * request.messages.len() as f64;
        exact.max(0.0).round() as usize + data
    }

    /// Where the counts come from: `calibrated from N runs`.
    pub fn source(&self) -> String {
        format!("calibrated from {} runs", self.runs)
    }

    /// The sentence that explains the token column of `--explain`.
    pub fn describe(&self) -> String {
        format!(
            "tokens are {}: {:.4} per character plus {:.2} per message, rounded",
            self.source(),
            self.per_char,
            self.per_message
        )
    }

    /// The characters of `request` as the fit counts them: its messages' text, their tool
    /// calls' names and compact JSON inputs, and each tool definition's compact JSON (image
    /// and document data left out).
    pub fn chars(request: &Request) -> usize {
        request_parts(request).0
    }
}

/// The characters of a message's text and calls, and the estimated tokens of its image
/// and document data.
fn message_parts(m: &Message) -> (usize, usize) {
    let mut chars = 0;
    let mut data_tokens = 0;
    match &m.content {
        Content::Text(text) => chars += text.chars().count(),
        Content::Parts(parts) => {
            for p in parts {
                match p {
                    Part::Text { text } => chars += text.chars().count(),
                    Part::Image { data, .. } | Part::Document { data, .. } => {
                        data_tokens += estimate_tokens(data);
                    }
                }
            }
        }
    }
    for call in &m.tool_calls {
        chars += call.name.chars().count() + call.input.to_string().chars().count();
    }
    (chars, data_tokens)
}

/// The characters of a request (messages and tools) and the estimated tokens of its data.
fn request_parts(request: &Request) -> (usize, usize) {
    let (mut chars, mut data) = (0, 0);
    for m in &request.messages {
        let (c, d) = message_parts(m);
        chars += c;
        data += d;
    }
    for tool in &request.tools {
        chars += serde_json::to_string(tool)
            .map(|json| json.chars().count())
            .unwrap_or_default();
    }
    (chars, data)
}

/// The sums of a least-squares fit of billed tokens against characters and messages, one
/// run at a time: cheap to keep and to extend as runs are recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CalibrationFit {
    runs: usize,
    cc: f64,
    cm: f64,
    mm: f64,
    cy: f64,
    my: f64,
}

impl CalibrationFit {
    /// Adds a run whose round-0 request had `chars` characters, `messages` messages and
    /// `data_tokens` estimated tokens of image and document data, and was billed `tokens`
    /// input tokens (uncached, read from and written to the cache).
    pub fn add(&mut self, chars: usize, messages: usize, tokens: u64, data_tokens: usize) {
        let c = chars as f64;
        let m = messages as f64;
        let y = tokens as f64 - data_tokens as f64;
        self.runs += 1;
        self.cc += c * c;
        self.cm += c * m;
        self.mm += m * m;
        self.cy += c * y;
        self.my += m * y;
    }

    /// Adds a run of round-0 request `request` billed `tokens` input tokens.
    pub fn add_request(&mut self, request: &Request, tokens: u64) {
        let (chars, data) = request_parts(request);
        self.add(chars, request.messages.len(), tokens, data);
    }

    /// The runs added.
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// The fit, once [`CALIBRATION_MIN_RUNS`] runs are added: the least-squares
    /// `per_char` and `per_message`, neither negative (a negative `per_message` is
    /// refitted as 0). When characters and messages grow in the same proportion in every
    /// run (the two cannot be told apart), one factor scales the estimate's shape,
    /// `characters / 4 + 4 per message`. `None` with fewer runs, or when the data gives no
    /// positive tokens per character.
    pub fn calibration(&self) -> Option<Calibration> {
        if self.runs < CALIBRATION_MIN_RUNS || self.cc <= 0.0 {
            return None;
        }
        let det = self.cc * self.mm - self.cm * self.cm;
        let (mut per_char, mut per_message) = if det > 1e-9 * self.cc * self.mm {
            (
                (self.cy * self.mm - self.my * self.cm) / det,
                (self.cc * self.my - self.cm * self.cy) / det,
            )
        } else {
            // y ≈ s × (c / 4 + 4 m): s = Σ y e / Σ e².
            let ee = self.cc / 16.0 + 2.0 * self.cm + 16.0 * self.mm;
            let ye = self.cy / 4.0 + 4.0 * self.my;
            let s = ye / ee;
            (s / 4.0, 4.0 * s)
        };
        if per_message < 0.0 {
            per_message = 0.0;
            per_char = self.cy / self.cc;
        }
        (per_char.is_finite() && per_message.is_finite() && per_char > 0.0).then_some(Calibration {
            runs: self.runs,
            per_char,
            per_message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Role, message};

    #[test]
    fn twenty_runs_make_a_fit() {
        let mut fit = CalibrationFit::default();
        for n in 1..20 {
            fit.add(100 * n + 7 * (n % 3), n % 4 + 1, (30 * n) as u64, 0);
            assert_eq!(fit.calibration(), None, "{n} runs");
        }
        fit.add(2000, 1, 600, 0);
        assert_eq!(fit.calibration().map(|c| c.runs), Some(20));
    }

    #[test]
    fn proportional_runs_scale_the_estimate() {
        // Every request has 40 characters per message: the two terms cannot be told
        // apart, so the estimate's shape (10 + 4 per message) is scaled: ×2 here.
        let mut fit = CalibrationFit::default();
        for n in 1..=20 {
            fit.add(40 * n, n, 28 * n as u64, 0);
        }
        let c = fit.calibration().unwrap();
        assert!(
            (c.per_char - 0.5).abs() < 1e-9 && (c.per_message - 8.0).abs() < 1e-9,
            "{c:?}"
        );
    }

    #[test]
    fn a_negative_per_message_is_refitted_as_zero() {
        let mut fit = CalibrationFit::default();
        for n in 1..=20 {
            // Billed a quarter of the characters, less 3 per message.
            let (chars, messages) = (400 * n, 1 + n % 5);
            fit.add(chars, messages, (chars / 4 - 3 * messages) as u64, 0);
        }
        let c = fit.calibration().unwrap();
        assert_eq!(c.per_message, 0.0);
        assert!(c.per_char > 0.2 && c.per_char < 0.25, "{c:?}");
    }

    #[test]
    fn data_counts_with_the_estimate_outside_the_fit() {
        let mut fit = CalibrationFit::default();
        for n in 1..=20 {
            // 1 token per 2 characters and 3 per message, plus 50 tokens of data.
            let (chars, messages) = (20 * n, 1 + n % 3);
            fit.add(chars, messages, (chars / 2 + 3 * messages + 50) as u64, 50);
        }
        let c = fit.calibration().unwrap();
        assert!(
            (c.per_char - 0.5).abs() < 1e-9 && (c.per_message - 3.0).abs() < 1e-9,
            "{c:?}"
        );
        let image = Message {
            content: Content::Parts(vec![
                Part::Text {
                    text: "x".repeat(10),
                },
                Part::Image {
                    media_type: "image/png".into(),
                    data: "A".repeat(400),
                },
            ]),
            ..message(Role::User, "")
        };
        assert_eq!(c.count(&[image]), 5 + 3 + 100);
    }
}
