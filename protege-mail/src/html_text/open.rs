//! The open elements, as far as hidden text needs them: which elements the next text is
//! inside, and so whether a reader sees it.
//!
//! Tags are matched roughly as browsers match them, in constant amortised time per tag:
//! each element is pushed and popped once, and the innermost open element of each name
//! is found through a map rather than by walking the stack.
//! - Void elements (`br`, `img`, `input`, ...) never open an element; a self-closing
//!   flag on any other element is ignored, as in HTML.
//! - An end tag closes the innermost open element of its name and everything opened
//!   after it. It is ignored when no element of that name is open, or when the one open
//!   lies outside the end tag's scope (a `</div>` does not close a `div` from inside a
//!   table cell or a `<template>`; a `</span>` does not close a `span` around an open
//!   `div`). `</body>` and `</html>` close nothing: text after them is still inside
//!   whatever is open.
//! - Start tags close what HTML closes implicitly: a block closes an open `p`, `li`
//!   closes `li`, `dd`/`dt` close `dd`/`dt`, a cell closes a cell, a row a row, `option`
//!   an `option`, a heading a heading, and any tag that does not belong in `<head>` (or
//!   any text other than whitespace) closes `<head>`.
//! - Nesting deeper than [`MAX_DEPTH`] is flattened: deeper elements are not pushed; an
//!   element down there that hides its text hides the rest of the element at the
//!   deepest level kept.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use html5ever::{Attribute, LocalName, local_name};

use super::names::Kind;
use super::seen::Seen;

/// The most open elements tracked at once, as deep as browsers nest elements.
const MAX_DEPTH: usize = 512;

/// A stack index (below [`MAX_DEPTH`]).
type Index = u16;

/// Which scope an end tag or an implied close looks for its element in (the kinds of
/// scope of HTML's tree construction). Indexes [`Frame::bounds`].
#[derive(Debug, Clone, Copy)]
enum Scope {
    /// Bounded by `html`, `table`, cells, `caption`, `template`, `applet`, `marquee`,
    /// `object`.
    Default,
    /// The default scope and `button`: where a `p` is looked for.
    Button,
    /// The default scope, `ol` and `ul`: where `</li>` looks.
    ListItem,
    /// `html`, `table`, `template`: where the parts of a table look.
    Table,
    /// Any element of HTML's "special" category: where other end tags look.
    Special,
    /// The special elements but `address`, `div` and `p`: where `li`, `dd` and `dt`
    /// look for an open one to close.
    Block,
}

/// Every [`Scope`], in the order of [`Frame::bounds`].
const SCOPES: [Scope; 6] = [
    Scope::Default,
    Scope::Button,
    Scope::ListItem,
    Scope::Table,
    Scope::Special,
    Scope::Block,
];

impl Scope {
    /// Whether an element of `kind` bounds this scope.
    fn bounded_by(self, kind: Kind) -> bool {
        match self {
            Scope::Default => kind.has(Kind::BOUNDS_DEFAULT),
            Scope::Button => kind.has(Kind::BOUNDS_DEFAULT | Kind::BOUNDS_BUTTON),
            Scope::ListItem => kind.has(Kind::BOUNDS_DEFAULT | Kind::BOUNDS_LIST),
            Scope::Table => kind.has(Kind::BOUNDS_TABLE),
            Scope::Special => kind.has(Kind::SPECIAL),
            Scope::Block => kind.has(Kind::SPECIAL) && !kind.has(Kind::LOOSE_BLOCK),
        }
    }
}

/// An open element.
#[derive(Debug)]
struct Frame {
    name: LocalName,
    /// The stack index of the next open element of the same name, further out.
    outer: Option<Index>,
    /// What is seen of the text inside.
    seen: Seen,
    /// Its start tag reached the text writer.
    passed: bool,
    /// Per [`Scope`], the stack index of the innermost element bounding it (this one
    /// included): an element below it is out of that scope.
    bounds: [Index; SCOPES.len()],
}

/// A map keyed by element name.
type ByName<V> = HashMap<LocalName, V, BuildHasherDefault<NameHasher>>;

/// The stack of open elements.
#[derive(Debug, Default)]
pub(super) struct OpenElements {
    stack: Vec<Frame>,
    /// The stack index of the innermost open element of each name.
    innermost: ByName<Index>,
    /// Elements opened beyond [`MAX_DEPTH`] and not closed yet, by name.
    flat: ByName<usize>,
    /// The names of those elements, in the order they were opened.
    flat_order: Vec<LocalName>,
    /// How many `head` elements are open.
    heads: usize,
}

impl OpenElements {
    /// Whether text here is hidden from a reader.
    pub(super) fn hides_text(&self) -> bool {
        self.stack.last().is_some_and(|f| f.seen.hides_text())
    }

    fn gone(&self) -> bool {
        self.stack.last().is_some_and(|f| f.seen.gone)
    }

    /// Text arrives: text other than whitespace ends `<head>`.
    pub(super) fn text(&mut self, text: &str) {
        if self.heads > 0 && text.contains(|c| !is_space(c)) {
            self.close_head();
        }
    }

