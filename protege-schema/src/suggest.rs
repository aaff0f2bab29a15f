//! "Did you mean": the one rule for a near miss, used by the TOML reader and the macro.

/// The closest of `candidates` to `name`, when it is close enough to be a likely typo:
/// a Damerau-Levenshtein distance, ignoring case, of at most a third of the candidate's
/// length (at least 1). The first of several equally close candidates wins.
///
/// ```
/// use protege_schema::did_you_mean;
/// let names = ["LoadText", "LoadFile", "LoadRecord", "ThreadHistory"];
/// assert_eq!(did_you_mean("ThreadHistroy", names), Some("ThreadHistory"));
/// assert_eq!(did_you_mean("loadtext", names), Some("LoadText"));
/// assert_eq!(did_you_mean("Banana", names), None);
/// ```
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = strsim::damerau_levenshtein(&lower, &c.to_lowercase());
        let limit = (c.chars().count() / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `` , did you mean `x`?`` for the closest candidate, or an empty string.
///
/// ```
/// assert_eq!(protege_schema::suggestion("stabel", ["sliding", "stable"]), ", did you mean `stable`?");
/// assert_eq!(protege_schema::suggestion("fixed", ["sliding", "stable"]), "");
/// ```
pub fn suggestion<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(name, candidates) {
        Some(c) => format!(", did you mean `{c}`?"),
        None => String::new(),
    }
}
