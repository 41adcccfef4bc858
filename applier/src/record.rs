//! The applied record, `ROOT/var/lib/mesh/applied.json`: which node this is, which plan
//! was applied, every shape mesh may have put on the host with its digest and what
//! was done to it, and the time of the newest plan applied (`newest_ms`, the mark
//! `crate::order` keeps). Withdrawal is computed from it. Must stay readable after a
//! crash: it is only ever replaced atomically and durably.

use std::path::PathBuf;

use plan::{Kind, Source};
use serde_json::Value;

use crate::codes::Code;
use crate::host::{Host, STATE_DIRECTORY};
use crate::problem::{Origin, Problem};

/// The most mesh reads of its own state files (the record, a generation): far more
/// than a plan of the largest size holds, and a bound on what a sparse file there
/// makes it read.
pub const STATE_LIMIT: u64 = 1 << 30;

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

    /// Writes the entry as the record's pretty JSON does (keys in sorted order), at
    /// `indent`, without building a JSON tree (a record has one entry per shape).
    fn write_json(&self, out: &mut Vec<u8>, indent: &str) {
        let inner = format!("{indent}  ");
        out.extend_from_slice(b"{\n");
        write_key(out, &inner, "digest");
        write_optional_string(out, self.digest.as_deref());
        out.extend_from_slice(b",\n");
        write_key(out, &inner, "identity");
        write_string(out, &self.identity);
        out.extend_from_slice(b",\n");
        write_key(out, &inner, "kind");
        write_string(out, self.kind.name());
        out.extend_from_slice(b",\n");
        write_key(out, &inner, "module");
        write_optional_string(out, self.module.as_deref());
        out.extend_from_slice(b",\n");
        write_key(out, &inner, "result");
        write_string(out, &self.result);
        out.extend_from_slice(b",\n");
        write_key(out, &inner, "source");
        match &self.source {
            Some(source) => {
                let deeper = format!("{inner}  ");
                out.extend_from_slice(b"{\n");
                write_key(out, &deeper, "column");
                out.extend_from_slice(source.column.to_string().as_bytes());
                out.extend_from_slice(b",\n");
                write_key(out, &deeper, "file");
                write_string(out, &source.file);
                out.extend_from_slice(b",\n");
                write_key(out, &deeper, "line");
                out.extend_from_slice(source.line.to_string().as_bytes());
                out.extend_from_slice(format!("\n{inner}}}").as_bytes());
            }
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(format!("\n{indent}}}").as_bytes());
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
    /// The high-water mark of the plans this node applied, in milliseconds since the
    /// Unix epoch (`crate::order`): a received plan published before it is refused.
    /// `None` in a record written before there was one (no mark: nothing refused).
    pub newest_ms: Option<u64>,
}

impl Record {
    /// Where the record is, for messages.
    pub fn path(host: &Host) -> PathBuf {
        host.path(RECORD_PATH)
    }

    /// The record on `host`, if there is one (read through the confined layer).
    pub fn load(host: &Host) -> Result<Option<Record>, Problem> {
        let path = Record::path(host);
        let bytes = match host.fs().read(RECORD_PATH, STATE_LIMIT) {
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
            // absent in older records; present, it must be a time
            newest_ms: match value.get("newest_ms") {
                None | Some(Value::Null) => None,
                Some(mark) => Some(mark.as_u64()?),
            },
        })
    }

    /// The record as pretty JSON, keys in sorted order (what `serde_json` prints for the
    /// same tree), written directly: building the tree cost a quarter of a first apply of
    /// 10,000 files.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 * (self.shapes.len() + self.withdrawn.len() + 1));
        out.extend_from_slice(b"{\n");
        if let Some(step) = &self.failed_step {
            write_key(&mut out, "  ", "failed_step");
            write_string(&mut out, step);
            out.extend_from_slice(b",\n");
        }
        write_key(&mut out, "  ", "format");
        write_string(&mut out, RECORD_FORMAT);
        out.extend_from_slice(b",\n");
        if let Some(mark) = self.newest_ms {
            write_key(&mut out, "  ", "newest_ms");
            out.extend_from_slice(mark.to_string().as_bytes());
            out.extend_from_slice(b",\n");
        }
        write_key(&mut out, "  ", "node");
        write_string(&mut out, &self.node);
        out.extend_from_slice(b",\n");
        write_key(&mut out, "  ", "plan");
        write_string(&mut out, &self.plan);
        out.extend_from_slice(b",\n");
        write_key(&mut out, "  ", "shapes");
        write_entries(&mut out, &self.shapes);
        out.extend_from_slice(b",\n");
        write_key(&mut out, "  ", "state");
        write_string(&mut out, self.state.name());
        out.extend_from_slice(b",\n");
        write_key(&mut out, "  ", "withdrawn");
        write_entries(&mut out, &self.withdrawn);
        out.extend_from_slice(b"\n}\n");
        out
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

fn write_string(out: &mut Vec<u8>, text: &str) {
    // a string always serializes; an error here would be a bug in serde_json
    if serde_json::to_writer(&mut *out, text).is_err() {
        out.extend_from_slice(b"null");
    }
}

fn write_optional_string(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => write_string(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_key(out: &mut Vec<u8>, indent: &str, key: &str) {
    out.extend_from_slice(indent.as_bytes());
    write_string(out, key);
    out.extend_from_slice(b": ");
}

fn write_entries(out: &mut Vec<u8>, entries: &[RecordEntry]) {
    if entries.is_empty() {
        out.extend_from_slice(b"[]");
        return;
    }
    out.extend_from_slice(b"[\n");
    for (position, entry) in entries.iter().enumerate() {
        if position > 0 {
            out.extend_from_slice(b",\n");
        }
        out.extend_from_slice(b"    ");
        entry.write_json(out, "    ");
    }
    out.extend_from_slice(b"\n  ]");
}

fn unreadable(path: &std::path::Path, reason: &str) -> Problem {
    Problem::new(
        Code::RecordFailed,
        format!("cannot read the record `{}`: {reason}", path.display()),
        "the record says what mesh put on this host; restore it, or move it away to start over (nothing will be withdrawn)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The record as the JSON tree it was once built as.
    fn tree(record: &Record) -> Vec<u8> {
        let entry = |entry: &RecordEntry| {
            json!({
                "kind": entry.kind.name(),
                "identity": entry.identity,
                "digest": entry.digest,
                "module": entry.module,
                "source": entry.source.as_ref().map(|source| json!({"file": source.file, "line": source.line, "column": source.column})),
                "result": entry.result,
            })
        };
        let mut value = json!({
            "format": RECORD_FORMAT,
            "node": record.node,
            "plan": record.plan,
            "state": record.state.name(),
            "shapes": record.shapes.iter().map(entry).collect::<Vec<_>>(),
            "withdrawn": record.withdrawn.iter().map(entry).collect::<Vec<_>>(),
        });
        if let (Some(step), Value::Object(object)) = (&record.failed_step, &mut value) {
            object.insert("failed_step".to_string(), json!(step));
        }
        if let (Some(mark), Value::Object(object)) = (record.newest_ms, &mut value) {
            object.insert("newest_ms".to_string(), json!(mark));
        }
        let mut bytes = serde_json::to_vec_pretty(&value).unwrap();
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn the_record_is_written_as_its_json_tree_prints() {
        let entry = RecordEntry {
            kind: Kind::File,
            identity: "/etc/m\"o\u{1b}td".to_string(),
            digest: Some("sha256:ab".to_string()),
            module: Some("app".to_string()),
            source: Some(Source {
                file: "modules/app/module.nix".to_string(),
                line: 12,
                column: 3,
            }),
            result: "created".to_string(),
        };
        let bare = RecordEntry {
            digest: None,
            module: None,
            source: None,
            ..entry.clone()
        };
        for (shapes, withdrawn, failed_step, newest_ms) in [
            (vec![], vec![], None, None),
            (
                vec![entry.clone(), bare.clone()],
                vec![bare.clone()],
                None,
                Some(1_700_000_000_123),
            ),
            (
                vec![entry],
                vec![],
                Some("flush the written files".to_string()),
                Some(u64::MAX),
            ),
        ] {
            let record = Record {
                node: "db1".to_string(),
                plan: "sha256:cd".to_string(),
                state: RecordState::Failed,
                shapes,
                withdrawn,
                failed_step,
                newest_ms,
            };
            assert_eq!(
                String::from_utf8(record.to_json_bytes()).unwrap(),
                String::from_utf8(tree(&record)).unwrap()
            );
            let parsed: Value = serde_json::from_slice(&record.to_json_bytes()).unwrap();
            assert_eq!(Record::from_json(&parsed), Some(record));
        }
    }

    /// A record written before the mark existed (no `newest_ms`) still loads, with no
    /// mark; one with a mark keeps it through a write and a read; a mark that is not
    /// a time makes the record unreadable rather than silently unmarked.
    #[test]
    fn the_newest_mark_is_optional_and_round_trips() {
        let older = br#"{"format": "mesh-applied/1", "node": "db1", "plan": "sha256:cd",
            "state": "applied", "shapes": [], "withdrawn": []}"#;
        let value: Value = serde_json::from_slice(older).unwrap();
        let record = Record::from_json(&value).expect("an older record loads");
        assert_eq!(record.newest_ms, None);
        assert!(
            !String::from_utf8(record.to_json_bytes())
                .unwrap()
                .contains("newest_ms")
        );

        let marked = Record {
            newest_ms: Some(1_767_225_600_042),
            ..record
        };
        let written = marked.to_json_bytes();
        assert!(
            String::from_utf8(written.clone())
                .unwrap()
                .contains("\"newest_ms\": 1767225600042,\n"),
            "{}",
            String::from_utf8_lossy(&written)
        );
        let parsed: Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(Record::from_json(&parsed), Some(marked));

        for not_a_time in [json!("1767225600042"), json!(-1), json!(1.5)] {
            let mut value = value.clone();
            value["newest_ms"] = not_a_time.clone();
            assert_eq!(Record::from_json(&value), None, "{not_a_time}");
        }
    }
}
