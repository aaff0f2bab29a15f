//! What HTML's parsing rules say about an element, by name, read once per tag.

/// The categories an element belongs to, as a set of flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kind(u16);

impl Kind {
    /// Never has content (`br`, `img`, `meta`, ...): opens no element.
    pub(super) const VOID: u16 = 1;
    /// May stand in `<head>`; any other start tag ends it.
    pub(super) const HEAD_CONTENT: u16 = 1 << 1;
    /// Its start tag closes an open `p`.
    pub(super) const CLOSES_P: u16 = 1 << 2;
    /// A formatting element (`b`, `font`, ...): its end tag looks in the default scope.
    pub(super) const FORMATTING: u16 = 1 << 3;
    /// HTML's "special" category: an end tag of another name does not close past it.
    pub(super) const SPECIAL: u16 = 1 << 4;
    /// Bounds the default scope (`table`, cells, `template`, ...).
    pub(super) const BOUNDS_DEFAULT: u16 = 1 << 5;
    /// Bounds the button scope besides the default one.
    pub(super) const BOUNDS_BUTTON: u16 = 1 << 6;
    /// Bounds the list item scope besides the default one (`ol`, `ul`).
    pub(super) const BOUNDS_LIST: u16 = 1 << 7;
    /// Bounds the table scope (`html`, `table`, `template`).
    pub(super) const BOUNDS_TABLE: u16 = 1 << 8;
    /// Special, but does not stop the search for an open `li`, `dd` or `dt`.
    pub(super) const LOOSE_BLOCK: u16 = 1 << 9;
    /// A part of a table: its end tag looks in the table scope.
    pub(super) const TABLE_PART: u16 = 1 << 10;
    /// Its start tag closes an open element of its own kind (`li`, cells, rows, ...).
    pub(super) const CLOSES_SIBLING: u16 = 1 << 11;
    /// Its content is never rendered (`template`, `head`).
    pub(super) const UNSEEN: u16 = 1 << 12;

    /// The categories of the element `name` (lower case).
    pub(super) fn of(name: &str) -> Kind {
        const SPECIAL_CLOSES_P: u16 = Kind::SPECIAL | Kind::CLOSES_P;
        Kind(match name {
            "a" | "b" | "big" | "code" | "em" | "font" | "i" | "nobr" | "s" | "small"
            | "strike" | "strong" | "tt" | "u" => Self::FORMATTING,
            "address" | "div" | "p" => SPECIAL_CLOSES_P | Self::LOOSE_BLOCK,
            "applet" | "marquee" | "object" => Self::SPECIAL | Self::BOUNDS_DEFAULT,
            "area" | "br" | "col" | "embed" | "frame" | "img" | "input" | "keygen" | "param"
            | "source" | "track" | "wbr" => Self::VOID | Self::SPECIAL,
            "article" | "aside" | "blockquote" | "center" | "details" | "dir" | "dl"
            | "fieldset" | "figcaption" | "figure" | "footer" | "form" | "header" | "hgroup"
            | "listing" | "main" | "menu" | "nav" | "plaintext" | "pre" | "search" | "section"
            | "summary" | "xmp" => SPECIAL_CLOSES_P,
            "base" | "basefont" | "bgsound" | "link" | "meta" => {
                Self::VOID | Self::HEAD_CONTENT | Self::SPECIAL
            }
            "body" | "colgroup" | "frameset" | "iframe" | "noembed" | "select" | "textarea" => {
                Self::SPECIAL
            }
            "button" => Self::SPECIAL | Self::BOUNDS_BUTTON,
            "caption" => Self::SPECIAL | Self::BOUNDS_DEFAULT | Self::TABLE_PART,
            "dd" | "dt" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "li" => {
                SPECIAL_CLOSES_P | Self::CLOSES_SIBLING
            }
            "dialog" => Self::CLOSES_P,
            "head" => Self::HEAD_CONTENT | Self::SPECIAL | Self::UNSEEN,
            // Mail clients drop inline SVG: its `<text>` reaches no reader.
            "svg" => Self::UNSEEN,
            "hr" => Self::VOID | SPECIAL_CLOSES_P,
            "html" => {
                Self::HEAD_CONTENT | Self::SPECIAL | Self::BOUNDS_DEFAULT | Self::BOUNDS_TABLE
            }
            "image" => Self::VOID,
            "noframes" | "noscript" | "script" | "style" | "title" => {
                Self::HEAD_CONTENT | Self::SPECIAL
            }
            "ol" | "ul" => SPECIAL_CLOSES_P | Self::BOUNDS_LIST,
            "optgroup" | "option" => Self::CLOSES_SIBLING,
            "table" => {
                SPECIAL_CLOSES_P | Self::BOUNDS_DEFAULT | Self::BOUNDS_TABLE | Self::TABLE_PART
            }
            "tbody" | "tfoot" | "thead" | "tr" => {
                Self::SPECIAL | Self::TABLE_PART | Self::CLOSES_SIBLING
            }
            "td" | "th" => {
                Self::SPECIAL | Self::BOUNDS_DEFAULT | Self::TABLE_PART | Self::CLOSES_SIBLING
            }
            "template" => {
                Self::HEAD_CONTENT
                    | Self::SPECIAL
                    | Self::BOUNDS_DEFAULT
                    | Self::BOUNDS_TABLE
                    | Self::UNSEEN
            }
            _ => 0,
        })
    }

    /// Whether any of `flags` is set.
    pub(super) fn has(self, flags: u16) -> bool {
        self.0 & flags != 0
    }
}
