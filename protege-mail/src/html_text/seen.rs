//! Whether a reader sees an element's text: the state an element inherits from its
//! ancestors and changes with its own attributes and inline style.

use html5ever::{Attribute, LocalName};

use super::colour::{self, Paint, Rgba};
use super::style::{FontSize, Style};

/// What a reader sees of the text inside an element.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    /// Not rendered at all, and nothing inside can undo it: the `hidden` attribute,
    /// `display: none`, `opacity: 0`, content clipped to a zero box, `<template>`,
    /// `<head>`.
    pub(super) gone: bool,
    /// `visibility: hidden` is in effect (a descendant may set it back to `visible`).
    invisible: bool,
    /// The font size is zero (a descendant may set a size of its own).
    zero_font: bool,
    /// The text colour, when known.
    color: Option<Rgba>,
    /// The opaque background behind the text, when known.
    background: Option<Rgba>,
    /// The background is `currentcolor` of an unknown text colour: the text is painted
    /// in the colour of its background.
    ink_is_background: bool,
}

impl Default for Seen {
    /// The page before any element: a white background, as a mail client draws it when
    /// the mail declares none.
    fn default() -> Self {
        Seen {
            gone: false,
            invisible: false,
            zero_font: false,
            color: None,
            background: Some(WHITE),
            ink_is_background: false,
        }
    }
}

/// The background a mail client draws behind a mail that declares none.
const WHITE: Rgba = [255, 255, 255, 255];

/// The least contrast (WCAG 2 ratio) between a text colour and its background at which a
/// reader still makes the text out: 1.2 is lighter than any grey a mail uses for small
/// print (`#ccc` on white is 1.6).
const MIN_CONTRAST: f64 = 1.2;

/// The WCAG 2 contrast ratio of two opaque colours, from 1 (the same) to 21.
fn contrast(a: Rgba, b: Rgba) -> f64 {
    let luminance = |c: Rgba| {
        let channel = |v: u8| {
            let v = f64::from(v) / 255.0;
            if v <= 0.04045 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])
    };
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

impl Seen {
    /// Whether text here is invisible: gone, `visibility: hidden`, zero (or tiny) font
    /// size, a colour at most 5% opaque, or a colour too close to the background behind
    /// it (white when none is declared) to be made out.
    pub(super) fn hides_text(&self) -> bool {
        self.gone
            || self.invisible
            || self.zero_font
            || self.ink_is_background
            || self.color.is_some_and(|c| {
                c[3] <= 13
                    || self
                        .background
                        .is_some_and(|b| contrast(c, b) < MIN_CONTRAST)
            })
    }

    /// The state inside an element `name` with `attrs` whose parent's state is `self`.
    pub(super) fn child(&self, name: &LocalName, attrs: &[Attribute]) -> Seen {
        let own = Own::read(name, attrs);
        let style = own.style.unwrap_or_default();
        let mut seen = *self;
        seen.gone |= own.hidden
            || style.display_none
            || style.transparent
            || style.clipped
            || style.erased
            || matches!(&**name, "template" | "head" | "svg");
        if let Some(invisible) = style.invisible {
            seen.invisible = invisible;
        }
        match style.font_size.or(own.font_size) {
            Some(FontSize::Zero) => seen.zero_font = true,
            Some(FontSize::Absolute) => seen.zero_font = false,
            Some(FontSize::Relative) | None => {}
        }
        let color = match style.color {
            Some(Paint::Rgba(c)) => Some(Some(c)),
            Some(Paint::Unknown) => Some(None),
            Some(Paint::Current | Paint::Inherit) => None,
            None => own.color.map(Some),
        };
        if let Some(color) = color {
            seen.color = color;
            seen.ink_is_background = false;
        }
        let background = match style.background {
            Some(paint) => paint,
            None if own.background_image => Paint::Unknown,
            None => own.background.map_or(Paint::Inherit, Paint::Rgba),
        };
        match background {
            // See-through: the parent's background shows.
            Paint::Rgba([_, _, _, 0]) | Paint::Inherit => return seen,
            Paint::Rgba(c) if c[3] == 255 => seen.background = Some(c),
            Paint::Current => seen.background = seen.color.filter(|c| c[3] == 255),
            // Blended with what is behind, or not known.
            Paint::Rgba(_) | Paint::Unknown => seen.background = None,
        }
        seen.ink_is_background = background == Paint::Current && seen.color.is_none();
        seen
    }
}

/// An element's own attributes that bear on what is seen.
#[derive(Debug, Default)]
struct Own {
    hidden: bool,
    style: Option<Style>,
    /// `<font color>` or `<body text>`.
    color: Option<Rgba>,
    /// `bgcolor` on the body and the parts of a table.
    background: Option<Rgba>,
    /// A `background` image attribute on the body or a part of a table.
    background_image: bool,
    /// `<font size>`: any valid size is an absolute one.
    font_size: Option<FontSize>,
}

impl Own {
    fn read(name: &LocalName, attrs: &[Attribute]) -> Own {
        let mut own = Own::default();
        let element = &**name;
        let table_part = matches!(
            element,
            "body" | "table" | "tbody" | "thead" | "tfoot" | "tr" | "td" | "th"
        );
        for attr in attrs {
            let value = &*attr.value;
            match (&*attr.name.local, element) {
                ("hidden", _) => own.hidden = true,
                ("style", _) => own.style = Some(Style::parse(value)),
                ("color", "font") | ("text", "body") => own.color = colour::legacy(value),
                ("size", "font") => {
                    let digits = value.trim().trim_start_matches(['+', '-']);
                    if digits.starts_with(|c: char| c.is_ascii_digit()) {
                        own.font_size = Some(FontSize::Absolute);
                    }
                }
                ("bgcolor", _) if table_part => own.background = colour::legacy(value),
                ("background", _) if table_part => {
                    own.background_image = !value.trim().is_empty();
                }
                _ => {}
            }
        }
        own
    }
}
