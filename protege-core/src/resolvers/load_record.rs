//! `LoadRecord`: rows of a table (declarative, for TOML) or of a Rust loader closure,
//! rendered per record and joined by a blank line.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;

use crate::context::Context;
use crate::db::read::records::{self, Bound};
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Role, message};
use crate::resolver::{Resolved, Resolver};
use crate::source::Source;
use crate::template::Template;
use super::{BuiltinResolver, Given, GivenOptions, Refused};

/// One `where` condition value: a template rendered to text, or a typed JSON scalar.
#[derive(Debug, Clone)]
pub enum WhereValue {
    /// Rendered per run and bound as a text parameter.
    Template(Template),
    /// Bound with its type (integer, float, boolean, string); `null` matches `IS NULL`.
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

/// The per-record template: none (pretty JSON), compiled, or a syntax error reported
/// when the chain runs.
#[derive(Debug, Clone, Default)]
enum RecordTemplate {
    #[default]
    Json,
    Compiled(Template),
    Broken(Error),
}

impl RecordTemplate {
    fn parse(source: &str) -> Self {
        match Template::compile("LoadRecord.template", source) {
            Ok(t) => RecordTemplate::Compiled(t),
            Err(e) => RecordTemplate::Broken(e),
        }
    }

    /// Renders one record: the template with `record` merged into the run's variables
    /// (trimmed), or pretty JSON (2-space indent, fields in order).
    fn render<T: Serialize>(&self, ctx: &Context, record: &T) -> Result<String> {
        match self {
            RecordTemplate::Json => serde_json::to_string_pretty(record).map_err(|e| {
                Error::new(ErrorKind::Custom, format!("cannot serialise a record: {e}"))
            }),
            RecordTemplate::Compiled(t) => {
                let vars = minijinja::value::merge_maps([
                    minijinja::context! { record => minijinja::Value::from(minijinja::value::Serde(record)) },
                    ctx.template_vars().clone(),
                ]);
                Ok(t.render_in(ctx, &vars)?.trim().to_owned())
            }
            RecordTemplate::Broken(e) => Err(e.clone()),
        }
    }

    fn check(&self) -> Result<()> {
        match self {
            RecordTemplate::Broken(e) => Err(e.clone()),
            _ => Ok(()),
        }
    }
}

/// Joins rendered records with a blank line, skipping blank ones; `None` when nothing is
/// left.
fn join_records(role: Role, rendered: Vec<String>) -> Option<Message> {
    let kept: Vec<String> = rendered
        .into_iter()
        .filter(|r| !r.trim().is_empty())
        .collect();
    if kept.is_empty() {
        None
    } else {
        Some(message(role, kept.join("\n\n")))
    }
}

/// Contributes records rendered per record and joined by a blank line; nothing when no
/// rows.
///
/// The declarative form ([`LoadRecord::table`]) reads
/// `SELECT * FROM table WHERE col = ? AND ... ORDER BY ... LIMIT n` through the run's
/// database, with identifiers quoted for the backend and every value bound. Each record
/// is pretty JSON (2-space indent, columns in table order) or the output of a per-record
/// template, trimmed, which sees the run's variables plus `record`. For records loaded by
/// Rust code, see [`LoadRecord::from_loader`].
#[derive(Debug)]
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct LoadRecord {
    table: String,
    filters: Vec<(String, WhereValue)>,
    order_by: Vec<OrderBy>,
    limit: Option<u64>,
    template: RecordTemplate,
    role: Role,
    /// The error of a `where` template that did not compile (reported when the chain runs).
    broken_filter: Option<Error>,
    /// The table's primary key columns, read once for the rows' sources.
    primary_key: tokio::sync::OnceCell<Vec<String>>,
}

impl LoadRecord {
    /// Declarative form: rows of `table`.
    pub fn table(table: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            filters: Vec::new(),
            order_by: Vec::new(),
            limit: None,
            template: RecordTemplate::Json,
            role: Role::System,
            broken_filter: None,
            primary_key: tokio::sync::OnceCell::new(),
        }
    }

    /// Rust form: records returned by an async `loader` called with the run's context;
    /// each record is anything `Serialize` (SeaORM models included).
    ///
    /// ```
    /// use protege::{Context, LoadRecord};
    /// #[derive(serde::Serialize)]
    /// struct Order { number: String, status: String }
    /// let orders = LoadRecord::from_loader(|_ctx: Context| async move {
    ///     Ok::<_, String>(vec![Order { number: "A-1".into(), status: "shipped".into() }])
    /// })
    /// .template_str("Order {{ record.number }}: {{ record.status }}");
    /// ```
    pub fn from_loader<F, Fut, R, T, E>(loader: F) -> LoadRecordFn<F, T>
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, E>> + Send,
        R: IntoIterator<Item = T>,
        T: Serialize,
        E: std::fmt::Display,
    {
        LoadRecordFn {
            loader,
            template: RecordTemplate::Json,
            renderer: None,
            role: Role::System,
            _record: PhantomData,
        }
    }

