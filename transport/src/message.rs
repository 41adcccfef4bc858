//! The messages on the wire, all JSON with a versioned `format` field (the AMQP `type`
//! property says the same): plans (`mesh-plan/1`, the plan file's bytes as they are),
//! status reports (`mesh-status/1`), build requests (`mesh-build-request/1`) and build
//! results (`mesh-build-result/1`). Plain data: nothing here talks to the broker.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const STATUS_FORMAT: &str = "mesh-status/1";
pub const BUILD_REQUEST_FORMAT: &str = "mesh-build-request/1";
pub const BUILD_RESULT_FORMAT: &str = "mesh-build-result/1";

/// The header every message is published with: when it was published, in
/// milliseconds since the Unix epoch by the publisher's clock (the AMQP `timestamp`
/// property says the same in seconds). A listener orders plans by it.
pub const PUBLISHED_MS_HEADER: &str = "mesh-published-ms";

/// A message as a consumer receives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Incoming {
    pub body: Vec<u8>,
    pub routing_key: String,
    pub message_id: Option<String>,
    pub correlation_id: Option<String>,
    /// The AMQP `type` property.
    pub kind: Option<String>,
    /// The broker delivered it before and it was not acknowledged.
    pub redelivered: bool,
    /// When it was published ([`PUBLISHED_MS_HEADER`]), by the publisher's clock;
    /// `None` for a message without the header (an older publisher's).
    pub published_ms: Option<u64>,
}

/// A message to publish to the `mesh` exchange (always persistent, always confirmed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub routing_key: String,
    pub body: Vec<u8>,
    pub message_id: Option<String>,
    pub correlation_id: Option<String>,
    /// The AMQP `type` property: the body's format.
    pub kind: String,
}

impl Outgoing {
    /// A JSON message of `kind` with the given routing key.
    pub fn json(routing_key: String, kind: &str, value: &impl Serialize) -> Outgoing {
        Outgoing {
            routing_key,
            body: serde_json::to_vec(value).unwrap_or_default(),
            message_id: None,
            correlation_id: None,
            kind: kind.to_string(),
        }
    }

    /// A node's plan, with its digest as message id (so the listener can check the two
    /// agree, and so duplicates are recognisable by id alone).
    pub fn plan(node: &str, digest: &str, bytes: Vec<u8>) -> Outgoing {
        Outgoing {
            routing_key: crate::names::plan_key(node),
            body: bytes,
            message_id: Some(digest.to_string()),
            correlation_id: None,
            kind: plan::FORMAT.to_string(),
        }
    }
}

/// What a listener did with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The plan was applied and every shape is true.
    Applied,
    /// The apply stopped or was refused; the record says what was done.
    Failed,
    /// The plan is the one last applied (by digest): acknowledged without work.
    AlreadyApplied,
    /// Not a plan for this node (not JSON, wrong digest, another node): rejected
    /// without requeue.
    Rejected,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Failed => "failed",
            Outcome::AlreadyApplied => "already-applied",
            Outcome::Rejected => "rejected",
        }
    }
}

/// One problem in a status report: the applier's code and message (never secret
/// content: the applier does not put any in its messages).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedError {
    pub code: String,
    pub message: String,
}

/// A listener's report on one message, published with the key `status.NODE`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    pub format: String,
    pub node: String,
    /// The plan's digest, when the message held a readable plan.
    pub plan: Option<String>,
    /// The message id the plan came with (the digest `meshc publish` gave it).
    pub message_id: Option<String>,
    pub outcome: Outcome,
    /// Shapes by result: created, changed, unchanged, withdrawn, kept, failed,
    /// not_reached. Empty when nothing was applied.
    pub counts: BTreeMap<String, u64>,
    pub errors: Vec<ReportedError>,
    /// Why a message was rejected, or why nothing was done.
    pub reason: Option<String>,
}

impl StatusReport {
    pub fn new(node: &str, outcome: Outcome) -> StatusReport {
        StatusReport {
            format: STATUS_FORMAT.to_string(),
            node: node.to_string(),
            plan: None,
            message_id: None,
            outcome,
            counts: BTreeMap::new(),
            errors: Vec::new(),
            reason: None,
        }
    }

