//! How a run renders a stored message for the model: the persona's `[mail]` rules applied
//! to its body (`quoted`, `fence`), the rendering cut at `[limits] message_text_bytes`.

use crate::context::{MailStats, Quoted};
use crate::mail::{Fence, MailMessage, PriorBodies};

/// How a run renders mail bodies ([`Context::mail_render`](crate::Context::mail_render)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailRender {
    /// What a body shows of the text it quotes.
    pub quoted: Quoted,
    /// The fence of the trigger's thread, when bodies are fenced.
    pub fence: Option<Fence>,
    /// The most bytes of one rendered message.
    pub text_limit: usize,
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
        let body = m.readable();
        let body = match self.quoted {
            Quoted::Keep => body,
            Quoted::Strip => {
                let stripped = prior.strip_next(&body);
                stats.quoted_chars += stripped.removed;
                std::borrow::Cow::Owned(stripped.text.into_owned())
            }
        };
        match &self.fence {
            None => m.render_within(&body, self.text_limit),
            Some(fence) => {
                let (text, neutralised) = m.render_fenced_within(&body, self.text_limit, fence);
                stats.neutralised_lines += neutralised;
                text
            }
        }
    }

    /// Whether rendering changes nothing of [`Email::render_within`](crate::Email::render_within).
    pub fn is_plain(&self) -> bool {
        self.quoted == Quoted::Keep && self.fence.is_none()
    }
}
