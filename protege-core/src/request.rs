//! Assembling the request: the chain's messages, the trailing user turn and the tools.

use std::fmt::Write as _;

use base64::Engine as _;

use crate::cache::CacheHints;
use crate::error::Result;
use crate::mail::{MailLimits, MailMessage};
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
        sources: Vec::new(),
    };
    request.validate()?;
    Ok(request)
}

/// The trailing user turn of a reply run: the message's rendering (cut to
/// `limits.message_text_bytes`) as a string or, when it has stored attachment data
/// declared `image/*` or `application/pdf` whose bytes really are a PNG, JPEG, GIF, WebP
/// image or a PDF document, as parts: the rendering, then one image or document part per
/// such attachment in attachment order, carrying the media type detected from the bytes,
/// at most `limits.attachment_parts` of them. Mislabelled data (a "PNG" that is not one, a
/// "PDF" without its `%%EOF` end) stays only in the rendering's attachments block, so
/// providers never reject the body; so do the attachments past the cap, and the rendering
/// then ends with a line saying how many were left out.
pub fn user_turn(inbound: &MailMessage, limits: MailLimits) -> Content {
    user_turn_with(
        inbound,
        inbound.to_llm_text_within(limits.message_text_bytes),
        limits,
    )
}

/// [`user_turn`] with the message's rendering `text` made already (by the run's `[mail]`
/// rules).
pub(crate) fn user_turn_with(
    inbound: &MailMessage,
    mut text: String,
    limits: MailLimits,
) -> Content {
    let mut parts = Vec::new();
    let mut left_out = 0usize;
    for a in &inbound.attachments {
        let Some(data) = a.data.as_deref() else {
            continue;
        };
        let Some(kind) = part_kind(&a.content_type, data) else {
            continue;
        };
        if parts.len() == limits.attachment_parts {
            left_out += 1;
            continue;
        }
        parts.push(part_of(kind, &a.filename, data));
    }
    if left_out > 0 {
        let _ = write!(
            text,
            "\n\n[not attached: {left_out} more {}, over the limit of {} per message]",
            if left_out == 1 {
                "attachment"
            } else {
                "attachments"
            },
            limits.attachment_parts
        );
    }
    if parts.is_empty() {
        Content::Text(text)
    } else {
        parts.insert(0, Part::text(text));
        Content::Parts(parts)
    }
}

/// The part a provider reads for an attachment's `data`: an image of a type both providers
/// accept (PNG, JPEG, GIF, WebP) or a whole PDF document, judged from the bytes, when its
/// declared `content_type` says image or PDF too; `None` for anything else (the attachment
/// then shows as text only). The image carries the media type detected from the bytes, the
/// document its `filename`.
pub fn attachment_part(filename: &str, content_type: &str, data: &[u8]) -> Option<Part> {
    Some(part_of(part_kind(content_type, data)?, filename, data))
}

/// Whether [`attachment_part`] gives a part for `data` declared `content_type`, judged
/// without encoding it.
pub fn is_attachment_part(content_type: &str, data: &[u8]) -> bool {
    part_kind(content_type, data).is_some()
}

/// What `data` is for the providers, when its declared `content_type` says image or PDF
/// too.
fn part_kind(content_type: &str, data: &[u8]) -> Option<Sniffed> {
    let declared = content_type.trim().to_ascii_lowercase();
    if !(declared.starts_with("image/") || declared == "application/pdf") {
        return None;
    }
    sniff(data)
}

/// The part of `data`, of kind `kind`, Base64-encoded.
fn part_of(kind: Sniffed, filename: &str, data: &[u8]) -> Part {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    match kind {
        Sniffed::Image(media_type) => Part::Image {
            media_type: media_type.to_owned(),
            data: encoded,
        },
        Sniffed::Pdf => Part::Document {
            filename: filename.to_owned(),
            media_type: "application/pdf".to_owned(),
            data: encoded,
        },
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
        "application/pdf" if is_whole_pdf(data) => Some(Sniffed::Pdf),
        _ => None,
    }
}

/// How far from the end a PDF's `%%EOF` marker may sit (as PDF readers accept it).
const PDF_EOF_WINDOW: usize = 1024;

/// Whether `data` has the frame of a PDF file: the `%PDF-` header and an `%%EOF` marker
/// in its last 1,024 bytes. Nine bytes of `%PDF-1.4` are
/// not a document a provider reads.
fn is_whole_pdf(data: &[u8]) -> bool {
    let tail = &data[data.len().saturating_sub(PDF_EOF_WINDOW)..];
    data.starts_with(b"%PDF-") && tail.windows(5).any(|w| w == b"%%EOF")
}
