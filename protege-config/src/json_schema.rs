//! The JSON Schema (draft 2020-12) of a persona file, generated from the tables the reader
//! checks against: the keys of `protege-schema`'s persona tables and the options of its
//! built-in resolvers, with the resolvers of a [`Registry`].
//!
//! An editor reads it through taplo's `#:schema` directive (Even Better TOML in VS Code).
//! It says what the reader says of a key's place and type, of required keys, of the values
//! a setting takes and of numbers' ranges; the reader alone checks what JSON Schema cannot
//! say (templates and the names they use, duplicate names, a cron expression's fields, which
//! time zones exist).

use protege_schema::{
    Applies, BUILTINS, Builtin, Default, Key, Kind, OptionSpec, ROLES, Shape, TOOL_RUNNERS, WINDOWS,
};
use serde_json::{Map, Value, json};

use crate::registry::Registry;

/// The pattern of a table or column name.
const IDENTIFIER: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// The pattern of a duration: a positive integer and a unit.
const DURATION: &str = "^0*[1-9][0-9]*[smhd]$";

/// The pattern of a tool's name.
const TOOL_NAME: &str = "^[A-Za-z0-9_-]{1,64}$";

/// The host and port of a URL: a name or an IPv4 address, or an IPv6 address in brackets.
const HOST_PORT: &str = "([A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?";

/// An IMAP folder's name: printable ASCII, not starting with a space, no `"` or `\`.
const FOLDER: &str = "[!#-\\[\\]-~][ !#-\\[\\]-~]*";

/// What may follow the host and port of a URL: a path and a query, no fragment.
const PATH_QUERY: &str = "([/?][^\\s#]*)?";

impl Registry {
    /// The JSON Schema (draft 2020-12) of a persona file whose chains may name this
    /// registry's resolvers: the built-ins with their options, and the registered ones,
    /// whose options it leaves open (their `serde` types say what they take).
    ///
    /// ```
    /// let schema = protege::config::Registry::new().json_schema();
    /// assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    /// assert_eq!(schema["properties"]["mail"]["properties"]["quoted"]["default"], "keep");
    /// ```
    pub fn json_schema(&self) -> Value {
        let mut schema = Map::new();
        schema.insert(
            "$schema".into(),
            "https://json-schema.org/draft/2020-12/schema".into(),
        );
        schema.insert("title".into(), "protege persona".into());
        schema.insert(
            "description".into(),
            "A protege persona file: who the agent is, its model and limits, and the resolver chains that assemble its requests.".into(),
        );
        let top = table(protege_schema::PERSONA, self);
        schema.extend(top.as_object().cloned().unwrap_or_default());
        let mut defs = Map::new();
        defs.insert("resolver".into(), self.resolver_entry());
        schema.insert("$defs".into(), Value::Object(defs));
        Value::Object(schema)
    }

    /// A resolver entry: `use` names a resolver; a built-in's entry takes its options.
    fn resolver_entry(&self) -> Value {
        let mut names: Vec<Value> = Vec::new();
        let mut cases: Vec<Value> = Vec::new();
        for name in self.names() {
            let builtin = BUILTINS.iter().find(|b| b.name == name);
            let mut spelled = vec![Value::from(name)];
            if let Some(b) = builtin {
                spelled.extend(b.aliases.iter().map(|a| Value::from(*a)));
            }
            names.extend(spelled.iter().cloned());
            let then = match builtin {
                Some(b) => builtin_options(b),
                None => {
                    json!({ "description": format!("the options of `{name}`, a resolver of this application") })
                }
            };
            cases.push(json!({
                "if": { "properties": { "use": { "enum": spelled } }, "required": ["use"] },
                "then": then,
            }));
        }
        json!({
            "type": "object",
            "description": "A resolver of the chain: `use` names it, the other keys are its options.",
            "required": ["use"],
            "properties": {
                "use": { "description": "the resolver", "enum": names },
            },
            "allOf": cases,
        })
    }
}

