//! The MCP servers of the agent's personas (§17 "Tools"): each `mcp` entry of a persona is
//! connected and its tools listed when the agent first needs the persona, again when the
//! persona's file changes (the entry, or the token its `token_env` names), and, for a server
//! that was down, at most every [`RETRY_DOWN`] while jobs of the persona run.
//!
//! A server that cannot be reached leaves the persona loaded with that entry's tools
//! unavailable: runs are not offered them, the log says why, and `/readyz` reports the entry
//! `down` with the reason. A listed tool whose name is already taken — by a `[[tools]]` entry
//! of the persona or by a tool of an earlier `mcp` entry — is the load error of §17: the
//! later entry is `down` with a sentence naming both sources, and none of its tools is
//! offered, so the model never sees two tools of one name.
//!
//! A candidate persona (`POST /v1/diff`) never reaches this module: only the agent's worker
//! and `protege check` connect.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use protege_agent::McpTools;
use protege_core::{McpTool, PersonaInfo, ToolDef, ToolRunner};
use serde::Serialize;

/// How long a server found down waits before a job of its persona tries it again.
pub(crate) const RETRY_DOWN: Duration = Duration::from_secs(30);

/// Reads an environment variable.
pub(crate) type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The MCP connections of every persona the agent has run, by persona name.
#[derive(Default)]
pub(crate) struct McpCatalog {
    personas: RwLock<HashMap<String, Arc<PersonaMcp>>>,
    /// Held while a persona's entries are connected, so that two workers never open the
    /// same server twice.
    refresh: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for McpCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .personas
            .read()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("McpCatalog")
            .field("personas", &names)
            .finish_non_exhaustive()
    }
}

/// The `mcp` entries of one persona, in file order.
#[derive(Debug, Default)]
pub struct PersonaMcp {
    entries: Vec<McpEntry>,
}

/// One `mcp` entry: its server, and its tools or why it has none.
#[derive(Debug)]
struct McpEntry {
    config: McpTool,
    /// The value of `token_env` it was connected with (compared, never shown).
    token: Option<String>,
    approval: bool,
    server: String,
    state: Result<Arc<McpTools>, String>,
    /// Whether it is down because a tool's name was taken (a load error), not because the
    /// server could not be reached.
    clash: bool,
    /// When it was last connected or tried.
    checked: Instant,
}

/// How one `mcp` entry stands, as `/readyz` and `protege check` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpStatus {
    /// The server: its URL without credentials or query, or its command.
    pub server: String,
    /// `up` or `down`.
    pub state: &'static str,
    /// Why it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tools offered, by name.
    pub tools: Vec<String>,
    /// The tools listed but not offered, each with its reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The descriptions of the tools offered, in the order of `tools`: what the model reads.
    #[serde(skip)]
    pub descriptions: Vec<String>,
    /// Whether it is down because one of its tools has the name of another tool of the
    /// persona: a load error, where an unreachable server is not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clash: bool,
}

impl PersonaMcp {
    /// The tools every entry that is up offers, in file order then the server's order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolDef> {
        self.up().flat_map(|(_, tools)| tools.tools().iter())
    }

    /// The connection offering the tool `name`, and whether its calls wait for a person.
    pub(crate) fn offering(&self, name: &str) -> Option<(&Arc<McpTools>, bool, &McpTool)> {
        self.entries.iter().find_map(|e| match &e.state {
            Ok(tools) if tools.offers(name) => Some((tools, e.approval, &e.config)),
            _ => None,
        })
    }

    /// Whether an entry is down and was last tried longer than [`RETRY_DOWN`] ago.
    fn stale(&self, now: Instant) -> bool {
        self.entries
            .iter()
            .any(|e| e.state.is_err() && now.duration_since(e.checked) >= RETRY_DOWN)
    }

    /// How each entry stands.
    pub fn status(&self) -> Vec<McpStatus> {
        self.entries
            .iter()
            .map(|e| match &e.state {
                Ok(tools) => McpStatus {
                    server: e.server.clone(),
                    state: "up",
                    reason: None,
                    tools: tools.tools().iter().map(|t| t.name.clone()).collect(),
                    left_out: tools.left_out().iter().map(ToString::to_string).collect(),
                    descriptions: tools
                        .tools()
                        .iter()
                        .map(|t| t.description.clone())
                        .collect(),
                    clash: false,
                },
                Err(reason) => McpStatus {
                    server: e.server.clone(),
                    state: "down",
                    reason: Some(reason.clone()),
                    tools: Vec::new(),
                    left_out: Vec::new(),
                    descriptions: Vec::new(),
                    clash: e.clash,
                },
            })
            .collect()
    }

    fn up(&self) -> impl Iterator<Item = (&McpEntry, &Arc<McpTools>)> {
        self.entries
            .iter()
            .filter_map(|e| e.state.as_ref().ok().map(|t| (e, t)))
    }

    /// Whether `entries` (with their tokens) are the ones this was connected for.
    fn same_entries(&self, wanted: &[(McpTool, bool, Option<String>)]) -> bool {
        self.entries.len() == wanted.len()
            && self
                .entries
                .iter()
                .zip(wanted)
                .all(|(e, (config, approval, token))| {
                    e.config == *config && e.approval == *approval && e.token == *token
                })
    }
}

