//! Assembling the request: the chain's messages, the trailing user turn and the tools.

use base64::Engine as _;

use crate::error::Result;
use crate::mail::MailMessage;
use crate::message::{Content, Message, Part, Request, Role, ToolDef, message};

/// Builds the request: `context_messages` followed by a user turn with `user_content`
/// when given, and the tools; the result is checked with [`Request::validate`].
pub fn build_request(
    user_content: Option<Content>,
    tools: Vec<ToolDef>,
    mut context_messages: Vec<Message>,
) -> Result<Request> {
    if let Some(content) = user_content {
        context_messages.push(message(Role::User, content));
    }
    let request = Request {
        messages: context_messages,
        tools,
    };
    request.validate()?;
    Ok(request)
}

/// The trailing user turn of a reply run: the message's rendering as a string or, when it
/// has stored `image/*` or `application/pdf` attachments, as parts (the rendering, then
/// one image or document part per such attachment in attachment order).
pub fn user_turn(inbound: &MailMessage) -> Content {
    let text = inbound.to_llm_text();
    let mut parts = Vec::new();
    for a in &inbound.attachments {
        let Some(data) = a.data.as_deref() else {
            continue;
        };
        let media_type = a.content_type.trim().to_ascii_lowercase();
        if media_type.starts_with("image/") {
            parts.push(Part::Image {
                media_type,
                data: base64::engine::general_purpose::STANDARD.encode(data),
            });
        } else if media_type == "application/pdf" {
            parts.push(Part::Document {
                filename: a.filename.clone(),
                media_type,
                data: base64::engine::general_purpose::STANDARD.encode(data),
            });
        }
    }
    if parts.is_empty() {
        Content::Text(text)
    } else {
        parts.insert(0, Part::text(text));
        Content::Parts(parts)
    }
}
