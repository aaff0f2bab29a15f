//! The error collector every phase of both macros reports to, as serde_derive's `Ctxt`:
//! each problem is pushed as a `syn::Error` at the user's span, and `check` combines them,
//! in the order found, into the one error the macro expands to.

use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

use proc_macro2::Span;

/// Errors collected across the phases of one macro call.
///
/// Shared by reference (`&Ctxt`), so closures (such as `parse_nested_meta`'s) report to it
/// too. `check` must be called before the collector is dropped.
pub(crate) struct Ctxt {
    /// The errors so far; `None` once `check` has taken them.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// An empty collector.
    pub(crate) fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Reports `message` at `span`.
    pub(crate) fn error(&self, span: Span, message: impl Display) {
        self.syn_error(syn::Error::new(span, message));
    }

    /// Reports an error syn (or a nested parser) returned, with its own span and message.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("`Ctxt` used after `check`")
            .push(error);
    }

    /// Reports the error of `result`, if any.
    pub(crate) fn extend(&self, result: syn::Result<()>) {
        if let Err(error) = result {
            self.syn_error(error);
        }
    }

    /// The value of `result`, or `None` with its error reported.
    pub(crate) fn ok<T>(&self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|error| self.syn_error(error)).ok()
    }

    /// Whether any error has been reported: a phase that only makes sense on valid input
    /// stops here.
    pub(crate) fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Every error reported, combined in the order found into one; `Ok` when there is none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("`Ctxt::check` called twice");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("`Ctxt` dropped without `check`");
        }
    }
}