/// The `mcp` entries of `info`, each with its `approval` and the value of its `token_env`.
pub(crate) fn wanted(info: &PersonaInfo, env: &EnvReader) -> Vec<(McpTool, bool, Option<String>)> {
    info.tool_runners
        .iter()
        .filter_map(|t| match &t.runner {
            ToolRunner::Mcp(mcp) => {
                let token = mcp.token_env.as_deref().and_then(|v| env(v));
                Some((mcp.clone(), t.approval, token))
            }
            _ => None,
        })
        .collect()
}

impl McpCatalog {
    /// The connections of persona `name` as last made, if any.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<PersonaMcp>> {
        self.personas.read().ok()?.get(name).cloned()
    }

    /// Every persona's entries, by persona name, sorted.
    pub(crate) fn status(&self) -> Vec<(String, Vec<McpStatus>)> {
        let Ok(personas) = self.personas.read() else {
            return Vec::new();
        };
        let mut out: Vec<(String, Vec<McpStatus>)> = personas
            .iter()
            .map(|(name, mcp)| (name.clone(), mcp.status()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The connections of `info`'s persona, made now when it has none, when its entries
    /// changed (a reload), or when a server found down may be tried again. `None` for a
    /// persona without `mcp` entries.
    pub(crate) async fn ensure(
        &self,
        info: &PersonaInfo,
        env: &EnvReader,
        http: &reqwest::Client,
    ) -> Option<Arc<PersonaMcp>> {
        let wanted = wanted(info, env);
        if wanted.is_empty() {
            if let Ok(mut personas) = self.personas.write() {
                personas.remove(&info.name);
            }
            return None;
        }
        let fresh = |current: &Option<Arc<PersonaMcp>>| {
            current
                .as_ref()
                .filter(|c| c.same_entries(&wanted) && !c.stale(Instant::now()))
                .cloned()
        };
        let current = self.get(&info.name);
        if let Some(current) = fresh(&current) {
            return Some(current);
        }
        let _refresh = self.refresh.lock().await;
        // Another worker may have connected while this one waited.
        let current = self.get(&info.name);
        if let Some(current) = fresh(&current) {
            return Some(current);
        }
        let built = Arc::new(connect(info, wanted, current.as_deref(), http).await);
        log(&info.name, &built);
        if let Ok(mut personas) = self.personas.write() {
            personas.insert(info.name.clone(), built.clone());
        }
        Some(built)
    }
}

/// Connects the entries of `wanted` (keeping the live connections of `current` whose entry
/// did not change) and marks the entries whose tools clash with an earlier name.
pub(crate) async fn connect(
    info: &PersonaInfo,
    wanted: Vec<(McpTool, bool, Option<String>)>,
    current: Option<&PersonaMcp>,
    http: &reqwest::Client,
) -> PersonaMcp {
    let now = Instant::now();
    let entries = futures::future::join_all(wanted.into_iter().map(|(config, approval, token)| {
        let kept = current.and_then(|c| {
            c.entries.iter().find(|e| {
                e.config == config && e.approval == approval && e.token == token && e.state.is_ok()
            })
        });
        let kept = kept.map(|e| (e.state.clone(), e.checked));
        async move {
            let server = protege_agent::server_label(&config.server);
            let (state, checked) = match kept {
                Some(kept) => kept,
                None => {
                    let state = McpTools::connect(&config, token.clone(), http.clone())
                        .await
                        .map(Arc::new)
                        .map_err(|e| e.to_string());
                    (state, now)
                }
            };
            McpEntry {
                config,
                token,
                approval,
                server,
                state,
                clash: false,
                checked,
            }
        }
    }))
    .await;
    let mut out = PersonaMcp { entries };
    mark_clashes(info, &mut out);
    out
}

/// Marks `down` each entry offering a tool whose name a `[[tools]]` entry or an earlier
/// `mcp` entry already has, with a sentence naming both sources.
fn mark_clashes(info: &PersonaInfo, mcp: &mut PersonaMcp) {
    let mut taken: HashMap<String, String> = info
        .tools
        .iter()
        .map(|t| (t.name.clone(), "a `[[tools]]` entry".to_owned()))
        .collect();
    for entry in &mut mcp.entries {
        let Ok(tools) = &entry.state else { continue };
        let clash = tools.tools().iter().find_map(|t| {
            taken
                .get(&t.name)
                .map(|other| (t.name.clone(), other.clone()))
        });
        match clash {
            Some((name, other)) => {
                entry.clash = true;
                entry.state = Err(format!(
                    "its tool `{name}` has the name of a tool of {other}: rename one of them or narrow `allow`"
                ));
            }
            None => {
                for t in tools.tools() {
                    taken.insert(
                        t.name.clone(),
                        format!("the MCP server `{}`", entry.server.escape_debug()),
                    );
                }
            }
        }
    }
}

/// Logs what the entries of `persona` offer, so the operator reads what the model will.
fn log(persona: &str, mcp: &PersonaMcp) {
    for entry in &mcp.entries {
        match &entry.state {
            Ok(tools) => {
                for t in tools.tools() {
                    tracing::info!(
                        persona,
                        server = %entry.server,
                        tool = %t.name,
                        description = %t.description,
                        "MCP tool offered"
                    );
                }
                for left in tools.left_out() {
                    tracing::warn!(persona, server = %entry.server, "{left}");
                }
            }
            Err(reason) => {
                tracing::error!(
                    persona,
                    server = %entry.server,
                    "MCP server down, its tools are not offered: {reason}"
                );
            }
        }
    }
}
