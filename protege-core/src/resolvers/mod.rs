//! The built-in resolvers.
//!
//! Each is written once, in its own file: the resolver, its builder and how a persona
//! file's options build it ([`BuiltinResolver`]); its declaration (name, options, the
//! variable its template sees) is in `protege-schema`, which the `resolvers!` macro reads
//! at compile time. One line of the list below registers it for persona files.

mod given;

pub use given::{BuiltinReader, BuiltinResolver, Given, GivenOptions, Refused};

/// Declares each built-in's module (`module::Type`, one line each), re-exports what the
/// module makes public and lists the type's reader in [`BUILTIN_READERS`].
macro_rules! builtins {
    ($($module:ident::$resolver:ident),* $(,)?) => {
        $(
            mod $module;
            pub use $module::*;
        )*

        /// The reader of every built-in, for persona files: a declaration of
        /// `protege_schema::BUILTINS` without one here fails the registry's test.
        pub const BUILTIN_READERS: &[BuiltinReader] = &[$(BuiltinReader::of::<$module::$resolver>()),*];
    };
}

builtins! {
    load_text::LoadText,
    load_file::LoadFile,
    load_record::LoadRecord,
    thread_history::ThreadHistory,
    thread_summary::ThreadSummary,
    correspondent_history::CorrespondentHistory,
    open_threads::OpenThreads,
}
