//! What an inline `style` attribute says about whether its element's text can be seen.
//!
//! Only the declarations that hide text are read. Property names and keywords are
//! case-insensitive, comments and escapes are read as CSS reads them, `!important` is
//! understood, and when a property is declared twice the last valid declaration wins
//! (an important one beats a later normal one), as in CSS.

use std::borrow::Cow;

use super::colour::{self, Paint, TRANSPARENT};

/// The declarations of one `style` attribute that bear on visibility.
#[derive(Debug, Default)]
pub(super) struct Style {
    /// `display: none`.
    pub(super) display_none: bool,
    /// `visibility`: `Some(true)` for `hidden`/`collapse`, `Some(false)` for `visible`,
    /// `None` when not declared or inherited.
    pub(super) invisible: Option<bool>,
    /// `opacity` at most 0.05: nothing a reader can make out.
    pub(super) transparent: bool,
    /// Drawn as nothing: `mso-hide: all`, a `clip` rectangle or a `clip-path` with no
    /// room for a letter, a `transform` that scales to zero.
    pub(super) erased: bool,
    /// `font-size`, when declared.
    pub(super) font_size: Option<FontSize>,
    /// A zero (max-)height with hidden vertical overflow, or a zero (max-)width with
    /// hidden horizontal overflow: nothing of the content shows.
    pub(super) clipped: bool,
    /// `color`, when declared.
    pub(super) color: Option<Paint>,
    /// The background, when declared: its colour, or [`Paint::Unknown`] under an image.
    pub(super) background: Option<Paint>,
}

/// A declared `font-size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FontSize {
    /// Zero, in any unit.
    Zero,
    /// A size that does not depend on the parent's (`12px`, `1rem`, `small`).
    Absolute,
    /// A non-zero size relative to the parent's (`1.2em`, `120%`, `larger`): zero when
    /// the parent's is zero.
    Relative,
}

/// One property's winning declaration so far.
#[derive(Debug, Clone, Copy)]
struct Declared<T> {
    value: Option<T>,
    important: bool,
}

impl<T> Default for Declared<T> {
    fn default() -> Self {
        Self {
            value: None,
            important: false,
        }
    }
}

impl<T> Declared<T> {
    /// A later declaration: it wins unless the current one is important and it is not.
    fn set(&mut self, value: Option<T>, important: bool) {
        if let Some(value) = value
            && (important || !self.important)
        {
            self.value = Some(value);
            self.important = important;
        }
    }
}

/// All the declarations read, before they are combined into a [`Style`].
#[derive(Debug, Default)]
struct Declarations {
    display_none: Declared<bool>,
    invisible: Declared<Option<bool>>,
    transparent: Declared<bool>,
    /// `mso-hide`, `clip`, `clip-path` and `transform`, each erasing or not.
    erased: [Declared<bool>; 4],
    font_size: Declared<FontSize>,
    /// Zero `height`, `max-height`, `width` and `max-width`.
    zero: [Declared<bool>; 4],
    /// Hidden `overflow-x` and `overflow-y`.
    overflow: [Declared<bool>; 2],
    color: Declared<Paint>,
    background_color: Declared<Paint>,
    background_image: Declared<bool>,
}

impl Style {
    /// Reads a `style` attribute's value.
    pub(super) fn parse(attribute: &str) -> Self {
        let css = clean(attribute);
        let mut d = Declarations::default();
        for declaration in split_top_level(&css, |b| b == b';') {
            let Some((name, value)) = declaration.split_once(':') else {
                continue;
            };
            let (value, important) = importance(value.trim_ascii());
            d.declare(name.trim_ascii(), value, important);
        }
        let zero = d.zero.map(|z| z.value == Some(true));
        let overflow = d.overflow.map(|o| o.value == Some(true));
        Style {
            display_none: d.display_none.value == Some(true),
            invisible: d.invisible.value.flatten(),
            transparent: d.transparent.value == Some(true),
            erased: d.erased.iter().any(|e| e.value == Some(true)),
            font_size: d.font_size.value,
            clipped: ((zero[0] || zero[1]) && overflow[1]) || ((zero[2] || zero[3]) && overflow[0]),
            color: d.color.value,
            background: match (d.background_image.value, d.background_color.value) {
                (Some(true), _) => Some(Paint::Unknown),
                (_, Some(paint)) => Some(paint),
                (Some(false), None) | (None, None) => None,
            },
        }
    }
}

