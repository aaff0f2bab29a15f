//! Assembling the request: the chain's messages, the trailing user turn and the tools.

use base64::Engine as _;

use crate::cache::CacheHints;
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
        cache: CacheHints::default(),
    };
    request.validate()?;
    Ok(request)
}

/// The trailing user turn of a reply run: the message's rendering as a string or, when it
/// has stored attachment data declared `image/*` or `application/pdf` whose bytes really
/// are a PNG, JPEG, GIF, WebP image or a PDF document, as parts: the rendering, then one
/// image or document part per such attachment in attachment order, carrying the media
/// type detected from the bytes. Mislabelled data (a "PNG" that is not one) stays only in
/// the rendering's attachments block, so providers never reject the body.
pub fn user_turn(inbound: &MailMessage) -> Content {
    let text = inbound.to_llm_text();
    let mut parts = Vec::new();
    for a in &inbound.attachments {
        let Some(data) = a.data.as_deref() else {
            continue;
        };
        let declared = a.content_type.trim().to_ascii_lowercase();
        if !(declared.starts_with("image/") || declared == "application/pdf") {
            continue;
        }
        let encoded = || base64::engine::general_purpose::STANDARD.encode(data);
        match sniff(data) {
            Some(Sniffed::Image(media_type)) => parts.push(Part::Image {
                media_type: media_type.to_owned(),
                data: encoded(),
            }),
            Some(Sniffed::Pdf) => parts.push(Part::Document {
                filename: a.filename.clone(),
                media_type: "application/pdf".to_owned(),
                data: encoded(),
            }),
            None => {}
        }
    }
    if parts.is_empty() {
        Content::Text(text)
    } else {
        parts.insert(0, Part::text(text));
        Content::Parts(parts)
    }
}

/// What attachment bytes are, as far as the providers care.
enum Sniffed {
    /// An image type both providers accept.
    Image(&'static str),
    /// A PDF document.
    Pdf,
}

/// The provider-accepted format of `data`, judged from the bytes alone.
fn sniff(data: &[u8]) -> Option<Sniffed> {
    match infer::get(data)?.mime_type() {
        "image/png" => Some(Sniffed::Image("image/png")),
        "image/jpeg" => Some(Sniffed::Image("image/jpeg")),
        "image/gif" => Some(Sniffed::Image("image/gif")),
        "image/webp" => Some(Sniffed::Image("image/webp")),
        "application/pdf" => Some(Sniffed::Pdf),
        _ => None,
    }
}