/// The keys of a built-in's TOML entry, none other allowed.
fn builtin_options(b: &Builtin) -> Value {
    let mut properties = Map::new();
    properties.insert("use".into(), json!({}));
    let mut required = Vec::new();
    for o in b.options {
        if o.toml.is_none() || o.applies == Applies::Loader {
            continue;
        }
        if o.default == Default::Required {
            required.push(Value::from(o.name));
        }
        properties.insert(o.name.into(), option(o));
    }
    let mut out = json!({
        "description": format!("the options of `{}`", b.name),
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        out["required"] = Value::Array(required);
    }
    out
}

/// The schema of one option of a built-in.
fn option(o: &OptionSpec) -> Value {
    let mut value = match o.kind {
        Kind::Template | Kind::Path => json!({ "type": "string" }),
        Kind::Role => json!({ "enum": ROLES }),
        Kind::Table => json!({ "type": "string", "pattern": IDENTIFIER }),
        Kind::Where => json!({
            "type": "object",
            "propertyNames": { "pattern": IDENTIFIER },
            "additionalProperties": { "type": ["string", "integer", "number", "boolean"] },
        }),
        Kind::OrderBy => {
            let entry = json!({
                "type": "string",
                "pattern": "^\\s*[A-Za-z_][A-Za-z0-9_]*(\\s+([Aa][Ss][Cc]|[Dd][Ee][Ss][Cc]))?\\s*$",
            });
            json!({ "anyOf": [entry, { "type": "array", "items": entry }] })
        }
        Kind::Count => json!({ "type": "integer", "minimum": 0 }),
        Kind::CountOrAll => json!({
            "anyOf": [{ "type": "integer", "minimum": 0 }, { "const": false }],
        }),
        Kind::Step => json!({ "type": "integer", "minimum": 1 }),
        Kind::Window => json!({ "enum": WINDOWS }),
        Kind::Quoted => json!({ "enum": protege_schema::QUOTED }),
        Kind::Flag => json!({ "type": "boolean" }),
        Kind::Duration => json!({ "type": "string", "pattern": DURATION }),
        Kind::Closure => json!({}),
    };
    describe(&mut value, o.doc, o.default);
    value
}

/// The schema of a table with `keys`, none other allowed.
fn table(keys: &[Key], registry: &Registry) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for k in keys {
        if k.default == Default::Required {
            required.push(Value::from(k.name));
        }
        let mut value = shape(k.shape, registry);
        describe(&mut value, k.doc, k.default);
        properties.insert(k.name.into(), value);
    }
    let mut out = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        out["required"] = Value::Array(required);
    }
    out
}