impl Declarations {
    fn declare(&mut self, name: &str, value: &str, important: bool) {
        if value.is_empty() {
            return;
        }
        // A box of at most one pixel shows no letter (the "visually hidden" pattern).
        let zero = |i: usize| {
            let tiny = length(value)
                .is_some_and(|(n, unit)| n == 0.0 || (matches!(unit, "px" | "") && n <= 1.0));
            (i, Some(tiny))
        };
        let (i, z) = match name {
            "display" => return self.display_none.set(Some(value == "none"), important),
            "visibility" => return self.invisible.set(visibility(value), important),
            "opacity" => return self.transparent.set(opacity(value), important),
            "font-size" => return self.font_size.set(font_size(value), important),
            "font" => return self.font_size.set(font_shorthand(value), important),
            "mso-hide" => return self.erased[0].set(Some(value == "all"), important),
            "clip" => return self.erased[1].set(Some(clip_rect(value)), important),
            "clip-path" => return self.erased[2].set(Some(clip_path(value)), important),
            "transform" => return self.erased[3].set(Some(scales_to_zero(value)), important),
            "color" => return self.color.set(Some(colour::css(value)), important),
            "background-color" => {
                let paint = background_colour(value).unwrap_or_else(|| colour::css(value));
                return self.background_color.set(Some(paint), important);
            }
            "background-image" => {
                let image = !matches!(value, "none" | "initial" | "unset" | "inherit");
                return self.background_image.set(Some(image), important);
            }
            "background" => {
                let (paint, image) = background(value);
                self.background_color.set(Some(paint), important);
                return self.background_image.set(Some(image), important);
            }
            "overflow" => {
                let mut values = value.split_ascii_whitespace();
                let x = values.next().map(clips);
                let y = values.next().map(clips).or(x);
                self.overflow[0].set(x, important);
                return self.overflow[1].set(y, important);
            }
            "overflow-x" => return self.overflow[0].set(Some(clips(value)), important),
            "overflow-y" => return self.overflow[1].set(Some(clips(value)), important),
            "height" => zero(0),
            "max-height" => zero(1),
            "width" => zero(2),
            "max-width" => zero(3),
            _ => return,
        };
        self.zero[i].set(z, important);
    }
}

/// The style text in lower case, with comments (outside strings) turned into spaces and
/// escapes decoded. An escape stands for a letter, digit, `-` or `_` only; any other
/// escaped character becomes U+FFFD, so that it can neither end a declaration nor open
/// a string or a parenthesis (in CSS it is part of a name, never punctuation).
fn clean(css: &str) -> Cow<'_, str> {
    if !css
        .bytes()
        .any(|b| b == b'/' || b == b'\\' || b.is_ascii_uppercase())
    {
        return Cow::Borrowed(css);
    }
    let mut out = String::with_capacity(css.len());
    let mut chars = css.chars().peekable();
    let mut quote = None;
    while let Some(c) = chars.next() {
        match c {
            '/' if quote.is_none() && chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '\\' => {
                let mut code = 0u32;
                let mut digits = 0;
                while digits < 6
                    && let Some(d) = chars.peek().and_then(|d| d.to_digit(16))
                {
                    code = code * 16 + d;
                    digits += 1;
                    chars.next();
                }
                let escaped = if digits > 0 {
                    if chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                        chars.next();
                    }
                    char::from_u32(code)
                } else {
                    chars.next().filter(|c| *c != '\n')
                };
                if let Some(c) = escaped {
                    let name = c.is_alphanumeric() || c == '-' || c == '_';
                    out.push(if name {
                        c.to_ascii_lowercase()
                    } else {
                        '\u{FFFD}'
                    });
                }
            }
            c => {
                quote = match (quote, c) {
                    (Some(q), c) if c == q || c == '\n' => None,
                    (None, '"' | '\'') => Some(c),
                    (quote, _) => quote,
                };
                out.push(c.to_ascii_lowercase());
            }
        }
    }
    Cow::Owned(out)
}

