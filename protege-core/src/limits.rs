//! The budget of a template render: fuel and an output cap, with their defaults.

/// The fuel of a render unless configured otherwise: 5,000,000 (minijinja charges about
/// one per instruction and one per 64 bytes of data it creates).
pub(crate) const DEFAULT_TEMPLATE_FUEL: u64 = 5_000_000;

/// The output cap of a render unless configured otherwise: 1 MiB of text.
pub(crate) const DEFAULT_TEMPLATE_OUTPUT_BYTES: usize = 1 << 20;

/// The budget of one render: exceeding either part fails the render with an error naming
/// the template, instead of hanging or exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateLimits {
    /// minijinja fuel: instructions executed plus data created.
    pub fuel: u64,
    /// The most bytes of text the render may write.
    pub output_bytes: usize,
}

impl Default for TemplateLimits {
    fn default() -> Self {
        Self {
            fuel: DEFAULT_TEMPLATE_FUEL,
            output_bytes: DEFAULT_TEMPLATE_OUTPUT_BYTES,
        }
    }
}
