//! `LoadRecord`: rows of a table (declarative, for TOML) or of a Rust loader closure.

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Role};
use crate::resolver::Resolver;
use crate::template::Template;

/// One `where` condition value: a template rendered to text, or a typed JSON scalar.
#[derive(Debug, Clone)]
pub enum WhereValue {
    /// Rendered per run and bound as a text parameter.
    Template(Template),
    /// Bound with its type (integer, float, boolean, string).
    Value(serde_json::Value),
}

/// One `order_by` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderBy {
    /// The column.
    pub column: String,
    /// Descending when true.
    pub desc: bool,
}

/// Contributes records rendered per record and joined by a blank line; nothing when no rows.
#[derive(Debug)]
pub struct LoadRecord {
    table: String,
    filters: Vec<(String, WhereValue)>,
    order_by: Vec<OrderBy>,
    limit: Option<u64>,
    template: Option<Template>,
    role: Role,
}

impl LoadRecord {
    /// Declarative form: rows of `table`.
    pub fn table(table: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            filters: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            template: None,
            role: Role::System,
        }
    }

    /// Adds a `column = value` condition (joined with AND).
    pub fn filter(mut self, column: impl Into<String>, value: WhereValue) -> Self {
        self.filters.push((column.into(), value));
        self
    }

    /// Adds an ordering.
    pub fn order_by(mut self, order: OrderBy) -> Self {
        self.order_by.push(order);
        self
    }

    /// Caps the number of rows.
    pub fn limit(mut self, limit: impl Into<Option<u64>>) -> Self {
        self.limit = limit.into();
        self
    }

    /// Renders each record with `template` (variable `record`), trimmed.
    pub fn template(mut self, template: Template) -> Self {
        self.template = Some(template);
        self
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }
}

impl Resolver for LoadRecord {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        let _ = ctx;
        Err(Error::new(ErrorKind::Database, "LoadRecord is being built"))
    }

    fn name(&self) -> &str {
        "LoadRecord"
    }
}
