//! Well-formedness of a [`Request`]: the tool-pairing rules.

use std::collections::HashSet;

use crate::error::{Error, ErrorKind, Result};
use crate::message::{Request, Role};

impl Request {
    /// Checks the well-formedness rules and returns the first violation.
    ///
    /// The rules: `tool_calls` only on assistant messages; `tool_call_id` only, and
    /// always, on tool messages; `is_error` only on tool messages; every tool message sits in the contiguous block right
    /// after the assistant message whose calls contain its id; every call is answered
    /// exactly once. The error names the message index and the rule; nothing is repaired.
    pub fn validate(&self) -> Result<()> {
        match self.violations().into_iter().next() {
            None => Ok(()),
            Some(problem) => Err(Error::new(ErrorKind::InvalidRequest, problem)),
        }
    }

    /// Every violation of the well-formedness rules, one sentence each, in message order.
    pub fn violations(&self) -> Vec<String> {
        let mut problems = Vec::new();
        // The open block: index of the assistant message, its call ids, the ids answered.
        let mut open: Option<(usize, Vec<&str>, HashSet<&str>)> = None;

        let close = |open: &mut Option<(usize, Vec<&str>, HashSet<&str>)>,
                     problems: &mut Vec<String>| {
            if let Some((at, calls, answered)) = open.take() {
                for id in calls {
                    if !answered.contains(id) {
                        problems.push(format!(
                            "message {at}: tool call `{id}` is never answered by a tool message right after it"
                        ));
                    }
                }
            }
        };

        for (index, m) in self.messages.iter().enumerate() {
            if !m.tool_calls.is_empty() && m.role != Role::Assistant {
                problems.push(format!(
                    "message {index}: `tool_calls` is only allowed on assistant messages, not on a {} message",
                    m.role
                ));
            }
            if m.role != Role::Tool && m.tool_call_id.is_some() {
                problems.push(format!(
                    "message {index}: `tool_call_id` is only allowed on tool messages, not on a {} message",
                    m.role
                ));
            }
            if m.role != Role::Tool && m.is_error {
                problems.push(format!(
                    "message {index}: `is_error` is only allowed on tool messages, not on a {} message",
                    m.role
                ));
            }
            if m.role == Role::Tool {
                let Some(id) = m.tool_call_id.as_deref() else {
                    problems.push(format!(
                        "message {index}: a tool message must have a `tool_call_id`"
                    ));
                    continue;
                };
                match open.as_mut() {
                    None => problems.push(format!(
                        "message {index}: tool message `{id}` does not follow an assistant message with tool calls"
                    )),
                    Some((at, calls, answered)) => {
                        if !calls.contains(&id) {
                            problems.push(format!(
                                "message {index}: tool message answers unknown call `{id}` (not among the calls of message {at})"
                            ));
                        } else if !answered.insert(id) {
                            problems.push(format!(
                                "message {index}: tool call `{id}` is answered more than once"
                            ));
                        }
                    }
                }
                continue;
            }
            close(&mut open, &mut problems);
            if m.role == Role::Assistant && !m.tool_calls.is_empty() {
                let mut seen = HashSet::new();
                for call in &m.tool_calls {
                    if !seen.insert(call.id.as_str()) {
                        problems.push(format!(
                            "message {index}: tool call id `{}` is used twice",
                            call.id
                        ));
                    }
                }
                open = Some((
                    index,
                    m.tool_calls.iter().map(|c| c.id.as_str()).collect(),
                    HashSet::new(),
                ));
            }
        }
        close(&mut open, &mut problems);
        problems
    }
}