/// The pieces of `css` between separators outside parentheses and quotes. Separators
/// are ASCII, so the bytes are scanned: no byte of a multi-byte character is ASCII.
fn split_top_level(css: &str, separator: impl Fn(u8) -> bool) -> impl Iterator<Item = &str> {
    let mut depth = 0usize;
    let mut quote = None;
    let mut start = 0;
    let bytes = css.as_bytes();
    let mut cuts = bytes.iter().enumerate().filter_map(move |(i, &b)| {
        match (quote, b) {
            (Some(q), b) if b == q || b == b'\n' => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'(') => depth += 1,
            (None, b')') => depth = depth.saturating_sub(1),
            (None, b) if depth == 0 && separator(b) => return Some(i),
            _ => {}
        }
        None
    });
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let end = cuts.next().unwrap_or_else(|| {
            done = true;
            css.len()
        });
        let piece = &css[start..end];
        start = end + 1;
        Some(piece)
    })
}

/// The value without a trailing `!important`, and whether it had one.
fn importance(value: &str) -> (&str, bool) {
    value
        .strip_suffix("important")
        .and_then(|v| v.trim_ascii_end().strip_suffix('!'))
        .map_or((value, false), |v| (v.trim_ascii_end(), true))
}

fn visibility(value: &str) -> Option<Option<bool>> {
    match value {
        "hidden" | "collapse" => Some(Some(true)),
        "visible" | "initial" => Some(Some(false)),
        "inherit" | "unset" | "revert" | "revert-layer" => Some(None),
        _ => None,
    }
}

fn opacity(value: &str) -> Option<bool> {
    let n = match value.strip_suffix('%') {
        Some(percent) => colour::number(percent)?,
        None => colour::number(value)?,
    };
    Some(n <= if value.ends_with('%') { 5.0 } else { 0.05 })
}

/// A number and its unit (`""` for none); `None` when `value` is not a dimension.
fn length(value: &str) -> Option<(f64, &str)> {
    let end = value
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || (matches!(c, '+' | '-') && (i == 0 || value[..i].ends_with('e')))
                || (c == 'e'
                    && value[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '+' || d == '-')))
        })
        .map_or(value.len(), |(i, _)| i);
    let n = colour::number(&value[..end])?;
    let unit = &value[end..];
    unit.bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b'%')
        .then_some((n, unit))
}

fn font_size(value: &str) -> Option<FontSize> {
    match value {
        "xx-small" | "x-small" | "small" | "medium" | "large" | "x-large" | "xx-large"
        | "xxx-large" | "initial" => return Some(FontSize::Absolute),
        "larger" | "smaller" | "inherit" | "unset" | "revert" | "revert-layer" => {
            return Some(FontSize::Relative);
        }
        _ => {}
    }
    let (n, unit) = length(value)?;
    // Sizes no one reads: under 2px (1.5pt), a fifth of the parent's.
    let tiny = match unit {
        "%" => n < 20.0,
        "em" | "ex" | "ch" | "cap" | "ic" | "lh" | "rem" => n < 0.2,
        "pt" => n < 1.5,
        "" | "px" => n < 2.0,
        _ => false,
    };
    if n < 0.0 {
        None
    } else if n == 0.0 || tiny {
        Some(FontSize::Zero)
    } else if matches!(unit, "em" | "ex" | "ch" | "cap" | "ic" | "lh" | "%") {
        Some(FontSize::Relative)
    } else {
        // A number without a unit is read as pixels, as browsers do in quirks mode.
        Some(FontSize::Absolute)
    }
}

