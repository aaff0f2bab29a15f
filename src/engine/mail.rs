//! The mail doors of the engine: one raw message ([`Engine::ingest_mail`]) and files or
//! folders of them ([`Engine::import_eml`]), with the personas' addresses and trusted
//! authserv-ids gathered in one place.

use std::path::{Path, PathBuf};

use crate::db::{self, EmlOptions, EmlSummary, Ingested, Threading};
use protege_config::{PERSONA_FILE_MAX_BYTES, addresses_in};
use protege_core::Direction;

use super::{Engine, EngineError, EngineErrorKind, trace};

/// How [`Engine::import_eml`] imports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmlImport {
    /// Whose mail this is: messages from this persona's `addresses` may be outbound
    /// (`None`: the addresses of every persona in the folder, those of invalid files too).
    pub persona: Option<String>,
    /// The direction of every message (`None`: decided per message, see
    /// [`EmlOptions::direction`]).
    pub direction: Option<Direction>,
    /// Attachment data over this many bytes is not stored.
    pub max_attachment_bytes: u64,
    /// Who may join a thread (see [`Threading`]): the participant rule unless the files
    /// are an archive the operator trusts.
    pub threading: Threading,
}

impl Default for EmlImport {
    fn default() -> Self {
        Self {
            persona: None,
            direction: None,
            max_attachment_bytes: db::DEFAULT_MAX_ATTACHMENT_BYTES,
            threading: Threading::Participants,
        }
    }
}

/// What [`Engine::import_eml`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmlImported {
    /// The import's counts, failures and warnings.
    pub summary: EmlSummary,
    /// One warning per invalid persona file whose addresses were read anyway (or could not
    /// be): the direction of the mail it sent depends on them.
    pub persona_warnings: Vec<String>,
    /// The invalid persona files, as shown in the warnings (`` `personas/x.toml` ``).
    pub invalid_persona_files: Vec<String>,
}

/// The addresses an import counts as the personas' own and the authserv-ids it trusts.
struct Own {
    addresses: Vec<String>,
    trusted: Vec<String>,
    warnings: Vec<String>,
    invalid: Vec<String>,
}

impl Engine {
    /// Stores one raw RFC 5322 message, as `POST /v1/mail` does: the personas' addresses
    /// tell outbound mail, their `[mail] trusted_authserv_ids` and the engine's
    /// ([`EngineBuilder::trusted_authserv_ids`](super::EngineBuilder::trusted_authserv_ids))
    /// are trusted. `direction` `None` decides it per message (`auto`). Bytes that are not
    /// an email or a false outbound claim are [`EngineErrorKind::InvalidInput`]; a
    /// Message-ID stored for another message is [`EngineErrorKind::Conflict`].
    pub async fn ingest_mail(
        &self,
        raw: &[u8],
        direction: Option<Direction>,
    ) -> Result<Ingested, EngineError> {
        let span = trace::ingest_span(raw.len());
        let out = self.ingest_mail_untraced(raw, direction).await;
        match &out {
            Ok(ingested) if !span.is_disabled() => {
                span.record("protege.message_id", ingested.message_id.as_str());
                span.record("protege.thread_id", ingested.thread_id);
                span.record("protege.mail.direction", ingested.direction.as_str());
                span.record("protege.mail.stored", ingested.imported);
            }
            Ok(_) => {}
            Err(e) => trace::record_error(&span, e),
        }
        out
    }

    async fn ingest_mail_untraced(
        &self,
        raw: &[u8],
        direction: Option<Direction>,
    ) -> Result<Ingested, EngineError> {
        self.ingest_with_jobs(raw, direction, Some(self.job_rule()))
            .await
    }

    /// Stores one message fetched from `persona`'s `[inbox]` (§19), as
    /// [`ingest_mail`](Self::ingest_mail) with the direction decided per message: with
    /// `jobs`, an inbound message gets its job (for `persona` when no agent persona is in
    /// its To or Cc); without, none (a first sync's older mail, a re-read, the sent folder).
    pub async fn ingest_fetched(
        &self,
        raw: &[u8],
        persona: &str,
        jobs: bool,
    ) -> Result<Ingested, EngineError> {
        let span = trace::ingest_span(raw.len());
        let rule = jobs.then(|| {
            let mut rule = self.job_rule();
            rule.inbox = Some(persona.to_owned());
            rule
        });
        let out = self.ingest_with_jobs(raw, None, rule).await;
        if let Err(e) = &out {
            trace::record_error(&span, e);
        }
        out
    }

    async fn ingest_with_jobs(
        &self,
        raw: &[u8],
        direction: Option<Direction>,
        jobs: Option<db::JobRule>,
    ) -> Result<Ingested, EngineError> {
        let own = self.own(None);
        let mut options = EmlOptions::new(own.addresses, chrono::Utc::now());
        options.direction = direction;
        options.trusted_authserv_ids = own.trusted;
        options.jobs = jobs;
        let conn = self.db().await?;
        let jobs = options.jobs.is_some();
        let stored = db::ingest_eml(conn, raw, &options)
            .await
            .map_err(ingest_error)?;
        if jobs && stored.imported {
            self.inner.wake.jobs.notify_one();
        }
        Ok(stored)
    }