/// The schema of a value of `shape`.
fn shape(shape: Shape, registry: &Registry) -> Value {
    match shape {
        Shape::Text => json!({ "type": "string" }),
        Shape::NonBlank => json!({ "type": "string", "pattern": "\\S" }),
        Shape::OneOf(values) => json!({ "enum": values }),
        Shape::Positive { max } => json!({ "type": "integer", "minimum": 1, "maximum": max }),
        Shape::Flag => json!({ "type": "boolean" }),
        Shape::Price => json!({ "type": "number", "minimum": 0 }),
        Shape::Duration => json!({ "type": "string", "pattern": DURATION }),
        Shape::SmtpUrl => json!({
            "type": "string",
            "pattern": "^smtps?://([A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$",
        }),
        Shape::EnvVar => json!({ "type": "string", "pattern": IDENTIFIER }),
        Shape::ImapUrl => json!({
            "type": "string",
            "pattern": format!("^imaps?://{HOST_PORT}(/{FOLDER})?$"),
        }),
        Shape::Folder => json!({ "type": "string", "pattern": format!("^{FOLDER}$") }),
        Shape::InboxAfter => json!({
            "type": "string",
            "pattern": format!("^(seen|move:{FOLDER})$"),
        }),
        Shape::Date => json!({ "type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" }),
        Shape::HttpUrl => json!({
            "type": "string",
            "pattern": format!("^https?://{HOST_PORT}{PATH_QUERY}$"),
        }),
        Shape::ProviderUrl => json!({
            "type": "string",
            "pattern": format!(
                "^(https://{HOST_PORT}|http://([Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]|127(\\.[0-9]{{1,3}}){{3}}|\\[::1\\])(:[0-9]{{1,5}})?){PATH_QUERY}$"
            ),
        }),
        Shape::ToolNames => json!({
            "type": "array",
            "items": { "type": "string", "pattern": TOOL_NAME },
            "uniqueItems": true,
        }),
        Shape::ToolPatterns => json!({
            "type": "array",
            "minItems": 1,
            "items": { "type": "string", "pattern": "^[A-Za-z0-9_*-]+$" },
        }),
        Shape::Command => json!({
            "type": "array",
            "minItems": 1,
            "prefixItems": [{ "type": "string", "pattern": "\\S" }],
            "items": { "type": "string" },
        }),
        Shape::OneLine { max } => json!({
            "type": "string",
            "maxLength": max,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$",
            "allOf": [{ "pattern": "\\S" }],
        }),
        Shape::Addresses => json!({
            "type": "array",
            "items": { "type": "string", "pattern": "^\\s*\\S*@\\S*\\s*$" },
        }),
        Shape::AuthservIds => json!({
            "type": "array",
            "items": { "type": "string", "pattern": "^\\s*[^\\s;]+\\s*$" },
        }),
        Shape::AnyTable => json!({ "type": "object" }),
        Shape::Table(keys) => table(keys, registry),
        Shape::TableWithOne { keys, one } => {
            let mut out = table(keys, registry);
            let cases: Vec<Value> = one.iter().map(|k| json!({ "required": [k] })).collect();
            out["oneOf"] = Value::Array(cases);
            out
        }
        Shape::Tables(keys) => json!({ "type": "array", "items": table(keys, registry) }),
        Shape::Tools(keys) => json!({ "type": "array", "items": tool_entry(keys, registry) }),
        Shape::ToolName => json!({ "type": "string", "pattern": TOOL_NAME }),
        Shape::Cron => json!({ "type": "string", "pattern": "^\\s*\\S+(\\s+\\S+){4}\\s*$" }),
        Shape::TimeZone => json!({
            "type": "string",
            "pattern": "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$",
        }),
        Shape::ObjectSchema => json!({
            "type": "object",
            "required": ["type"],
            "properties": { "type": { "const": "object" } },
        }),
        Shape::Chain => json!({ "type": "array", "items": { "$ref": "#/$defs/resolver" } }),
    }
}

/// A `[[tools]]` entry: at most one runner; an entry without `mcp` or `builtin` declares
/// its tool, an `mcp` entry declares none, a `builtin` entry may only describe its own;
/// `approval` only with a runner.
fn tool_entry(keys: &[Key], registry: &Registry) -> Value {
    let has = |k: &str| json!({ "required": [k] });
    let mut pairs = Vec::new();
    for (i, a) in TOOL_RUNNERS.iter().enumerate() {
        for b in &TOOL_RUNNERS[i + 1..] {
            pairs.push(json!({ "required": [a, b] }));
        }
    }
    let runners: Vec<Value> = TOOL_RUNNERS.iter().map(|k| has(k)).collect();
    let mut out = table(keys, registry);
    out["allOf"] = json!([
        { "not": { "anyOf": pairs } },
        {
            "if": has("mcp"),
            "then": { "properties": { "name": false, "description": false, "input_schema": false } },
        },
        {
            "if": has("builtin"),
            "then": { "properties": { "name": false, "input_schema": false } },
        },
        {
            "if": { "not": { "anyOf": [has("mcp"), has("builtin")] } },
            "then": { "required": ["name", "description", "input_schema"] },
        },
        { "if": has("approval"), "then": { "anyOf": runners } },
    ]);
    out
}

/// Adds `doc` as the description and the default: as `default` when it is a value, in the
/// description's words when it is not.
fn describe(value: &mut Value, doc: &str, default: Default) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    let (description, default) = match default {
        Default::Required => (format!("{doc} (required)"), None),
        Default::Unset(what) => (format!("{doc} (default: {what})"), None),
        Default::Count(n) => (doc.to_owned(), Some(Value::from(n))),
        Default::Flag(b) => (doc.to_owned(), Some(Value::from(b))),
        Default::Word(w) | Default::Text(w) => (doc.to_owned(), Some(Value::from(w))),
    };
    object.insert("description".into(), description.into());
    if let Some(default) = default {
        object.insert("default".into(), default);
    }
}
