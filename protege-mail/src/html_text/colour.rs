//! Colours as inline CSS and the legacy `color`/`bgcolor` attributes write them,
//! normalised to RGBA so that `#fff`, `#ffffff`, `white`, `rgb(255,255,255)` and
//! `rgb(255 255 255)` are one colour.

/// Red, green, blue and alpha (0 transparent, 255 opaque).
pub(super) type Rgba = [u8; 4];

/// Fully transparent: what `transparent` names.
pub(super) const TRANSPARENT: Rgba = [0, 0, 0, 0];

/// A colour value of a `color` or `background-color` declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Paint {
    /// A colour known exactly.
    Rgba(Rgba),
    /// `currentcolor`: the element's own text colour.
    Current,
    /// `inherit`, `unset`, `revert`: the parent's value.
    Inherit,
    /// A value this module does not resolve (`var()`, `lab()`, `initial`, a typo): it
    /// matches no other colour.
    Unknown,
}

/// Reads a CSS colour value that is already trimmed, lower case and free of comments:
/// hex (`#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`), `rgb()`/`rgba()` with commas or
/// spaces, `hsl()`/`hsla()`, the CSS named colours, `transparent`, `currentcolor`.
pub(super) fn css(value: &str) -> Paint {
    match value {
        "currentcolor" => return Paint::Current,
        "inherit" | "unset" | "revert" | "revert-layer" => return Paint::Inherit,
        _ => {}
    }
    let rgba = if let Some(hex) = value.strip_prefix('#') {
        hex_colour(hex)
    } else if let Some(args) = function(value, "rgb").or_else(|| function(value, "rgba")) {
        rgb(args)
    } else if let Some(args) = function(value, "hsl").or_else(|| function(value, "hsla")) {
        hsl(args)
    } else {
        named(value)
    };
    rgba.map_or(Paint::Unknown, Paint::Rgba)
}

/// Reads a colour attribute (`<font color>`, `bgcolor`, `<body text>`) by HTML's rules
/// for a legacy colour value: a named colour, `#rgb`, or else any text read as three
/// runs of hex digits (`ffffff` is white, `#fffff` is not). `None` for an empty value or
/// `transparent`.
pub(super) fn legacy(value: &str) -> Option<Rgba> {
    let value = value.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}'));
    if value.is_empty() || value.eq_ignore_ascii_case("transparent") {
        return None;
    }
    if let Some(rgba) = named(&value.to_ascii_lowercase()) {
        return Some(rgba);
    }
    if let Some(hex) = value.strip_prefix('#')
        && hex.len() == 3
        && let Some(rgba) = hex_colour(hex)
    {
        return Some(rgba);
    }
    let mut chars: Vec<char> = Vec::with_capacity(value.len().min(128) + 2);
    for c in value.chars().take(128) {
        if u32::from(c) > 0xFFFF {
            chars.extend(['0', '0']);
        } else {
            chars.push(c);
        }
    }
    chars.truncate(128);
    if chars.first() == Some(&'#') {
        chars.remove(0);
    }
    let mut digits: Vec<u8> = chars
        .iter()
        .map(|c| {
            if c.is_ascii_hexdigit() {
                *c as u8
            } else {
                b'0'
            }
        })
        .collect();
    while digits.is_empty() || !digits.len().is_multiple_of(3) {
        digits.push(b'0');
    }
    let mut len = digits.len() / 3;
    let mut parts = [&digits[..len], &digits[len..2 * len], &digits[2 * len..]];
    if len > 8 {
        parts = parts.map(|p| &p[len - 8..]);
        len = 8;
    }
    while len > 2 && parts.iter().all(|p| p[0] == b'0') {
        parts = parts.map(|p| &p[1..]);
        len -= 1;
    }
    let [r, g, b] = parts.map(|p| {
        p[..len.min(2)]
            .iter()
            .fold(0u8, |n, d| (n << 4) | hex_digit(*d))
    });
    Some([r, g, b, 255])
}

/// The arguments of `name(...)` when `value` is that function.
fn function<'a>(value: &'a str, name: &str) -> Option<&'a str> {
    value
        .strip_prefix(name)?
        .trim_start()
        .strip_prefix('(')?
        .strip_suffix(')')
}