    /// The message that carries it: key `status.NODE`, correlated with the plan
    /// message's id.
    pub fn to_outgoing(&self) -> Outgoing {
        let mut outgoing =
            Outgoing::json(crate::names::status_key(&self.node), STATUS_FORMAT, self);
        outgoing.correlation_id = self.message_id.clone();
        outgoing
    }

    pub fn parse(body: &[u8]) -> Result<StatusReport, String> {
        let report: StatusReport = serde_json::from_slice(body)
            .map_err(|error| format!("not a status report: {error}"))?;
        if report.format != STATUS_FORMAT {
            return Err(format!(
                "unknown status format `{}` (this reads `{STATUS_FORMAT}`)",
                report.format
            ));
        }
        Ok(report)
    }
}

/// A request to build one artifact. The builder has its own checkout of the
/// repository (`mesh-build --repo DIR`); the request names the artifact's directory
/// relative to the repository, as `mesh.lock` does. The correlation id travels as the
/// AMQP `correlation_id` property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRequest {
    pub format: String,
    pub directory: String,
}

impl BuildRequest {
    pub fn new(directory: &str) -> BuildRequest {
        BuildRequest {
            format: BUILD_REQUEST_FORMAT.to_string(),
            directory: directory.to_string(),
        }
    }

    pub fn to_outgoing(&self, correlation_id: &str) -> Outgoing {
        let mut outgoing = Outgoing::json(
            crate::names::BUILD_REQUEST_KEY.to_string(),
            BUILD_REQUEST_FORMAT,
            self,
        );
        outgoing.correlation_id = Some(correlation_id.to_string());
        outgoing.message_id = Some(correlation_id.to_string());
        outgoing
    }

    pub fn parse(body: &[u8]) -> Result<BuildRequest, String> {
        let request: BuildRequest = serde_json::from_slice(body)
            .map_err(|error| format!("not a build request: {error}"))?;
        // what is refused is recorded and logged: no more of it than a name needs
        if request.format != BUILD_REQUEST_FORMAT {
            let shown: String = request.format.chars().take(64).collect();
            return Err(format!(
                "unknown build request format `{shown}` (this builder reads `{BUILD_REQUEST_FORMAT}`)"
            ));
        }
        if request.directory.len() > MAX_DIRECTORY {
            return Err(format!(
                "the directory named is {} bytes long, longer than any path ({MAX_DIRECTORY} bytes)",
                request.directory.len()
            ));
        }
        Ok(request)
    }
}

/// The longest directory a build request may name (Linux's `PATH_MAX`): a request is
/// recorded for good in the builder's record, and a longer name is no path.
pub const MAX_DIRECTORY: usize = 4096;

/// Did the build give an artifact?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildOutcome {
    Built,
    Failed,
}

impl BuildOutcome {
    pub fn name(self) -> &'static str {
        match self {
            BuildOutcome::Built => "built",
            BuildOutcome::Failed => "failed",
        }
    }
}

/// The answer to one build request, and one line of the builder's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildResult {
    pub format: String,
    /// The request's correlation id; `None` for a request that came without one
    /// (kept in the record, answered to nobody).
    pub correlation_id: Option<String>,
    /// The requested directory, when the request could be read.
    pub directory: Option<String>,
    pub outcome: BuildOutcome,
    /// `sha256:HEX` of the archive, when built.
    pub digest: Option<String>,
    /// The archive's size in bytes, when built.
    pub size: Option<u64>,
    /// What the build did, or why it failed.
    pub log: String,
    /// The builder's name (`mesh-build --name`, default the host name).
    pub builder: String,
    /// When the build finished, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub finished: String,
    /// How long the build took.
    pub seconds: f64,
}

impl BuildResult {
    pub fn to_outgoing(&self) -> Outgoing {
        let mut outgoing = Outgoing::json(
            crate::names::BUILD_RESULT_KEY.to_string(),
            BUILD_RESULT_FORMAT,
            self,
        );
        outgoing.correlation_id = self.correlation_id.clone();
        outgoing
    }

