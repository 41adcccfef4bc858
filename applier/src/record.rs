//! The applied record, `ROOT/var/lib/mesh/applied.json`: which node this is, which plan
//! was applied, and every shape mesh may have put on the host with its digest and what
//! was done to it. Withdrawal is computed from it. Must stay readable after a crash:
//! it is only ever replaced atomically and durably.

use std::path::PathBuf;

use plan::{Kind, Source};
use serde_json::{Value, json};

use crate::codes::Code;
use crate::host::{Host, STATE_DIRECTORY};
use crate::problem::{Origin, Problem};

pub const RECORD_FORMAT: &str = "mesh-applied/1";

/// The record's node path.
pub const RECORD_PATH: &str = "/var/lib/mesh/applied.json";

/// The state of the last apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordState {
    /// Every shape of `plan` was made true.
    Applied,
    /// It stopped at a failed shape; the entries say what was done.
    Failed,
    /// Written before changing anything; if it is still there, the apply was killed.
    /// Every entry is then something mesh may have put on the host.
    Interrupted,
}

impl RecordState {
    pub fn name(self) -> &'static str {
        match self {
            RecordState::Applied => "applied",
            RecordState::Failed => "failed",
            RecordState::Interrupted => "interrupted",
        }
    }

    fn from_name(name: &str) -> Option<RecordState> {
        [
            RecordState::Applied,
            RecordState::Failed,
            RecordState::Interrupted,
        ]
        .into_iter()
        .find(|state| state.name() == name)
    }
}

/// One shape mesh may have on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordEntry {
    pub kind: Kind,
    pub identity: String,
    /// The shape digest known to be on the host; `None` when unknown (interrupted, failed).
    pub digest: Option<String>,
    pub module: Option<String>,
    pub source: Option<Source>,
    /// What was done: `created`, `changed`, `unchanged`, `failed`, `pending` (may have
    /// been started), `previous` (on the host from an earlier apply, not reached).
    pub result: String,
}

impl RecordEntry {
    pub fn origin(&self) -> Origin {
        Origin {
            kind: self.kind,
            identity: self.identity.clone(),
            module: self.module.clone(),
            source: self.source.clone(),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "kind": self.kind.name(),
            "identity": self.identity,
            "digest": self.digest,
            "module": self.module,
            "source": self.source.as_ref().map(|source| json!({"file": source.file, "line": source.line, "column": source.column})),
            "result": self.result,
        })
    }

    fn from_json(value: &Value) -> Option<RecordEntry> {
        Some(RecordEntry {
            kind: Kind::from_name(value.get("kind")?.as_str()?)?,
            identity: value.get("identity")?.as_str()?.to_string(),
            digest: value
                .get("digest")
                .and_then(Value::as_str)
                .map(str::to_string),
            module: value
                .get("module")
                .and_then(Value::as_str)
                .map(str::to_string),
            source: value
                .get("source")
                .and_then(|source| serde_json::from_value(source.clone()).ok()),
            result: value.get("result")?.as_str()?.to_string(),
        })
    }
}

/// What `applied.json` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub node: String,
    pub plan: String,
    pub state: RecordState,
    /// Everything mesh may have on the host, in plan order.
    pub shapes: Vec<RecordEntry>,
    /// What the apply that wrote this record withdrew or kept.
    pub withdrawn: Vec<RecordEntry>,
    /// The step that failed when the failure belongs to no shape (a flush, an account
    /// reload); no shape is blamed for it.
    pub failed_step: Option<String>,
}

impl Record {
    /// Where the record is, for messages.
    pub fn path(host: &Host) -> PathBuf {
        host.path(RECORD_PATH)
    }

    /// The record on `host`, if there is one (read through the confined layer).
    pub fn load(host: &Host) -> Result<Option<Record>, Problem> {
        let path = Record::path(host);
        let bytes = match host.fs().read(RECORD_PATH) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(error) => return Err(unreadable(&path, &error.to_string())),
        };
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|error| unreadable(&path, &error.to_string()))?;
        Record::from_json(&value)
            .map(Some)
            .ok_or_else(|| unreadable(&path, "it is not a `mesh-applied/1` record"))
    }

    fn from_json(value: &Value) -> Option<Record> {
        if value.get("format")?.as_str()? != RECORD_FORMAT {
            return None;
        }
        let entries = |key: &str| -> Option<Vec<RecordEntry>> {
            value
                .get(key)?
                .as_array()?
                .iter()
                .map(RecordEntry::from_json)
                .collect()
        };
        Some(Record {
            node: value.get("node")?.as_str()?.to_string(),
            plan: value.get("plan")?.as_str()?.to_string(),
            state: RecordState::from_name(value.get("state")?.as_str()?)?,
            shapes: entries("shapes")?,
            withdrawn: entries("withdrawn")?,
            failed_step: value
                .get("failed_step")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut value = json!({
            "format": RECORD_FORMAT,
            "node": self.node,
            "plan": self.plan,
            "state": self.state.name(),
            "shapes": self.shapes.iter().map(RecordEntry::to_json).collect::<Vec<_>>(),
            "withdrawn": self.withdrawn.iter().map(RecordEntry::to_json).collect::<Vec<_>>(),
        });
        if let (Some(step), Value::Object(object)) = (&self.failed_step, &mut value) {
            object.insert("failed_step".to_string(), json!(step));
        }
        let mut bytes = serde_json::to_vec_pretty(&value).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Replaces the record atomically and durably.
    pub fn store(&self, host: &Host) -> Result<(), Problem> {
        let path = Record::path(host);
        host.fs()
            .create_directories(STATE_DIRECTORY, 0o755)
            .and_then(|_| host.fs().write_now(RECORD_PATH, &self.to_json_bytes(), 0o644))
            .map_err(|error| {
            Problem::new(
                Code::RecordFailed,
                format!("cannot write the record `{}`: {error}", path.display()),
                "make `/var/lib/mesh` a writable directory of the root, reached without leaving it, and apply again",
            )
        })
    }

    /// The entry for a shape, if mesh may have it on the host.
    pub fn entry(&self, kind: Kind, identity: &str) -> Option<&RecordEntry> {
        self.shapes
            .iter()
            .find(|entry| entry.kind == kind && entry.identity == identity)
    }
}

fn unreadable(path: &std::path::Path, reason: &str) -> Problem {
    Problem::new(
        Code::RecordFailed,
        format!("cannot read the record `{}`: {reason}", path.display()),
        "the record says what mesh put on this host; restore it, or move it away to start over (nothing will be withdrawn)",
    )
}