fn hex_digit(d: u8) -> u8 {
    match d {
        b'0'..=b'9' => d - b'0',
        b'a'..=b'f' => d - b'a' + 10,
        b'A'..=b'F' => d - b'A' + 10,
        _ => 0,
    }
}

fn hex_colour(hex: &str) -> Option<Rgba> {
    let d = hex.as_bytes();
    if !d.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let short = |i: usize| hex_digit(d[i]) * 17;
    let long = |i: usize| (hex_digit(d[i]) << 4) | hex_digit(d[i + 1]);
    match d.len() {
        3 => Some([short(0), short(1), short(2), 255]),
        4 => Some([short(0), short(1), short(2), short(3)]),
        6 => Some([long(0), long(2), long(4), 255]),
        8 => Some([long(0), long(2), long(4), long(6)]),
        _ => None,
    }
}

/// The three channels and the optional alpha of a colour function, in the comma
/// syntax (`255, 255, 255, 0.5`) or the space syntax (`255 255 255 / 50%`).
fn arguments(args: &str) -> Option<([&str; 3], Option<&str>)> {
    let (main, slash) = match args.split_once('/') {
        Some((main, alpha)) => (main, Some(alpha.trim())),
        None => (args, None),
    };
    let parts: Vec<&str> = if main.contains(',') {
        main.split(',').map(str::trim).collect()
    } else {
        main.split_ascii_whitespace().collect()
    };
    match (parts.as_slice(), slash) {
        (&[r, g, b], alpha) => Some(([r, g, b], alpha)),
        (&[r, g, b, a], None) => Some(([r, g, b], Some(a))),
        _ => None,
    }
}

/// A CSS number: digits with an optional sign, fraction and exponent.
pub(super) fn number(s: &str) -> Option<f64> {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'+' | b'-' | b'e'));
    plain
        .then(|| s.parse::<f64>().ok())
        .flatten()
        .filter(|n| n.is_finite())
}

/// A number or a percentage of `full`; `none` is zero.
fn amount(s: &str, full: f64) -> Option<f64> {
    if s == "none" {
        return Some(0.0);
    }
    match s.strip_suffix('%') {
        Some(percent) => number(percent).map(|p| p / 100.0 * full),
        None => number(s),
    }
}

fn byte(value: f64, full: f64) -> u8 {
    (value.clamp(0.0, full) / full * 255.0).round() as u8
}

fn alpha(s: Option<&str>) -> Option<u8> {
    s.map_or(Some(255), |s| amount(s, 1.0).map(|a| byte(a, 1.0)))
}

fn rgb(args: &str) -> Option<Rgba> {
    let ([r, g, b], a) = arguments(args)?;
    let channel = |s: &str| amount(s, 255.0).map(|v| byte(v, 255.0));
    Some([channel(r)?, channel(g)?, channel(b)?, alpha(a)?])
}

fn hsl(args: &str) -> Option<Rgba> {
    let ([h, s, l], a) = arguments(args)?;
    let units = [
        ("deg", 1.0),
        ("grad", 0.9),
        ("rad", 180.0 / std::f64::consts::PI),
        ("turn", 360.0),
    ];
    let hue = match units
        .iter()
        .find_map(|(u, scale)| Some((h.strip_suffix(u)?, scale)))
    {
        Some((n, scale)) => number(n)? * scale,
        None => amount(h, 1.0)?,
    };
    let s = amount(s.trim_end_matches('%'), 1.0)?.clamp(0.0, 100.0) / 100.0;
    let l = amount(l.trim_end_matches('%'), 1.0)?.clamp(0.0, 100.0) / 100.0;
    let k = |n: f64| (n + hue.rem_euclid(360.0) / 30.0) % 12.0;
    let f = |n: f64| l - s * l.min(1.0 - l) * (k(n) - 3.0).min(9.0 - k(n)).clamp(-1.0, 1.0);
    Some([
        byte(f(0.0), 1.0),
        byte(f(8.0), 1.0),
        byte(f(4.0), 1.0),
        alpha(a)?,
    ])
}

/// The CSS named colours and `transparent`, by lower-case name.
fn named(name: &str) -> Option<Rgba> {
    if name == "transparent" {
        return Some(TRANSPARENT);
    }
    let i = NAMED.binary_search_by(|(n, _)| n.cmp(&name)).ok()?;
    let [_, r, g, b] = NAMED[i].1.to_be_bytes();
    Some([r, g, b, 255])
}