    /// Adds a `column = value` condition (joined with AND).
    pub fn filter(mut self, column: impl Into<String>, value: WhereValue) -> Self {
        self.filters.push((column.into(), value));
        self
    }

    /// Adds a `column = template` condition: `source` is compiled as a template (named
    /// `LoadRecord.where.COLUMN`), rendered per run and bound as text, as a string value of
    /// TOML's `where`; a syntax error is reported when the chain runs.
    ///
    /// ```
    /// use protege::LoadRecord;
    /// let accounts = LoadRecord::table("accounts")
    ///     .filter_str("email", "{{ message.from }}")
    ///     .filter_value("active", true);
    /// ```
    pub fn filter_str(mut self, column: impl Into<String>, source: &str) -> Self {
        let column = column.into();
        match Template::compile(format!("LoadRecord.where.{column}"), source) {
            Ok(t) => self.filters.push((column, WhereValue::Template(t))),
            Err(e) => {
                if self.broken_filter.is_none() {
                    self.broken_filter = Some(e);
                }
            }
        }
        self
    }

    /// Adds a `column = value` condition bound with the value's type (integer, float,
    /// boolean or string), as a number or boolean of TOML's `where`.
    pub fn filter_value(
        self,
        column: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> Self {
        self.filter(column, WhereValue::Value(value.into()))
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
        self.template = RecordTemplate::Compiled(template);
        self
    }

    /// Compiles `source` as the per-record template; a syntax error is reported when the
    /// chain runs, like [`LoadText::template`](crate::LoadText::template).
    pub fn template_str(mut self, source: &str) -> Self {
        self.template = RecordTemplate::parse(source);
        self
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    fn bound_filters(&self, ctx: &Context) -> Result<Vec<(String, Bound)>> {
        self.filters
            .iter()
            .map(|(column, value)| {
                let bound = match value {
                    WhereValue::Template(t) => {
                        Bound::Text(t.render_in(ctx, ctx.template_vars())?)
                    }
                    WhereValue::Value(v) => match v {
                        serde_json::Value::String(s) => Bound::Text(s.clone()),
                        serde_json::Value::Bool(b) => Bound::Bool(*b),
                        serde_json::Value::Null => Bound::Null,
                        serde_json::Value::Number(n) => match n.as_i64() {
                            Some(i) => Bound::Int(i),
                            None => Bound::Float(n.as_f64().unwrap_or(f64::NAN)),
                        },
                        other => {
                            return Err(Error::new(
                                ErrorKind::InvalidInput,
                                format!(
                                    "`where` value of column `{column}` must be a string, number or boolean, not {}",
                                    if other.is_array() { "an array" } else { "an object" }
                                ),
                            ));
                        }
                    },
                };
                Ok((column.clone(), bound))
            })
            .collect()
    }
}

impl Resolver for LoadRecord {
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        Ok(self.load(ctx, false).await?.map(|(m, _)| m))
    }

    async fn resolve_sourced(&self, ctx: &Context) -> Result<Resolved> {
        Ok(match self.load(ctx, true).await? {
            Some((m, source)) => Resolved::new(vec![m]).with_sources(source.into_iter().collect()),
            None => Resolved::none(),
        })
    }

    fn name(&self) -> &str {
        "LoadRecord"
    }
}

impl LoadRecord {
    /// The records' message (`None` without rows, or when every rendering is blank) and,
    /// when `sourced`, its source: the table and the rows' keys.
    async fn load(
        &self,
        ctx: &Context,
        sourced: bool,
    ) -> Result<Option<(Message, Option<Source>)>> {
        if let Some(error) = &self.broken_filter {
            return Err(error.clone());
        }
        self.template.check()?;
        let Some(db) = ctx.db() else {
            return Err(Error::new(
                ErrorKind::Database,
                format!(
                    "LoadRecord needs a database to read table `{}`, and none is configured",
                    self.table
                ),
            ));
        };
        let filters = self.bound_filters(ctx)?;
        let order: Vec<(String, bool)> = self
            .order_by
            .iter()
            .map(|o| (o.column.clone(), o.desc))
            .collect();
        let rows = records::select(db, &self.table, &filters, &order, self.limit).await?;
        if rows.is_empty()
            && filters
                .iter()
                .any(|(_, b)| matches!(b, Bound::Text(t) if !t.is_empty()))
        {
            // A key was there and found nothing: a silent miss is how a wrong `where` hides.
            let wanted = filters
                .iter()
                .map(|(c, b)| format!("{c} = {}", b.to_json()))
                .collect::<Vec<_>>()
                .join(" and ");
            tracing::warn!(table = %self.table, filters = %wanted, "LoadRecord found no row");
            ctx.note(
                self.name(),
                format!("no row of `{}` where {wanted}", self.table),
            );
        }
        let rendered = rows
            .iter()
            .map(|row| self.template.render(ctx, row))
            .collect::<Result<Vec<_>>>()?;
        let Some(message) = join_records(self.role, rendered) else {
            return Ok(None);
        };
        if !sourced {
            return Ok(Some((message, None)));
        }
        let key_columns = self
            .primary_key
            .get_or_try_init(|| records::primary_key(db, &self.table))
            .await?;
        let key = record_key(key_columns, &rows, &filters);
        let source = Source::Record {
            table: self.table.clone(),
            key,
        };
        Ok(Some((message, Some(source))))
    }
}

/// The `key` of a [`Source::Record`]: each row's primary key (its value, or an object of
/// column → value for a key of several columns), as an array when there are several rows;
/// without a primary key, the `where` values as an object.
fn record_key(
    key_columns: &[String],
    rows: &[serde_json::Map<String, serde_json::Value>],
    filters: &[(String, Bound)],
) -> serde_json::Value {
    use serde_json::Value;
    if key_columns.is_empty() {
        let values = filters
            .iter()
            .map(|(column, bound)| (column.clone(), bound.to_json()))
            .collect();
        return Value::Object(values);
    }
    let mut keys: Vec<Value> = rows
        .iter()
        .map(|row| match key_columns {
            [one] => row.get(one).cloned().unwrap_or(Value::Null),
            several => Value::Object(
                several
                    .iter()
                    .map(|c| (c.clone(), row.get(c).cloned().unwrap_or(Value::Null)))
                    .collect(),
            ),
        })
        .collect();
    if keys.len() == 1 {
        keys.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(keys)
    }
}

type Renderer<T> = Arc<dyn Fn(&T) -> String + Send + Sync>;

/// `LoadRecord` with a Rust loader closure, made by [`LoadRecord::from_loader`].
///
/// Each record is rendered by the Rust renderer set with
/// [`render_with`](Self::render_with), else by the per-record template, else as pretty
/// JSON; blank renderings are skipped and the rest joined by a blank line.
#[must_use = "a resolver does nothing until it is part of a chain"]
pub struct LoadRecordFn<F, T> {
    loader: F,
    template: RecordTemplate,
    renderer: Option<Renderer<T>>,
    role: Role,
    _record: PhantomData<fn() -> T>,
}

impl<F, T> std::fmt::Debug for LoadRecordFn<F, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadRecord")
            .field("loader", &"closure")
            .field("template", &self.template)
            .field("renderer", &self.renderer.is_some())
            .field("role", &self.role)
            .finish()
    }
}