    pub fn parse(body: &[u8]) -> Result<BuildResult, String> {
        let result: BuildResult =
            serde_json::from_slice(body).map_err(|error| format!("not a build result: {error}"))?;
        if result.format != BUILD_RESULT_FORMAT {
            return Err(format!(
                "unknown build result format `{}` (this reads `{BUILD_RESULT_FORMAT}`)",
                result.format
            ));
        }
        Ok(result)
    }
}

/// A fresh correlation id: 128 random bits in hex.
pub fn new_correlation_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::getrandom(&mut bytes).is_err() {
        // no system randomness: fall back to the clock and the process id, unique enough
        // for correlation (it is never a secret)
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let mixed = nanos ^ (u128::from(std::process::id()) << 96);
        bytes = mixed.to_le_bytes();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a time given in seconds since the Unix epoch (UTC).
pub fn utc_timestamp(seconds_since_epoch: u64) -> String {
    let days = seconds_since_epoch / 86_400;
    let rest = seconds_since_epoch % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for a time given in milliseconds since the Unix epoch
/// (UTC): two stamps of one second still read apart.
pub fn utc_timestamp_ms(milliseconds_since_epoch: u64) -> String {
    let seconds = utc_timestamp(milliseconds_since_epoch / 1000);
    let second = seconds.trim_end_matches('Z');
    format!("{second}.{:03}Z", milliseconds_since_epoch % 1000)
}

/// The current time as [`utc_timestamp`] writes it.
pub fn now_utc() -> String {
    utc_timestamp(now_ms() / 1000)
}

/// The current time in milliseconds since the Unix epoch (0 for a clock set before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// Howard Hinnant's days-to-civil: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(
            utc_timestamp_ms(1_700_000_000_007),
            "2023-11-14T22:13:20.007Z"
        );
        assert_eq!(utc_timestamp_ms(999), "1970-01-01T00:00:00.999Z");
    }

    #[test]
    fn correlation_ids_differ() {
        let first = new_correlation_id();
        assert_eq!(first.len(), 32);
        assert_ne!(first, new_correlation_id());
    }

    /// A request is recorded for good and logged: a directory longer than any path,
    /// or a format of megabytes, was kept and printed whole (a 5 MB directory grew
    /// the builder's record by 10 MB).
    #[test]
    fn what_a_request_names_is_bounded() {
        let long = "d".repeat(MAX_DIRECTORY + 1);
        let error = BuildRequest::parse(&BuildRequest::new(&long).to_outgoing("id").body)
            .expect_err("too long");
        assert!(
            error.contains("longer than any path") && error.len() < 200,
            "{error}"
        );
        let within = "d".repeat(MAX_DIRECTORY);
        assert!(BuildRequest::parse(&BuildRequest::new(&within).to_outgoing("id").body).is_ok());
        let format = format!(r#"{{"format":"{}","directory":"x"}}"#, "f".repeat(100_000));
        let error = BuildRequest::parse(format.as_bytes()).expect_err("unknown format");
        assert!(error.len() < 200, "{} bytes", error.len());
    }

    #[test]
    fn formats_are_checked() {
        let request = BuildRequest::new("modules/web/site");
        let outgoing = request.to_outgoing("abc");
        assert_eq!(BuildRequest::parse(&outgoing.body), Ok(request));
        assert!(
            BuildRequest::parse(br#"{"format":"mesh-build-request/2","directory":"x"}"#)
                .unwrap_err()
                .contains("unknown build request format")
        );
        assert!(BuildRequest::parse(b"not json").is_err());
        let report = StatusReport::new("db1", Outcome::AlreadyApplied);
        let outgoing = report.to_outgoing();
        assert_eq!(outgoing.routing_key, "status.db1");
        assert_eq!(StatusReport::parse(&outgoing.body), Ok(report));
        assert!(String::from_utf8_lossy(&outgoing.body).contains("\"already-applied\""));
    }
}