/// The 148 named colours of CSS Color 4, sorted by name.
#[rustfmt::skip]
const NAMED: [(&str, u32); 148] = [
    ("aliceblue", 0xf0f8ff), ("antiquewhite", 0xfaebd7), ("aqua", 0x00ffff),
    ("aquamarine", 0x7fffd4), ("azure", 0xf0ffff), ("beige", 0xf5f5dc), ("bisque", 0xffe4c4),
    ("black", 0x000000), ("blanchedalmond", 0xffebcd), ("blue", 0x0000ff),
    ("blueviolet", 0x8a2be2), ("brown", 0xa52a2a), ("burlywood", 0xdeb887),
    ("cadetblue", 0x5f9ea0), ("chartreuse", 0x7fff00), ("chocolate", 0xd2691e),
    ("coral", 0xff7f50), ("cornflowerblue", 0x6495ed), ("cornsilk", 0xfff8dc),
    ("crimson", 0xdc143c), ("cyan", 0x00ffff), ("darkblue", 0x00008b), ("darkcyan", 0x008b8b),
    ("darkgoldenrod", 0xb8860b), ("darkgray", 0xa9a9a9), ("darkgreen", 0x006400),
    ("darkgrey", 0xa9a9a9), ("darkkhaki", 0xbdb76b), ("darkmagenta", 0x8b008b),
    ("darkolivegreen", 0x556b2f), ("darkorange", 0xff8c00), ("darkorchid", 0x9932cc),
    ("darkred", 0x8b0000), ("darksalmon", 0xe9967a), ("darkseagreen", 0x8fbc8f),
    ("darkslateblue", 0x483d8b), ("darkslategray", 0x2f4f4f), ("darkslategrey", 0x2f4f4f),
    ("darkturquoise", 0x00ced1), ("darkviolet", 0x9400d3), ("deeppink", 0xff1493),
    ("deepskyblue", 0x00bfff), ("dimgray", 0x696969), ("dimgrey", 0x696969),
    ("dodgerblue", 0x1e90ff), ("firebrick", 0xb22222), ("floralwhite", 0xfffaf0),
    ("forestgreen", 0x228b22), ("fuchsia", 0xff00ff), ("gainsboro", 0xdcdcdc),
    ("ghostwhite", 0xf8f8ff), ("gold", 0xffd700), ("goldenrod", 0xdaa520), ("gray", 0x808080),
    ("green", 0x008000), ("greenyellow", 0xadff2f), ("grey", 0x808080), ("honeydew", 0xf0fff0),
    ("hotpink", 0xff69b4), ("indianred", 0xcd5c5c), ("indigo", 0x4b0082), ("ivory", 0xfffff0),
    ("khaki", 0xf0e68c), ("lavender", 0xe6e6fa), ("lavenderblush", 0xfff0f5),
    ("lawngreen", 0x7cfc00), ("lemonchiffon", 0xfffacd), ("lightblue", 0xadd8e6),
    ("lightcoral", 0xf08080), ("lightcyan", 0xe0ffff), ("lightgoldenrodyellow", 0xfafad2),
    ("lightgray", 0xd3d3d3), ("lightgreen", 0x90ee90), ("lightgrey", 0xd3d3d3),
    ("lightpink", 0xffb6c1), ("lightsalmon", 0xffa07a), ("lightseagreen", 0x20b2aa),
    ("lightskyblue", 0x87cefa), ("lightslategray", 0x778899), ("lightslategrey", 0x778899),
    ("lightsteelblue", 0xb0c4de), ("lightyellow", 0xffffe0), ("lime", 0x00ff00),
    ("limegreen", 0x32cd32), ("linen", 0xfaf0e6), ("magenta", 0xff00ff), ("maroon", 0x800000),
    ("mediumaquamarine", 0x66cdaa), ("mediumblue", 0x0000cd), ("mediumorchid", 0xba55d3),
    ("mediumpurple", 0x9370db), ("mediumseagreen", 0x3cb371), ("mediumslateblue", 0x7b68ee),
    ("mediumspringgreen", 0x00fa9a), ("mediumturquoise", 0x48d1cc),
    ("mediumvioletred", 0xc71585), ("midnightblue", 0x191970), ("mintcream", 0xf5fffa),
    ("mistyrose", 0xffe4e1), ("moccasin", 0xffe4b5), ("navajowhite", 0xffdead),
    ("navy", 0x000080), ("oldlace", 0xfdf5e6), ("olive", 0x808000), ("olivedrab", 0x6b8e23),
    ("orange", 0xffa500), ("orangered", 0xff4500), ("orchid", 0xda70d6),
    ("palegoldenrod", 0xeee8aa), ("palegreen", 0x98fb98), ("paleturquoise", 0xafeeee),
    ("palevioletred", 0xdb7093), ("papayawhip", 0xffefd5), ("peachpuff", 0xffdab9),
    ("peru", 0xcd853f), ("pink", 0xffc0cb), ("plum", 0xdda0dd), ("powderblue", 0xb0e0e6),
    ("purple", 0x800080), ("rebeccapurple", 0x663399), ("red", 0xff0000),
    ("rosybrown", 0xbc8f8f), ("royalblue", 0x4169e1), ("saddlebrown", 0x8b4513),
    ("salmon", 0xfa8072), ("sandybrown", 0xf4a460), ("seagreen", 0x2e8b57),
    ("seashell", 0xfff5ee), ("sienna", 0xa0522d), ("silver", 0xc0c0c0), ("skyblue", 0x87ceeb),
    ("slateblue", 0x6a5acd), ("slategray", 0x708090), ("slategrey", 0x708090),
    ("snow", 0xfffafa), ("springgreen", 0x00ff7f), ("steelblue", 0x4682b4), ("tan", 0xd2b48c),
    ("teal", 0x008080), ("thistle", 0xd8bfd8), ("tomato", 0xff6347), ("turquoise", 0x40e0d0),
    ("violet", 0xee82ee), ("wheat", 0xf5deb3), ("white", 0xffffff), ("whitesmoke", 0xf5f5f5),
    ("yellow", 0xffff00), ("yellowgreen", 0x9acd32),
];

