//! The options of a custom resolver, deserialised with serde from its entry's table.
//!
//! Tables and arrays are walked here, so the errors serde's derives raise for an unknown or
//! a missing field arrive as data (the field's name, the valid ones) on [`OptionError`],
//! which composes the message; every other value is read by `toml`'s own deserializer.

use std::fmt;
use std::ops::Range;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use crate::diagnostic::suggestion;

/// Deserialises `T` from `table` (an entry's keys other than `use`), written at `span`.
pub(crate) fn deserialize<T: de::DeserializeOwned>(
    table: DeTable<'_>,
    span: Range<usize>,
) -> Result<T, OptionError> {
    T::deserialize(SpannedValue(Spanned::new(span, DeValue::Table(table))))
}

/// What went wrong reading a custom resolver's options, and where.
#[derive(Debug)]
pub(crate) struct OptionError {
    problem: Problem,
    span: Option<Range<usize>>,
}

#[derive(Debug)]
enum Problem {
    UnknownField {
        field: String,
        expected: &'static [&'static str],
    },
    MissingField {
        field: &'static str,
    },
    Other {
        message: String,
    },
}

impl OptionError {
    /// Where the problem is in the file, when known.
    pub(crate) fn span(&self) -> Option<Range<usize>> {
        self.span.clone()
    }

    /// The problem as a message about the options of `resolver`.
    pub(crate) fn message(&self, resolver: &str) -> String {
        match &self.problem {
            Problem::UnknownField { field, expected } => {
                let hint = suggestion(field, expected.iter().copied());
                format!("unknown option `{field}` for `{resolver}`{hint}")
            }
            Problem::MissingField { field } => {
                format!("`{resolver}` needs the option `{field}`")
            }
            Problem::Other { message } => {
                let message = message.trim_end_matches('\n').trim_end_matches('.');
                format!("invalid options for `{resolver}`: {message}")
            }
        }
    }

    fn or_span(mut self, span: Range<usize>) -> Self {
        self.span.get_or_insert(span);
        self
    }
}

impl From<toml::de::Error> for OptionError {
    fn from(e: toml::de::Error) -> Self {
        Self {
            problem: Problem::Other {
                message: e.message().to_owned(),
            },
            span: e.span(),
        }
    }
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            Problem::UnknownField { field, .. } => write!(f, "unknown field `{field}`"),
            Problem::MissingField { field } => write!(f, "missing field `{field}`"),
            Problem::Other { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for OptionError {}

impl de::Error for OptionError {
    fn custom<M: fmt::Display>(message: M) -> Self {
        Self {
            problem: Problem::Other {
                message: message.to_string(),
            },
            span: None,
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self {
            problem: Problem::UnknownField {
                field: field.to_owned(),
                expected,
            },
            span: None,
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Self {
            problem: Problem::MissingField { field },
            span: None,
        }
    }
}

/// A value of the entry: tables and arrays are walked here, anything else is `toml`'s.
struct SpannedValue<'i>(Spanned<DeValue<'i>>);

impl<'i> SpannedValue<'i> {
    /// The same request answered by `toml`'s deserializer.
    fn toml(self) -> ValueDeserializer<'i> {
        ValueDeserializer::from(self.0)
    }
}

impl<'de> Deserializer<'de> for SpannedValue<'de> {
    type Error = OptionError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, OptionError> {
        let span = self.0.span();
        match self.0.into_inner() {
            DeValue::Table(table) => visitor.visit_map(Table {
                entries: table.into_iter(),
                value: None,
            }),
            DeValue::Array(items) => visitor.visit_seq(Array {
                items: items.into_iter(),
            }),
            other => ValueDeserializer::from(Spanned::new(span.clone(), other))
                .deserialize_any(visitor)
                .map_err(OptionError::from),
        }
        .map_err(|e| e.or_span(span))
    }

    // `None` is a missing key: a present one is always `Some`, as in `toml`.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, OptionError> {
        let span = self.0.span();
        visitor.visit_some(self).map_err(|e| e.or_span(span))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, OptionError> {
        let span = self.0.span();
        visitor
            .visit_newtype_struct(self)
            .map_err(|e| e.or_span(span))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, OptionError> {
        // `toml`'s own types (`Spanned`, datetimes) have private names starting with `$__`.
        if name.starts_with("$__") {
            return Ok(self.toml().deserialize_struct(name, fields, visitor)?);
        }
        self.deserialize_any(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, OptionError> {
        Ok(self.toml().deserialize_enum(name, variants, visitor)?)
    }

    serde::forward_to_deserialize_any! {
        bool u8 u16 u32 u64 i8 i16 i32 i64 i128 u128 f32 f64 char str string seq
        bytes byte_buf map unit ignored_any unit_struct tuple_struct tuple identifier
    }
}

/// The keys and values of a table, in the file's order.
struct Table<'i> {
    entries: <DeTable<'i> as IntoIterator>::IntoIter,
    value: Option<Spanned<DeValue<'i>>>,
}

impl<'de> MapAccess<'de> for Table<'de> {
    type Error = OptionError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, OptionError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let span = key.span();
        let name: &str = key.get_ref();
        seed.deserialize(StrDeserializer::<OptionError>::new(name))
            .map(Some)
            .map_err(|e| e.or_span(span))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, OptionError> {
        match self.value.take() {
            Some(value) => seed.deserialize(SpannedValue(value)),
            None => Err(de::Error::custom("a value asked for before its key")),
        }
    }
}

/// The items of an array.
struct Array<'i> {
    items: std::vec::IntoIter<Spanned<DeValue<'i>>>,
}

impl<'de> SeqAccess<'de> for Array<'de> {
    type Error = OptionError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, OptionError> {
        match self.items.next() {
            Some(item) => seed.deserialize(SpannedValue(item)).map(Some),
            None => Ok(None),
        }
    }
}
