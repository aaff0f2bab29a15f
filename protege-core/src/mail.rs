//! Mail as the engine uses it: the types of `protege-mail`, and a stored message as the
//! `message` template variable.

pub(crate) use protege_mail::{
    Attachment, DEFAULT_ATTACHMENT_PARTS, DEFAULT_MESSAGE_TEXT_BYTES, Direction, Email, Fence,
    MailLimits, MailMessage, PriorBodies, address_key, bare_address, html_to_text_counted,
    one_line, rfc3339_z, without_nul,
};

/// A stored message as a template variable.
pub(crate) trait TemplateValue {
    /// The `message` template variable, every header value on one line, the body cut to
    /// `text_limit` bytes (and between the lines of `fence`, when given).
    fn template_value(&self, text_limit: usize, fence: Option<&Fence>) -> minijinja::Value;
}

impl TemplateValue for MailMessage {
    fn template_value(&self, text_limit: usize, fence: Option<&Fence>) -> minijinja::Value {
        let body = self.readable_body_within(text_limit);
        let body = match fence {
            Some(fence) if !body.is_empty() => fence.wrap(&body).0,
            _ => body,
        };
        let bare = |header: &str| one_line(bare_address(&one_line(header))).into_owned();
        let to: Vec<String> = self.to.iter().map(|a| bare(a)).collect();
        let cc: Vec<String> = self.cc.iter().map(|a| bare(a)).collect();
        minijinja::context! {
            message_id => one_line(&self.message_id).into_owned(),
            from => bare(&self.from),
            from_display => one_line(&self.from).into_owned(),
            to => to,
            cc => cc,
            subject => one_line(&self.subject).into_owned(),
            sent_at => rfc3339_z(&self.sent_at),
            body => body,
            thread_id => self.thread_id,
        }
    }
}