#[cfg(test)]
mod tests {
    use super::{NAMED, Paint, css, legacy};

    #[test]
    fn names_are_sorted_and_unique() {
        assert!(NAMED.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn one_white_many_spellings() {
        let white = Paint::Rgba([255, 255, 255, 255]);
        for value in [
            "#fff",
            "#ffffff",
            "#ffff",
            "#ffffffff",
            "white",
            "rgb(255,255,255)",
            "rgb(255 255 255)",
            "rgba(255, 255, 255, 1)",
            "rgb(100% 100% 100% / 100%)",
            "hsl(0, 0%, 100%)",
            "hsl(120deg 50% 100%)",
        ] {
            assert_eq!(css(value), white, "{value}");
        }
        assert_eq!(css("transparent"), Paint::Rgba([0, 0, 0, 0]));
        assert_eq!(
            css("rgba(255,255,255,0.5)"),
            Paint::Rgba([255, 255, 255, 128])
        );
        assert_eq!(css("hsl(120, 100%, 25%)"), Paint::Rgba([0, 128, 0, 255]));
        assert_eq!(
            css("hsl(0.5turn 100% 50%)"),
            Paint::Rgba([0, 255, 255, 255])
        );
        assert_eq!(css("currentcolor"), Paint::Current);
        assert_eq!(css("var(--x)"), Paint::Unknown);
        assert_eq!(css("#ggg"), Paint::Unknown);
        assert_eq!(css("rgb(1,2)"), Paint::Unknown);
        assert_eq!(css("infinity"), Paint::Unknown);
    }

    #[test]
    fn legacy_attribute_values() {
        assert_eq!(legacy("#FFF"), Some([255, 255, 255, 255]));
        assert_eq!(legacy(" White "), Some([255, 255, 255, 255]));
        assert_eq!(legacy("ffffff"), Some([255, 255, 255, 255]));
        assert_eq!(legacy("fff"), Some([15, 15, 15, 255]));
        assert_eq!(legacy("#ff000"), Some([255, 0, 0, 255]));
        assert_eq!(legacy("chucknorris"), Some([192, 0, 0, 255]));
        assert_eq!(legacy("transparent"), None);
        assert_eq!(legacy(""), None);
    }
}