/// The size a `font` shorthand sets: the first token that is a size, before an optional
/// `/line-height` (`font: 0/0 a`, `bold 1px serif`); a keyword-only value names none.
fn font_shorthand(value: &str) -> Option<FontSize> {
    split_top_level(value, |b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .find_map(|token| {
            let size = token.split('/').next().unwrap_or(token);
            // A weight such as `700` is a number without a unit, not a size.
            if size.bytes().all(|b| b.is_ascii_digit()) && size.len() == 3 {
                return None;
            }
            font_size(size)
        })
}

/// The numbers of a function's arguments (`rect(0 0 0 0)`, `rect(1px, 1px, 1px, 1px)`), in
/// pixels or percent; `None` for any other argument.
fn arguments<'a>(value: &'a str, name: &str) -> Option<Vec<(f64, &'a str)>> {
    let inner = value
        .strip_prefix(name)?
        .trim_ascii_start()
        .strip_prefix('(')?;
    let inner = inner.strip_suffix(')')?;
    split_top_level(inner, |b| b.is_ascii_whitespace() || b == b',')
        .filter(|t| !t.is_empty())
        .map(length)
        .collect()
}

/// Whether a `clip` rectangle leaves a box of at most one pixel either way.
fn clip_rect(value: &str) -> bool {
    match arguments(value, "rect").as_deref() {
        Some([(top, _), (right, _), (bottom, _), (left, _)]) => {
            bottom - top <= 1.0 || right - left <= 1.0
        }
        _ => false,
    }
}

/// Whether a `clip-path` leaves nothing: an inset of half the box or more from one side
/// pair, or a circle or ellipse of radius zero.
fn clip_path(value: &str) -> bool {
    if let Some(insets) = arguments(value, "inset") {
        let at = |i: usize| insets.get(i).or(insets.first()).map_or(0.0, |(n, _)| *n);
        let percent = insets.iter().all(|(_, unit)| *unit == "%");
        let (top, right) = (at(0), at(1));
        let (bottom, left) = (
            insets.get(2).map_or(top, |x| x.0),
            insets.get(3).map_or(right, |x| x.0),
        );
        return percent && (top + bottom >= 100.0 || left + right >= 100.0);
    }
    ["circle", "ellipse"].iter().any(|shape| {
        value
            .strip_prefix(shape)
            .and_then(|rest| rest.trim_ascii_start().strip_prefix('('))
            .and_then(|rest| {
                rest.split(|c: char| c.is_ascii_whitespace() || c == ')')
                    .next()
            })
            .and_then(length)
            .is_some_and(|(n, _)| n == 0.0)
    })
}