    /// A start tag; returns whether the element is rendered (its tag shapes the text).
    pub(super) fn start(&mut self, name: &LocalName, attrs: &[Attribute]) -> bool {
        let kind = Kind::of(name);
        self.close_implied(name, kind);
        if matches!(&**name, "html" | "body") && self.innermost.contains_key(name) {
            return !self.gone();
        }
        let parent = self.stack.last().map(|f| f.seen).unwrap_or_default();
        let seen = if attrs.is_empty() && !kind.has(Kind::UNSEEN) {
            parent
        } else {
            parent.child(name, attrs)
        };
        let passed = !seen.gone;
        if kind.has(Kind::VOID) {
            return passed;
        }
        if self.stack.len() >= MAX_DEPTH {
            if let Some(top) = self.stack.last_mut()
                && seen.hides_text()
            {
                top.seen.gone = true;
            }
            *self.flat.entry(name.clone()).or_default() += 1;
            self.flat_order.push(name.clone());
            return passed;
        }
        let index = self.stack.len() as Index;
        let mut bounds = self.stack.last().map_or([0; SCOPES.len()], |f| f.bounds);
        for (bound, scope) in bounds.iter_mut().zip(SCOPES) {
            if scope.bounded_by(kind) {
                *bound = index;
            }
        }
        self.heads += usize::from(*name == local_name!("head"));
        let outer = self.innermost.insert(name.clone(), index);
        self.stack.push(Frame {
            name: name.clone(),
            outer,
            seen,
            passed,
            bounds,
        });
        passed
    }

    /// An end tag; returns whether it shapes the text (the element it closes was
    /// rendered, or it closes nothing and the text here is rendered).
    pub(super) fn end(&mut self, name: &LocalName) -> bool {
        if !self.flat_order.is_empty()
            && let Some(open) = self.flat.get_mut(name)
            && *open > 0
        {
            *open -= 1;
            return !self.gone();
        }
        let kind = Kind::of(name);
        let scope = match &**name {
            "html" | "body" => return !self.gone(),
            "template" => None,
            "p" => Some(Scope::Button),
            "li" => Some(Scope::ListItem),
            _ if kind.has(Kind::TABLE_PART) => Some(Scope::Table),
            _ if kind.has(Kind::SPECIAL | Kind::FORMATTING) => Some(Scope::Default),
            _ => Some(Scope::Special),
        };
        match self.find(name, scope) {
            Some(index) => {
                let passed = self.stack[index].passed;
                self.pop_to(index);
                passed
            }
            None => !self.gone(),
        }
    }

    /// The stack index of the innermost open `name` within `scope` (`None`: any).
    fn find(&self, name: &LocalName, scope: Option<Scope>) -> Option<usize> {
        let index = *self.innermost.get(name)?;
        let bound = match (scope, self.stack.last()) {
            (Some(scope), Some(top)) => top.bounds[scope as usize],
            _ => 0,
        };
        (index >= bound).then_some(usize::from(index))
    }

    /// Closes the innermost of `names` open within `scope`, if any.
    fn close(&mut self, names: &[LocalName], scope: Scope) {
        let found = names.iter().filter_map(|n| self.find(n, Some(scope))).max();
        if let Some(index) = found {
            self.pop_to(index);
        }
    }

    /// What a start tag `name` of `kind` closes before it opens.
    fn close_implied(&mut self, name: &LocalName, kind: Kind) {
        if self.heads > 0 && !kind.has(Kind::HEAD_CONTENT) {
            self.close_head();
        }
        if self.stack.is_empty() {
            return;
        }
        if kind.has(Kind::CLOSES_P) {
            self.close(&[local_name!("p")], Scope::Button);
        }
        if !kind.has(Kind::CLOSES_SIBLING) {
            return;
        }
        let cells = [local_name!("td"), local_name!("th")];
        match &**name {
            "li" => self.close(&[local_name!("li")], Scope::Block),
            "dd" | "dt" => self.close(&[local_name!("dd"), local_name!("dt")], Scope::Block),
            "td" | "th" => self.close(&cells, Scope::Table),
            "tr" => {
                self.close(&cells, Scope::Table);
                self.close(&[local_name!("tr")], Scope::Table);
            }
            "tbody" | "thead" | "tfoot" => {
                self.close(&cells, Scope::Table);
                self.close(&[local_name!("tr")], Scope::Table);
                let sections = [
                    local_name!("tbody"),
                    local_name!("thead"),
                    local_name!("tfoot"),
                ];
                self.close(&sections, Scope::Table);
            }
            name => {
                // A heading closes a heading; an option closes an option.
                let top = self.stack.last().map(|f| &*f.name);
                let closes = match name {
                    "option" | "optgroup" => top == Some("option"),
                    _ => top.is_some_and(|t| matches!(t, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")),
                };
                if closes {
                    self.pop_to(self.stack.len() - 1);
                }
            }
        }
    }

    /// Closes the innermost `head` and everything opened after it, unless a `template`
    /// opened inside it is open (a template holds any content).
    fn close_head(&mut self) {
        let Some(&head) = self.innermost.get(&local_name!("head")) else {
            return;
        };
        if self
            .innermost
            .get(&local_name!("template"))
            .is_none_or(|&template| template < head)
        {
            self.pop_to(usize::from(head));
        }
    }

    /// Closes the element at `index` and everything opened after it.
    fn pop_to(&mut self, index: usize) {
        while self.stack.len() > index {
            let Some(frame) = self.stack.pop() else {
                return;
            };
            self.heads -= usize::from(frame.name == local_name!("head"));
            match frame.outer {
                Some(outer) => self.innermost.insert(frame.name, outer),
                None => self.innermost.remove(&frame.name),
            };
            if self.stack.len() == MAX_DEPTH - 1 {
                // The elements flattened into this one close with it.
                for name in self.flat_order.drain(..) {
                    if let Some(open) = self.flat.get_mut(&name) {
                        *open = open.saturating_sub(1);
                    }
                }
            }
        }
    }
}

/// Hashes an element name: a name is interned and hashes itself as one `u64` (computed
/// once, when it was interned), which only needs mixing, not a keyed hash.
#[derive(Debug, Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        // The finaliser of MurmurHash3: every input bit reaches every output bit.
        let mut h = self.0;
        h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(8) ^ n;
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}')
}
