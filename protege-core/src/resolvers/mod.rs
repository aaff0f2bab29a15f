//! The built-in resolvers.

mod correspondent_history;
mod load_file;
mod load_record;
mod load_text;
mod open_threads;
mod thread_history;
mod thread_summary;

pub use correspondent_history::CorrespondentHistory;
pub use load_file::LoadFile;
pub use load_record::{LoadRecord, LoadRecordFn, OrderBy, WhereValue};
pub use load_text::LoadText;
pub use open_threads::OpenThreads;
pub use thread_history::{ThreadHistory, Window};
pub use thread_summary::ThreadSummary;