    /// Stores mail fetched from `persona`'s mailbox that makes no jobs (a first sync's
    /// older mail), as [`Engine::ingest_fetched`] stores each message but in one
    /// transaction when it can: each message's outcome, in order. `Err` only when the
    /// database cannot be reached.
    #[cfg(feature = "agent")]
    pub(crate) async fn ingest_fetched_batch(
        &self,
        raws: &[&[u8]],
    ) -> Result<Vec<Result<Ingested, EngineError>>, EngineError> {
        let own = self.own(None);
        let mut options = EmlOptions::new(own.addresses, chrono::Utc::now());
        options.trusted_authserv_ids = own.trusted;
        let conn = self.db().await?;
        let outcomes = db::ingest_eml_batch(conn, raws, &options)
            .await
            .map_err(ingest_error)?;
        Ok(outcomes
            .into_iter()
            .map(|o| o.map_err(ingest_error))
            .collect())
    }

    /// Imports the `.eml` and mbox files of `paths` (files or folders), as
    /// `protege db import-eml` does; see [`db::import_eml_paths`]. An unknown
    /// `options.persona` is [`EngineErrorKind::NotFound`].
    pub async fn import_eml(
        &self,
        paths: &[PathBuf],
        options: &EmlImport,
    ) -> Result<EmlImported, EngineError> {
        let span = trace::import_span(paths.len());
        let out = self.import_eml_untraced(paths, options).await;
        match &out {
            Ok(done) if !span.is_disabled() => {
                let summary = &done.summary;
                span.record("protege.mail.imported", trace::int(summary.imported));
                span.record("protege.mail.duplicates", trace::int(summary.duplicates));
                span.record("protege.mail.failed", trace::int(summary.failed.len()));
            }
            Ok(_) => {}
            Err(e) => trace::record_error(&span, e),
        }
        out
    }

    async fn import_eml_untraced(
        &self,
        paths: &[PathBuf],
        options: &EmlImport,
    ) -> Result<EmlImported, EngineError> {
        if let Some(name) = &options.persona {
            self.require_persona(name)?;
        }
        let own = self.own(options.persona.as_deref());
        let mut eml = EmlOptions::new(own.addresses, chrono::Utc::now());
        eml.max_attachment_bytes = options.max_attachment_bytes;
        eml.trusted_authserv_ids = own.trusted;
        eml.direction = options.direction;
        eml.threading = options.threading;
        let conn = self.db().await?;
        let summary = db::import_eml_paths(conn, paths, &eml).await?;
        Ok(EmlImported {
            summary,
            persona_warnings: own.warnings,
            invalid_persona_files: own.invalid,
        })
    }

    /// The addresses counted as the personas' own: `persona`'s, or those of every persona
    /// of the folder, including what can be read of the `addresses` of an invalid file (its
    /// replies keep their direction); with the trusted authserv-ids.
    fn own(&self, persona: Option<&str>) -> Own {
        let mut own = Own {
            addresses: Vec::new(),
            trusted: Vec::new(),
            warnings: Vec::new(),
            invalid: Vec::new(),
        };
        let personas = match persona {
            Some(name) => self.persona(name).into_iter().collect(),
            None => {
                let mut paths: Vec<&Path> = self.diagnostics().iter().map(|d| d.path()).collect();
                paths.dedup();
                for path in paths {
                    invalid_file_addresses(path, &mut own);
                }
                self.inner.set.personas()
            }
        };
        for p in personas {
            own.addresses.extend(p.info.addresses.iter().cloned());
            own.trusted
                .extend(p.info.mail.trusted_authserv_ids.iter().cloned());
        }
        own.trusted
            .extend(self.inner.trusted_authserv_ids.iter().cloned());
        own
    }
}

/// What can be read of the `addresses` of the invalid persona file at `path`, with the
/// warning that says so.
fn invalid_file_addresses(path: &Path, own: &mut Own) {
    let shown = format!("`{}`", path.display());
    let addresses = protege_core::read_regular_file(path, &shown, PERSONA_FILE_MAX_BYTES)
        .ok()
        .flatten()
        .map(|bytes| addresses_in(&String::from_utf8_lossy(&bytes)))
        .unwrap_or_default();
    own.warnings.push(if addresses.is_empty() {
        format!(
            "persona file {shown} is invalid and no address could be read from it: mail it sent is imported as inbound"
        )
    } else {
        let list: Vec<String> = addresses.iter().map(|a| format!("`{a}`")).collect();
        format!(
            "persona file {shown} is invalid; its addresses {} still count as persona addresses",
            list.join(", ")
        )
    });
    own.invalid.push(shown);
    own.addresses.extend(addresses);
}

/// The engine's error of a store error of [`db::ingest_eml`]: bytes that are not an email
/// `InvalidInput`, a Message-ID conflict `Conflict`, anything else `Unavailable`.
fn ingest_error(e: protege_core::Error) -> EngineError {
    let kind = match e.kind() {
        protege_core::ErrorKind::InvalidInput => EngineErrorKind::InvalidInput,
        protege_core::ErrorKind::Conflict => EngineErrorKind::Conflict,
        _ => EngineErrorKind::Unavailable,
    };
    EngineError::from(e).with_kind(kind)
}
