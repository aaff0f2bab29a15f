//! How a run renders a stored message for the model: the persona's `[mail]` rules applied
//! to its body (`quoted`, `fence`), the rendering cut at `[limits] message_text_bytes`.

use crate::db::strips::StoredStrip;
use crate::mail::{Fence, MailMessage, PriorBodies, html_to_text_counted};

/// How a run renders mail bodies ([`Context::mail_render`](crate::Context::mail_render)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailRender {
    /// What a body shows of the text it quotes.
    pub quoted: Quoted,
    /// The fence of the trigger's thread, when bodies are fenced.
    pub fence: Option<Fence>,
    /// The most bytes of one rendered message.
    pub text_limit: usize,
    /// Whether [`MailStats::hidden_chars`] is counted (an HTML body converted again).
    pub count_hidden: bool,
}

impl MailRender {
    /// `m` rendered as [`Email::render_within`](crate::Email::render_within) renders it,
    /// with the run's rules: with `quoted = "strip"` its body stripped against `prior` (the
    /// bodies of the thread's messages before it) and then added to `prior`; with a fence,
    /// its body between the fence lines. What was removed or changed is added to `stats`.
    pub fn render(
        &self,
        m: &MailMessage,
        prior: &mut PriorBodies,
        stats: &mut MailStats,
    ) -> String {
        self.render_body(m, &m.readable(), Strip::Walk(prior), stats)
    }

    /// [`render`](Self::render) with `m`'s readable body computed already, and with
    /// `quoted = "strip"` the body as `strip` says.
    pub(crate) fn render_body(
        &self,
        m: &MailMessage,
        body: &str,
        strip: Strip<'_>,
        stats: &mut MailStats,
    ) -> String {
        if self.count_hidden {
            stats.hidden_chars += hidden_chars(m);
        }
        let stripped;
        let body = match self.quoted {
            Quoted::Keep => body,
            Quoted::Strip => match strip {
                Strip::Walk(prior) => {
                    stripped = prior.strip_next(body);
                    stats.quoted_chars += stripped.removed;
                    &stripped.text
                }
                Strip::Stored(stored) => {
                    stats.quoted_chars += stored.removed;
                    stored.or(body)
                }
            },
        };
        match &self.fence {
            None => m.render_within(body, self.text_limit),
            Some(fence) => {
                let (text, neutralised) = m.render_fenced_within(body, self.text_limit, fence);
                stats.neutralised_lines += neutralised;
                text
            }
        }
    }

    /// Whether rendering changes nothing of [`Email::render_within`](crate::Email::render_within)
    /// and counts nothing.
    pub fn is_plain(&self) -> bool {
        self.quoted == Quoted::Keep && self.fence.is_none() && !self.count_hidden
    }
}

/// Where a stripped body comes from (with `quoted = "strip"`).
pub(crate) enum Strip<'a> {
    /// Stripped now against the bodies of the messages before it, then added to them.
    Walk(&'a mut PriorBodies),
    /// As stored, or as a read made it for a message without a stored row.
    Stored(&'a StoredStrip),
}

/// The characters of `m`'s readable body that a reader does not see: the invisible
/// characters of its text body, or when that is blank, what the HTML converter drops.
fn hidden_chars(m: &MailMessage) -> usize {
    if let Some(text) = m.text_body.as_deref() {
        let (visible, dropped) = protege_mail::drop_invisible(text);
        if !visible.trim().is_empty() {
            return dropped;
        }
    }
    m.html_body
        .as_deref()
        .map_or(0, |html| html_to_text_counted(html).1)
}

/// What a mail body shows of the text it quotes (`[mail] quoted`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Quoted {
    /// The body as stored.
    #[default]
    Keep,
    /// Only what its author wrote: text quoted from the thread's prior messages, quoted
    /// and forwarded blocks, signatures and mobile taglines removed
    /// ([`strip_quoted`](crate::strip_quoted)).
    Strip,
}

impl Quoted {
    /// The lowercase name used in TOML and the macro.
    pub fn as_str(self) -> &'static str {
        match self {
            Quoted::Keep => "keep",
            Quoted::Strip => "strip",
        }
    }

    /// Parses the lowercase name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Quoted> {
        match name {
            "keep" => Some(Quoted::Keep),
            "strip" => Some(Quoted::Strip),
            _ => None,
        }
    }
}

/// What rendering the mail of one resolver (or of the trailing user turn) removed and
/// changed: the `mail` columns of `--explain`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MailStats {
    /// Characters of quoted text, signatures and taglines removed (`[mail] quoted =
    /// "strip"`).
    pub quoted_chars: usize,
    /// Characters of HTML text a reader does not see, dropped by the HTML converter.
    pub hidden_chars: usize,
    /// Lines that looked like a fence line, neutralised (`[mail] fence = true`).
    pub neutralised_lines: usize,
}

impl MailStats {
    /// Whether nothing was removed or changed.
    pub fn is_empty(&self) -> bool {
        *self == MailStats::default()
    }

    pub(crate) fn add(&mut self, other: MailStats) {
        self.quoted_chars += other.quoted_chars;
        self.hidden_chars += other.hidden_chars;
        self.neutralised_lines += other.neutralised_lines;
    }
}