impl<F, T> LoadRecordFn<F, T> {
    /// Renders each record with `template` (variable `record`), trimmed.
    pub fn template(mut self, template: Template) -> Self {
        self.template = RecordTemplate::Compiled(template);
        self
    }

    /// Compiles `source` as the per-record template; a syntax error is reported when the
    /// chain runs.
    pub fn template_str(mut self, source: &str) -> Self {
        self.template = RecordTemplate::parse(source);
        self
    }

    /// Renders each record with Rust code instead of a template; the text is trimmed.
    pub fn render_with<R>(mut self, render: R) -> Self
    where
        R: Fn(&T) -> String + Send + Sync + 'static,
    {
        self.renderer = Some(Arc::new(render));
        self
    }

    /// Sets the role of the contributed message (default `system`).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }
}

impl<F, Fut, R, T, E> Resolver for LoadRecordFn<F, T>
where
    F: Fn(Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<R, E>> + Send,
    R: IntoIterator<Item = T>,
    T: Serialize + 'static,
    E: std::fmt::Display,
{
    type Output = Option<Message>;

    async fn resolve(&self, ctx: &Context) -> Result<Option<Message>> {
        if self.renderer.is_none() {
            self.template.check()?;
        }
        let records = (self.loader)(ctx.clone())
            .await
            .map_err(|e| Error::custom(format!("LoadRecord loader failed: {e}")))?;
        let mut rendered = Vec::new();
        for record in records {
            rendered.push(match &self.renderer {
                Some(render) => render(&record).trim().to_owned(),
                None => self.template.render(ctx, &record)?,
            });
        }
        Ok(join_records(self.role, rendered))
    }

    fn name(&self) -> &str {
        "LoadRecord"
    }
}

impl BuiltinResolver for LoadRecord {
    const SPEC: &'static protege_schema::Builtin = &protege_schema::LOAD_RECORD;

    fn from_given(mut given: GivenOptions) -> std::result::Result<Option<Self>, Refused> {
        let Some(Given::Table(table)) = given.take("table") else {
            return Ok(None);
        };
        let mut record = LoadRecord::table(table);
        for (name, value) in given {
            record = match (name, value) {
                ("where", Given::Where(conditions)) => conditions
                    .into_iter()
                    .fold(record, |r, (column, value)| r.filter(column, value)),
                ("order_by", Given::OrderBy(entries)) => entries.into_iter().fold(record, LoadRecord::order_by),
                ("limit", Given::Count(n)) => record.limit(n),
                ("template", Given::Template(t)) => record.template(t),
                ("role", Given::Role(role)) => record.role(role),
                _ => record,
            };
        }
        Ok(Some(record))
    }
}