/// Whether a `transform` holds a scale of zero (`scale(0)`, `scaleY(0)`, `scale(1, 0)`,
/// `matrix(0, 0, 0, 0, 0, 0)`): text drawn that way has no size.
fn scales_to_zero(value: &str) -> bool {
    split_top_level(value, |b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
        .any(|f| {
            let zero = |name: &str| {
                arguments(f, name).is_some_and(|args| args.iter().any(|(n, _)| *n == 0.0))
            };
            zero("scale") || zero("scalex") || zero("scaley") || zero("scale3d") || {
                arguments(f, "matrix")
                    .is_some_and(|m| m.len() == 6 && (m[0].0 * m[3].0 - m[1].0 * m[2].0) == 0.0)
            }
        })
}

/// Whether an overflow value clips the content.
fn clips(value: &str) -> bool {
    matches!(value, "hidden" | "clip")
}

/// The CSS-wide keywords as a `background-color`: all show the parent's background.
fn background_colour(value: &str) -> Option<Paint> {
    matches!(
        value,
        "inherit" | "initial" | "unset" | "revert" | "revert-layer" | "none"
    )
    .then_some(Paint::Rgba(TRANSPARENT))
}

/// The colour and whether an image is drawn, of a `background` shorthand; the colour is
/// transparent when the shorthand names none.
fn background(value: &str) -> (Paint, bool) {
    if let Some(paint) = background_colour(value) {
        return (paint, false);
    }
    let mut paint = Paint::Rgba(TRANSPARENT);
    let mut image = false;
    let tokens = split_top_level(value, |b| b.is_ascii_whitespace() || b == b',' || b == b'/');
    for token in tokens.filter(|t| !t.is_empty()) {
        let function = token.find('(').map(|i| &token[..i]);
        match function {
            Some("url" | "image" | "image-set" | "element" | "cross-fade" | "paint") => {
                image = true;
            }
            Some(f) if f.ends_with("gradient") => image = true,
            _ => match colour::css(token) {
                // A keyword such as `no-repeat` or `center`, or a length.
                Paint::Unknown if function.is_none() && !token.starts_with('#') => {}
                found => paint = found,
            },
        }
    }
    (paint, image)
}

#[cfg(test)]
mod tests {
    use super::{FontSize, Style};
    use crate::html_text::colour::Paint;

    #[test]
    fn declarations_cascade_as_in_css() {
        assert!(Style::parse("display:none").display_none);
        assert!(Style::parse(" DISPLAY : NONE ").display_none);
        assert!(Style::parse("display: none !important; display: block").display_none);
        assert!(Style::parse("display:block;display:none").display_none);
        assert!(!Style::parse("display:none;display:block").display_none);
        assert!(Style::parse("display:/* x */none").display_none);
        assert!(Style::parse("display:\\6e one").display_none);
        assert!(Style::parse("display:none;display:").display_none);
        assert!(Style::parse("background:url('a;b');display:none").display_none);
        assert!(Style::parse("background:url('/*');display:none").display_none);
        assert!(!Style::parse("color:red\\3b display:none").display_none);
        assert!(!Style::parse("max-height:0;max-height:auto;overflow:hidden").clipped);
    }

    #[test]
    fn values_that_hide() {
        assert!(Style::parse("opacity:0.0").transparent);
        assert!(Style::parse("opacity:0%").transparent);
        assert!(!Style::parse("opacity:0.5").transparent);
        assert_eq!(
            Style::parse("font-size:0em").font_size,
            Some(FontSize::Zero)
        );
        assert_eq!(
            Style::parse("font-size:1e1px").font_size,
            Some(FontSize::Absolute)
        );
        assert_eq!(
            Style::parse("font-size:120%").font_size,
            Some(FontSize::Relative)
        );
        assert_eq!(Style::parse("font-size:-1px").font_size, None);
        assert!(Style::parse("max-height:0px;overflow:hidden").clipped);
        assert!(Style::parse("max-height:0;overflow:visible hidden").clipped);
        assert!(!Style::parse("max-height:0;overflow:hidden visible").clipped);
        assert!(Style::parse("width:0;overflow-x:clip").clipped);
        assert!(!Style::parse("max-height:0").clipped);
        assert_eq!(Style::parse("visibility:collapse").invisible, Some(true));
    }

    #[test]
    fn backgrounds() {
        let white = Some(Paint::Rgba([255, 255, 255, 255]));
        assert_eq!(Style::parse("background:#fff no-repeat").background, white);
        assert_eq!(
            Style::parse("background: center / cover rgb(255 255 255)").background,
            white
        );
        assert_eq!(
            Style::parse("background:white url(x.png)").background,
            Some(Paint::Unknown)
        );
        assert_eq!(
            Style::parse("background:none").background,
            Some(Paint::Rgba([0, 0, 0, 0]))
        );
        assert_eq!(
            Style::parse("background:var(--bg)").background,
            Some(Paint::Unknown)
        );
        assert_eq!(
            Style::parse("background-color:white;background-image:none").background,
            white
        );
        assert_eq!(Style::parse("color:red").background, None);
    }
}
